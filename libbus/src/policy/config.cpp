#include "bus/policy/config.hpp"

#include <algorithm>
#include <utility>

#include "bus/policy/validate.hpp"

namespace bus {

const detail::exception_type*
unrecoverable_exceptions::find(const caught_exception& thrown) const noexcept {
  for (const auto& type : types_) {
    if (type.matches(thrown))
      return &type;
  }
  return nullptr;
}

const detail::exception_type*
unrecoverable_exceptions::find(const std::exception_ptr& exception) const noexcept {
  return find(caught_exception(exception));
}

result<recoverability_config> make_recoverability_config(const recoverability_scopes& scopes,
                                                         recoverability_options options) {
  const auto rules_valid = validate(scopes);
  const auto options_valid = validate(options);
  if (!rules_valid || !options_valid) {
    std::string message;
    for (const auto* check : {&rules_valid, &options_valid}) {
      if (*check)
        continue;
      if (!message.empty())
        message += "; ";
      message += check->error().message;
    }
    return error{errc::invalid_configuration, std::move(message)};
  }
  auto resolved = scopes.resolve();
  return recoverability_config{std::move(resolved.rules), resolved.scope, std::move(options)};
}

duration longest_retry_time(const recoverability_config& config) noexcept {
  auto longest = config.options.max_retry_time;
  for (const auto& r : config.rules.rules())
    if (r.max_time)
      longest = std::max(longest, *r.max_time);
  return longest;
}

} // namespace bus
