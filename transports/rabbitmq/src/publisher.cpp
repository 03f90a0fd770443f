#include "publisher.hpp"

#include <amqp_framing.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "amqp_bytes.hpp"
#include "connection_loop.hpp"

namespace bus::detail {

namespace {

std::string ms_text(std::chrono::milliseconds d) {
  return std::to_string(d.count()) + " ms";
}

} // namespace

publisher::publisher(rabbitmq_settings settings, std::shared_ptr<topology_record> record,
                     std::shared_ptr<const rabbitmq_logger> log)
    : settings_(std::move(settings)),
      levels_(settings_.delay_levels, settings_.delay_unit),
      record_(std::move(record)), log_(std::move(log)),
      loop_(settings_, "publisher", "publishing connection", log_, *this),
      stall_(settings_.confirm_stall_timeout.count() > 0
                 ? clock::duration(settings_.confirm_stall_timeout)
                 : std::max<clock::duration>(std::chrono::seconds(1),
                                             settings_.operation_timeout / 4)) {}

publisher::~publisher() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  loop_.stop_and_join();
}

result<void> publisher::start() {
  return loop_.start();
}

std::uint64_t publisher::reconnects() const noexcept {
  return loop_.reconnects();
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
    loop_.wake();
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

result<void> publisher::declare_queue(const std::string& queue, const queue_options& options) {
  auto r = std::make_shared<request>();
  r->what = kind::declare_queue;
  r->queue = queue;
  r->options = options;
  return as_void(submit_and_wait(std::move(r)));
}

result<void> publisher::declare_stream(const std::string& stream,
                                       const stream_retention& retention) {
  auto r = std::make_shared<request>();
  r->what = kind::declare_stream;
  r->queue = stream;
  r->retention = retention;
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

bool publisher::turn() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (stopping_)
      return false;
    while (!incoming_.empty()) {
      backlog_.push_back(std::move(incoming_.front()));
      incoming_.pop_front();
    }
  }
  loop_.maintain();
  republish_refused(clock::now());
  // Requests in arrival order: a declaration before the send that
  // needs it. A request that meets a dead connection goes back to the
  // front and waits for the next one; all wait while refused publishes
  // wait for their next attempt.
  while (session() && session()->alive() && !blocked_ && refused_.empty() && !backlog_.empty()) {
    auto r = std::move(backlog_.front());
    backlog_.pop_front();
    execute(r);
  }
  if (session() && session()->alive())
    read_frames();
  auto now = clock::now();
  expire(now);
  if (recover_stalled_confirms(now))
    loop_.wake(); // what it requeued goes out in the next turn, not after the idle wait
  return true;
}

void publisher::stopped() {
  // Whoever still waits learns it now.
  std::deque<request_ptr> left;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    left.swap(incoming_);
  }
  requeue_unconfirmed();
  left.insert(left.end(), backlog_.begin(), backlog_.end());
  backlog_.clear();
  for (auto& r : left)
    finish(r, error{errc::transport_failure,
                    "the RabbitMQ transport closed before the broker confirmed the request"});
}

std::optional<std::string> publisher::session_opened(amqp_session& s) {
  // Nothing is declared on a new connection yet, as far as this one knows.
  exchanges_declared_.clear();
  levels_declared_ = false;
  delay_bound_.clear();
  blocked_ = false;
  declare_channel_open_ = false;
  stall_.reset(); // its question went with the old connection
  question_channel_ = 0;
  publish_channel_ = s.new_channel_number();
  declare_channel_ = s.new_channel_number();
  amqp_status failed = s.open_channel(publish_channel_);
  if (!failed) {
    amqp_confirm_select(s.raw(), publish_channel_);
    failed = s.rpc_status(publish_channel_);
  }
  if (!failed) {
    failed = s.open_channel(declare_channel_);
    declare_channel_open_ = !failed;
  }
  if (failed)
    return "RabbitMQ at " + settings_.describe()
           + ": cannot open the publishing channels: " + describe(*failed);
  next_seq_ = 1;
  replay_topology();
  if (!s.alive())
    return "RabbitMQ at " + settings_.describe()
           + ": lost the connection while declaring the topology again: " + describe(s.death());
  return std::nullopt;
}

std::string publisher::session_lost() {
  auto unconfirmed = in_flight_.size() + refused_.size();
  // Publishes the broker never confirmed go out again, first and in their
  // order: the broker may have them already (at least once, not at most).
  // The refused ones it certainly does not have.
  republished_ += in_flight_.size();
  requeue_unconfirmed();
  return std::to_string(unconfirmed)
         + " unconfirmed messages will be published again once it is back";
}

