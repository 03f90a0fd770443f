#include "error_queue_admin.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "amqp_fields.hpp"
#include "amqp_session.hpp" // the transport's connection code (transports/rabbitmq/src)
#include "amqp_bytes.hpp"
#include "replay_headers.hpp"

namespace bus::ctl {

using bus::detail::amqp_failure;
using bus::detail::amqp_session;
using bus::detail::bytes_of;
using bus::detail::describe;
using bus::detail::text_of;

namespace {

// A message taken with basic.get and not acknowledged: the broker holds it
// for this channel until it is acknowledged or the channel closes.
struct held_message {
  std::uint64_t tag = 0;
  amqp_message_t raw{}; // owns its own memory pool (amqp_read_message)
};

// What one reading of a queue took. The raw messages are freed with it;
// giving them back to the queue is closing the channel they came on.
struct taken_batch {
  std::vector<held_message> held;
  std::vector<queued_message> messages; // same order and size as held
  bool truncated = false;

  taken_batch() = default;
  taken_batch(const taken_batch&) = delete;
  taken_batch& operator=(const taken_batch&) = delete;
  ~taken_batch() {
    for (auto& h : held)
      amqp_destroy_message(&h.raw);
  }
};

struct publish_outcome {
  bool confirmed = false;
  std::string problem;
  bool channel_lost = false; // nothing more can be published on this channel
};

} // namespace

struct error_queue_admin::impl {
  rabbitmq_settings settings;
  std::unique_ptr<amqp_session> session;

  amqp_connection_state_t conn() const { return session->raw(); }

  error fail(const amqp_failure& f, const std::string& what) const {
    auto e = bus::detail::to_error(f, what + " on " + settings.describe());
    // 403/405/406 are configuration mistakes to the transport; to busctl
    // they are the broker refusing the work.
    if (e.code != errc::unknown_queue)
      e.code = errc::transport_failure;
    return e;
  }

  result<amqp_channel_t> open_channel() {
    auto ch = session->new_channel_number();
    if (ch == 0)
      return error{errc::transport_failure, "no channel numbers left on the connection"};
    if (auto f = session->open_channel(ch))
      return fail(*f, "opening a channel");
    return ch;
  }

  // Passive declare: 404 if the queue does not exist; its consumer count.
  result<std::uint32_t> consumers_of(amqp_channel_t ch, const std::string& queue) {
    auto* ok = amqp_queue_declare(conn(), ch, bytes_of(queue), /*passive=*/1, 0, 0, 0,
                                  amqp_empty_table);
    if (auto f = session->rpc_status(ch)) {
      if (f->reply_code == AMQP_NOT_FOUND)
        return error{errc::unknown_queue, "no queue '" + queue + "' on " + settings.describe()
                                            + " (is the endpoint name right? its error queue is "
                                              "ENDPOINT_error unless --queue names another)"};
      return fail(*f, "looking up queue '" + queue + "'");
    }
    return ok->consumer_count;
  }

  // A channel of its own to read `queue` on, and how many consumers the
  // queue has (what they hold, basic.get cannot see). Every command starts so.
  struct reading {
    amqp_channel_t channel;
    std::uint32_t consumers;
  };
  result<reading> open_reading(const std::string& queue) {
    auto ch = open_channel();
    if (!ch)
      return ch.error();
    auto consumers = consumers_of(*ch, queue);
    if (!consumers)
      return consumers.error();
    return reading{*ch, *consumers};
  }

  // Takes the messages of `queue` from its head, without acknowledging them,
  // until it is empty (as the broker counted at the last take) or `limit`.
  result<void> take(amqp_channel_t ch, const std::string& queue, std::size_t limit,
                    taken_batch& batch) {
    for (;;) {
      amqp_maybe_release_buffers(conn()); // held messages own their memory
      amqp_rpc_reply_t reply = amqp_basic_get(conn(), ch, bytes_of(queue), /*no_ack=*/0);
      if (auto f = session->rpc_status(ch))
        return fail(*f, "reading queue '" + queue + "'");
      if (reply.reply.id == AMQP_BASIC_GET_EMPTY_METHOD)
        return {};
      auto* ok = static_cast<amqp_basic_get_ok_t*>(reply.reply.decoded);
      held_message h;
      h.tag = ok->delivery_tag;
      bool redelivered = ok->redelivered != 0;
      auto remaining = ok->message_count;
      if (auto f = session->read_content(ch, h.raw))
        return fail(*f, "reading a message of '" + queue + "'");
      batch.messages.push_back(
        detail::to_queued_message(h.raw, batch.held.size() + 1, redelivered));
      batch.held.push_back(h);
      if (remaining == 0)
        return {};
      if (limit > 0 && batch.held.size() >= limit) {
        batch.truncated = true;
        return {};
      }
    }
  }

  // Closes the channel the batch came on: every message not acknowledged
  // goes back to the queue. False if the broker did not answer, which leaves
  // the outcome of acknowledgements sent on it unknown.
  bool close_channel(amqp_channel_t ch) {
    if (!session->alive())
      return false;
    amqp_channel_close(conn(), ch, AMQP_REPLY_SUCCESS);
    return !session->rpc_status(ch);
  }

