#include "outgoing.hpp"

#include <random>

#include "resilience_budget.hpp"

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

envelope stamp_outgoing(message_body body, std::string source, time_point now, std::string queue,
                        send_options options, const envelope* received) {
  auto env = make_envelope(std::move(body), std::move(source), now);
  if (!options.message_id.empty())
    env.message_id = std::move(options.message_id);
  env.destination_address = std::move(queue);
  env.correlation_id = options.correlation_id;
  env.response_address = std::move(options.response_address);
  env.fault_address = std::move(options.fault_address);
  env.headers = std::move(options.headers);
  stamp_deadline(env, options, now); // time_to_live, expires_at
  if (received != nullptr)
    carry_over(*received, env, options);
  return env;
}

void carry_over(const envelope& received, envelope& out, const send_options& options) {
  if (options.correlation_id.empty())
    out.correlation_id =
      received.correlation_id.empty() ? received.message_id : received.correlation_id;
  // Not here, as they need what only their callers know: the trace context
  // (handler_context::stage calls carry_trace with the attempt's span) and
  // the handled message's deadline (release_outbox, for endpoints that opt
  // in with inherit_deadline()).
}

} // namespace bus::detail
