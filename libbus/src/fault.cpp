#include "bus/fault.hpp"

#include <charconv>

#include "bus/header_names.hpp"

namespace bus {

std::string truncate_utf8(std::string text, std::size_t max_bytes) {
  static constexpr std::string_view marker = "...(truncated)";
  if (text.size() <= max_bytes)
    return text;
  if (max_bytes <= marker.size())
    return std::string(marker.substr(0, max_bytes));
  auto cut = max_bytes - marker.size();
  // Step back over continuation bytes (10xxxxxx) to a character start.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut;
  text.resize(cut);
  text += marker;
  return text;
}

envelope with_fault_headers(envelope message, const fault_details& fault,
                            const fault_limits& limits) {
  auto& h = message.headers;
  h.set(header::fault_exception_type, truncate_utf8(fault.exception.type, limits.max_message_bytes));
  h.set(header::fault_message, truncate_utf8(fault.exception.message, limits.max_message_bytes));
  h.set(header::fault_reason, truncate_utf8(fault.reason, limits.max_message_bytes));
  h.set(header::fault_at, to_iso8601(fault.at));
  h.set(header::fault_host, fault.host);
  h.set(header::fault_process, fault.process);
  h.set(header::fault_endpoint, fault.endpoint);
  h.set(header::fault_original_address, fault.original_address);
  h.set(header::fault_immediate_retries, std::to_string(fault.immediate_retries));
  h.set(header::fault_delivery_count, std::to_string(fault.delivery_count));
  if (fault.stream_offset)
    h.set(header::fault_stream_offset, std::to_string(*fault.stream_offset));
  else
    h.erase(header::fault_stream_offset);
  return message;
}

fault_details fault_from_headers(const envelope& message) {
  auto text = [&](std::string_view name) {
    auto v = message.headers.find(name);
    return v ? std::string(*v) : std::string();
  };
  auto number = [&](std::string_view name, auto& out) {
    auto v = message.headers.find(name);
    if (!v || std::from_chars(v->data(), v->data() + v->size(), out).ec != std::errc())
      out = 0;
  };
  fault_details f;
  f.exception = {text(header::fault_exception_type), text(header::fault_message)};
  f.reason = text(header::fault_reason);
  f.host = text(header::fault_host);
  f.process = text(header::fault_process);
  f.endpoint = text(header::fault_endpoint);
  f.original_address = text(header::fault_original_address);
  number(header::fault_immediate_retries, f.immediate_retries);
  number(header::fault_delivery_count, f.delivery_count);
  if (auto v = message.headers.find(header::fault_stream_offset)) {
    std::uint64_t offset = 0;
    if (std::from_chars(v->data(), v->data() + v->size(), offset).ec == std::errc())
      f.stream_offset = offset;
  }
  if (const auto at = message.headers.find(header::fault_at)) {
    if (const auto when = from_iso8601(*at))
      f.at = *when;
  }
  return f;
}

} // namespace bus
