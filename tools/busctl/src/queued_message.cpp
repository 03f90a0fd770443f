#include "queued_message.hpp"

#include <charconv>

#include "bus/header_names.hpp"

namespace bus::ctl {

namespace {

std::optional<std::int64_t> number(const queued_message& m, std::string_view name) {
  auto text = header_text(m, name);
  std::int64_t value = 0;
  if (!text || text->empty()
      || std::from_chars(text->data(), text->data() + text->size(), value).ec != std::errc())
    return std::nullopt;
  return value;
}

std::string text_or_empty(const queued_message& m, std::string_view name) {
  return header_text(m, name).value_or(std::string());
}

// Why the broker dead-lettered the message (delivery_limit, rejected,
// expired, maxlen), if it did: the newest x-death entry (RabbitMQ puts it
// first), else x-last-death-reason, else x-first-death-reason.
std::string broker_reason(const queued_message& m) {
  for (const auto& h : m.headers) {
    if (h.name != "x-death" || !h.value.is_array() || h.value.empty())
      continue;
    const auto& newest = h.value.front();
    if (auto r = newest.find("reason"); r != newest.end() && r->is_string())
      return r->get<std::string>();
  }
  for (auto name : {"x-last-death-reason", "x-first-death-reason"})
    if (auto r = header_text(m, name); r && !r->empty())
      return *r;
  return {};
}

} // namespace

queued_message to_queued_message(const rabbitmq_queued_message& m, std::size_t position) {
  queued_message out;
  out.position = position;
  out.redelivered = m.redelivered;
  out.headers.reserve(m.headers.size());
  for (const auto& h : m.headers)
    out.headers.push_back(header_field{h.name, h.value});
  out.properties = m.properties;
  out.body = m.body;
  if (auto id = header_text(out, header::message_id); id && !id->empty())
    out.id = *id;
  else if (auto p = m.properties.find("message_id"); p != m.properties.end() && p->is_string())
    out.id = p->get<std::string>();
  return out;
}

std::optional<std::string> header_text(const queued_message& m, std::string_view name) {
  for (const auto& h : m.headers) {
    if (h.name != name)
      continue;
    if (h.value.is_string())
      return h.value.get<std::string>();
    if (h.value.is_number() || h.value.is_boolean())
      return h.value.dump();
    return std::nullopt;
  }
  return std::nullopt;
}

std::string message_type_of(const queued_message& m) {
  if (auto type = header_text(m, header::message_type); type && !type->empty())
    return *type;
  if (auto it = m.properties.find("type"); it != m.properties.end() && it->is_string())
    return it->get<std::string>();
  return {};
}

fault_summary fault_of(const queued_message& m) {
  fault_summary f;
  f.exception_type = text_or_empty(m, header::fault_exception_type);
  f.exception_message = text_or_empty(m, header::fault_message);
  f.reason = text_or_empty(m, header::fault_reason);
  if (f.reason.empty())
    f.reason = broker_reason(m);
  f.at = text_or_empty(m, header::fault_at);
  f.endpoint = text_or_empty(m, header::fault_endpoint);
  f.original_address = text_or_empty(m, header::fault_original_address);
  f.stream_offset = text_or_empty(m, header::fault_stream_offset);
  f.immediate_retries = number(m, header::fault_immediate_retries);
  f.delivery_count = number(m, header::fault_delivery_count);
  f.replay_count = number(m, header::replay_count);
  return f;
}

} // namespace bus::ctl
