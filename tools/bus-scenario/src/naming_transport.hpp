// The bus gives every message an id of its own; the output names messages
// as the scenario does. This transport decorator learns which id stands for
// which name as messages go out: send_message() puts the scenario's name in
// a header, and the bus hands the envelope, id and all, to the transport
// before any endpoint can see it. It also keeps what the bus writes only in
// headers and the output wants: why a message was skipped (the
// bus-skipped-reason header of the copy sent to a skipped queue, which the
// bus sends before it reports the skipped event). Two more things a
// scenario needs pass here: a message with a malformed body gets it
// instead of its JSON on its way out (send_message() puts the text in a
// header), and every fault<T> the bus raises is read and reported (the bus
// raises it before it reports the message's end). Everything else is passed
// through.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bus/transport.hpp"
#include "fault_log.hpp"

namespace bus::scenario {

// The header that carries a message's scenario name.
inline constexpr std::string_view scenario_name_header = "scenario-message";
// The header that carries the malformed body a message is to go out with;
// the transport swaps it in and removes the header.
inline constexpr std::string_view scenario_body_header = "scenario-malformed-body";

// Bus message id -> scenario name, and -> why it was skipped. Thread-safe.
class message_names {
public:
  void remember(const std::string& message_id, std::string name);
  [[nodiscard]] std::optional<std::string> find(const std::string& message_id) const;
  // Every name seen, in the order its first message id went out.
  [[nodiscard]] std::vector<std::string> names() const;
  // How many message ids went out with `name`: each is a message of its
  // own that ends once per delivery (a handler that runs twice without an
  // outbox sends two; copies of one message share one id).
  [[nodiscard]] std::size_t ids_of(const std::string& name) const;

  void remember_skip_reason(const std::string& message_id, std::string reason);
  // The bus-skipped-reason of the message's copy on a skipped queue, if one
  // went there.
  [[nodiscard]] std::optional<std::string> skip_reason(const std::string& message_id) const;

private:
  mutable std::mutex mutex_;
  std::map<std::string, std::string> names_;
  std::vector<std::string> order_;             // names, by their first id
  std::map<std::string, std::size_t> ids_of_; // name -> distinct ids
  std::map<std::string, std::string> skip_reasons_;
};

class naming_transport final : public transport {
public:
  // `on_fault` is called with each fault<T> going out, on the thread of the
  // endpoint that raised it; it must be thread-safe and must not throw.
  naming_transport(transport_ptr inner, std::shared_ptr<message_names> names,
                   std::function<void(const raised_fault&)> on_fault = {})
      : inner_(std::move(inner)), names_(std::move(names)), on_fault_(std::move(on_fault)) {}

  [[nodiscard]] std::string_view name() const noexcept override { return inner_->name(); }
  [[nodiscard]] transport_capabilities capabilities() const noexcept override {
    return inner_->capabilities();
  }
  result<void> declare_queue(const std::string& queue) override {
    return inner_->declare_queue(queue);
  }
  result<void> declare_queue_with(const std::string& queue, const queue_options& options) override {
    return inner_->declare_queue_with(queue, options);
  }
  [[nodiscard]] result<void> check_queue(const std::string& queue) const override {
    return inner_->check_queue(queue);
  }
  result<void> subscribe(const std::string& queue, const std::string& message_type) override {
    return inner_->subscribe(queue, message_type);
  }
  result<void> consume(const std::string& queue, std::size_t max_unacked,
                       delivery_handler on_delivery) override {
    return inner_->consume(queue, max_unacked, std::move(on_delivery));
  }
  void cancel(const std::string& queue) override { inner_->cancel(queue); }
  result<void> send(const std::string& queue, envelope msg) override {
    learn(msg);
    return inner_->send(queue, std::move(msg));
  }
  result<void> send_delayed(const std::string& queue, envelope msg, duration delay) override {
    learn(msg);
    return inner_->send_delayed(queue, std::move(msg), delay);
  }
  result<void> publish(envelope msg) override {
    learn(msg);
    return inner_->publish(std::move(msg));
  }
  result<void> ack(std::uint64_t tag) override { return inner_->ack(tag); }
  result<void> reject(std::uint64_t tag, bool requeue) override {
    return inner_->reject(tag, requeue);
  }

private:
  // Names, skip reasons and faults; swaps in a malformed body.
  void learn(envelope& msg);

  transport_ptr inner_;
  std::shared_ptr<message_names> names_;
  std::function<void(const raised_fault&)> on_fault_;
};

} // namespace bus::scenario