void publisher::requeue_unconfirmed() {
  // Both are numbered on the same channel: merged by number, they are in
  // the order they were published.
  auto unconfirmed = std::move(in_flight_);
  unconfirmed.merge(refused_);
  in_flight_.clear();
  refused_.clear();
  for (auto it = unconfirmed.rbegin(); it != unconfirmed.rend(); ++it) {
    it->second->returned.reset();
    backlog_.push_front(it->second);
  }
}

void publisher::republish_refused(clock::time_point now) {
  // Waiting for the confirms still in flight first means that nothing is
  // published twice here: only what the broker refused goes out again.
  if (refused_.empty() || now < republish_at_ || !in_flight_.empty() || !session()
      || !session()->alive())
    return;
  // The broker keeps some state per channel (a quorum queue's record of
  // its publishers), so the next attempt is made on a fresh one. If the
  // session died instead, session_lost() requeues the refused ones for the
  // next connection.
  if (switch_publish_channel())
    requeue_unconfirmed();
}

std::optional<publisher::clock::time_point> publisher::oldest_judged() const {
  // Blocked, the broker reads nothing: a confirm is late for that reason,
  // and a new channel's methods would only fill the socket. Judged while
  // refused publishes wait too: their round waits for the confirms in
  // flight, and a confirm lost with a dead leader never comes (the
  // failover case: nacks from the new leader's election, confirms lost
  // with the old one). A move takes both, merged in their order.
  if (in_flight_.empty() || blocked_ || !session() || !session()->alive())
    return std::nullopt;
  return in_flight_.begin()->second->sent_at;
}

bool publisher::recover_stalled_confirms(clock::time_point now) {
  auto oldest_sent = oldest_judged();
  switch (stall_.next(oldest_sent, now)) {
    case confirm_stall::step::wait:
      return false;
    case confirm_stall::step::drop:
      drop_question();
      return false;
    case confirm_stall::step::ask: {
      auto* s = session();
      auto channel = s->new_channel_number();
      if (channel == 0) {
        s->kill("no channel number left for a new publishing channel");
        return false;
      }
      // Sent without waiting; the answer comes through read_frames.
      amqp_channel_open_t open{};
      amqp_confirm_select_t select{};
      select.nowait = 1;
      int status = amqp_send_method(s->raw(), channel, AMQP_CHANNEL_OPEN_METHOD, &open);
      if (status >= 0)
        status = amqp_send_method(s->raw(), channel, AMQP_CONFIRM_SELECT_METHOD, &select);
      if (s->call_status(status))
        return false;
      question_channel_ = channel;
      stall_.asked(next_seq_, now);
      log_->info("RabbitMQ has not confirmed message "
                 + in_flight_.begin()->second->message->message_id() + " in "
                 + ms_text(std::chrono::duration_cast<std::chrono::milliseconds>(
                     now - *oldest_sent))
                 + "; asking on a new channel whether it still reads this connection");
      return false;
    }
    case confirm_stall::step::move:
      break;
  }
  // The broker reads this connection, and the old channel has confirmed
  // nothing sent before the question since: it lost what it sent.
  // Everything unconfirmed goes out again on the question's channel; the
  // broker may have some of it already (at least once).
  log_->warn("RabbitMQ has not confirmed message "
             + in_flight_.begin()->second->message->message_id() + " in "
             + ms_text(std::chrono::duration_cast<std::chrono::milliseconds>(now - *oldest_sent))
             + " although it answers on this connection; publishing the "
             + std::to_string(in_flight_.size())
             + " unconfirmed messages again on a new channel");
  auto* s = session();
  amqp_channel_close_t close{};
  close.reply_code = AMQP_REPLY_SUCCESS;
  close.reply_text = amqp_cstring_bytes("moving to a new publishing channel");
  if (s->call_status(
          amqp_send_method(s->raw(), publish_channel_, AMQP_CHANNEL_CLOSE_METHOD, &close)))
    return false;
  publish_channel_ = question_channel_;
  question_channel_ = 0;
  stall_.reset();
  next_seq_ = 1;
  republished_ += in_flight_.size();
  requeue_unconfirmed();
  return true;
}

void publisher::drop_question() {
  stall_.reset();
  auto channel = std::exchange(question_channel_, 0);
  auto* s = session();
  if (channel == 0 || !s || !s->alive())
    return;
  // Its close-ok comes back on a channel read_frames treats as retired.
  amqp_channel_close_t close{};
  close.reply_code = AMQP_REPLY_SUCCESS;
  close.reply_text = amqp_cstring_bytes("the publishing channel confirms again");
  (void)s->call_status(amqp_send_method(s->raw(), channel, AMQP_CHANNEL_CLOSE_METHOD, &close));
}

