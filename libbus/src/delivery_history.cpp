// Reading and writing the headers a message carries across deliveries,
// with bounds. See bus/delivery_history.hpp.
#include "bus/delivery_history.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <utility>

#include "bus/header_names.hpp"

namespace bus {

namespace {

// How much of a header's text a note repeats.
constexpr std::size_t quoted_bytes = 64;

std::string quoted(std::string_view text) {
  return "'" + truncate_utf8(std::string(text), quoted_bytes) + "'";
}

// A whole header as a decimal integer: digits with an optional leading
// '-', nothing else (no '+', no spaces).
enum class number_state { ok, too_large, too_small, not_a_number };

template <class Int> number_state parse_number(std::string_view text, Int& out) noexcept {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec == std::errc::result_out_of_range && end == text.data() + text.size())
    return !text.empty() && text.front() == '-' ? number_state::too_small : number_state::too_large;
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    return number_state::not_a_number;
  return number_state::ok;
}

void read_failed_attempts(const envelope& message, delivery_history& history) {
  const auto text = message.headers.find(header::failed_attempts);
  if (!text)
    return;
  std::int64_t value = 0;
  const auto state = parse_number(*text, value);
  if (state == number_state::ok && value >= 0 && value <= max_failed_attempts) {
    history.failed_attempts = static_cast<int>(value);
    return;
  }
  history.failed_attempts_out_of_bounds = true;
  const bool too_large = state == number_state::too_large
                         || (state == number_state::ok && value > max_failed_attempts);
  if (too_large) {
    history.failed_attempts = max_failed_attempts;
    history.notes.push_back(std::string(header::failed_attempts) + " " + quoted(*text)
                            + " is above the maximum of " + std::to_string(max_failed_attempts)
                            + "; counted as " + std::to_string(max_failed_attempts));
    return;
  }
  history.failed_attempts = static_cast<int>(
      std::min<std::uint64_t>(message.delivery_count, static_cast<std::uint64_t>(max_failed_attempts)));
  history.notes.push_back(std::string(header::failed_attempts) + " " + quoted(*text)
                          + (state == number_state::not_a_number ? " is not a number"
                                                                 : " is negative")
                          + "; counted as " + std::to_string(history.failed_attempts)
                          + ", the message's delivery count");
}

void read_first_failure(const envelope& message, time_point now, delivery_history& history) {
  history.first_failure = now;
  const auto text = message.headers.find(header::first_failure_at);
  if (!text)
    return;
  std::int64_t ms = 0;
  const auto state = parse_number(*text, ms);
  const auto note = [&](const std::string& what, const std::string& used) {
    history.first_failure_out_of_bounds = true;
    history.notes.push_back(std::string(header::first_failure_at) + " " + quoted(*text) + " "
                            + what + "; taken as " + used);
  };
  if (state == number_state::not_a_number) {
    note("is not a number", "now");
    return;
  }
  const auto epoch = time_point{};
  if (now < epoch) {
    // A clock before 1970 leaves no valid range; only now is safe.
    if (state != number_state::ok || ms != to_unix_ms(now))
      note("is outside [the epoch, now]", "now");
    return;
  }
  if (state == number_state::too_small || (state == number_state::ok && ms < 0)) {
    history.first_failure = epoch;
    note("is before the epoch", "the epoch");
    return;
  }
  // ms and now compared as integers, so a huge ms is never converted.
  if (state == number_state::too_large || ms > to_unix_ms(now)) {
    note("is after now", "now");
    return;
  }
  history.first_failure = from_unix_ms(ms);
}

void read_pending_fault(const envelope& message, std::string_view endpoint, time_point now,
                        delivery_history& history) {
  const auto text = message.headers.find(header::fault_pending);
  if (!text)
    return;
  const auto foreign = [&](const std::string& why) {
    history.foreign_fault_pending = true;
    history.notes.push_back(std::string(header::fault_pending) + " " + quoted(*text) + " " + why
                            + "; ignored, the handler runs");
  };
  if (endpoint.empty() || *text != endpoint) {
    foreign("does not name this endpoint ('" + std::string(endpoint) + "')");
    return;
  }
  auto fault = read_fault_headers(message, now);
  if (!fault) {
    foreign("names this endpoint but its fault headers do not parse (" + fault.error().message
            + ")");
    return;
  }
  if (fault.value().endpoint != endpoint) {
    foreign("names this endpoint but " + std::string(header::fault_endpoint) + " is "
            + quoted(fault.value().endpoint));
    return;
  }
  history.pending_fault = std::move(fault).value();
}

} // namespace

