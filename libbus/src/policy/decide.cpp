#include "bus/policy/decide.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "bus/policy/exception_type.hpp"

namespace bus {

namespace {

move_to_error to_error(const recoverability_config& config, std::string reason) {
  return move_to_error{std::move(reason), config.options.error_queue};
}

bool is_deserialization_failure(const std::exception_ptr& exception) {
  return detail::exception_type::of<message_deserialization_error>().catches(exception);
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
  if (r.retry && !available.immediate_retries)
    reason += "; immediate retries are not available on this endpoint";
  if (r.redelivery && !available.delayed_delivery)
    reason += "; the transport has no delayed delivery";
  return reason;
}

} // namespace

action default_policy(const recoverability_config& config, const error_context& context,
                      random_source rng) {
  const auto& exception = context.exception;
  if (!exception)
    return to_error(config, "the error context holds no exception");
  if (is_deserialization_failure(exception))
    return deserialization_failure(config);
  if (const auto* declared = config.options.unrecoverable.find(exception)) {
    const auto thrown = detail::thrown_type_name(exception);
    const auto name = declared->name();
    return to_error(config,
                    "unrecoverable exception " + thrown
                        + (thrown == name ? "" : " (declared unrecoverable as " + name + ")"));
  }

  const auto match = config.rules.match(exception);
  if (!match.rule)
    return to_error(config,
                    "no exception policy rule matches " + detail::thrown_type_name(exception));
  const rule& r = config.rules.rules()[*match.rule];
  const std::string name = config.rules.name_of(*match.rule);

  if (!r.retry && !r.redelivery) {
    if (!r.terminal)
      return to_error(config, name + " has no action");
    return finish(
        config, r,
        name + (*r.terminal == terminal_action::discard ? " discards it" : " dead-letters it"));
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
  if (context.now - context.first_failure >= limit)
    return finish(config, r,
                  name + ": retry time limit of " + to_hms(limit)
                      + " since the first failure reached");
  if (r.max_attempts && total >= *r.max_attempts)
    return finish(config, r,
                  name + ": attempt budget of " + count_of(*r.max_attempts, "attempt", "attempts")
                      + " spent");

  try {
    if (immediate <= retries)
      return immediate_retry{planned_delay(*retry, immediate, exception, rng)};
    if (static_cast<std::int64_t>(context.delivery_count) < redeliveries)
      return delayed_retry{
          planned_delay(*redelivery, static_cast<int>(context.delivery_count) + 1, exception, rng)};
  } catch (const std::exception& e) {
    return to_error(config, name + ": its delay function threw: " + e.what());
  } catch (...) {
    return to_error(
        config, name + ": its delay function threw an exception not derived from std::exception");
  }
  return finish(config, r, name + ": " + exhausted(r, available, retries, redeliveries, total));
}

action decide(const recoverability_config& config, const error_context& context,
              random_source rng) {
  if (is_deserialization_failure(context.exception))
    return apply_capabilities(deserialization_failure(config), config);
  action decided = [&]() -> action {
    if (!config.options.custom)
      return default_policy(config, context, rng);
    try {
      return config.options.custom(config, context, rng);
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
      r.delay = std::max(r.delay, duration::zero());
      if (!config.options.available.immediate_retries)
        return to_error(config, describe(action{r})
                                    + " cannot be carried out: immediate retries are not available "
                                      "on this endpoint");
      return r;
    }
    action operator()(delayed_retry r) const {
      r.delay = std::max(r.delay, duration::zero());
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