bool publisher::switch_publish_channel() {
  drop_question(); // it was about the channel retired here
  auto* s = session();
  if (!s->alive())
    return false;
  auto next = s->new_channel_number();
  if (next == 0) {
    // A new connection numbers its channels from 1 again.
    s->kill("no channel number left for a new publishing channel");
    return false;
  }
  // Nothing here waits for the broker: on a stalled connection an RPC would
  // hold this thread, and every deadline with it, for operation_timeout.
  // The broker carries the methods out in order: the new channel is open
  // and in confirm mode before the first publish on it arrives. The old
  // channel's late frames are ignored (read_frames looks at one channel).
  amqp_channel_close_t close{};
  close.reply_code = AMQP_REPLY_SUCCESS;
  close.reply_text = amqp_cstring_bytes("moving to a new publishing channel");
  amqp_channel_open_t open{};
  amqp_confirm_select_t select{};
  select.nowait = 1;
  int status = amqp_send_method(s->raw(), publish_channel_, AMQP_CHANNEL_CLOSE_METHOD, &close);
  if (status >= 0)
    status = amqp_send_method(s->raw(), next, AMQP_CHANNEL_OPEN_METHOD, &open);
  if (status >= 0)
    status = amqp_send_method(s->raw(), next, AMQP_CONFIRM_SELECT_METHOD, &select);
  if (s->call_status(status))
    return false;
  publish_channel_ = next;
  next_seq_ = 1;
  return true;
}

