// What a handler sees besides its message: the envelope, where it is in its
// retry cycle, and an outbox. What a handler sends, publishes or replies is
// buffered and released only when the handler completes; a failed attempt's
// messages are dropped, so retries never send duplicates.
//
// A context belongs to one attempt on one consumer actor: not thread-safe,
// not to be kept after the handler returns.
//
// Every send takes the facade's send_options and returns the id of the
// message it buffered. What the bus carries over by itself from the message
// being handled, unless the options say otherwise: its correlation id (or
// its message id when it has none), so replies and follow-ups join its
// conversation; the bus has no conversation id apart from that. Trace
// context and deadlines are carried in the same place (detail::carry_over).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bus/envelope.hpp"
#include "bus/error.hpp"
#include "bus/message_registry.hpp"
#include "bus/message_store.hpp"
#include "bus/outgoing_message.hpp"
#include "bus/send_options.hpp"

namespace bus {

class transport;

class handler_context {
public:
  // `stopping`, if given, is the endpoint's stop flag (see stop_requested);
  // `transaction`, the attempt's store transaction on an endpoint with an
  // outbox. `streams`, if given, tells the streams that nothing may be
  // deferred to (issue 27), and `reads_stream` says that this endpoint
  // reads one, so that nothing may be deferred to itself either.
  handler_context(const envelope& message, const message_registry& registry,
                  std::string endpoint, time_point now, int attempt,
                  const std::atomic<bool>* stopping = nullptr,
                  store_transaction* transaction = nullptr, const transport* streams = nullptr,
                  bool reads_stream = false);

  [[nodiscard]] const envelope& message() const noexcept { return *message_; }
  [[nodiscard]] const std::string& message_id() const noexcept { return message_->message_id; }
  [[nodiscard]] const std::string& endpoint() const noexcept { return endpoint_; }
  // Attempts made in this delivery, this one included (1 on the first).
  [[nodiscard]] int attempt() const noexcept { return attempt_; }
  // Redeliveries performed before this delivery (0 on the first).
  [[nodiscard]] std::uint32_t delivery_count() const noexcept { return message_->delivery_count; }
  // When this attempt started, by the bus's clock: virtual time on CAF's
  // test coordinator, so a handler that reasons about time is testable.
  [[nodiscard]] time_point now() const noexcept { return now_; }
  // Whether the endpoint was asked to stop while this handler runs. A
  // long-running handler may check it and give up early: its message goes
  // back to its queue once the drain timeout passes, and whatever the
  // handler does after that has no effect.
  [[nodiscard]] bool stop_requested() const noexcept {
    return stopping_ != nullptr && stopping_->load(std::memory_order_relaxed);
  }

  // On an endpoint with an outbox (endpoint_builder::outbox): this
  // attempt's database transaction, as the store's adapter types it
  // (bus::sqlite_transaction, bus::postgresql_transaction), to write the
  // handler's own rows through. They commit together with the inbox record
  // and the handler's sends once it returns, or not at all if it throws.
  // The handler never commits or rolls back itself. Throws
  // std::logic_error if the endpoint has no outbox or T is not its type.
  template <class T>
  [[nodiscard]] T& transaction() const {
    auto* typed = dynamic_cast<T*>(transaction_);
    if (typed == nullptr)
      throw std::logic_error(transaction_ == nullptr
                               ? "endpoint '" + endpoint_ + "' has no outbox, so no transaction"
                               : "endpoint '" + endpoint_
                                   + "' has a transaction of another store type");
    return *typed;
  }

  // Buffers `msg` for `queue`. Fails only if T is not a registered message.
  template <class T>
  result<std::string> send(std::string queue, T msg, send_options options = {}) {
    return stage(std::move(queue), registry_->make_body(std::move(msg)), std::move(options), {});
  }

  // Buffers `msg` for the queue T is routed to (bus_builder::route<T>);
  // errc::invalid_configuration, naming the type, if it has no route.
  template <class T>
  result<std::string> send(T msg, send_options options = {}) {
    auto queue = registry_->route_of<T>();
    if (!queue)
      return queue.error();
    return send(std::move(*queue), std::move(msg), std::move(options));
  }

  // Buffers `msg` for every endpoint subscribed to T.
  template <class T>
  result<std::string> publish(T msg, send_options options = {}) {
    return stage({}, registry_->make_body(std::move(msg)), std::move(options), {});
  }

  // Buffers `msg` for the response address of the message being handled;
  // errc::invalid_configuration if it has none. The reply carries the
  // handled message's correlation id, which is what a waiting
  // message_bus::request matches it by.
  template <class T>
  result<std::string> reply(T msg, send_options options = {}) {
    if (message_->response_address.empty())
      return error{errc::invalid_configuration,
                   "message " + message_id() + " has no response address to reply to"};
    return send(message_->response_address, std::move(msg), std::move(options));
  }

  // Buffers `msg` for this endpoint's own queue, to arrive once `delay` has
  // passed after the handler succeeded (a timeout, a reminder, a saga's
  // next step). Held as redeliveries are: by the bus's scheduler in memory,
  // by the broker's delay levels on RabbitMQ (it survives a restart there).
  // Refused (errc::invalid_configuration) on an endpoint that reads a
  // stream, and to a stream: every reader would read the message when it
  // comes (bus/stream.hpp).
  template <class T>
  result<std::string> defer(duration delay, T msg, send_options options = {}) {
    return defer(delay, endpoint_, std::move(msg), std::move(options));
  }
  // The same, for `queue`.
  template <class T>
  result<std::string> defer(duration delay, std::string queue, T msg, send_options options = {}) {
    return stage(std::move(queue), registry_->make_body(std::move(msg)), std::move(options),
                 delay);
  }

  // Ends this attempt as poison: the message goes to the error queue at
  // once and the outbox is dropped, as if the handler had thrown
  // bus::poison_message(reason).
  void poison(std::string reason);
  // Ends this attempt as failed, without an exception of the handler's own:
  // the policy decides how to retry, as if it had thrown
  // bus::retry_requested(reason). The outbox is dropped.
  void retry(std::string reason);
  // The failure poison() or retry() recorded, or null.
  [[nodiscard]] const std::exception_ptr& verdict() const noexcept { return verdict_; }

  // The buffered messages, for the consumer to release on success.
  [[nodiscard]] std::vector<outgoing_message> take_outbox() noexcept { return std::move(outbox_); }

private:
  result<std::string> stage(std::string queue, result<message_body> body, send_options options,
                            duration delay);

  const envelope* message_;
  const message_registry* registry_;
  std::string endpoint_;
  time_point now_;
  int attempt_;
  const std::atomic<bool>* stopping_;
  store_transaction* transaction_;
  const transport* streams_;
  bool reads_stream_;
  std::vector<outgoing_message> outbox_;
  std::exception_ptr verdict_;
};

} // namespace bus
