// The administration seam (bus/rabbitmq_admin.hpp) on one amqp_session:
// each operation opens a channel of its own, so that a broker error (404
// on a passive declare, say) closes that channel and nothing else. A
// browse holds two channels: one its messages were taken on (closing it
// gives back what was not acknowledged) and, once it copies, one with
// publisher confirms, one publish at a time.
#include "bus/rabbitmq_admin.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "amqp_bytes.hpp"
#include "amqp_fields.hpp"
#include "amqp_session.hpp"

namespace bus::detail {

struct rabbitmq_admin_state {
  rabbitmq_settings settings;
  std::unique_ptr<amqp_session> session;

  amqp_connection_state_t conn() const { return session->raw(); }

  // 404 stays errc::unknown_queue; 403/405/406, configuration mistakes to the
  // transport, are the broker refusing the work to an operator.
  error fail(const amqp_failure& f, const std::string& what) const {
    auto e = to_error(f, what + " on " + settings.describe());
    if (e.code != errc::unknown_queue)
      e.code = errc::transport_failure;
    return e;
  }

  error dead() const {
    return error{errc::transport_failure,
                 "RabbitMQ at " + settings.describe() + ": connection lost ("
                   + describe(session->death()) + ")"};
  }

  result<amqp_channel_t> open_channel() {
    if (!session->alive())
      return dead();
    auto ch = session->new_channel_number();
    if (ch == 0)
      return error{errc::transport_failure, "no channel numbers left on the connection"};
    if (auto f = session->open_channel(ch))
      return fail(*f, "opening a channel");
    return ch;
  }

  // Closes `ch`; true if the broker answered (after everything sent before).
  bool close_channel(amqp_channel_t ch) {
    if (!session->alive())
      return false;
    amqp_channel_close(conn(), ch, AMQP_REPLY_SUCCESS);
    return !session->rpc_status(ch);
  }

  result<rabbitmq_queue_depth> passive_declare(amqp_channel_t ch, const std::string& queue) {
    auto* ok =
      amqp_queue_declare(conn(), ch, bytes_of(queue), /*passive=*/1, 0, 0, 0, amqp_empty_table);
    if (auto f = session->rpc_status(ch)) {
      if (f->reply_code == AMQP_NOT_FOUND)
        return error{errc::unknown_queue, "no queue '" + queue + "' on " + settings.describe()};
      return fail(*f, "looking up queue '" + queue + "'");
    }
    return rabbitmq_queue_depth{ok->message_count, ok->consumer_count};
  }

