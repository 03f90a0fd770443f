#include "publisher.hpp"

#include <amqp_framing.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "amqp_bytes.hpp"

namespace bus::detail {

namespace {

std::string ms_text(std::chrono::milliseconds d) {
  return std::to_string(d.count()) + " ms";
}

} // namespace

publisher::publisher(rabbitmq_settings settings, std::shared_ptr<topology_record> record,
                     std::shared_ptr<const rabbitmq_logger> log)
    : settings_(std::move(settings)), levels_(settings_.delay_levels, settings_.delay_unit),
      record_(std::move(record)), log_(std::move(log)),
      backoff_(settings_.reconnect_delay_min, settings_.reconnect_delay_max) {}

publisher::~publisher() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  wake_.notify();
  if (thread_.joinable())
    thread_.join();
}

result<void> publisher::start() {
  std::promise<result<void>> first;
  auto connected = first.get_future();
  thread_ = std::thread([this, p = std::move(first)]() mutable { run(std::move(p)); });
  return connected.get();
}

std::uint64_t publisher::reconnects() const noexcept {
  std::lock_guard<std::mutex> guard(mutex_);
  return reconnects_;
}

void publisher::submit(request_ptr r) {
  bool first = false;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!stopping_) {
      // Set under the lock, so that deadlines never decrease along the
      // queue (see in_flight_).
      r->deadline = clock::now() + settings_.operation_timeout;
      first = incoming_.empty();
      incoming_.push_back(r);
      r = nullptr;
    }
  }
  if (r) {
    finish(r, error{errc::transport_failure, "the RabbitMQ transport is closing"});
    return;
  }
  // Only the request that makes the queue non-empty wakes the thread: the
  // ones behind it are taken with it, as the thread takes the whole queue
  // after clearing the wake-up (one write syscall per batch, not per send).
  if (first)
    wake_.notify();
}

result<std::uint32_t> publisher::submit_and_wait(request_ptr r) {
  std::promise<result<std::uint32_t>> outcome;
  auto future = outcome.get_future();
  if (r->what == kind::inspect)
    r->counted = [&outcome](result<std::uint32_t> n) { outcome.set_value(std::move(n)); };
  else
    r->done = [&outcome](result<void> ok) {
      outcome.set_value(ok ? result<std::uint32_t>{std::uint32_t{0}}
                           : result<std::uint32_t>{ok.error()});
    };
  submit(std::move(r));
  // The I/O thread finishes every request by its deadline, or when it stops.
  return future.get();
}

void publisher::finish(const request_ptr& r, result<std::uint32_t> outcome) {
  auto counted = std::exchange(r->counted, nullptr);
  auto done = std::exchange(r->done, nullptr);
  // A completion must not throw (the port's contract); if one does, it is
  // reported and the I/O thread goes on with the others.
  try {
    if (counted)
      counted(std::move(outcome));
    else if (done)
      done(outcome ? result<void>{} : result<void>{outcome.error()});
  } catch (const std::exception& e) {
    log_->error(std::string("a send's completion threw (it must not): ") + e.what());
  } catch (...) {
    log_->error("a send's completion threw (it must not)");
  }
}

namespace {

result<void> as_void(result<std::uint32_t> r) {
  if (!r)
    return r.error();
  return {};
}

} // namespace

void publisher::async_send(const std::string& queue, outgoing_message msg, completion done) {
  auto r = std::make_shared<request>();
  r->queue = queue;
  r->routing_key = queue;
  r->mandatory = true;
  r->message.emplace(std::move(msg));
  r->done = std::move(done);
  submit(std::move(r));
}

void publisher::async_publish(const std::string& type, outgoing_message msg, completion done) {
  auto r = std::make_shared<request>();
  r->type = type;
  r->exchange = type;
  r->message.emplace(std::move(msg));
  r->done = std::move(done);
  submit(std::move(r));
}

void publisher::async_send_delayed(const std::string& queue, std::uint64_t units,
                                   outgoing_message msg, completion done) {
  auto r = std::make_shared<request>();
  r->queue = queue;
  r->delayed = true;
  r->exchange = levels_.entry_exchange();
  r->routing_key = levels_.routing_key(units, queue);
  r->message.emplace(std::move(msg));
  r->done = std::move(done);
  submit(std::move(r));
}

