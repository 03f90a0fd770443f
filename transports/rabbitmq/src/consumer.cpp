#include "consumer.hpp"

#include <amqp_framing.h>

#include <algorithm>
#include <limits>

#include "amqp_bytes.hpp"
#include "amqp_message.hpp"

namespace bus::detail {

consumer_pump::consumer_pump(rabbitmq_settings settings, std::shared_ptr<topology_record> record,
                             std::shared_ptr<const rabbitmq_logger> log)
    : settings_(std::move(settings)), record_(std::move(record)), log_(std::move(log)),
      loop_(settings_, "consumer", "consuming connection", log_, *this) {}

consumer_pump::~consumer_pump() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  loop_.stop_and_join();
}

result<void> consumer_pump::start() {
  return loop_.start();
}

std::uint64_t consumer_pump::reconnects() const noexcept {
  return loop_.reconnects();
}

result<void> consumer_pump::consume(const std::string& queue, std::size_t max_unacked,
                                    delivery_handler on_delivery) {
  if (queue.empty())
    return error{errc::invalid_configuration, "consuming needs a queue name"};
  if (max_unacked == 0)
    return error{errc::invalid_configuration,
                 "consuming '" + queue + "' needs at least one unacknowledged delivery"};
  if (!on_delivery)
    return error{errc::invalid_configuration, "consuming '" + queue + "' needs a handler"};
  consume_command c;
  c.queue = queue;
  c.source = queue;
  c.max_unacked = max_unacked;
  c.handler = std::make_shared<const delivery_handler>(std::move(on_delivery));
  return submit(std::move(c));
}

result<void> consumer_pump::consume_stream(const std::string& reader, const std::string& stream,
                                           const stream_start& start, std::size_t max_unacked,
                                           delivery_handler on_delivery) {
  if (reader.empty() || stream.empty())
    return error{errc::invalid_configuration, "reading a stream needs a stream and a reader name"};
  if (max_unacked == 0)
    return error{errc::invalid_configuration,
                 "reading '" + stream + "' needs at least one unacknowledged delivery"};
  if (!on_delivery)
    return error{errc::invalid_configuration, "reading '" + stream + "' needs a handler"};
  consume_command c;
  c.queue = reader;
  c.source = stream;
  c.stream_from = start;
  c.max_unacked = max_unacked;
  c.handler = std::make_shared<const delivery_handler>(std::move(on_delivery));
  return submit(std::move(c));
}

result<void> consumer_pump::submit(consume_command c) {
  c.deadline = clock::now() + settings_.operation_timeout;
  c.done = std::make_shared<std::promise<result<void>>>();
  auto outcome = c.done->get_future();
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (stopping_)
      return error{errc::transport_failure, "the RabbitMQ transport is closing"};
    if (!consumed_.insert(c.queue).second)
      return error{errc::duplicate, (c.stream_from ? "reader '" : "queue '") + c.queue
                                      + "' already has a consumer"};
    commands_.push_back(std::move(c));
  }
  loop_.wake();
  return outcome.get();
}

std::optional<std::uint64_t> consumer_pump::stream_tail(const std::string& stream) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = stream_tails_.find(stream);
  if (it == stream_tails_.end())
    return std::nullopt;
  return it->second;
}

void consumer_pump::cancel(const std::string& queue) {
  cancel_command c{queue, std::make_shared<std::promise<void>>()};
  auto done = c.done->get_future();
  if (loop_.on_loop_thread()) {
    // From a handler, against the contract; done inline rather than deadlocked.
    handle(c);
    return;
  }
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (stopping_)
      return;
    commands_.push_back(std::move(c));
  }
  loop_.wake();
  done.wait();
}

bool consumer_pump::settleable(std::uint64_t tag) const {
  std::lock_guard<std::mutex> guard(mutex_);
  return outstanding_.count(tag) > 0; // a closed channel's queue deliveries are forgotten
}

std::size_t consumer_pump::unsettled() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return outstanding_.size();
}

