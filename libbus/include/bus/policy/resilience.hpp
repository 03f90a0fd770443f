// The fluent exception policy DSL, Mocha's AddResilience in C++:
//   rules.add_resilience([](bus::policy_builder& p) {
//     p.on<validation_error>().dead_letter();
//     p.on<db_error>([](const db_error& e) { return e.transient(); }).retry(5).then_redeliver();
//     p.on_any().retry().then_redeliver().then_dead_letter();
//   });
// The stage types admit valid chains only: redeliver().then_redeliver(), a
// retry after then_redeliver(), or anything after a terminal action does
// not compile.
#pragma once

#include <deque>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bus/policy/rule.hpp"
#include "bus/policy/rule_set.hpp"
#include "bus/policy/schedule.hpp"

namespace bus {

// The exception "type" of on_any(): rule_builder<any_exception> builds the
// catch-all. A delay function of the catch-all receives the
// std::exception_ptr itself, since there is no type to cast it to.
struct any_exception;

namespace detail {

template <class F> struct is_std_function : std::false_type {};
template <class Signature> struct is_std_function<std::function<Signature>> : std::true_type {};

// Whether `f` is a callable that can be null (a function pointer or a
// std::function) and is: an empty delay function stays empty in the
// schedule, so validate() can name it instead of a call failing later.
template <class F> bool is_null_callable(const F& f) noexcept {
  if constexpr (std::is_pointer_v<F> || is_std_function<F>::value)
    return !f;
  else
    return false;
}

template <class E> struct delay_argument { using type = const E&; };
template <> struct delay_argument<any_exception> { using type = const std::exception_ptr&; };

// Whether F(argument, int) yields a duration; true for what cannot be
// called at all, which the first static_assert reports on its own.
template <class F, class Argument, class = void> struct returns_duration : std::true_type {};
template <class F, class Argument>
struct returns_duration<F, Argument, std::enable_if_t<std::is_invocable_v<const F&, Argument, int>>>
    : std::is_convertible<std::invoke_result_t<const F&, Argument, int>, duration> {};

// A delay function over the typed exception, made callable with the
// caught_exception that schedules hold. Called as const: the configuration is
// shared by every consumer of the endpoint, and they may decide at once.
template <class E, class F>
std::function<duration(const caught_exception&, int)> make_delay_function(F compute) {
  using argument = typename delay_argument<E>::type;
  constexpr bool callable = std::is_invocable_v<const F&, argument, int>;
  constexpr bool yields_duration = returns_duration<F, argument>::value;
  static_assert(callable,
                "a delay function is called as f(const E& exception, int attempt); for on_any() "
                "as f(const std::exception_ptr& exception, int attempt)");
  static_assert(yields_duration,
                "a delay function returns a std::chrono duration, e.g. std::chrono::seconds");
  if constexpr (!callable || !yields_duration) {
    return {}; // not compiled into anything: a static_assert above has failed
  } else if constexpr (std::is_same_v<E, any_exception>) {
    if (is_null_callable(compute))
      return {};
    return [compute = std::move(compute)](const caught_exception& thrown,
                                          int attempt) -> duration {
      return compute(thrown.pointer(), attempt);
    };
  } else {
    if (is_null_callable(compute))
      return {};
    return [compute = std::move(compute)](const caught_exception& thrown,
                                          int attempt) -> duration {
      auto delay = thrown.visit_as<E>([&](const E& typed) -> duration {
        return compute(typed, attempt);
      });
      if (!delay) {
        // Only reachable when a schedule is moved to a rule of another type
        // by hand: the DSL pairs each delay function with its own rule.
        throw std::logic_error("a delay function received an exception of another type");
      }
      return *delay;
    };
  }
}

template <class F>
inline constexpr bool is_delay_function_candidate = !std::is_convertible_v<F, duration>;

} // namespace detail

// What a terminal action returns: nothing may follow it, and this type has
// no members to make sure of that.
class chain_end {};

// After redeliver(...) or then_redeliver(...): the redelivery settings and
// the optional explicit terminal action. No further redelivery or retry.
template <class E> class redelivery_stage {
public:
  explicit redelivery_stage(rule& target) noexcept : rule_(&target) {}

  // Jitter of the redelivery delays (on by default).
  redelivery_stage jitter(bool enabled) const {
    rule_->redelivery->jitter = enabled;
    return *this;
  }
  // The ceiling of the redelivery delays (1 h by default).
  redelivery_stage max_delay(duration limit) const {
    rule_->redelivery->max_delay = limit;
    return *this;
  }
  // States that exhausted redeliveries go to the error queue, which is also
  // what happens without it.
  chain_end then_dead_letter() const {
    rule_->terminal = terminal_action::dead_letter;
    return {};
  }

private:
  rule* rule_;
};

// After retry(...): the retry settings, then redelivery or an explicit
// terminal action. No second retry.
template <class E> class retry_stage {
public:
  explicit retry_stage(rule& target) noexcept : rule_(&target) {}

  // Jitter of the retry delays (on by default, off for delays read from
  // the exception).
  retry_stage jitter(bool enabled) const {
    rule_->retry->jitter = enabled;
    return *this;
  }
  // The ceiling of the retry delays (30 s by default).
  retry_stage max_delay(duration limit) const {
    rule_->retry->max_delay = limit;
    return *this;
  }

  // Redelivery after the retries are exhausted, each redelivery running a
  // fresh cycle of retries: the defaults (5, 15, 30 min) ...
  redelivery_stage<E> then_redeliver() const {
    return redeliver_with(default_redelivery_schedule());
  }
  // ... `count` redeliveries from `base_delay` (exponential by default) ...
  redelivery_stage<E> then_redeliver(int count, duration base_delay,
                                     backoff kind = redelivery_defaults::kind) const {
    return redeliver_with(make_redelivery_schedule(backoff_delays{count, base_delay, kind}));
  }
  // ... one redelivery per interval ...
  redelivery_stage<E> then_redeliver(std::vector<duration> intervals) const {
    return redeliver_with(make_redelivery_schedule(interval_delays{std::move(intervals)}));
  }
  // ... or `count` redeliveries with delays read from the exception:
  // compute(const E&, int attempt) -> duration.
  template <class F, class = std::enable_if_t<detail::is_delay_function_candidate<F>>>
  redelivery_stage<E> then_redeliver(int count, F compute) const {
    return redeliver_with(make_redelivery_schedule(
        exception_delays{count, detail::make_delay_function<E>(std::move(compute))}));
  }

  // States that exhausted retries go to the error queue, skipping
  // redelivery; also what happens without it.
  chain_end then_dead_letter() const {
    rule_->terminal = terminal_action::dead_letter;
    return {};
  }

private:
  redelivery_stage<E> redeliver_with(retry_schedule schedule) const {
    rule_->redelivery = std::move(schedule);
    return redelivery_stage<E>(*rule_);
  }

  rule* rule_;
};

// After on<E>(...) or on_any(): the rule's budget, then its first action.
// Each action defines the whole chain anew, so on a builder kept in a
// variable the last action called wins.
template <class E> class rule_builder {
public:
  explicit rule_builder(rule& target) noexcept : rule_(&target) {}

  // Attempts in all, across both tiers and counting the first: with
  // max_attempts(10) the 10th failure ends the chain, wherever it stands.
  rule_builder max_attempts(int attempts) const {
    rule_->max_attempts = attempts;
    return *this;
  }
  // Retrying stops this long after the first failure (instead of the
  // configuration's max_retry_time, 24 h by default).
  rule_builder max_time(duration limit) const {
    rule_->max_time = limit;
    return *this;
  }
  // Failures matched by this rule count against the dependency breaker
  // `dependency` (declared on the bus): p.on<db_error>().trips("inventory-db").
  // While that breaker stays closed the chain below applies; once it is open
  // the message goes back to its queue unharmed, no attempt spent. Every
  // endpoint whose handlers use this rule depends on the breaker.
  rule_builder trips(std::string dependency) const {
    rule_->trips.push_back(std::move(dependency));
    return *this;
  }

  // Straight to the error queue: no retry, no redelivery.
  chain_end dead_letter() const {
    reset();
    rule_->terminal = terminal_action::dead_letter;
    return {};
  }
  // Acknowledged and dropped: no error queue, only a log line.
  chain_end discard() const {
    reset();
    rule_->terminal = terminal_action::discard;
    return {};
  }

  // Immediate retries, in process, the slot held; without then_redeliver()
  // the rule does not redeliver. The defaults (3, 200 ms, exponential) ...
  retry_stage<E> retry() const { return retry_with(default_retry_schedule()); }
  // ... `count` retries, the default delay and backoff ...
  retry_stage<E> retry(int count) const {
    return retry_with(make_retry_schedule(
        backoff_delays{count, retry_defaults::base_delay, retry_defaults::kind}));
  }
  // ... `count` retries from `base_delay` ...
  retry_stage<E> retry(int count, duration base_delay, backoff kind = retry_defaults::kind) const {
    return retry_with(make_retry_schedule(backoff_delays{count, base_delay, kind}));
  }
  // ... one retry per interval ...
  retry_stage<E> retry(std::vector<duration> intervals) const {
    return retry_with(make_retry_schedule(interval_delays{std::move(intervals)}));
  }
  // ... or `count` retries with delays read from the exception:
  // compute(const E&, int attempt) -> duration.
  template <class F, class = std::enable_if_t<detail::is_delay_function_candidate<F>>>
  retry_stage<E> retry(int count, F compute) const {
    return retry_with(make_retry_schedule(
        exception_delays{count, detail::make_delay_function<E>(std::move(compute))}));
  }

  // Redelivery only: no immediate retries. The defaults (5, 15, 30 min) ...
  redelivery_stage<E> redeliver() const { return redeliver_with(default_redelivery_schedule()); }
  // ... `count` redeliveries from `base_delay` ...
  redelivery_stage<E> redeliver(int count, duration base_delay,
                                backoff kind = redelivery_defaults::kind) const {
    return redeliver_with(make_redelivery_schedule(backoff_delays{count, base_delay, kind}));
  }
  // ... one redelivery per interval ...
  redelivery_stage<E> redeliver(std::vector<duration> intervals) const {
    return redeliver_with(make_redelivery_schedule(interval_delays{std::move(intervals)}));
  }
  // ... or `count` redeliveries with delays read from the exception.
  template <class F, class = std::enable_if_t<detail::is_delay_function_candidate<F>>>
  redelivery_stage<E> redeliver(int count, F compute) const {
    return redeliver_with(make_redelivery_schedule(
        exception_delays{count, detail::make_delay_function<E>(std::move(compute))}));
  }

private:
  void reset() const {
    rule_->retry.reset();
    rule_->redelivery.reset();
    rule_->terminal.reset();
  }
  retry_stage<E> retry_with(retry_schedule schedule) const {
    reset();
    rule_->retry = std::move(schedule);
    return retry_stage<E>(*rule_);
  }
  redelivery_stage<E> redeliver_with(retry_schedule schedule) const {
    reset();
    rule_->redelivery = std::move(schedule);
    return redelivery_stage<E>(*rule_);
  }

  rule* rule_;
};

// Handed to add_resilience's callback. Each on<E>() starts a rule; the order
// of on<E>() calls is the registration order.
class policy_builder {
public:
  policy_builder(const policy_builder&) = delete;
  policy_builder& operator=(const policy_builder&) = delete;

