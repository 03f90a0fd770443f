#include "bus/nservicebus.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "bus/deadline.hpp"

namespace bus::nservicebus {

namespace {

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

// Digits only, all of `text`.
bool read_number(std::string_view text, std::int64_t& out) {
  if (text.empty() || text.size() > 9 || !std::isdigit(static_cast<unsigned char>(text.front())))
    return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out >= 0;
}

error malformed(const envelope& received, std::string_view header, std::string_view value,
                const char* should_be) {
  return error{errc::malformed_message, "message " + received.message_id + " has a "
                                          + std::string(header) + " of '" + std::string(value)
                                          + "', not " + should_be};
}

} // namespace

result<message_names>
message_names::from(const std::vector<std::pair<std::string, std::string>>& type_to_registered) {
  message_names out;
  for (const auto& [type, registered] : type_to_registered) {
    if (type.empty() || registered.empty())
      return error{errc::invalid_configuration, "an NServiceBus type name and its registered name "
                                                "must not be empty"};
    if (type.find(',') != std::string::npos)
      return error{errc::invalid_configuration,
                   "'" + type + "' is an assembly-qualified name; give the type's full name "
                   "alone (Namespace.Type)"};
    if (!out.by_type_.emplace(type, registered).second)
      return error{errc::invalid_configuration, "'" + type + "' is mapped twice"};
    out.by_registered_.emplace(registered, type);
  }
  return out;
}

std::string message_names::type_of(std::string_view registered) const {
  auto it = by_registered_.find(registered);
  return it == by_registered_.end() ? std::string() : it->second;
}

std::string message_names::registered_of(std::string_view enclosed) const {
  while (!enclosed.empty()) {
    auto end = enclosed.find(';');
    auto one = enclosed.substr(0, end);
    enclosed = end == std::string_view::npos ? std::string_view() : enclosed.substr(end + 1);
    auto type = trimmed(one.substr(0, one.find(',')));
    if (auto it = by_type_.find(type); it != by_type_.end())
      return it->second;
  }
  return {};
}

std::string exchange_of(std::string_view type) {
  std::string out(type);
  if (auto dot = out.rfind('.'); dot != std::string::npos)
    out[dot] = ':';
  return out;
}

std::optional<time_point> parse_time(std::string_view text) noexcept {
  // yyyy-MM-dd HH:mm:ss:ffffff Z
  constexpr std::string_view shape = "0000-00-00 00:00:00:000000 Z";
  if (text.size() != shape.size())
    return std::nullopt;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    bool digit = std::isdigit(static_cast<unsigned char>(text[i])) != 0;
    if (shape[i] == '0' ? !digit : text[i] != shape[i])
      return std::nullopt;
  }
  std::string iso(text.substr(0, 19));
  iso[10] = 'T';
  iso += '.';
  iso += text.substr(20, 6);
  iso += 'Z';
  return from_iso8601(iso);
}

std::string format_time(time_point t) {
  auto micros =
    std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  auto secs = static_cast<std::time_t>(micros >= 0 ? micros / 1000000 : (micros - 999999) / 1000000);
  auto rest = static_cast<long>(micros - static_cast<std::int64_t>(secs) * 1000000);
  std::tm parts{};
  gmtime_r(&secs, &parts);
  char buf[96]; // room for any int the format may print
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d:%06ld Z", parts.tm_year + 1900,
                parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, rest);
  return buf;
}