result<void> consumer_pump::settle(std::uint64_t tag, bool ack, bool requeue) {
  bool first = false;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    auto it = outstanding_.find(tag);
    // Forgotten as its channel closed, or settled already.
    if (it == outstanding_.end())
      return error{errc::transport_failure,
                   "delivery " + std::to_string(tag)
                     + " is not outstanding: settled already, or it came over a channel that has "
                       "closed since (connection lost?), and RabbitMQ delivers the message "
                       "again; this "
                     + (ack ? "acknowledgement" : "rejection") + " was not sent"};
    auto o = it->second;
    outstanding_.erase(it);
    if (stopping_)
      return error{errc::transport_failure, "the RabbitMQ transport is closing"};
    first = commands_.empty();
    commands_.push_back(settle_command{o.incarnation, o.channel, o.broker_tag, ack, requeue});
  }
  // As in publisher::submit: the settlement that makes the queue non-empty
  // wakes the thread, which then takes every one queued behind it.
  if (first)
    loop_.wake();
  return {};
}

// ---- the I/O thread ------------------------------------------------------

bool consumer_pump::turn() {
  std::deque<command> batch;
  bool stop = false;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stop = stopping_;
    batch.swap(commands_);
  }
  loop_.drop_if_dead();
  if (stop) {
    // Settlements accepted before the stop are sent before the close:
    // an ack that ack() took must not turn into a redelivery.
    for (auto& c : batch) {
      if (auto* settle = std::get_if<settle_command>(&c))
        handle(*settle);
      else if (auto* consume = std::get_if<consume_command>(&c))
        consume->done->set_value(error{errc::transport_failure, "the RabbitMQ transport closed"});
      else if (auto* cancel = std::get_if<cancel_command>(&c))
        cancel->done->set_value();
    }
    flush_all_acks();
    return false;
  }
  // In arrival order: an ack queued before a consume is sent before it.
  for (auto& c : batch)
    std::visit([this](auto& cmd) { handle(cmd); }, c);
  // The acks of the whole batch, coalesced where that acknowledges
  // nothing else.
  flush_all_acks();
  auto now = clock::now();
  loop_.maintain();
  if (session() && session()->alive()) {
    while (session()->alive() && !waiting_.empty()) {
      auto c = std::move(waiting_.front());
      waiting_.pop_front();
      handle(c);
    }
    recover_links(now);
    read_frames();
  }
  fail_waiting(clock::now());
  return true;
}

void consumer_pump::stopped() {
  // Closing the connection (after this returns) makes the broker requeue
  // every unsettled delivery; nobody may settle them any more.
  for (auto& c : waiting_)
    c.done->set_value(error{errc::transport_failure, "the RabbitMQ transport closed"});
  waiting_.clear();
  {
    // Nothing is queued any more: consume, cancel and settle refuse once
    // stopping_ is set, and the last batch was taken after it was.
    std::lock_guard<std::mutex> guard(mutex_);
    outstanding_.clear();
  }
  links_.clear();
}

std::optional<std::string> consumer_pump::session_opened(amqp_session&) {
  return std::nullopt; // channels are opened per consumed queue, by recover_links()
}

std::string consumer_pump::back_note() const {
  return "; consuming "
         + std::to_string(std::count_if(links_.begin(), links_.end(),
                                        [](const auto& kv) { return kv.second.handler != nullptr; }))
         + " queues again";
}

std::string consumer_pump::session_lost() {
  // Every channel died with the connection: their queues' deliveries are
  // the broker's again, and nobody can settle them. A stream's stay.
  forget_deliveries([](const outstanding&) { return true; });
  for (auto& [queue, l] : links_) {
    l.channel = 0;
    l.consuming = false;
    l.acks.reset();
    l.retry_at = {};
    l.failed_consumes = 0;
  }
  return "RabbitMQ requeues the deliveries it had not settled";
}

void consumer_pump::forget_consumed(const std::string& queue) {
  std::lock_guard<std::mutex> guard(mutex_);
  consumed_.erase(queue);
}

