#include "bus/in_memory_transport.hpp"

#include <algorithm>

#include "in_memory_error_queues.hpp"

namespace bus {

namespace {

error no_such_queue(const std::string& queue) {
  return error{errc::unknown_queue, "queue '" + queue + "' was never declared"};
}

} // namespace

in_memory_transport::in_memory_transport()
  : error_queues_(std::make_unique<detail::in_memory_error_queues>(*this)) {}

in_memory_transport::~in_memory_transport() = default;

error_queue_access* in_memory_transport::error_queues() noexcept { return error_queues_.get(); }

result<void> in_memory_transport::declare_queue(const std::string& queue) {
  if (queue.empty())
    return error{errc::invalid_configuration, "a queue needs a non-empty name"};
  std::lock_guard<std::mutex> guard(mutex_);
  queues_.try_emplace(queue);
  return {};
}

result<void> in_memory_transport::check_queue(const std::string& queue) const {
  std::lock_guard<std::mutex> guard(mutex_);
  if (queues_.count(queue) == 0)
    return no_such_queue(queue);
  return {};
}

result<void> in_memory_transport::subscribe(const std::string& queue,
                                            const std::string& message_type) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (queues_.count(queue) == 0)
    return no_such_queue(queue);
  auto& queues = subscribers_[message_type];
  if (std::find(queues.begin(), queues.end(), queue) == queues.end())
    queues.push_back(queue);
  return {};
}

result<void> in_memory_transport::consume(const std::string& queue, std::size_t max_unacked,
                                          delivery_handler on_delivery) {
  if (max_unacked == 0)
    return error{errc::invalid_configuration,
                 "consuming '" + queue + "' needs at least one unacknowledged delivery"};
  if (!on_delivery)
    return error{errc::invalid_configuration, "consuming '" + queue + "' needs a handler"};
  std::vector<pending_call> batch;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    auto it = queues_.find(queue);
    if (it == queues_.end())
      return no_such_queue(queue);
    if (it->second.handler)
      return error{errc::duplicate, "queue '" + queue + "' already has a consumer"};
    it->second.handler = std::make_shared<const delivery_handler>(std::move(on_delivery));
    it->second.max_unacked = max_unacked;
    take_deliverable(it->first, it->second, batch);
  }
  deliver(batch);
  return {};
}

void in_memory_transport::cancel(const std::string& queue) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = queues_.find(queue);
  if (it == queues_.end())
    return;
  it->second.handler = nullptr;
  // Keep the promise that no delivery arrives after cancel returns: wait
  // for calls already on their way on other threads.
  delivered_.wait(lock, [&] { return it->second.delivering == 0; });
}

result<void> in_memory_transport::send(const std::string& queue, envelope msg) {
  return send_shared(queue, std::make_shared<const envelope>(std::move(msg)));
}

void in_memory_transport::async_send_shared(const std::string& queue, envelope_ptr msg,
                                            completion done) {
  done(send_shared(queue, std::move(msg)));
}

result<void> in_memory_transport::send_shared(const std::string& queue, envelope_ptr msg) {
  std::vector<pending_call> batch;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    auto it = queues_.find(queue);
    if (it == queues_.end())
      return no_such_queue(queue);
    enqueue(it->first, it->second, std::move(msg), batch);
  }
  deliver(batch);
  return {};
}

result<void> in_memory_transport::publish(envelope msg) {
  std::vector<pending_call> batch;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    auto subs = subscribers_.find(msg.message_type);
    if (subs == subscribers_.end())
      return {};
    // One immutable envelope shared by every subscriber: a typed body is
    // never copied, whatever the fan-out.
    auto shared = std::make_shared<const envelope>(std::move(msg));
    for (const auto& queue : subs->second) {
      auto& entry = *queues_.find(queue); // subscribed queues exist
      enqueue(entry.first, entry.second, shared, batch);
    }
  }
  deliver(batch);
  return {};
}

result<void> in_memory_transport::ack(std::uint64_t tag) {
  return reject(tag, /*requeue=*/false);
}

result<void> in_memory_transport::reject(std::uint64_t tag, bool requeue) {
  std::vector<pending_call> batch;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    auto it = outstanding_.find(tag);
    if (it == outstanding_.end())
      return error{errc::transport_failure,
                   "delivery " + std::to_string(tag) + " is not outstanding (settled twice?)"};
    const auto& queue_name = *it->second.queue_name;
    auto& q = *it->second.queue;
    auto message = std::move(it->second.message);
    outstanding_.erase(it);
    --q.unacked;
    // A requeued message goes back to the head, as on a broker, so that it
    // is the next one delivered.
    if (requeue)
      q.ready.push_front(waiting{std::move(message), true});
    take_deliverable(queue_name, q, batch);
  }
  deliver(batch);
  return {};
}

std::vector<envelope_ptr> in_memory_transport::browse(const std::string& queue) const {
  std::lock_guard<std::mutex> guard(mutex_);
  std::vector<envelope_ptr> out;
  if (auto it = queues_.find(queue); it != queues_.end())
    for (const auto& w : it->second.ready)
      out.push_back(w.message);
  return out;
}

std::size_t in_memory_transport::depth(const std::string& queue) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = queues_.find(queue);
  return it == queues_.end() ? 0 : it->second.ready.size();
}

std::size_t in_memory_transport::unacked(const std::string& queue) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = queues_.find(queue);
  return it == queues_.end() ? 0 : it->second.unacked;
}

bool in_memory_transport::has_queue(const std::string& queue) const {
  std::lock_guard<std::mutex> guard(mutex_);
  return queues_.count(queue) != 0;
}

std::vector<envelope_ptr>
in_memory_transport::take(const std::string& queue,
                          const std::function<bool(const envelope&)>& selected) {
  std::lock_guard<std::mutex> guard(mutex_);
  std::vector<envelope_ptr> out;
  auto it = queues_.find(queue);
  if (it == queues_.end())
    return out;
  auto& ready = it->second.ready;
  auto kept = std::stable_partition(ready.begin(), ready.end(), [&](const waiting& w) {
    return !selected(*w.message);
  });
  for (auto i = kept; i != ready.end(); ++i)
    out.push_back(std::move(i->message));
  ready.erase(kept, ready.end());
  return out;
}

void in_memory_transport::enqueue(const std::string& name, queue_state& q, envelope_ptr msg,
                                  std::vector<pending_call>& out) {
  q.ready.push_back(waiting{std::move(msg), false});
  take_deliverable(name, q, out);
}

void in_memory_transport::take_deliverable(const std::string& name, queue_state& q,
                                           std::vector<pending_call>& out) {
  while (q.handler && q.unacked < q.max_unacked && !q.ready.empty()) {
    auto next = std::move(q.ready.front());
    q.ready.pop_front();
    auto tag = next_tag_++;
    outstanding_.emplace(tag, outstanding{&name, &q, next.message});
    ++q.unacked;
    ++q.delivering;
    out.push_back(
      pending_call{q.handler, &q, delivery{tag, name, std::move(next.message), next.redelivered}});
  }
}

void in_memory_transport::deliver(std::vector<pending_call>& batch) {
  if (batch.empty())
    return;
  for (auto& call : batch)
    (*call.handler)(std::move(call.item));
  std::lock_guard<std::mutex> guard(mutex_);
  for (auto& call : batch)
    --call.from->delivering;
  delivered_.notify_all();
}

} // namespace bus