  // Publishes `h` to the default exchange with routing key `destination`,
  // mandatory, with the replay headers, and waits for the broker's confirm
  // (`seq` is its publish number on the confirm channel `ch`).
  publish_outcome publish_replay(amqp_channel_t ch, std::uint64_t seq, const held_message& h,
                                 const queued_message& m, const std::string& destination,
                                 const std::string& source_queue, time_point now) {
    const auto& original = h.raw.properties;
    std::vector<amqp_table_entry_t> entries;
    if (original._flags & AMQP_BASIC_HEADERS_FLAG)
      for (int i = 0; i < original.headers.num_entries; ++i)
        if (kept_on_replay(text_of(original.headers.entries[i].key)))
          entries.push_back(original.headers.entries[i]); // points into h.raw, alive until the end
    auto additions = replay_additions(m, now, source_queue);
    for (const auto& [name, value] : additions) {
      amqp_table_entry_t e{};
      e.key = bytes_of(name);
      e.value.kind = AMQP_FIELD_KIND_UTF8;
      e.value.value.bytes = bytes_of(value);
      entries.push_back(e);
    }
    amqp_basic_properties_t p = original;
    p._flags |= AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
    // A per-message TTL could let the replayed copy expire before anyone
    // handles it: the replay is meant to be handled.
    p._flags &= ~static_cast<amqp_flags_t>(AMQP_BASIC_EXPIRATION_FLAG);
    p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
    p.headers = amqp_table_t{static_cast<int>(entries.size()), entries.data()};

    int status = amqp_basic_publish(conn(), ch, amqp_empty_bytes, bytes_of(destination),
                                     /*mandatory=*/1, /*immediate=*/0, &p, h.raw.body);
    if (auto f = session->call_status(status))
      return {false, "cannot publish: " + describe(*f), true};

    std::string returned;
    auto deadline = std::chrono::steady_clock::now() + settings.operation_timeout;
    for (;;) {
      amqp_frame_t frame{};
      if (!session->poll_frame(frame)) {
        if (!session->alive())
          return {false, "connection lost: " + describe(session->death()), true};
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
          // The confirm may still come: the state of the channel is unknown.
          session->kill("no publisher confirm within "
                        + std::to_string(settings.operation_timeout.count()) + " ms");
          return {false, "the broker did not confirm it within "
                           + std::to_string(settings.operation_timeout.count()) + " ms",
                  true};
        }
        bus::detail::wait_readable(session->fd(), -1,
                                   std::min(left, std::chrono::milliseconds(250)));
        continue;
      }
      if (frame.frame_type != AMQP_FRAME_METHOD)
        continue;
      switch (frame.payload.method.id) {
        case AMQP_BASIC_RETURN_METHOD: {
          auto* r = static_cast<amqp_basic_return_t*>(frame.payload.method.decoded);
          returned = std::to_string(r->reply_code) + " " + text_of(r->reply_text);
          amqp_message_t content{};
          if (auto f = session->read_content(frame.channel, content))
            return {false, "connection lost: " + describe(*f), true};
          amqp_destroy_message(&content);
          break;
        }
        case AMQP_BASIC_ACK_METHOD: {
          auto* a = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
          if (a->delivery_tag < seq)
            break; // an older one; cannot happen with one publish at a time
          if (!returned.empty())
            return {false, "the broker returned it (" + returned + "): is there a queue '"
                             + destination + "'?"};
          return {true, {}};
        }
        case AMQP_BASIC_NACK_METHOD: {
          auto* n = static_cast<amqp_basic_nack_t*>(frame.payload.method.decoded);
          if (n->delivery_tag < seq)
            break;
          return {false, "the broker refused it (basic.nack)"};
        }
        case AMQP_CHANNEL_CLOSE_METHOD: {
          auto f = session->channel_closed_by_broker(frame);
          return {false, "the broker closed the channel: " + describe(f), true};
        }
        case AMQP_CONNECTION_CLOSE_METHOD: {
          auto f = session->connection_closed_by_broker(frame);
          return {false, "the broker closed the connection: " + describe(f), true};
        }
        default:
          break;
      }
    }
  }

  // Acknowledges one held message; a failure means the connection is gone.
  std::optional<amqp_failure> ack(amqp_channel_t ch, const held_message& h) {
    return session->call_status(amqp_basic_ack(conn(), ch, h.tag, /*multiple=*/0));
  }
};

error_queue_admin::error_queue_admin(std::unique_ptr<impl> state) : impl_(std::move(state)) {}

error_queue_admin::~error_queue_admin() = default;

result<std::unique_ptr<error_queue_admin>>
error_queue_admin::connect(const rabbitmq_settings& settings) {
  if (auto valid = settings.validate(); !valid)
    return valid.error();
  auto session = amqp_session::open(settings, "admin");
  if (!session)
    return session.error();
  auto state = std::make_unique<impl>();
  state->settings = settings;
  state->session = std::move(*session);
  return std::unique_ptr<error_queue_admin>(new error_queue_admin(std::move(state)));
}