result<void> publisher::declare_queue(const std::string& queue) {
  auto r = std::make_shared<request>();
  r->what = kind::declare_queue;
  r->queue = queue;
  return as_void(submit_and_wait(std::move(r)));
}

result<void> publisher::subscribe(const std::string& queue, const std::string& type) {
  auto r = std::make_shared<request>();
  r->what = kind::subscribe;
  r->queue = queue;
  r->type = type;
  return as_void(submit_and_wait(std::move(r)));
}

result<std::uint32_t> publisher::message_count(const std::string& queue) {
  auto r = std::make_shared<request>();
  r->what = kind::inspect;
  r->queue = queue;
  return submit_and_wait(std::move(r));
}

// ---- the I/O thread ------------------------------------------------------

void publisher::run(std::promise<result<void>> first) {
  if (!connect_now()) {
    first.set_value(error{errc::transport_failure, last_failure_});
    return;
  }
  first.set_value(result<void>{});
  for (;;) {
    wake_.clear();
    {
      std::lock_guard<std::mutex> guard(mutex_);
      if (stopping_)
        break;
      while (!incoming_.empty()) {
        backlog_.push_back(std::move(incoming_.front()));
        incoming_.pop_front();
      }
    }
    if (session_ && !session_->alive())
      lose_session();
    auto now = clock::now();
    if (!session_ && now >= next_attempt_ && !connect_now())
      next_attempt_ = clock::now() + backoff_.next();
    // Requests in arrival order: a declaration before the send that
    // needs it. A request that meets a dead connection goes back to the
    // front and waits for the next one.
    while (session_ && session_->alive() && !blocked_ && !backlog_.empty()) {
      auto r = std::move(backlog_.front());
      backlog_.pop_front();
      execute(r);
    }
    if (session_ && session_->alive())
      read_frames();
    now = clock::now();
    expire(now);
    if (session_ && !session_->alive())
      continue; // reconnect at once rather than after a poll
    wait_readable(session_ ? session_->fd() : -1, wake_.fd(), idle_wait(now));
    if (session_)
      amqp_maybe_release_buffers(session_->raw());
  }
  // Stopping: whoever still waits learns it now.
  std::deque<request_ptr> left;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    left.swap(incoming_);
  }
  for (auto& [seq, r] : in_flight_)
    left.push_back(r);
  left.insert(left.end(), backlog_.begin(), backlog_.end());
  in_flight_.clear();
  backlog_.clear();
  for (auto& r : left)
    finish(r, error{errc::transport_failure,
                    "the RabbitMQ transport closed before the broker confirmed the request"});
  session_.reset();
}

bool publisher::connect_now() {
  auto opened = amqp_session::open(settings_, "publisher");
  if (!opened) {
    if (ever_connected_ && opened.error().message != last_failure_)
      log_->warn("publishing connection: " + opened.error().message + "; retrying");
    last_failure_ = opened.error().message;
    return false;
  }
  session_ = std::move(*opened);
  // Nothing is declared on a new connection yet, as far as this one knows.
  exchanges_declared_.clear();
  levels_declared_ = false;
  delay_bound_.clear();
  blocked_ = false;
  declare_channel_open_ = false;
  publish_channel_ = session_->new_channel_number();
  declare_channel_ = session_->new_channel_number();
  amqp_status failed = session_->open_channel(publish_channel_);
  if (!failed) {
    amqp_confirm_select(session_->raw(), publish_channel_);
    failed = session_->rpc_status(publish_channel_);
  }
  if (!failed) {
    failed = session_->open_channel(declare_channel_);
    declare_channel_open_ = !failed;
  }
  if (failed) {
    last_failure_ = "RabbitMQ at " + settings_.describe()
                    + ": cannot open the publishing channels: " + describe(*failed);
    session_.reset();
    return false;
  }
  next_seq_ = 1;
  replay_topology();
  if (!session_->alive()) {
    last_failure_ = "RabbitMQ at " + settings_.describe()
                    + ": lost the connection while declaring the topology again: "
                    + describe(session_->death());
    session_.reset();
    return false;
  }
  backoff_.reset();
  if (ever_connected_) {
    std::lock_guard<std::mutex> guard(mutex_);
    ++reconnects_;
  }
  if (ever_connected_)
    log_->info("publishing connection to " + settings_.describe() + " is back");
  ever_connected_ = true;
  connected_ = true;
  return true;
}