  // Exceptions of type E and its subtypes (by public inheritance). E may be
  // any type a C++ program throws: std::exception's family, int, a struct.
  template <class E> [[nodiscard]] rule_builder<E> on() {
    rule& r = start();
    r.type = detail::exception_type::of<E>();
    return rule_builder<E>(r);
  }

  // As on<E>(), when `predicate(const E&)` holds. Several rules for one type
  // are consulted in registration order; the rule without predicate is the
  // fallback for the type.
  template <class E, class Predicate> [[nodiscard]] rule_builder<E> on(Predicate predicate) {
    // Called as const: the configuration is shared by every consumer of the
    // endpoint, and they may decide at the same time.
    constexpr bool callable = std::is_invocable_r_v<bool, const Predicate&, const E&>;
    static_assert(callable, "the predicate of on<E>(predicate) is called as predicate(const E&) -> "
                            "bool, on a const predicate");
    rule& r = start();
    r.type = detail::exception_type::of<E>();
    if constexpr (callable) {
      r.predicate = [predicate = std::move(predicate)](const caught_exception& thrown) -> bool {
        // Not an E cannot happen: the type test comes first.
        return thrown
            .visit_as<E>([&](const E& typed) { return static_cast<bool>(predicate(typed)); })
            .value_or(false);
      };
    }
    return rule_builder<E>(r);
  }

  // The catch-all, Mocha's Default(): any exception that no more specific
  // rule takes, including those not derived from std::exception. Unlike
  // on<std::exception>() it also catches `throw 42`.
  [[nodiscard]] rule_builder<any_exception> on_any() {
    return rule_builder<any_exception>(start());
  }

private:
  friend class rule_set;
  policy_builder() = default;

  rule& start() { return rules_.emplace_back(); }

  // A deque, so the rule a stage object points to stays put while later
  // on<E>() calls add rules.
  std::deque<rule> rules_;
};

} // namespace bus
