#include "bus/in_memory_transport.hpp"

#include <algorithm>

#include "in_memory_error_queues.hpp"

namespace bus {

namespace {

error no_such_queue(const std::string& queue) {
  return error{errc::unknown_queue, "queue '" + queue + "' was never declared"};
}

error no_such_stream(const std::string& stream) {
  return error{errc::unknown_queue, "stream '" + stream + "' was never declared"};
}

error taken_by_the_other_kind(const std::string& name, const char* is, const char* asked) {
  return error{errc::invalid_configuration,
               "'" + name + "' is a " + is + " already; it cannot be declared a " + asked};
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
  if (streams_.count(queue) != 0)
    return taken_by_the_other_kind(queue, "stream", "queue");
  queues_.try_emplace(queue);
  return {};
}

result<void> in_memory_transport::declare_stream(const std::string& stream,
                                                 const stream_retention& retention) {
  if (stream.empty())
    return error{errc::invalid_configuration, "a stream needs a non-empty name"};
  if (auto mistakes = validate(retention); !mistakes.empty())
    return error{errc::invalid_configuration, "stream '" + stream + "': " + mistakes};
  std::lock_guard<std::mutex> guard(mutex_);
  if (queues_.count(stream) != 0)
    return taken_by_the_other_kind(stream, "queue", "stream");
  // Declared again, it keeps what it holds and takes the newer retention,
  // applied from the next append on.
  streams_[stream].retention = retention;
  return {};
}

result<void> in_memory_transport::consume_stream(const std::string& reader,
                                                 const std::string& stream,
                                                 const stream_start& start,
                                                 std::size_t max_unacked,
                                                 delivery_handler on_delivery) {
  if (max_unacked == 0)
    return error{errc::invalid_configuration,
                 "reading '" + stream + "' needs at least one unacknowledged delivery"};
  if (!on_delivery)
    return error{errc::invalid_configuration, "reading '" + stream + "' needs a handler"};
  std::vector<pending_call> batch;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    auto it = streams_.find(stream);
    if (it == streams_.end())
      return no_such_stream(stream);
    if (queues_.count(reader) != 0)
      return error{errc::invalid_configuration,
                   "a reader of '" + stream + "' cannot be named '" + reader
                     + "', the name of a queue: cancel() would not know which to stop"};
    auto& s = it->second;
    auto& r = readers_[reader];
    if (r.handler)
      return error{errc::duplicate, "reader '" + reader + "' reads '" + *r.stream_name + "' already"};
    // Deliveries of an earlier reading still outstanding count against
    // max_unacked until they are settled, as a queue's do.
    r.stream_name = &it->first;
    r.stream = &s;
    r.max_unacked = max_unacked;
    r.handler = std::make_shared<const delivery_handler>(std::move(on_delivery));
    const auto end = s.first + s.log.size();
    switch (start.where) {
      case stream_start::from::first: r.next = s.first; break;
      case stream_start::from::last: r.next = s.log.empty() ? end : end - 1; break;
      case stream_start::from::next: r.next = end; break;
      case stream_start::from::offset: r.next = std::clamp(start.offset, s.first, end); break;
      case stream_start::from::timestamp: {
        auto at = std::find_if(s.log.begin(), s.log.end(), [&](const stream_state::entry& e) {
          return !(e.appended < start.time);
        });
        r.next = s.first + static_cast<std::uint64_t>(at - s.log.begin());
        break;
      }
    }
    take_readable(r, batch);
  }
  deliver(batch);
  return {};
}

result<void> in_memory_transport::check_queue(const std::string& queue) const {
  std::lock_guard<std::mutex> guard(mutex_);
  if (queues_.count(queue) == 0 && streams_.count(queue) == 0)
    return no_such_queue(queue);
  return {};
}

result<void> in_memory_transport::subscribe(const std::string& queue,
                                            const std::string& message_type) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (queues_.count(queue) == 0 && streams_.count(queue) == 0)
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
  std::size_t* delivering = nullptr;
  if (auto it = queues_.find(queue); it != queues_.end()) {
    it->second.handler = nullptr;
    delivering = &it->second.delivering;
  } else if (auto r = readers_.find(queue); r != readers_.end()) {
    r->second.handler = nullptr;
    delivering = &r->second.delivering;
  } else {
    return;
  }
  // Keep the promise that no delivery arrives after cancel returns: wait
  // for calls already on their way on other threads.
  delivered_.wait(lock, [&] { return *delivering == 0; });
}

result<void> in_memory_transport::send(const std::string& queue, envelope msg) {
  return send_shared(queue, std::make_shared<const envelope>(std::move(msg)));
}

void in_memory_transport::async_send_shared(const std::string& queue, envelope_ptr msg,
                                            completion done) {
  done(send_shared(queue, std::move(msg)));
}

