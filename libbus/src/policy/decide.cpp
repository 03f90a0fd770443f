#include "bus/policy/decide.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "bus/policy/deadline.hpp"
#include "bus/policy/exception_type.hpp"

namespace bus {

namespace {

constexpr const char* stream_refusal =
  "a message read from a stream may be neither retried nor redelivered";

move_to_error to_error(const recoverability_config& config, std::string reason) {
  return move_to_error{std::move(reason), config.options.error_queue};
}

// The exception as decide() works with it: the runtime's look into it when
// that is of this very exception, else a look taken here (one rethrow).
const caught_exception& looked_into(const error_context& context,
                                    std::optional<caught_exception>& local) {
  if (context.caught != nullptr && context.caught->pointer() == context.exception)
    return *context.caught;
  return local.emplace(context.exception);
}

bool is_deserialization_failure(const caught_exception& thrown) {
  return thrown.is<message_deserialization_error>();
}

move_to_error deserialization_failure(const recoverability_config& config) {
  return to_error(config, "unrecoverable: the message body could not be deserialized");
}

std::string count_of(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The end of a chain: its terminal action, the error queue unless discard.
action finish(const recoverability_config& config, const rule& r, std::string reason) {
  if (r.terminal == terminal_action::discard)
    return discard{std::move(reason)};
  return to_error(config, std::move(reason));
}

// now - first, in milliseconds, for any two time points: zero when first
// is not earlier, saturating at duration::max() (the difference of two
// time points need not fit in the clock's own duration, and a limit of
// duration::max() milliseconds does not fit in nanoseconds: the
// comparison is made in milliseconds).
duration elapsed_since(time_point first, time_point now) noexcept {
  if (!(first < now))
    return duration::zero();
  using clock_ticks = std::chrono::duration<std::uint64_t, time_point::period>;
  using unsigned_ms = std::chrono::duration<std::uint64_t, std::milli>;
  // Exact in unsigned arithmetic: first < now, so the difference is below 2^64.
  const clock_ticks ticks(static_cast<std::uint64_t>(now.time_since_epoch().count())
                          - static_cast<std::uint64_t>(first.time_since_epoch().count()));
  const auto ms = std::chrono::duration_cast<unsigned_ms>(ticks).count();
  constexpr auto max_ms = static_cast<std::uint64_t>(duration::max().count());
  return duration(static_cast<duration::rep>(std::min(ms, max_ms)));
}

// A negative delay becomes zero; one beyond the longest the bus schedules
// becomes that, and `clamped_from` keeps what was asked for (the first
// request, should an action pass here twice).
duration bounded_delay(duration delay, std::optional<duration>& clamped_from) {
  if (delay > max_scheduled_delay) {
    if (!clamped_from)
      clamped_from = delay;
    return max_scheduled_delay;
  }
  return std::max(delay, duration::zero());
}

int attempts_so_far(const error_context& context, int retries, int immediate) {
  if (context.total_attempts)
    return *context.total_attempts;
  const std::int64_t derived =
      static_cast<std::int64_t>(context.delivery_count) * (static_cast<std::int64_t>(retries) + 1)
      + immediate;
  return static_cast<int>(std::min<std::int64_t>(derived, std::numeric_limits<int>::max()));
}

std::string exhausted(const rule& r, const capabilities& available, int retries, int redeliveries,
                      int total) {
  std::string reason = "retries exhausted after " + count_of(total, "attempt", "attempts") + " ("
                       + count_of(retries, "immediate retry", "immediate retries") + ", "
                       + count_of(redeliveries, "redelivery", "redeliveries") + ")";
  if (available.reads_stream && (r.retry || r.redelivery))
    reason += "; " + std::string(stream_refusal);
  else if (r.retry && !available.immediate_retries)
    reason += "; immediate retries are not available on this endpoint";
  else if (r.redelivery && !available.delayed_delivery)
    reason += "; the transport has no delayed delivery";
  return reason;
}

// default_policy() with the exception looked into.
action default_policy_for(const recoverability_config& config, const error_context& context,
                          const caught_exception& thrown, random_source rng) {
  if (!thrown)
    return to_error(config, "the error context holds no exception");
  if (is_deserialization_failure(thrown))
    return deserialization_failure(config);
  if (const auto* declared = config.options.unrecoverable.find(thrown)) {
    const auto name_thrown = thrown.type_name();
    const auto name = declared->name();
    return to_error(config,
                    "unrecoverable exception " + name_thrown
                        + (name_thrown == name ? "" : " (declared unrecoverable as " + name + ")"));
  }

  const auto match = config.rules.match(thrown);
  if (!match.rule)
    return to_error(config, "no exception policy rule matches " + thrown.type_name());
  const rule& r = config.rules.rules()[*match.rule];
  // The rule's name is for reasons only: a retry, the common case, does
  // not pay for demangling its type.
  const auto name = [&] { return config.rules.name_of(*match.rule); };

  if (!r.retry && !r.redelivery) {
    if (!r.terminal)
      return to_error(config, name() + " has no action");
    return finish(
        config, r,
        name() + (*r.terminal == terminal_action::discard ? " discards it" : " dead-letters it"));
  }

  // A tier the endpoint cannot carry out counts as having no retries, as
  // NServiceBus reports MaxNumberOfRetries = 0 for it.
  const auto& available = config.options.available;
  const retry_schedule* retry = r.retry && available.immediate_retries ? &*r.retry : nullptr;
  const retry_schedule* redelivery =
      r.redelivery && available.delayed_delivery ? &*r.redelivery : nullptr;
  const int retries = retry ? retry_count(*retry) : 0;
  const int redeliveries = redelivery ? retry_count(*redelivery) : 0;
  const int immediate = std::max(context.immediate_attempts, 1);
  const int total = attempts_so_far(context, retries, immediate);

  const duration limit = r.max_time.value_or(config.options.max_retry_time);
  if (elapsed_since(context.first_failure, context.now) >= limit)
    return finish(config, r,
                  name() + ": retry time limit of " + to_hms(limit)
                      + " since the first failure reached");
  if (r.max_attempts && total >= *r.max_attempts)
    return finish(config, r,
                  name() + ": attempt budget of " + count_of(*r.max_attempts, "attempt", "attempts")
                      + " spent");

  try {
    // A retry that would fire after the message's expiry, or a redelivery
    // that would fire after the time limit, ends the chain now (step 4.5).
    if (immediate <= retries) {
      const auto delay = planned_delay(*retry, immediate, thrown, rng);
      if (context.expires_at)
        if (auto why = too_late(context, duration::max(), delay))
          return finish(config, r, name() + ": " + *why);
      return immediate_retry{delay};
    }
    if (static_cast<std::int64_t>(context.delivery_count) < redeliveries) {
      const auto delay =
          planned_delay(*redelivery, static_cast<int>(context.delivery_count) + 1, thrown, rng);
      if (auto why = too_late(context, limit, std::min(delay, max_scheduled_delay)))
        return finish(config, r, name() + ": " + *why);
      return delayed_retry{delay};
    }
  } catch (const std::exception& e) {
    return to_error(config, name() + ": its delay function threw: " + e.what());
  } catch (...) {
    return to_error(
        config, name() + ": its delay function threw an exception not derived from std::exception");
  }
  return finish(config, r, name() + ": " + exhausted(r, available, retries, redeliveries, total));
}

} // namespace

action default_policy(const recoverability_config& config, const error_context& context,
                      random_source rng) {
  std::optional<caught_exception> local;
  return default_policy_for(config, context, looked_into(context, local), rng);
}

action decide(const recoverability_config& config, const error_context& context,
              random_source rng) {
  std::optional<caught_exception> local;
  const caught_exception& thrown = looked_into(context, local);
  if (is_deserialization_failure(thrown))
    return apply_capabilities(deserialization_failure(config), config);
  action decided = [&]() -> action {
    if (!config.options.custom)
      return default_policy_for(config, context, thrown, rng);
    // The custom policy sees the look already taken, and so does
    // default_policy() if it calls that.
    error_context seen = context;
    seen.caught = &thrown;
    try {
      return config.options.custom(config, seen, rng);
    } catch (const std::exception& e) {
      return to_error(config, std::string("the custom recoverability policy threw: ") + e.what());
    } catch (...) {
      return to_error(config,
                      "the custom recoverability policy threw an exception not derived from "
                      "std::exception");
    }
  }();
  return apply_capabilities(std::move(decided), config);
}

action apply_capabilities(action decided, const recoverability_config& config) {
  struct fallback {
    const recoverability_config& config;

    action operator()(immediate_retry r) const {
      r.delay = bounded_delay(r.delay, r.clamped_from);
      if (config.options.available.reads_stream)
        return to_error(config, describe(action{r}) + " cannot be carried out: " + stream_refusal);
      if (!config.options.available.immediate_retries)
        return to_error(config, describe(action{r})
                                    + " cannot be carried out: immediate retries are not available "
                                      "on this endpoint");
      return r;
    }
    action operator()(delayed_retry r) const {
      r.delay = bounded_delay(r.delay, r.clamped_from);
      if (config.options.available.reads_stream)
        return to_error(config, describe(action{r}) + " cannot be carried out: " + stream_refusal);
      if (!config.options.available.delayed_delivery)
        return to_error(config,
                        describe(action{r})
                            + " cannot be carried out: the transport has no delayed delivery");
      return r;
    }
    action operator()(move_to_error m) const { return m; }
    action operator()(discard d) const { return d; }
  };
  return std::visit(fallback{config}, std::move(decided));
}

} // namespace bus