void publisher::lose_session() {
  connected_ = false;
  auto why = describe(session_->death());
  last_failure_ = "RabbitMQ at " + settings_.describe() + ": connection lost (" + why + ")";
  log_->warn("publishing connection to " + settings_.describe() + " lost (" + why + "); "
             + std::to_string(in_flight_.size())
             + " unconfirmed messages will be published again once it is back");
  // Publishes the broker never confirmed go out again, first and in their
  // order: the broker may have them already (at least once, not at most).
  for (auto it = in_flight_.rbegin(); it != in_flight_.rend(); ++it) {
    it->second->returned.reset();
    backlog_.push_front(it->second);
  }
  in_flight_.clear();
  session_.reset();
  next_attempt_ = clock::now() + backoff_.next();
}

template <class Declare> amqp_status publisher::declare(Declare&& declare) {
  if (!declare_channel_open_) {
    // A failed declaration closed the channel (close-ok was sent): the
    // number may be opened again.
    if (auto failed = session_->open_channel(declare_channel_))
      return failed;
    declare_channel_open_ = true;
  }
  auto failed = declare(*session_, declare_channel_);
  if (failed && failed->scope == failure_scope::channel)
    declare_channel_open_ = false;
  return failed;
}

void publisher::replay_topology() {
  auto record = record_->copy();
  auto warn = [&](const amqp_failure& f, const std::string& what) {
    if (f.scope == failure_scope::channel)
      log_->warn("declaring " + what + " again after reconnecting failed: " + describe(f));
  };
  for (const auto& q : record.queues)
    if (auto failed = declare([&](amqp_session& s, amqp_channel_t ch) {
          return declare_endpoint_queue(s, ch, q, settings_.queue_type);
        }))
      warn(*failed, "queue '" + q + "'");
  for (const auto& [q, type] : record.subscriptions) {
    auto failed = declare([&, &q = q, &type = type](amqp_session& s, amqp_channel_t ch) {
      return bind_subscription(s, ch, q, type);
    });
    if (failed)
      warn(*failed, "the subscription of '" + q + "' to '" + type + "'");
    else
      exchanges_declared_.insert(type);
  }
  if (record.delay_levels) {
    auto failed = declare(
        [&](amqp_session& s, amqp_channel_t ch) { return declare_delay_levels(s, ch, levels_); });
    if (failed)
      warn(*failed, "the delay levels");
    else
      levels_declared_ = true;
  }
  for (const auto& q : record.delay_destinations) {
    auto failed = declare([&](amqp_session& s, amqp_channel_t ch) {
      return bind_delay_destination(s, ch, levels_, q);
    });
    if (failed)
      warn(*failed, "the delay binding of '" + q + "'");
    else
      delay_bound_.insert(q);
  }
}

void publisher::execute(const request_ptr& r) {
  auto retry_later = [&] { backlog_.push_front(r); };
  switch (r->what) {
    case kind::publish: {
      if (!prepare_publish(r))
        return;
      int status = r->message->publish(session_->raw(), publish_channel_, r->exchange,
                                       r->routing_key, r->mandatory);
      if (session_->call_status(status)) {
        retry_later();
        return;
      }
      in_flight_.emplace(next_seq_++, r);
      return;
    }
    case kind::declare_queue: {
      auto failed = declare([&](amqp_session& s, amqp_channel_t ch) {
        return declare_endpoint_queue(s, ch, r->queue, settings_.queue_type);
      });
      if (failed && failed->scope == failure_scope::connection)
        return retry_later();
      if (failed)
        return finish(r, to_error(*failed, "declaring queue '" + r->queue + "'"));
      record_->add_queue(r->queue);
      return finish(r, std::uint32_t{0});
    }
    case kind::subscribe: {
      auto failed = declare([&](amqp_session& s, amqp_channel_t ch) {
        return bind_subscription(s, ch, r->queue, r->type);
      });
      if (failed && failed->scope == failure_scope::connection)
        return retry_later();
      if (failed)
        return finish(
            r, to_error(*failed, "subscribing queue '" + r->queue + "' to '" + r->type + "'"));
      exchanges_declared_.insert(r->type);
      record_->add_subscription(r->queue, r->type);
      return finish(r, std::uint32_t{0});
    }
    case kind::inspect: {
      std::uint32_t count = 0;
      auto failed = declare([&](amqp_session& s, amqp_channel_t ch) {
        return inspect_queue(s, ch, r->queue, count);
      });
      if (failed && failed->scope == failure_scope::connection)
        return retry_later();
      if (failed)
        return finish(r, to_error(*failed, "looking up queue '" + r->queue + "'"));
      return finish(r, count);
    }
  }
}