result<queue_listing> error_queue_admin::peek(const std::string& queue, std::size_t limit) {
  auto& s = *impl_;
  auto opened = s.open_reading(queue);
  if (!opened)
    return opened.error();
  auto ch = opened->channel;
  taken_batch batch;
  if (auto taken = s.take(ch, queue, limit, batch); !taken)
    return taken.error();
  // Whether or not the close is answered, nothing was acknowledged: every
  // message goes back (at the latest when the connection closes).
  s.close_channel(ch);
  queue_listing out;
  out.queue = queue;
  out.consumers = opened->consumers;
  out.truncated = batch.truncated;
  out.messages = std::move(batch.messages);
  batch.messages.clear();
  return out;
}

result<replay_report> error_queue_admin::replay(const std::string& queue, std::size_t limit,
                                                const selector& which,
                                                const std::string& endpoint_queue,
                                                time_point now) {
  auto& s = *impl_;
  auto opened = s.open_reading(queue);
  if (!opened)
    return opened.error();
  auto get_ch = opened->channel;
  auto pub_ch = s.open_channel();
  if (!pub_ch)
    return pub_ch.error();
  amqp_confirm_select(s.conn(), *pub_ch);
  if (auto f = s.session->rpc_status(*pub_ch))
    return s.fail(*f, "turning publisher confirms on");

  taken_batch batch;
  if (auto taken = s.take(get_ch, queue, limit, batch); !taken)
    return taken.error();
  auto chosen = select(batch.messages, which);

  replay_report report;
  report.queue = queue;
  report.consumers = opened->consumers;
  report.truncated = batch.truncated;
  report.unknown_ids = chosen.unknown_ids;
  std::uint64_t seq = 0;
  std::string stopped; // why the remaining ones were not attempted
  bool acked_any = false;
  for (auto index : chosen.chosen) {
    const auto& m = batch.messages[index];
    const auto& h = batch.held[index];
    auto destination = replay_destination(m, endpoint_queue);
    if (!stopped.empty()) {
      report.failed.push_back({m.id, destination, "not attempted: " + stopped});
      continue;
    }
    if (destination == queue) {
      report.failed.push_back(
        {m.id, destination, "its destination is the queue it is on (no original address?)"});
      continue;
    }
    auto outcome = s.publish_replay(*pub_ch, ++seq, h, m, destination, queue, now);
    if (!outcome.confirmed) {
      report.failed.push_back({m.id, destination, outcome.problem});
      if (outcome.channel_lost)
        stopped = outcome.problem;
      continue;
    }
    // Confirmed: the copy is safe on the destination, the original may go.
    if (auto f = s.ack(get_ch, h)) {
      report.replayed.push_back({m.id, destination, {}});
      report.warning = "lost the connection before removing replayed messages from '" + queue
                       + "' (" + describe(*f) + "): they are on both queues now";
      stopped = "connection lost";
      continue;
    }
    acked_any = true;
    report.replayed.push_back({m.id, destination, {}});
  }
  // The close is answered only after the broker processed the acks before it.
  if (!s.close_channel(get_ch) && acked_any && report.warning.empty())
    report.warning = "the broker did not confirm the removal of the replayed messages from '"
                     + queue + "': some may be on both queues now";
  return report;
}

result<purge_report> error_queue_admin::purge(const std::string& queue, std::size_t limit,
                                              const selector& which) {
  auto& s = *impl_;
  auto opened = s.open_reading(queue);
  if (!opened)
    return opened.error();
  auto ch = opened->channel;
  purge_report report;
  report.queue = queue;
  report.consumers = opened->consumers;

  if (std::holds_alternative<every_message>(which) && limit == 0) {
    auto* ok = amqp_queue_purge(s.conn(), ch, bytes_of(queue));
    if (auto f = s.session->rpc_status(ch))
      return s.fail(*f, "purging queue '" + queue + "'");
    report.purged = ok->message_count;
    s.close_channel(ch);
    return report;
  }

  taken_batch batch;
  if (auto taken = s.take(ch, queue, limit, batch); !taken)
    return taken.error();
  report.truncated = batch.truncated;
  auto chosen = select(batch.messages, which);
  report.unknown_ids = chosen.unknown_ids;
  for (auto index : chosen.chosen) {
    if (auto f = s.ack(ch, batch.held[index])) {
      report.warning = "lost the connection while deleting (" + describe(*f)
                       + "): the messages not listed as purged are still on '" + queue + "'";
      break;
    }
    report.ids.push_back(batch.messages[index].id);
  }
  report.purged = report.ids.size();
  if (!s.close_channel(ch) && report.purged > 0 && report.warning.empty())
    report.warning = "the broker did not confirm the deletion: some of the messages listed as "
                     "purged may still be on '"
                     + queue + "'";
  return report;
}

} // namespace bus::ctl