void consumer_pump::handle(consume_command& c) {
  if (!session() || !session()->alive()) {
    waiting_.push_back(std::move(c)); // until a connection, or the deadline
    return;
  }
  auto& l = links_[c.queue];
  l.source = c.source;
  l.max_unacked = c.max_unacked;
  l.stream_from = c.stream_from;
  l.skip_below = c.stream_from && c.stream_from->where == stream_start::from::offset
                   ? c.stream_from->offset
                   : 0;
  auto failed = establish(l);
  if (!failed) {
    l.handler = c.handler;
    c.done->set_value(result<void>{});
    return;
  }
  if (failed->scope == failure_scope::connection) {
    waiting_.push_back(std::move(c)); // again on the next connection
    return;
  }
  forget_consumed(c.queue);
  c.done->set_value(to_error(*failed, c.stream_from ? "reading stream '" + c.source + "'"
                                                    : "consuming queue '" + c.queue + "'"));
}

void consumer_pump::handle(cancel_command& c) {
  // A consume still waiting for a connection is over before it began.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->queue != c.queue) {
      ++it;
      continue;
    }
    it->done->set_value(error{errc::transport_failure,
                              "consuming '" + c.queue + "' was cancelled before it began"});
    it = waiting_.erase(it);
  }
  auto it = links_.find(c.queue);
  if (it != links_.end()) {
    auto& l = it->second;
    // From here on no delivery reaches the handler: one that the broker
    // sent before the cancel is rejected back to the queue.
    l.handler = nullptr;
    if (l.consuming && session() && session()->alive()) {
      amqp_basic_cancel(session()->raw(), l.channel, bytes_of(l.consumer_tag));
      if (auto failed = session()->rpc_status(l.channel);
          failed && failed->scope == failure_scope::channel)
        drop_channel(l);
    }
    // The channel stays open: deliveries made on it can still be settled.
    l.consuming = false;
  }
  forget_consumed(c.queue);
  c.done->set_value();
}

void consumer_pump::handle(settle_command& c) {
  if (!session() || !session()->alive())
    return; // the connection died: the broker requeued the delivery
  auto* l = link_of_channel(c.channel);
  if (!l || l->incarnation != c.incarnation)
    return; // the channel died: never send its tag on another one
  // A stream queue answers basic.reject with 540 NOT_IMPLEMENTED, which
  // closes the connection; a stream keeps the message either way, so a
  // reader's reject is an ack: it frees the place in the prefetch.
  if (c.ack || l->stream_from) {
    queue_ack(*l, c.broker_tag);
    return;
  }
  // The acks queued before this reject go first: one queued after it
  // must not overtake it, and none may cover it.
  flush_acks(*l);
  if (!session()->alive())
    return;
  (void)session()->call_status(
      amqp_basic_reject(session()->raw(), c.channel, c.broker_tag, c.requeue ? 1 : 0));
  l->acks.settled_on_wire(c.broker_tag);
}

void consumer_pump::queue_ack(link& l, std::uint64_t broker_tag) {
  // Queued in the window, sent by the flush at the end of the batch (at
  // once if the window cannot coalesce).
  l.acks.ack(broker_tag, [&](std::uint64_t tag, bool multiple) {
    (void)session()->call_status(amqp_basic_ack(session()->raw(), l.channel, tag, multiple));
  });
}

void consumer_pump::flush_acks(link& l) {
  if (!l.acks.has_pending() || l.channel == 0 || !session() || !session()->alive())
    return;
  l.acks.flush([&](std::uint64_t tag, bool multiple) {
    if (session()->alive())
      (void)session()->call_status(amqp_basic_ack(session()->raw(), l.channel, tag, multiple));
  });
}

void consumer_pump::flush_all_acks() {
  for (auto& [queue, l] : links_)
    flush_acks(l);
}

namespace {

// Queue arguments for a basic.consume of a stream (x-stream-offset); the
// strings they point at are literals.
struct stream_arguments {
  amqp_table_entry_t entry{};
  [[nodiscard]] amqp_table_t table() { return amqp_table_t{1, &entry}; }

