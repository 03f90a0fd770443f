#include "bus/handler_context.hpp"

#include "bus/handler_verdicts.hpp"
#include "outgoing.hpp"
#include "tracing.hpp"

namespace bus {

handler_context::handler_context(const envelope& message, const message_registry& registry,
                                 std::string endpoint, time_point now, int attempt,
                                 const std::atomic<bool>* stopping)
  : message_(&message), registry_(&registry), endpoint_(std::move(endpoint)), now_(now),
    attempt_(attempt), stopping_(stopping) {}

void handler_context::poison(std::string reason) {
  verdict_ = std::make_exception_ptr(poison_message(reason));
}

void handler_context::retry(std::string reason) {
  verdict_ = std::make_exception_ptr(retry_requested(reason));
}

result<void> handler_context::stage(std::string queue, result<message_body> body) {
  if (!body)
    return body.error();
  auto env = detail::make_envelope(std::move(*body), endpoint_, now_);
  // Everything a handler sends belongs to the conversation of what it handles.
  env.correlation_id = message_->correlation_id.empty() ? message_->message_id
                                                        : message_->correlation_id;
  env.destination_address = queue;
  detail::carry_trace(*message_, attempt_, now_, env);
  outbox_.push_back(outgoing_message{std::move(queue), std::move(env)});
  return {};
}

} // namespace bus