  // Publishes on the confirm channel `ch`, whose publish number this is
  // `seq`, and waits for the confirm. `channel_lost` tells the caller
  // whether the channel can take another publish.
  result<void> publish_confirmed(amqp_channel_t ch, std::uint64_t seq, const std::string& queue,
                                 const amqp_basic_properties_t& p, amqp_bytes_t body,
                                 bool& channel_lost) {
    channel_lost = true;
    int status = amqp_basic_publish(conn(), ch, amqp_empty_bytes, bytes_of(queue),
                                    /*mandatory=*/1, /*immediate=*/0, &p, body);
    if (auto f = session->call_status(status))
      return error{errc::transport_failure, "cannot publish: " + describe(*f)};

    std::string returned;
    auto deadline = std::chrono::steady_clock::now() + settings.operation_timeout;
    for (;;) {
      amqp_frame_t frame{};
      if (!session->poll_frame(frame)) {
        if (!session->alive())
          return error{errc::transport_failure,
                       "connection lost: " + describe(session->death())};
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
          // The confirm may still come: the state of the channel is unknown.
          auto ms = std::to_string(settings.operation_timeout.count()) + " ms";
          session->kill("no publisher confirm within " + ms);
          return error{errc::transport_failure, "the broker did not confirm it within " + ms};
        }
        wait_readable(session->fd(), -1, std::min(left, std::chrono::milliseconds(250)));
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
            return error{errc::transport_failure, "connection lost: " + describe(*f)};
          amqp_destroy_message(&content);
          break;
        }
        case AMQP_BASIC_ACK_METHOD: {
          auto* a = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
          if (a->delivery_tag < seq)
            break; // an older one; cannot happen with one publish at a time
          channel_lost = false;
          if (!returned.empty())
            return error{errc::unknown_queue, "the broker returned it (" + returned
                                                + "): is there a queue '" + queue + "'?"};
          return {};
        }
        case AMQP_BASIC_NACK_METHOD: {
          auto* n = static_cast<amqp_basic_nack_t*>(frame.payload.method.decoded);
          if (n->delivery_tag < seq)
            break;
          channel_lost = false;
          return error{errc::transport_failure, "the broker refused it (basic.nack)"};
        }
        case AMQP_CHANNEL_CLOSE_METHOD: {
          auto f = session->channel_closed_by_broker(frame);
          return error{errc::transport_failure, "the broker closed the channel: " + describe(f)};
        }
        case AMQP_CONNECTION_CLOSE_METHOD: {
          auto f = session->connection_closed_by_broker(frame);
          return error{errc::transport_failure,
                       "the broker closed the connection: " + describe(f)};
        }
        default:
          break;
      }
    }
  }

  result<amqp_channel_t> open_confirm_channel() {
    auto ch = open_channel();
    if (!ch)
      return ch;
    amqp_confirm_select(conn(), *ch);
    if (auto f = session->rpc_status(*ch))
      return fail(*f, "turning publisher confirms on");
    return ch;
  }
};

// A message taken with basic.get and not acknowledged: the broker holds it
// for the browse's channel until it is acknowledged or the channel closes.
struct held_message {
  std::uint64_t tag = 0;
  amqp_message_t raw{}; // owns its own memory pool (amqp_read_message)
};

struct rabbitmq_browse_state {
  std::shared_ptr<rabbitmq_admin_state> admin;
  std::string queue;
  amqp_channel_t channel = 0; // the messages came on it
  bool open = true;
  std::uint32_t consumers = 0;
  bool truncated = false;
  std::vector<held_message> held;
  std::vector<rabbitmq_queued_message> messages; // same order and size as held
  amqp_channel_t confirm_channel = 0;            // 0: not opened yet
  std::uint64_t published = 0;                   // publishes on confirm_channel
  bool can_publish = true;

  rabbitmq_browse_state() = default;
  rabbitmq_browse_state(const rabbitmq_browse_state&) = delete;
  rabbitmq_browse_state& operator=(const rabbitmq_browse_state&) = delete;
  ~rabbitmq_browse_state() {
    for (auto& h : held)
      amqp_destroy_message(&h.raw);
  }

  // Takes from the head until the queue is empty (as the broker counted at
  // the last take) or `limit`.
  result<void> take(std::size_t limit) {
    auto& a = *admin;
    for (;;) {
      amqp_maybe_release_buffers(a.conn()); // held messages own their memory
      amqp_rpc_reply_t reply = amqp_basic_get(a.conn(), channel, bytes_of(queue), /*no_ack=*/0);
      if (auto f = a.session->rpc_status(channel))
        return a.fail(*f, "reading queue '" + queue + "'");
      if (reply.reply.id == AMQP_BASIC_GET_EMPTY_METHOD)
        return {};
      auto* ok = static_cast<amqp_basic_get_ok_t*>(reply.reply.decoded);
      held_message h;
      h.tag = ok->delivery_tag;
      bool redelivered = ok->redelivered != 0;
      auto remaining = ok->message_count;
      if (auto f = a.session->read_content(channel, h.raw))
        return a.fail(*f, "reading a message of '" + queue + "'");
      messages.push_back(to_queued_message(h.raw, redelivered));
      held.push_back(h);
      if (remaining == 0)
        return {};
      if (limit > 0 && held.size() >= limit) {
        truncated = true;
        return {};
      }
    }
  }
};

} // namespace bus::detail