template <class Declare> amqp_status publisher::declare(Declare&& declare) {
  if (!declare_channel_open_) {
    // A failed declaration closed the channel (close-ok was sent): the
    // number may be opened again.
    if (auto failed = session()->open_channel(declare_channel_))
      return failed;
    declare_channel_open_ = true;
  }
  auto failed = declare(*session(), declare_channel_);
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
  for (const auto& [q, options] : record.queues)
    if (auto failed = declare([&, &q = q, &options = options](amqp_session& s, amqp_channel_t ch) {
          return declare_endpoint_queue(s, ch, q, options, settings_);
        }))
      warn(*failed, "queue '" + q + "'");
  for (const auto& [name, retention] : record.streams)
    if (auto failed = declare([&, &name = name, &retention = retention](amqp_session& s,
                                                                       amqp_channel_t ch) {
          return declare_stream_queue(s, ch, name, retention);
        }))
      warn(*failed, "stream '" + name + "'");
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
      int status = r->message->publish(session()->raw(), publish_channel_, r->exchange,
                                       r->routing_key, r->mandatory);
      if (session()->call_status(status)) {
        retry_later();
        return;
      }
      r->sent_at = clock::now();
      in_flight_.emplace(next_seq_++, r);
      return;
    }
    case kind::declare_queue: {
      auto failed = declare([&](amqp_session& s, amqp_channel_t ch) {
        return declare_endpoint_queue(s, ch, r->queue, r->options, settings_);
      });
      if (failed && failed->scope == failure_scope::connection)
        return retry_later();
      if (failed)
        return finish(r, to_error(*failed, "declaring queue '" + r->queue + "'"));
      record_->add_queue(r->queue, r->options);
      return finish(r, std::uint32_t{0});
    }
    case kind::declare_stream: {
      auto failed = declare([&](amqp_session& s, amqp_channel_t ch) {
        return declare_stream_queue(s, ch, r->queue, r->retention);
      });
      if (failed && failed->scope == failure_scope::connection)
        return retry_later();
      if (failed)
        return finish(r, to_error(*failed, "declaring stream '" + r->queue + "'"));
      record_->add_stream(r->queue, r->retention);
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
  while (session()->alive() && session()->poll_frame(frame)) {
    if (frame.frame_type != AMQP_FRAME_METHOD)
      continue; // content of a return is read with its method; nothing else comes here
    if (question_channel_ != 0 && frame.channel == question_channel_) {
      if (frame.payload.method.id == AMQP_CHANNEL_OPEN_OK_METHOD) {
        stall_.answered(clock::now());
      } else if (frame.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD) {
        session()->channel_closed_by_broker(frame); // answers close-ok
        question_channel_ = 0;
        stall_.reset();
      }
      continue;
    }
    // A publishing channel left behind (switch_publish_channel) may still
    // send confirms, returns and its close-ok: its publishes went out again
    // on the current channel, and are settled there.
    bool retired = frame.channel != publish_channel_ && frame.channel != declare_channel_
                   && frame.channel != 0;
    if (retired) {
      if (frame.payload.method.id == AMQP_BASIC_RETURN_METHOD) {
        amqp_message_t content;
        if (!session()->read_content(frame.channel, content))
          amqp_destroy_message(&content);
      } else if (frame.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD) {
        session()->channel_closed_by_broker(frame); // answers close-ok
      }
      continue;
    }
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
        auto failure = session()->channel_closed_by_broker(frame);
        if (frame.channel == declare_channel_) {
          declare_channel_open_ = false;
        } else {
          // The confirm channel is gone, and with it the numbering of the
          // unconfirmed publishes: start over on a new connection, which
          // publishes them again.
          session()->kill("the broker closed the publishing channel: " + describe(failure));
        }
        break;
      }
      case AMQP_CONNECTION_CLOSE_METHOD:
        session()->connection_closed_by_broker(frame);
        break;
      case AMQP_CONNECTION_BLOCKED_METHOD: {
        auto* blocked = static_cast<amqp_connection_blocked_t*>(frame.payload.method.decoded);
        blocked_ = true;
        loop_.note_failure("RabbitMQ at " + settings_.describe() + " blocks publishing ("
                           + text_of(blocked->reason) + ")");
        log_->warn(loop_.last_failure() + ": sends wait, and fail after "
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
  bool round_started = !refused_.empty();
  auto settle = [&](std::uint64_t seq, const request_ptr& r) {
    if (r->returned)
      return finish(r, error{errc::unknown_queue,
                             "queue '" + r->queue + "' does not exist: RabbitMQ returned message "
                                 + r->message->message_id() + " (" + *r->returned + ")"});
    if (!ack) {
      r->refused = true;
      refused_.emplace(seq, r);
      return;
    }
    finish(r, std::uint32_t{0});
  };
  if (ack)
    refusal_rounds_ = 0;
  auto first = multiple ? in_flight_.begin() : in_flight_.find(tag);
  auto end = multiple ? in_flight_.upper_bound(tag)
                      : (first == in_flight_.end() ? first : std::next(first));
  for (auto it = first; it != end; ++it)
    settle(it->first, it->second);
  if (first != end)
    stall_.settled(first->first, clock::now()); // slow, not stalled, if sent before a question
  in_flight_.erase(first, end);
  if (!round_started && !refused_.empty()) {
    auto wait = reconnect_delay(settings_, ++refusal_rounds_, random_);
    republish_at_ = clock::now() + wait;
    const auto& r = *refused_.begin()->second;
    log_->warn("RabbitMQ refused message " + r.message->message_id()
               + (r.queue.empty() ? " of type '" + r.type + "'" : " for '" + r.queue + "'")
               + " (basic.nack: a queue at its length limit, or a quorum queue without a "
                 "leader); publishing it again on a new channel in "
               + ms_text(wait) + ", until " + ms_text(settings_.operation_timeout)
               + " after it was sent");
  }
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
  if (session()->read_content(frame.channel, content))
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
    // A send refused before and published again says so: the refusal (a
    // full queue, a leaderless one) is why it failed, not the confirm the
    // deadline cut short.
    if (r->refused) {
      auto refused = refusal_error(*r);
      refused.message += "; its last attempt was not confirmed in time and may still arrive";
      finish(r, std::move(refused));
      continue;
    }
    finish(r, error{errc::transport_failure,
                    "RabbitMQ at " + settings_.describe() + " did not confirm message "
                        + r->message->message_id() + " within "
                        + ms_text(settings_.operation_timeout)
                        + " (it may still arrive: a retry can duplicate it)"});
  }
  while (!refused_.empty() && refused_.begin()->second->deadline <= now) {
    auto r = refused_.begin()->second;
    refused_.erase(refused_.begin());
    finish(r, refusal_error(*r));
  }
  while (!backlog_.empty() && backlog_.front()->deadline <= now) {
    auto r = std::move(backlog_.front());
    backlog_.pop_front();
    if (r->refused) {
      finish(r, refusal_error(*r));
      continue;
    }
    finish(r, error{errc::transport_failure,
                    (blocked_ ? "waited " : "no connection to RabbitMQ for ")
                        + ms_text(settings_.operation_timeout) + ": " + loop_.last_failure()});
  }
}

error publisher::refusal_error(const request& r) const {
  return error{errc::transport_failure,
               "RabbitMQ refused message " + r.message->message_id()
                   + " (basic.nack: a queue at its length limit, or a quorum queue without a "
                     "leader) on every attempt within "
                   + ms_text(settings_.operation_timeout)};
}

publisher::clock::time_point publisher::next_deadline() const {
  // The earliest deadlines are at the fronts (see expire).
  auto next = clock::time_point::max();
  if (!in_flight_.empty())
    next = std::min(next, in_flight_.begin()->second->deadline);
  if (!backlog_.empty())
    next = std::min(next, backlog_.front()->deadline);
  if (auto at = stall_.wake_at(oldest_judged()))
    next = std::min(next, *at);
  if (!refused_.empty()) {
    next = std::min(next, refused_.begin()->second->deadline);
    // The refused wait for the sends in flight too (republish_refused):
    // until those are settled, the frames that settle them wake the thread,
    // and a backoff that ended must not make it spin.
    if (in_flight_.empty())
      next = std::min(next, republish_at_);
  }
  return next;
}

} // namespace bus::detail
