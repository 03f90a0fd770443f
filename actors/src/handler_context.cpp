#include "bus/handler_context.hpp"

#include "bus/handler_verdicts.hpp"
#include "bus/transport.hpp"
#include "outgoing.hpp"
#include "tracing.hpp"

namespace bus {

handler_context::handler_context(const envelope& message, const message_registry& registry,
                                 std::string endpoint, time_point now, int attempt,
                                 const std::atomic<bool>* stopping,
                                 store_transaction* transaction, const transport* streams,
                                 bool reads_stream)
  : message_(&message), registry_(&registry), endpoint_(std::move(endpoint)), now_(now),
    attempt_(attempt), stopping_(stopping), transaction_(transaction), streams_(streams),
    reads_stream_(reads_stream) {}

void handler_context::poison(std::string reason) {
  verdict_ = std::make_exception_ptr(poison_message(reason));
}

void handler_context::retry(std::string reason) {
  verdict_ = std::make_exception_ptr(retry_requested(reason));
}

result<std::string> handler_context::stage(std::string queue, result<message_body> body,
                                           send_options options, duration delay) {
  if (!body)
    return body.error();
  if (delay > duration::zero()) {
    // Shuttle.Esb's rule (bus/stream.hpp): nothing is deferred to a stream.
    if (reads_stream_ && queue == endpoint_)
      return error{errc::invalid_configuration,
                   "endpoint '" + endpoint_ + "' reads a stream: a message cannot be deferred to "
                   "it, since every reader of the stream would read it when it comes"};
    if (streams_ && streams_->is_stream(queue))
      return error{errc::invalid_configuration,
                   "'" + queue + "' is a stream: a message cannot be deferred to it, since "
                   "every reader would read it when it comes; send it now"};
  }
  auto env = detail::stamp_outgoing(std::move(*body), endpoint_, now_, queue, std::move(options),
                                    message_);
  // After the caller's headers: a valid traceparent of theirs is kept.
  detail::carry_trace(*message_, attempt_, now_, env);
  auto id = env.message_id;
  outbox_.push_back(outgoing_message{std::move(queue), std::move(env), delay});
  return id;
}

} // namespace bus