  explicit stream_arguments(const stream_start& from) {
    entry.key = amqp_cstring_bytes("x-stream-offset");
    auto named = [&](const char* where) {
      entry.value.kind = AMQP_FIELD_KIND_UTF8;
      entry.value.value.bytes = amqp_cstring_bytes(where);
    };
    switch (from.where) {
      case stream_start::from::first:
        named("first");
        break;
      case stream_start::from::last:
        named("last");
        break;
      case stream_start::from::next:
        named("next");
        break;
      case stream_start::from::offset:
        entry.value.kind = AMQP_FIELD_KIND_I64;
        entry.value.value.i64 = static_cast<std::int64_t>(from.offset);
        break;
      case stream_start::from::timestamp:
        // An AMQP timestamp: whole seconds since the epoch.
        entry.value.kind = AMQP_FIELD_KIND_TIMESTAMP;
        entry.value.value.u64 = static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::seconds>(from.time.time_since_epoch()).count());
        break;
    }
  }
};

// The x-stream-offset header of a stream's delivery, if it has one.
std::optional<std::uint64_t> offset_header(const amqp_basic_properties_t& p) {
  if (!(p._flags & AMQP_BASIC_HEADERS_FLAG))
    return std::nullopt;
  for (int i = 0; i < p.headers.num_entries; ++i) {
    const auto& e = p.headers.entries[i];
    if (text_of(e.key) != "x-stream-offset")
      continue;
    switch (e.value.kind) {
      case AMQP_FIELD_KIND_I64: return static_cast<std::uint64_t>(e.value.value.i64);
      case AMQP_FIELD_KIND_U64: return e.value.value.u64;
      case AMQP_FIELD_KIND_I32: return static_cast<std::uint64_t>(e.value.value.i32);
      case AMQP_FIELD_KIND_U32: return e.value.value.u32;
      default: return std::nullopt;
    }
  }
  return std::nullopt;
}

} // namespace

amqp_status consumer_pump::establish(link& l) {
  auto& s = *session();
  if (l.channel == 0) {
    auto ch = s.new_channel_number();
    if (ch == 0)
      return s.kill("ran out of channel numbers");
    if (auto failed = s.open_channel(ch))
      return failed;
    l.channel = ch;
    l.incarnation = next_incarnation_++;
    l.acks.reset();
  }
  // The transport's own queues are declared again, so that a broker that
  // lost them (a new node, a deleted queue) gets them back.
  auto redeclared = std::optional<amqp_failure>{};
  if (auto declared = record_->find_queue(l.source))
    redeclared = declare_endpoint_queue(s, l.channel, l.source, *declared, settings_);
  else if (auto stream = record_->find_stream(l.source))
    redeclared = declare_stream_queue(s, l.channel, l.source, *stream);
  if (redeclared) {
    if (redeclared->scope == failure_scope::channel)
      drop_channel(l);
    return redeclared;
  }
  // Per-consumer prefetch (global=0): max_unacked of this queue only.
  auto prefetch = static_cast<std::uint16_t>(
      std::min<std::size_t>(l.max_unacked, std::numeric_limits<std::uint16_t>::max()));
  amqp_basic_qos(s.raw(), l.channel, 0, prefetch, /*global=*/0);
  if (auto failed = s.rpc_status(l.channel)) {
    if (failed->scope == failure_scope::channel)
      drop_channel(l);
    return failed;
  }
  // A stream needs a prefetch and manual acks, as every consumer here has.
  std::optional<stream_arguments> arguments;
  if (l.stream_from)
    arguments.emplace(*l.stream_from);
  auto* ok = amqp_basic_consume(s.raw(), l.channel, bytes_of(l.source), amqp_empty_bytes,
                                /*no_local=*/0, /*no_ack=*/0, /*exclusive=*/0,
                                arguments ? arguments->table() : amqp_empty_table);
  if (auto failed = s.rpc_status(l.channel)) {
    if (failed->scope == failure_scope::channel)
      drop_channel(l);
    return failed;
  }
  l.consumer_tag = text_of(ok->consumer_tag);
  l.consuming = true;
  l.failed_consumes = 0;
  return std::nullopt;
}

void consumer_pump::forget_deliveries(const std::function<bool(const outstanding&)>& of_channel) {
  std::lock_guard<std::mutex> guard(mutex_);
  for (auto it = outstanding_.begin(); it != outstanding_.end();)
    it = of_channel(it->second) && !it->second.from_stream ? outstanding_.erase(it) : std::next(it);
}