std::optional<duration> parse_time_span(std::string_view text) noexcept {
  std::int64_t days = 0, hours = 0, minutes = 0, seconds = 0, ms = 0;
  auto colon = text.find(':');
  if (colon == std::string_view::npos)
    return std::nullopt;
  auto head = text.substr(0, colon);
  if (auto dot = head.find('.'); dot != std::string_view::npos) {
    if (!read_number(head.substr(0, dot), days) || days > 100000)
      return std::nullopt;
    head = head.substr(dot + 1);
  }
  auto rest = text.substr(colon + 1);
  auto second_colon = rest.find(':');
  if (second_colon == std::string_view::npos)
    return std::nullopt;
  auto secs = rest.substr(second_colon + 1);
  std::string_view fraction;
  if (auto dot = secs.find('.'); dot != std::string_view::npos) {
    fraction = secs.substr(dot + 1);
    secs = secs.substr(0, dot);
    if (fraction.empty() || fraction.size() > 7)
      return std::nullopt;
    std::int64_t digits = 0;
    if (!read_number(fraction, digits))
      return std::nullopt;
    auto millis = std::string(fraction.substr(0, 3));
    millis.resize(3, '0');
    read_number(millis, ms);
  }
  if (!read_number(head, hours) || !read_number(rest.substr(0, second_colon), minutes)
      || !read_number(secs, seconds) || hours > 23 || minutes > 59 || seconds > 59)
    return std::nullopt;
  return duration(((days * 24 + hours) * 60 + minutes) * 60'000 + seconds * 1000 + ms);
}

bool is_nservicebus(const envelope& received) {
  return received.headers.contains(header::message_id);
}

result<envelope> read_message(const envelope& received, const message_names& names) {
  envelope out = received;
  auto text = [&](std::string_view name) { return received.headers.find(name); };
  if (auto id = text(header::message_id); id && !id->empty())
    out.message_id = std::string(*id);
  auto enclosed = text(header::enclosed_message_types);
  out.message_type = enclosed ? names.registered_of(*enclosed) : std::string();
  if (out.message_type.empty())
    out.message_type = names.registered_of(received.message_type); // the AMQP type property
  if (auto conversation = text(header::conversation_id); conversation && !conversation->empty())
    out.correlation_id = std::string(*conversation);
  if (auto reply_to = text(header::reply_to_address); reply_to && !reply_to->empty())
    out.response_address = std::string(*reply_to);
  if (auto sent = text(header::time_sent)) {
    auto at = parse_time(*sent);
    if (!at)
      return malformed(received, header::time_sent, *sent, "a time as NServiceBus writes it");
    out.sent_at = *at;
    if (auto ttbr = text(header::time_to_be_received)) {
      auto span = parse_time_span(*ttbr);
      if (!span)
        return malformed(received, header::time_to_be_received, *ttbr, "a .NET TimeSpan");
      if (to_unix_ms(*at) + span->count() <= max_unix_ms)
        set_expires_at(out, *at + *span);
    }
  }
  return out;
}

namespace {

// A span as .NET's TimeSpan.ToString() writes it, to the millisecond:
// "[d.]hh:mm:ss[.fffffff]".
std::string format_time_span(std::chrono::nanoseconds span) {
  auto ms = std::max<std::int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(span).count());
  auto days = ms / 86400000, hours = ms / 3600000 % 24, minutes = ms / 60000 % 60,
       seconds = ms / 1000 % 60, fraction = ms % 1000;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", static_cast<long long>(hours),
                static_cast<long long>(minutes), static_cast<long long>(seconds));
  std::string out = days > 0 ? std::to_string(days) + "." + buf : std::string(buf);
  if (fraction > 0) {
    std::snprintf(buf, sizeof buf, ".%03lld0000", static_cast<long long>(fraction));
    out += buf;
  }
  return out;
}

std::string_view intent_name(intent why) {
  switch (why) {
    case intent::send:
      return "Send";
    case intent::publish:
      return "Publish";
    case intent::reply:
      return "Reply";
  }
  return "Send";
}

} // namespace

envelope with_headers(envelope msg, std::string_view type, intent why, const sender& from,
                      const envelope* handled) {
  auto& h = msg.headers;
  h.set(header::message_id, msg.message_id);
  h.set(header::enclosed_message_types, std::string(type));
  h.set(header::content_type, "application/json");
  h.set(header::conversation_id, msg.correlation_id.empty() ? msg.message_id : msg.correlation_id);
  auto correlation = msg.message_id;
  if (handled) {
    h.set(header::related_to, handled->message_id);
    auto theirs = handled->headers.find(header::correlation_id);
    if (why == intent::reply)
      correlation = handled->message_id;
    else if (theirs && !theirs->empty())
      correlation = std::string(*theirs);
  }
  h.set(header::correlation_id, std::move(correlation));
  h.set(header::message_intent, std::string(intent_name(why)));
  h.set(header::originating_endpoint, from.endpoint);
  h.set(header::originating_machine, from.machine);
  h.set(header::reply_to_address, from.endpoint);
  h.set(header::time_sent, format_time(msg.sent_at));
  if (auto expires = expires_at(msg))
    h.set(header::time_to_be_received, format_time_span(*expires - msg.sent_at));
  return msg;
}

std::string publish_exchange(const envelope& msg) {
  auto why = msg.headers.find(header::message_intent);
  auto enclosed = msg.headers.find(header::enclosed_message_types);
  if (!why || *why != "Publish" || !enclosed)
    return {};
  auto first = enclosed->substr(0, enclosed->find(';'));
  return exchange_of(trimmed(first.substr(0, first.find(','))));
}

} // namespace bus::nservicebus
