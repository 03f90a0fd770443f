#include "outgoing.hpp"

#include <random>

namespace bus::detail {

std::string new_message_id() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return make_message_id(generator(), generator());
}

envelope make_envelope(message_body body, std::string source, time_point now) {
  envelope env;
  env.message_id = new_message_id();
  env.message_type = body.type() ? body.type()->name : std::string();
  env.sent_at = now;
  env.source_address = std::move(source);
  env.body = std::move(body);
  return env;
}

} // namespace bus::detail