void consumer_pump::drop_channel(link& l) {
  forget_deliveries([&](const outstanding& o) { return o.incarnation == l.incarnation; });
  l.channel = 0;
  l.consuming = false;
  l.acks.reset();
}

void consumer_pump::schedule_retry(const std::string& queue, link& l, const std::string& why) {
  auto delay = reconnect_delay(settings_, ++l.failed_consumes, random_);
  l.retry_at = clock::now() + delay;
  log_->warn("consumer of queue '" + queue + "' stopped (" + why + "); consuming again in "
             + std::to_string(delay.count()) + " ms");
}

void consumer_pump::recover_links(clock::time_point now) {
  for (auto& [queue, l] : links_) {
    if (!session()->alive())
      return;
    if (!l.handler || l.consuming || l.retry_at > now)
      continue;
    if (auto failed = establish(l); failed && failed->scope == failure_scope::channel)
      schedule_retry(queue, l, describe(*failed));
  }
}

consumer_pump::link* consumer_pump::link_of_channel(amqp_channel_t ch) {
  for (auto& [queue, l] : links_)
    if (l.channel == ch)
      return &l;
  return nullptr;
}

void consumer_pump::reject_now(link& l, std::uint64_t broker_tag) {
  if (l.stream_from) { // see handle(settle_command&)
    queue_ack(l, broker_tag);
    flush_acks(l);
    return;
  }
  requeue_on_wire(l, broker_tag);
}

void consumer_pump::requeue_on_wire(link& l, std::uint64_t broker_tag) {
  flush_acks(l);
  if (!session()->alive())
    return;
  (void)session()->call_status(
      amqp_basic_reject(session()->raw(), l.channel, broker_tag, /*requeue=*/1));
  l.acks.settled_on_wire(broker_tag);
}

void consumer_pump::read_frames() {
  amqp_frame_t frame;
  while (session()->alive() && session()->poll_frame(frame)) {
    if (frame.frame_type != AMQP_FRAME_METHOD)
      continue;
    switch (frame.payload.method.id) {
      case AMQP_BASIC_DELIVER_METHOD:
        on_delivery(frame);
        break;
      case AMQP_BASIC_CANCEL_METHOD:
        on_broker_cancel(frame);
        break;
      case AMQP_CHANNEL_CLOSE_METHOD: {
        auto failure = session()->channel_closed_by_broker(frame);
        for (auto& [queue, l] : links_) {
          if (l.channel != frame.channel)
            continue;
          drop_channel(l);
          if (l.handler)
            schedule_retry(queue, l, "RabbitMQ closed its channel: " + describe(failure));
        }
        break;
      }
      case AMQP_CONNECTION_CLOSE_METHOD:
        session()->connection_closed_by_broker(frame);
        break;
      default:
        break;
    }
  }
}

