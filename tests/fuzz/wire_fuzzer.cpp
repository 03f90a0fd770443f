// libFuzzer target: the parsing of untrusted messages (wire headers and a
// JSON body) into envelopes and typed messages. Properties checked:
// nothing crashes or reads out of bounds (the sanitizers), every refusal
// is an error value, and an envelope that parses survives the trip back to
// the wire and in again unchanged.
//
// Input layout: header lines "name:value" separated by '\n', an empty
// line, then the body.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "bus/message_registry.hpp"
#include "bus/wire.hpp"

namespace {

struct order {
  std::string id;
  double amount = 0;
  std::vector<std::string> lines;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order, id, amount, lines)

const bus::message_registry& registry() {
  static const bus::message_registry r = [] {
    bus::message_registry reg;
    if (!reg.add<order>("order"))
      std::abort();
    return reg;
  }();
  return r;
}

bus::wire_message split(std::string_view input) {
  bus::wire_message msg;
  while (!input.empty()) {
    auto end = input.find('\n');
    auto line = input.substr(0, end);
    input = end == std::string_view::npos ? std::string_view{} : input.substr(end + 1);
    if (line.empty())
      break;
    auto colon = line.find(':');
    if (colon == std::string_view::npos)
      msg.headers.set(line, "");
    else
      msg.headers.set(line.substr(0, colon), std::string(line.substr(colon + 1)));
  }
  msg.body = std::string(input);
  return msg;
}

void require(bool condition) {
  if (!condition)
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto env = bus::from_wire(split({reinterpret_cast<const char*>(data), size}));
  if (!env) {
    require(env.error().code == bus::errc::malformed_message && !env.error().message.empty());
    return 0;
  }
  // Decoding the body: a value or an error, never an exception.
  auto body = registry().decode(env->message_type, *env->body.to_json_text());
  if (body)
    require(body->get<order>() != nullptr);
  else
    require(body.error().code == bus::errc::unknown_message_type
            || body.error().code == bus::errc::malformed_message);
  // The round trip keeps every field.
  auto wire = bus::to_wire(*env);
  require(wire.has_value());
  auto again = bus::from_wire(*wire);
  require(again.has_value());
  require(again->message_id == env->message_id);
  require(again->message_type == env->message_type);
  require(again->correlation_id == env->correlation_id);
  require(again->sent_at == env->sent_at);
  require(again->delivery_count == env->delivery_count);
  require(again->headers == env->headers);
  require(*again->body.to_json_text() == *env->body.to_json_text());
  return 0;
}