void in_memory_transport::async_send_shared_all(const std::string& queue,
                                                const std::vector<envelope_ptr>& msgs,
                                                indexed_completion done) {
  std::vector<pending_call> batch;
  bool known = true;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    for (std::size_t i = 0; known && i < msgs.size(); ++i)
      known = put(queue, msgs[i], batch);
  }
  deliver(batch);
  for (std::size_t i = 0; i < msgs.size(); ++i)
    done(i, known ? result<void>{} : result<void>{no_such_queue(queue)});
}

result<void> in_memory_transport::send_shared(const std::string& queue, envelope_ptr msg) {
  std::vector<pending_call> batch;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!put(queue, std::move(msg), batch))
      return no_such_queue(queue);
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
    for (const auto& queue : subs->second)
      put(queue, shared, batch); // subscribed queues and streams exist
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
    auto settled = std::move(it->second);
    outstanding_.erase(it);
    if (auto* reader = settled.reader) {
      // A stream keeps its message whatever the outcome: a requeue puts
      // nothing back (consume_stream).
      --reader->unacked;
      take_readable(*reader, batch);
    } else {
      auto& q = *settled.queue;
      --q.unacked;
      // A requeued message goes back to the head, as on a broker, so that
      // it is the next one delivered.
      if (requeue)
        q.ready.push_front(waiting{std::move(settled.message), true});
      take_deliverable(*settled.queue_name, q, batch);
    }
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
    outstanding_.emplace(tag, outstanding{&name, &q, nullptr, next.message});
    ++q.unacked;
    ++q.delivering;
    out.push_back(pending_call{q.handler, &q.delivering,
                               delivery{tag, name, std::move(next.message), next.redelivered, {}}});
  }
}

void in_memory_transport::deliver(std::vector<pending_call>& batch) {
  if (batch.empty())
    return;
  for (auto& call : batch)
    (*call.handler)(std::move(call.item));
  std::lock_guard<std::mutex> guard(mutex_);
  for (auto& call : batch)
    --*call.delivering;
  delivered_.notify_all();
}

bool in_memory_transport::put(const std::string& name, envelope_ptr msg,
                              std::vector<pending_call>& out) {
  if (auto q = queues_.find(name); q != queues_.end()) {
    enqueue(q->first, q->second, std::move(msg), out);
    return true;
  }
  if (auto s = streams_.find(name); s != streams_.end()) {
    append(s->second, std::move(msg), out);
    return true;
  }
  return false;
}

void in_memory_transport::append(stream_state& s, envelope_ptr msg,
                                 std::vector<pending_call>& out) {
  auto now = now_();
  s.log.push_back(stream_state::entry{std::move(msg), now});
  // Retention by age, as the message comes: the oldest go first.
  if (s.retention.max_age.count() > 0)
    while (s.log.size() > 1 && now - s.log.front().appended > s.retention.max_age) {
      s.log.pop_front();
      ++s.first;
    }
  for (auto& [name, r] : readers_)
    if (r.stream == &s)
      take_readable(r, out);
}

void in_memory_transport::take_readable(reader_state& r, std::vector<pending_call>& out) {
  auto& s = *r.stream;
  // Retention took what it would read next: it goes on from the oldest kept.
  r.next = std::max(r.next, s.first);
  while (r.handler && r.unacked < r.max_unacked && r.next < s.first + s.log.size()) {
    auto offset = r.next++;
    const auto& message = s.log[offset - s.first].message;
    auto tag = next_tag_++;
    outstanding_.emplace(tag, outstanding{r.stream_name, nullptr, &r, message});
    ++r.unacked;
    ++r.delivering;
    out.push_back(
      pending_call{r.handler, &r.delivering, delivery{tag, *r.stream_name, message, false, offset}});
  }
}

bool in_memory_transport::is_stream(const std::string& name) const {
  std::lock_guard<std::mutex> guard(mutex_);
  return streams_.count(name) != 0;
}

std::optional<std::uint64_t> in_memory_transport::stream_tail(const std::string& stream) const {
  auto bounds = stream_bounds(stream);
  if (!bounds || bounds->next == 0)
    return std::nullopt;
  return bounds->next - 1;
}

std::optional<in_memory_transport::stream_offsets>
in_memory_transport::stream_bounds(const std::string& stream) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = streams_.find(stream);
  if (it == streams_.end())
    return std::nullopt;
  return stream_offsets{it->second.first, it->second.first + it->second.log.size()};
}

void in_memory_transport::set_clock(std::function<time_point()> now) {
  std::lock_guard<std::mutex> guard(mutex_);
  now_ = std::move(now);
}

} // namespace bus
