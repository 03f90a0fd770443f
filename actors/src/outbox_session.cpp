#include "bus/outbox_session.hpp"

#include "bus/bus.hpp"

namespace bus {

outbox_session::outbox_session(message_bus& bus, std::shared_ptr<message_store> store,
                               inbox_key key, std::unique_ptr<store_transaction> transaction)
  : bus_(&bus), registry_(&bus.registry()), store_(std::move(store)), key_(std::move(key)),
    transaction_(std::move(transaction)) {}

outbox_session::outbox_session(outbox_session&&) noexcept = default;

outbox_session::~outbox_session() { rollback(); }

result<std::string> outbox_session::stage(const std::string& queue, result<message_body> body,
                                          send_options options) {
  if (!transaction_)
    return error{errc::not_running, "the outbox session has ended"};
  auto env = bus_->stamp(queue, std::move(body), std::move(options));
  if (!env)
    return env.error();
  auto id = env->message_id;
  sends_.push_back(outgoing_message{queue, std::move(*env), {}});
  return id;
}

result<void> outbox_session::commit() {
  if (!transaction_)
    return error{errc::not_running, "the outbox session has ended"};
  auto transaction = std::move(transaction_);
  auto rows = encode_outgoing(sends_);
  if (!rows) {
    transaction->rollback();
    return rows.error();
  }
  if (auto committed = transaction->commit(*rows); !committed)
    return committed.error();
  if (sends_.empty())
    return {}; // the commit recorded it as done
  auto& transport = bus_->transport();
  for (auto& out : sends_) {
    auto sent = out.queue.empty() ? transport.publish(std::move(out.message))
                                  : transport.send(out.queue, std::move(out.message));
    if (!sent) {
      // Committed: the sweeper sends the rest, this process's included.
      bus_->warn_outbox("the outbox session " + key_.message_id + " committed, but a send "
                        "failed (" + to_string(sent.error()) + "); its sweeper sends them");
      if (auto released = store_->release(key_); !released)
        bus_->warn_outbox("cannot release the sends of outbox session " + key_.message_id + " ("
                          + to_string(released.error())
                          + "); they go out once this process's lease ends");
      sends_.clear();
      return {};
    }
  }
  sends_.clear();
  if (auto marked = store_->mark_dispatched(key_, bus_->now()); !marked)
    bus_->warn_outbox("the sends of outbox session " + key_.message_id + " went out, but the "
                      "store cannot record it (" + to_string(marked.error())
                      + "); they may go out again");
  return {};
}

void outbox_session::rollback() noexcept {
  if (auto transaction = std::move(transaction_))
    transaction->rollback();
  sends_.clear();
}

} // namespace bus