// Declares what the publish needs. False: it could not, and the request is
// either finished with the error or back in the backlog for a new session.
bool publisher::prepare_publish(const request_ptr& r) {
  auto settle = [&](const amqp_failure& f, const std::string& context) {
    if (f.scope == failure_scope::connection)
      backlog_.push_front(r);
    else
      finish(r, to_error(f, context));
    return false;
  };
  if (!r->type.empty() && exchanges_declared_.count(r->type) == 0) {
    auto failed = declare(
        [&](amqp_session& s, amqp_channel_t ch) { return declare_type_exchange(s, ch, r->type); });
    if (failed)
      return settle(*failed, "declaring the exchange of message type '" + r->type + "'");
    exchanges_declared_.insert(r->type);
  }
  if (r->delayed && !levels_declared_) {
    auto failed = declare(
        [&](amqp_session& s, amqp_channel_t ch) { return declare_delay_levels(s, ch, levels_); });
    if (failed)
      return settle(*failed, "declaring the delay levels " + levels_.prefix() + ".*");
    levels_declared_ = true;
    record_->add_delay_levels();
  }
  if (r->delayed && delay_bound_.count(r->queue) == 0) {
    auto failed = declare([&](amqp_session& s, amqp_channel_t ch) {
      return bind_delay_destination(s, ch, levels_, r->queue);
    });
    if (failed) {
      if (failed->reply_code == AMQP_NOT_FOUND && failed->scope == failure_scope::channel) {
        finish(r, error{errc::unknown_queue, "cannot hold message " + r->message->message_id()
                                                 + " for queue '" + r->queue
                                                 + "': the queue does not exist"});
        return false;
      }
      return settle(*failed, "binding queue '" + r->queue + "' to the delay levels");
    }
    delay_bound_.insert(r->queue);
    record_->add_delay_destination(r->queue);
  }
  return true;
}

void publisher::read_frames() {
  amqp_frame_t frame;
  while (session_->alive() && session_->poll_frame(frame)) {
    if (frame.frame_type != AMQP_FRAME_METHOD)
      continue; // content of a return is read with its method; nothing else comes here
    switch (frame.payload.method.id) {
      case AMQP_BASIC_ACK_METHOD: {
        auto* ack = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
        on_confirm(ack->delivery_tag, ack->multiple != 0, true);
        break;
      }
      case AMQP_BASIC_NACK_METHOD: {
        auto* nack = static_cast<amqp_basic_nack_t*>(frame.payload.method.decoded);
        on_confirm(nack->delivery_tag, nack->multiple != 0, false);
        break;
      }
      case AMQP_BASIC_RETURN_METHOD:
        on_return(frame);
        break;
      case AMQP_CHANNEL_CLOSE_METHOD: {
        auto failure = session_->channel_closed_by_broker(frame);
        if (frame.channel == declare_channel_) {
          declare_channel_open_ = false;
        } else {
          // The confirm channel is gone, and with it the numbering of the
          // unconfirmed publishes: start over on a new connection, which
          // publishes them again.
          session_->kill("the broker closed the publishing channel: " + describe(failure));
        }
        break;
      }
      case AMQP_CONNECTION_CLOSE_METHOD:
        session_->connection_closed_by_broker(frame);
        break;
      case AMQP_CONNECTION_BLOCKED_METHOD: {
        auto* blocked = static_cast<amqp_connection_blocked_t*>(frame.payload.method.decoded);
        blocked_ = true;
        last_failure_ = "RabbitMQ at " + settings_.describe() + " blocks publishing ("
                        + text_of(blocked->reason) + ")";
        log_->warn(last_failure_ + ": sends wait, and fail after "
                   + ms_text(settings_.operation_timeout));
        break;
      }
      case AMQP_CONNECTION_UNBLOCKED_METHOD:
        blocked_ = false;
        log_->info("RabbitMQ accepts publishes again");
        break;
      default:
        break;
    }
  }
}

