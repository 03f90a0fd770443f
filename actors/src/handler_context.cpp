#include "bus/handler_context.hpp"

#include "outgoing.hpp"

namespace bus {

handler_context::handler_context(const envelope& message, const message_registry& registry,
                                 std::string endpoint, time_point now, int attempt)
  : message_(&message), registry_(&registry), endpoint_(std::move(endpoint)), now_(now),
    attempt_(attempt) {}

result<void> handler_context::stage(std::string queue, result<message_body> body) {
  if (!body)
    return body.error();
  auto env = detail::make_envelope(std::move(*body), endpoint_, now_);
  // Everything a handler sends belongs to the conversation of what it handles.
  env.correlation_id = message_->correlation_id.empty() ? message_->message_id
                                                        : message_->correlation_id;
  env.destination_address = queue;
  outbox_.push_back(outgoing_message{std::move(queue), std::move(env)});
  return {};
}

} // namespace bus