namespace bus {

using detail::amqp_session;
using detail::bytes_of;
using detail::describe;
using detail::text_of;

// ---- rabbitmq_admin ------------------------------------------------------

rabbitmq_admin::rabbitmq_admin(std::shared_ptr<detail::rabbitmq_admin_state> state)
    : state_(std::move(state)) {}

rabbitmq_admin::~rabbitmq_admin() = default;

result<std::unique_ptr<rabbitmq_admin>> rabbitmq_admin::connect(const rabbitmq_settings& settings) {
  if (auto valid = settings.validate(); !valid)
    return valid.error();
  auto session = amqp_session::open(settings, "admin");
  if (!session)
    return session.error();
  auto state = std::make_shared<detail::rabbitmq_admin_state>();
  state->settings = settings;
  state->session = std::move(*session);
  return std::unique_ptr<rabbitmq_admin>(new rabbitmq_admin(std::move(state)));
}

bool rabbitmq_admin::connected() const noexcept {
  return state_->session->alive();
}

result<rabbitmq_queue_depth> rabbitmq_admin::depth(const std::string& queue) {
  auto& s = *state_;
  auto ch = s.open_channel();
  if (!ch)
    return ch.error();
  auto found = s.passive_declare(*ch, queue);
  if (found) // a failed declare closed the channel already
    s.close_channel(*ch);
  return found;
}

result<std::uint32_t> rabbitmq_admin::purge(const std::string& queue) {
  auto& s = *state_;
  auto ch = s.open_channel();
  if (!ch)
    return ch.error();
  auto* ok = amqp_queue_purge(s.conn(), *ch, bytes_of(queue));
  if (auto f = s.session->rpc_status(*ch)) {
    if (f->reply_code == AMQP_NOT_FOUND)
      return error{errc::unknown_queue, "no queue '" + queue + "' on " + s.settings.describe()};
    return s.fail(*f, "purging queue '" + queue + "'");
  }
  std::uint32_t purged = ok->message_count;
  s.close_channel(*ch);
  return purged;
}

result<void> rabbitmq_admin::publish(const std::string& queue, const rabbitmq_outgoing& message) {
  auto& s = *state_;
  auto ch = s.open_confirm_channel();
  if (!ch)
    return ch.error();
  std::vector<amqp_table_entry_t> entries;
  for (const auto& [name, value] : message.headers) {
    amqp_table_entry_t e{};
    e.key = bytes_of(name);
    e.value.kind = AMQP_FIELD_KIND_UTF8;
    e.value.value.bytes = bytes_of(value);
    entries.push_back(e);
  }
  amqp_basic_properties_t p{};
  p._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_HEADERS_FLAG;
  p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  p.headers = amqp_table_t{static_cast<int>(entries.size()), entries.data()};
  if (!message.message_id.empty()) {
    p._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
    p.message_id = bytes_of(message.message_id);
  }
  bool channel_lost = false;
  auto done = s.publish_confirmed(*ch, 1, queue, p, bytes_of(message.body), channel_lost);
  if (!channel_lost)
    s.close_channel(*ch);
  return done;
}

result<rabbitmq_browse> rabbitmq_admin::browse(const std::string& queue, std::size_t limit) {
  auto& s = *state_;
  auto ch = s.open_channel();
  if (!ch)
    return ch.error();
  auto depth = s.passive_declare(*ch, queue);
  if (!depth)
    return depth.error();
  auto b = std::make_unique<detail::rabbitmq_browse_state>();
  b->admin = state_;
  b->queue = queue;
  b->channel = *ch;
  b->consumers = depth->consumers;
  if (auto taken = b->take(limit); !taken) {
    s.close_channel(*ch); // gives back what was taken
    b->open = false;
    return taken.error();
  }
  return rabbitmq_browse(std::move(b));
}

// ---- rabbitmq_browse -----------------------------------------------------

rabbitmq_browse::rabbitmq_browse(std::unique_ptr<detail::rabbitmq_browse_state> state)
    : state_(std::move(state)) {}

rabbitmq_browse::rabbitmq_browse(rabbitmq_browse&&) noexcept = default;
rabbitmq_browse& rabbitmq_browse::operator=(rabbitmq_browse&& other) noexcept {
  if (this != &other) {
    give_back();
    state_ = std::move(other.state_);
  }
  return *this;
}

rabbitmq_browse::~rabbitmq_browse() {
  give_back();
}

const std::string& rabbitmq_browse::queue() const noexcept {
  return state_->queue;
}

const std::vector<rabbitmq_queued_message>& rabbitmq_browse::messages() const noexcept {
  return state_->messages;
}

bool rabbitmq_browse::truncated() const noexcept {
  return state_->truncated;
}

std::uint32_t rabbitmq_browse::consumers() const noexcept {
  return state_->consumers;
}

bool rabbitmq_browse::can_publish() const noexcept {
  return state_ && state_->open && state_->can_publish && state_->admin->session->alive();
}

result<void> rabbitmq_browse::ack(std::size_t index) {
  auto& b = *state_;
  auto& a = *b.admin;
  if (index >= b.held.size())
    return error{errc::invalid_configuration, "no message " + std::to_string(index) + " in the browse"};
  if (!b.open)
    return error{errc::transport_failure, "the browse of '" + b.queue + "' has ended"};
  if (auto f = a.session->call_status(
        amqp_basic_ack(a.conn(), b.channel, b.held[index].tag, /*multiple=*/0)))
    return error{errc::transport_failure, describe(*f)};
  return {};
}

result<void> rabbitmq_browse::copy_to(std::size_t index, const std::string& queue,
                                      const rabbitmq_copy_changes& changes) {
  auto& b = *state_;
  auto& a = *b.admin;
  if (index >= b.held.size())
    return error{errc::invalid_configuration, "no message " + std::to_string(index) + " in the browse"};
  if (!can_publish())
    return error{errc::transport_failure, "publishing is no longer possible on this connection"};
  if (b.confirm_channel == 0) {
    auto ch = a.open_confirm_channel();
    if (!ch) {
      b.can_publish = false;
      return ch.error();
    }
    b.confirm_channel = *ch;
  }
  const auto& h = b.held[index];
  const auto& original = h.raw.properties;
  std::vector<amqp_table_entry_t> entries;
  if (original._flags & AMQP_BASIC_HEADERS_FLAG)
    for (int i = 0; i < original.headers.num_entries; ++i)
      if (!changes.keep_header || changes.keep_header(text_of(original.headers.entries[i].key)))
        entries.push_back(original.headers.entries[i]); // points into h.raw, alive until the end
  for (const auto& [name, value] : changes.added_headers) {
    amqp_table_entry_t e{};
    e.key = bytes_of(name);
    e.value.kind = AMQP_FIELD_KIND_UTF8;
    e.value.value.bytes = bytes_of(value);
    entries.push_back(e);
  }
  amqp_basic_properties_t p = original;
  p._flags |= AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
  p._flags &= ~static_cast<amqp_flags_t>(AMQP_BASIC_EXPIRATION_FLAG);
  p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  p.headers = amqp_table_t{static_cast<int>(entries.size()), entries.data()};
  bool channel_lost = false;
  auto done = a.publish_confirmed(b.confirm_channel, ++b.published, queue, p, h.raw.body,
                                  channel_lost);
  if (channel_lost)
    b.can_publish = false;
  return done;
}

bool rabbitmq_browse::give_back() {
  if (!state_ || !state_->open)
    return false;
  auto& b = *state_;
  b.open = false;
  return b.admin->close_channel(b.channel);
}

} // namespace bus