void consumer_pump::on_delivery(const amqp_frame_t& frame) {
  auto* d = static_cast<amqp_basic_deliver_t*>(frame.payload.method.decoded);
  auto ch = frame.channel;
  auto broker_tag = d->delivery_tag;
  bool redelivered = d->redelivered != 0;
  auto consumer_tag = text_of(d->consumer_tag);
  // Read before the content frames reuse the buffers; a foreign message's
  // envelope keeps them (amqp_message.hpp).
  amqp_origin origin{text_of(d->exchange), text_of(d->routing_key)};
  amqp_message_t content;
  if (session()->read_content(ch, content))
    return;
  std::string queue;
  link* l = nullptr;
  for (auto& [name, candidate] : links_)
    if (candidate.channel == ch) {
      queue = name;
      l = &candidate;
    }
  if (!l) {
    // No link owns the channel: nothing was coalesced on it.
    amqp_destroy_message(&content);
    (void)session()->call_status(amqp_basic_reject(session()->raw(), ch, broker_tag, 1));
    return;
  }
  // Every delivery of a link's channel enters its window, in tag order.
  l->acks.delivered(broker_tag);
  if (!l->handler || !l->consuming || l->consumer_tag != consumer_tag) {
    amqp_destroy_message(&content);
    reject_now(*l, broker_tag); // sent before a cancel took effect: back to the queue
    return;
  }
  std::optional<std::uint64_t> offset;
  if (l->stream_from) {
    offset = stream_offset_of(*l, content.properties, broker_tag);
    if (!offset) {
      amqp_destroy_message(&content);
      return;
    }
  }
  // The envelope owns its bytes: copied out, and rabbitmq-c's freed at once.
  auto env = std::make_shared<const envelope>(
      envelope_from_amqp(content.properties, content.body, origin, random_(), random_()));
  amqp_destroy_message(&content);
  auto tag = next_tag_++;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    outstanding_.emplace(tag, outstanding{l->incarnation, ch, broker_tag, offset.has_value()});
  }
  auto handler = l->handler; // the handler may not cancel, but keep it alive regardless
  try {
    // A stream's delivery names the stream: the reader is the link.
    (*handler)(delivery{tag, l->stream_from ? l->source : queue, std::move(env), redelivered,
                        offset});
  } catch (...) {
    // The contract says handlers do not throw; if one does, the message is
    // not lost: it goes back to the queue.
    log_->error("the delivery handler of queue '" + queue
                + "' threw; the message goes back to the queue");
    bool still_ours = false;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      still_ours = outstanding_.erase(tag) != 0;
    }
    if (still_ours && session()->alive()) {
      if (auto* owner = link_of_channel(ch))
        reject_now(*owner, broker_tag);
    }
  }
}

void consumer_pump::on_broker_cancel(const amqp_frame_t& frame) {
  auto* c = static_cast<amqp_basic_cancel_t*>(frame.payload.method.decoded);
  auto tag = text_of(c->consumer_tag);
  for (auto& [queue, l] : links_) {
    if (!l.consuming || l.consumer_tag != tag)
      continue;
    l.consuming = false;
    if (l.handler)
      schedule_retry(queue, l, "RabbitMQ cancelled it: was the queue deleted?");
  }
}

void consumer_pump::fail_waiting(clock::time_point now) {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->deadline > now) {
      ++it;
      continue;
    }
    forget_consumed(it->queue);
    it->done->set_value(error{errc::transport_failure,
                              "cannot consume '" + it->queue + "': no connection to RabbitMQ for "
                                  + std::to_string(settings_.operation_timeout.count())
                                  + " ms: " + loop_.last_failure()});
    it = waiting_.erase(it);
  }
}

consumer_pump::clock::time_point consumer_pump::next_deadline() const {
  auto next = clock::time_point::max();
  for (const auto& c : waiting_)
    next = std::min(next, c.deadline);
  for (const auto& [queue, l] : links_)
    if (l.handler && !l.consuming && session())
      next = std::min(next, l.retry_at);
  return next;
}

std::optional<std::uint64_t> consumer_pump::stream_offset_of(link& l,
                                                            const amqp_basic_properties_t& p,
                                                            std::uint64_t broker_tag) {
  auto offset = offset_header(p);
  if (!offset) {
    // Not a stream's delivery: the stream was deleted and a queue of its
    // name declared. Nothing to place it by, so it is not handed out; an
    // ack would delete it from that queue, so it goes back there.
    log_->error("a delivery from the stream '" + l.source
                + "' has no x-stream-offset header: is it a queue now? It goes back to it");
    requeue_on_wire(l, broker_tag);
    return std::nullopt;
  }
  if (*offset < l.skip_below) {
    // The chunk's start, before the offset the reader asked for. Acked at
    // once: a prefetch full of dropped deliveries would wait for the next
    // turn's flush, and the broker would send nothing meanwhile.
    queue_ack(l, broker_tag);
    flush_acks(l);
    return std::nullopt;
  }
  l.skip_below = *offset + 1;
  l.stream_from = stream_start::at_offset(*offset + 1);
  {
    std::lock_guard<std::mutex> guard(mutex_);
    auto& tail = stream_tails_[l.source];
    tail = std::max(tail, *offset);
  }
  return offset;
}

} // namespace bus::detail