int delivery_history::total_attempts(int attempts_this_delivery) const noexcept {
  const std::int64_t total =
      static_cast<std::int64_t>(failed_attempts) + std::max(attempts_this_delivery, 0);
  return static_cast<int>(std::min<std::int64_t>(total, std::numeric_limits<int>::max()));
}

delivery_history read_delivery_history(const envelope& message, std::string_view endpoint,
                                       time_point now) {
  delivery_history history;
  read_failed_attempts(message, history);
  read_first_failure(message, now, history);
  read_pending_fault(message, endpoint, now, history);
  return history;
}

envelope with_failed_delivery(envelope message, const delivery_history& history,
                              int attempts_this_delivery) {
  if (message.delivery_count < std::numeric_limits<std::uint32_t>::max())
    message.delivery_count += 1;
  const int failed = std::min(history.total_attempts(attempts_this_delivery), max_failed_attempts);
  // The copy waits with the scheduler, maybe for hours, a million at a
  // time: room for exactly the history headers it lacks, not the spare
  // slots the vector's doubling would leave (with one header before, one
  // slot of 64 bytes, two thirds of what the scheduler holds per message).
  const auto missing = std::size_t{!message.headers.contains(header::first_failure_at)}
                       + std::size_t{!message.headers.contains(header::failed_attempts)};
  message.headers.reserve(message.headers.size() + missing);
  message.headers.set(header::first_failure_at, std::to_string(to_unix_ms(history.first_failure)));
  message.headers.set(header::failed_attempts, std::to_string(failed));
  return message;
}

envelope with_pending_fault(envelope message, const fault_details& fault,
                            const fault_limits& limits) {
  message = with_fault_headers(std::move(message), fault, limits);
  message.headers.set(header::fault_pending, fault.endpoint);
  return message;
}

result<fault_details> read_fault_headers(const envelope& message, time_point now) {
  const auto malformed = [](std::string_view name, const std::string& why) {
    return error{errc::malformed_message, std::string(name) + " " + why};
  };
  fault_details f;
  const auto text = [&](std::string_view name, std::string& out) {
    const auto value = message.headers.find(name);
    if (!value)
      return false;
    out = std::string(*value);
    return true;
  };
  struct field {
    std::string_view name;
    std::string* out;
  };
  for (const auto& [name, out] : {field{header::fault_exception_type, &f.exception.type},
                                  field{header::fault_message, &f.exception.message},
                                  field{header::fault_reason, &f.reason},
                                  field{header::fault_host, &f.host},
                                  field{header::fault_process, &f.process},
                                  field{header::fault_endpoint, &f.endpoint},
                                  field{header::fault_original_address, &f.original_address}}) {
    if (!text(name, *out))
      return malformed(name, "is missing");
  }
  if (f.exception.type.empty())
    return malformed(header::fault_exception_type, "is empty");

  const auto retries = message.headers.find(header::fault_immediate_retries);
  if (!retries)
    return malformed(header::fault_immediate_retries, "is missing");
  std::int64_t retry_count = 0;
  if (parse_number(*retries, retry_count) != number_state::ok || retry_count < 0
      || retry_count > max_failed_attempts)
    return malformed(header::fault_immediate_retries,
                     quoted(*retries) + " is not a count in [0, "
                         + std::to_string(max_failed_attempts) + "]");
  f.immediate_retries = static_cast<int>(retry_count);

  const auto deliveries = message.headers.find(header::fault_delivery_count);
  if (!deliveries)
    return malformed(header::fault_delivery_count, "is missing");
  if (parse_number(*deliveries, f.delivery_count) != number_state::ok)
    return malformed(header::fault_delivery_count,
                     quoted(*deliveries) + " is not a count in [0, 4294967295]");

  const auto at = message.headers.find(header::fault_at);
  if (!at)
    return malformed(header::fault_at, "is missing");
  const auto when = from_iso8601(*at);
  if (!when)
    return malformed(header::fault_at, quoted(*at) + " is not a UTC time in [1970, 2200]");
  f.at = std::min(*when, std::max(now, time_point{}));
  return f;
}

} // namespace bus
