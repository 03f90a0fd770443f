#include "apply_policy.hpp"

#include <stdexcept>
#include <type_traits>
#include <utility>

namespace bus::scenario {

namespace {

// A delay read from a duration field of the exception (an HTTP 429's
// Retry-After). The parser checked the field for typed rules; for on_any()
// a missing field throws, and decide() sends the message to the error queue
// with that reason, as it does for any delay function that throws.
template <class E>
auto delay_function(std::string field) {
  if constexpr (std::is_same_v<E, any_exception>) {
    return [field](const std::exception_ptr& exception, int) -> duration {
      try {
        std::rethrow_exception(exception);
      } catch (const std::exception& e) {
        if (auto v = field_of(e, field); v && std::holds_alternative<duration>(*v))
          return std::get<duration>(*v);
      } catch (...) {
      }
      throw std::runtime_error("the exception has no duration field \"" + field + "\"");
    };
  } else if constexpr (std::is_base_of_v<std::exception, E>) {
    return [field](const E& e, int) -> duration { return std::get<duration>(*field_of(e, field)); };
  } else {
    // foreign_error has no fields; the parser refuses delay_from on it.
    return [field](const E&, int) -> duration {
      throw std::logic_error("the exception has no field \"" + field + "\"");
    };
  }
}

// Calls `start` (retry, redeliver or then_redeliver of a stage) with the
// arguments of the overload the tier's settings stand for.
template <class E, bool Redelivery, class Start>
auto start_tier(const tier_spec& t, Start start) {
  if (t.intervals)
    return start(*t.intervals);
  if (t.delay_from)
    return start(*t.count, delay_function<E>(*t.delay_from));
  if (!t.count)
    return start();
  if constexpr (Redelivery) {
    // The parser requires a delay with a count: redeliver(n) does not exist.
    return start(*t.count, *t.delay, t.backoff.value_or(redelivery_defaults::kind));
  } else {
    if (!t.delay && !t.backoff)
      return start(*t.count);
    return start(*t.count, t.delay.value_or(retry_defaults::base_delay),
                 t.backoff.value_or(retry_defaults::kind));
  }
}

template <class Stage>
Stage tune(Stage stage, const tier_spec& t) {
  if (t.jitter)
    stage = stage.jitter(*t.jitter);
  if (t.max_delay)
    stage = stage.max_delay(*t.max_delay);
  return stage;
}

template <class E>
void build_chain(rule_builder<E> r, const rule_spec& spec) {
  if (spec.max_attempts)
    r = r.max_attempts(*spec.max_attempts);
  if (spec.max_time)
    r = r.max_time(*spec.max_time);
  for (const auto& dependency : spec.trips)
    r = r.trips(dependency);
  if (spec.action) {
    if (*spec.action == terminal::dead_letter)
      r.dead_letter();
    else
      r.discard();
    return;
  }
  auto redeliver_after = [&](auto stage) {
    auto d = tune(start_tier<E, true>(*spec.redeliver,
                                      [&](auto&&... args) {
                                        return stage.then_redeliver(
                                          std::forward<decltype(args)>(args)...);
                                      }),
                  *spec.redeliver);
    if (spec.then_dead_letter)
      d.then_dead_letter();
  };
  if (spec.retry) {
    auto s = tune(start_tier<E, false>(*spec.retry,
                                       [&](auto&&... args) {
                                         return r.retry(std::forward<decltype(args)>(args)...);
                                       }),
                  *spec.retry);
    if (spec.redeliver)
      redeliver_after(s);
    else if (spec.then_dead_letter)
      s.then_dead_letter();
    return;
  }
  if (spec.redeliver) {
    auto d = tune(start_tier<E, true>(*spec.redeliver,
                                      [&](auto&&... args) {
                                        return r.redeliver(std::forward<decltype(args)>(args)...);
                                      }),
                  *spec.redeliver);
    if (spec.then_dead_letter)
      d.then_dead_letter();
  }
  // Neither a tier nor an action: a rule that only trips gives its failures
  // back unharmed; one that does not even trip has no action, which the bus
  // refuses when it is built.
}

void add_rule(policy_builder& p, const rule_spec& spec) {
  if (spec.on == "any") {
    build_chain(p.on_any(), spec);
    return;
  }
  with_exception_type(spec.on, [&](auto tag) {
    using E = typename decltype(tag)::type;
    if constexpr (std::is_base_of_v<std::exception, E>) {
      if (spec.when) {
        build_chain(p.on<E>([when = *spec.when](const E& e) { return holds(when, e); }), spec);
        return;
      }
    }
    // A condition on foreign_error, which has no fields, is refused by the parser.
    build_chain(p.on<E>(), spec);
  });
}

} // namespace

std::function<void(policy_builder&)> configure_of(const policy_spec& spec) {
  return [spec](policy_builder& p) {
    if (spec.defaults)
      p.on_any().retry().then_redeliver();
    for (const auto& rule : spec.rules)
      add_rule(p, rule);
  };
}

} // namespace bus::scenario
