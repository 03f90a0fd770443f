#include "rabbitmq_error_queues.hpp"

#include <charconv>
#include <optional>
#include <utility>

#include "bus/header_names.hpp"
#include "bus/replay_headers.hpp"

namespace bus::detail {

namespace {

std::string text_of(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string property(const rabbitmq_queued_message& m, const char* name) {
  auto p = m.properties.find(name);
  return p != m.properties.end() && p->is_string() ? p->get<std::string>() : std::string();
}

std::int64_t replays_before(const failed_message& m) {
  for (const auto& [name, value] : m.headers)
    if (name == header::replay_count) {
      std::int64_t n = 0;
      std::from_chars(value.data(), value.data() + value.size(), n);
      return n;
    }
  return 0;
}

} // namespace

failed_message failed_message_of(const rabbitmq_queued_message& m, const std::string& queue) {
  envelope e;
  for (const auto& h : m.headers)
    e.headers.set(h.name, text_of(h.value));
  auto id = e.headers.find(header::message_id);
  e.message_id = id && !id->empty() ? std::string(*id) : property(m, "message_id");
  auto type = e.headers.find(header::message_type);
  e.message_type = type && !type->empty() ? std::string(*type) : property(m, "type");
  return failed_message_of(e, queue);
}

struct rabbitmq_error_queues::browsed {
  rabbitmq_browse taken;
  std::vector<failed_message> messages;
};

rabbitmq_error_queues::rabbitmq_error_queues(rabbitmq_settings settings,
                                             std::chrono::seconds fresh_for)
    : settings_(std::move(settings)), fresh_for_(fresh_for) {}

rabbitmq_error_queues::~rabbitmq_error_queues() = default;

result<rabbitmq_admin*> rabbitmq_error_queues::admin() {
  if (admin_ && admin_->connected())
    return admin_.get();
  admin_.reset();
  auto opened = rabbitmq_admin::connect(settings_);
  if (!opened)
    return opened.error();
  admin_ = std::move(*opened);
  return admin_.get();
}

result<rabbitmq_error_queues::browsed> rabbitmq_error_queues::browse(const std::string& queue,
                                                                     std::size_t limit) {
  auto a = admin();
  if (!a)
    return a.error();
  auto taken = (*a)->browse(queue, limit);
  if (!taken)
    return taken.error();
  ++browses_;
  std::vector<failed_message> messages;
  messages.reserve(taken->messages().size());
  for (const auto& m : taken->messages())
    messages.push_back(failed_message_of(m, queue));
  return browsed{std::move(*taken), std::move(messages)};
}

result<std::vector<failed_message>> rabbitmq_error_queues::read(const std::string& queue,
                                                                std::size_t limit) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto a = admin();
  if (!a)
    return a.error();
  auto depth = (*a)->depth(queue);
  if (!depth)
    return depth.error();
  auto now = std::chrono::steady_clock::now();
  if (auto last = reads_.find(queue); last != reads_.end() && last->second.limit == limit
                                      && last->second.depth.messages == depth->messages
                                      && now - last->second.at < fresh_for_)
    return last->second.messages;
  auto b = browse(queue, limit);
  if (!b)
    return b.error();
  // Nothing was acknowledged: whether or not the broker answers the close,
  // every message goes back.
  b->taken.give_back();
  reads_[queue] = last_read{limit, *depth, now, b->messages};
  return std::move(b->messages);
}

result<std::size_t> rabbitmq_error_queues::replay(const std::string& queue,
                                                  const failed_selector& selected,
                                                  const std::string& fallback, time_point now) {
  std::lock_guard<std::mutex> guard(mutex_);
  reads_.erase(queue);
  auto b = browse(queue, 0);
  if (!b)
    return b.error();
  std::size_t chosen = 0;
  std::size_t replayed = 0;
  std::optional<error> problem; // the first one that failed
  for (std::size_t i = 0; i < b->messages.size(); ++i) {
    const auto& m = b->messages[i];
    if (!selected(m))
      continue;
    ++chosen;
    if (problem && !b->taken.can_publish())
      continue; // the channel is gone: the rest stay where they are
    auto destination = m.original_address.empty() ? fallback : m.original_address;
    if (destination == queue) {
      problem = error{errc::invalid_configuration,
                      "message " + m.id + " would be replayed onto '" + queue
                        + "' itself (it names no original address)"};
      continue;
    }
    if (auto refusal = stream_replay_refusal(m.stream_offset, m.original_address, destination);
        !refusal.empty()) {
      problem = error{errc::invalid_configuration, "message " + m.id + ": " + refusal};
      continue;
    }
    rabbitmq_copy_changes changes;
    changes.keep_header = [](std::string_view name) { return kept_on_replay(name); };
    changes.added_headers = replay_additions(replays_before(m), now, queue);
    if (auto copied = b->taken.copy_to(i, destination, changes); !copied) {
      problem = copied.error();
      continue;
    }
    // Confirmed: the copy is safe on its destination, the original may go.
    // A failed ack leaves it on both queues (at least once, never neither).
    if (auto acked = b->taken.ack(i); !acked) {
      problem = error{acked.error().code, "message " + m.id + " is on both '" + queue + "' and '"
                                            + destination + "': " + acked.error().message};
      break;
    }
    ++replayed;
  }
  // The close is answered only once the broker processed the acks before it.
  if (!b->taken.give_back() && replayed > 0 && !problem)
    problem = error{errc::transport_failure,
                    "the broker did not confirm the removal of the replayed messages from '"
                      + queue + "': some may be on both queues"};
  if (problem)
    return error{problem->code, "replayed " + std::to_string(replayed) + " of "
                                  + std::to_string(chosen) + "; the others are still on '"
                                  + queue + "': " + problem->message};
  return replayed;
}

result<std::size_t> rabbitmq_error_queues::purge(const std::string& queue,
                                                 const failed_selector& selected) {
  std::lock_guard<std::mutex> guard(mutex_);
  reads_.erase(queue);
  auto b = browse(queue, 0);
  if (!b)
    return b.error();
  std::size_t purged = 0;
  for (std::size_t i = 0; i < b->messages.size(); ++i) {
    if (!selected(b->messages[i]))
      continue;
    if (auto acked = b->taken.ack(i); !acked)
      return error{acked.error().code, "deleted " + std::to_string(purged)
                                         + " before the connection failed: "
                                         + acked.error().message};
    ++purged;
  }
  if (!b->taken.give_back() && purged > 0)
    return error{errc::transport_failure, "the broker did not confirm the deletion from '" + queue
                                            + "': some of the messages may still be there"};
  return purged;
}

std::size_t rabbitmq_error_queues::browses() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return browses_;
}

} // namespace bus::detail