void publisher::on_confirm(std::uint64_t tag, bool multiple, bool ack) {
  auto settle = [&](const request_ptr& r) {
    if (!ack)
      return finish(r, error{errc::transport_failure,
                             "RabbitMQ refused message " + r->message->message_id()
                                 + " (basic.nack: an internal error or a full queue)"});
    if (r->returned)
      return finish(r, error{errc::unknown_queue,
                             "queue '" + r->queue + "' does not exist: RabbitMQ returned message "
                                 + r->message->message_id() + " (" + *r->returned + ")"});
    finish(r, std::uint32_t{0});
  };
  if (!multiple) {
    auto it = in_flight_.find(tag);
    if (it != in_flight_.end()) {
      settle(it->second);
      in_flight_.erase(it);
    }
    return;
  }
  auto end = in_flight_.upper_bound(tag);
  for (auto it = in_flight_.begin(); it != end; ++it)
    settle(it->second);
  in_flight_.erase(in_flight_.begin(), end);
}

// A mandatory send that reached no queue comes back before its confirm. The
// return carries no sequence number, so it is matched to the oldest
// unconfirmed send with the same exchange, routing key and message id.
// Returns on a channel arrive in publish order, so this is exact unless the
// queue vanished between two such sends in flight; then the first of them
// went down with the queue anyway.
void publisher::on_return(const amqp_frame_t& frame) {
  auto* ret = static_cast<amqp_basic_return_t*>(frame.payload.method.decoded);
  auto exchange = text_of(ret->exchange);
  auto routing_key = text_of(ret->routing_key);
  auto why = std::to_string(ret->reply_code) + " " + text_of(ret->reply_text);
  amqp_message_t content;
  if (session_->read_content(frame.channel, content))
    return;
  std::string message_id;
  if (content.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
    message_id = text_of(content.properties.message_id);
  amqp_destroy_message(&content);
  for (auto& [seq, r] : in_flight_) {
    if (!r->returned && r->mandatory && r->exchange == exchange && r->routing_key == routing_key
        && (message_id.empty() || r->message->message_id() == message_id)) {
      r->returned = why;
      return;
    }
  }
}

void publisher::expire(clock::time_point now) {
  // Deadlines do not decrease along in_flight_ and backlog_: the expired
  // ones are at the front.
  while (!in_flight_.empty() && in_flight_.begin()->second->deadline <= now) {
    auto r = in_flight_.begin()->second;
    in_flight_.erase(in_flight_.begin());
    finish(r, error{errc::transport_failure,
                    "RabbitMQ at " + settings_.describe() + " did not confirm message "
                        + r->message->message_id() + " within "
                        + ms_text(settings_.operation_timeout)
                        + " (it may still arrive: a retry can duplicate it)"});
  }
  while (!backlog_.empty() && backlog_.front()->deadline <= now) {
    auto r = std::move(backlog_.front());
    backlog_.pop_front();
    finish(r, error{errc::transport_failure,
                    (blocked_ ? "waited " : "no connection to RabbitMQ for ")
                        + ms_text(settings_.operation_timeout) + ": " + last_failure_});
  }
}

std::chrono::milliseconds publisher::idle_wait(clock::time_point now) const {
  // Heartbeats are sent and checked only inside rabbitmq-c calls: come back
  // well within a heartbeat interval even when idle.
  std::chrono::milliseconds wait = std::chrono::seconds(1);
  if (settings_.heartbeat.count() > 0)
    wait = std::min<std::chrono::milliseconds>(wait, settings_.heartbeat / 4);
  auto until = [&](clock::time_point t) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - now)
                + std::chrono::milliseconds(1);
    wait = std::max(std::chrono::milliseconds(0), std::min(wait, left));
  };
  if (!session_)
    until(next_attempt_);
  // The earliest deadlines are at the fronts (see expire).
  if (!in_flight_.empty())
    until(in_flight_.begin()->second->deadline);
  if (!backlog_.empty())
    until(backlog_.front()->deadline);
  return wait;
}

} // namespace bus::detail
