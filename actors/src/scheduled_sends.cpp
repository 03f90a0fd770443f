#include "scheduled_sends.hpp"

#include <caf/all.hpp>

#include "atoms.hpp"
#include "bus/delay_queue.hpp"
#include "dead_letter_file.hpp"

namespace bus::detail {

namespace {

using later_atom = caf::atom_constant<caf::atom("later")>;       // bus -> holder
using due_atom = caf::atom_constant<caf::atom("due")>;           // holder -> itself
using refused_atom = caf::atom_constant<caf::atom("refusedat")>; // transport -> holder

// The file, in the bus's dead-letter directory, of scheduled messages
// refused for good: <dead_letter_name>.dead-letters.jsonl.
constexpr const char* dead_letter_name = "scheduled-sends";

// A message waiting for its time; its destination travels in
// destination_address (empty: a publish).
using held_message = std::shared_ptr<envelope>;

struct holder_state {
  transport_ptr transport;
  loggers log;
  std::string dead_letter_directory;
  delay_queue<caf::actor_clock::time_point, held_message> pending;
  std::uint64_t generation = 0; // a tick of an older generation is stale
  bool armed = false;
  caf::actor_clock::time_point armed_for{};
  static inline const char* name = "bus.scheduled_sends";
};

using holder_actor = caf::stateful_actor<holder_state>;

void arm(holder_actor* self) {
  auto& st = self->state;
  auto due = st.pending.next_due();
  if (!due || (st.armed && st.armed_for <= *due))
    return;
  st.armed = true;
  st.armed_for = *due;
  self->scheduled_send(self, *due, due_atom::value, ++st.generation);
}

void hand_over(holder_actor* self, held_message msg) {
  auto me = caf::actor_cast<caf::actor>(self);
  auto done = [me, msg](result<void> sent) {
    if (!sent)
      caf::anon_send(me, refused_atom::value, msg, sent.error().code == errc::transport_failure,
                     to_string(sent.error()));
  };
  auto& t = *self->state.transport;
  if (msg->destination_address.empty())
    t.async_publish(envelope(*msg), std::move(done));
  else
    t.async_send(msg->destination_address, envelope(*msg), std::move(done));
}

// A message its destination refused for good (too large for it, say):
// offering it again would only loop, so it goes where failed messages go
// when their error queue refuses them, a local file an operator can read.
void keep_in_file(holder_actor* self, const held_message& msg, const std::string& why) {
  const auto& st = self->state;
  const auto& to = msg->destination_address;
  fault_details fault;
  fault.exception = {"none", ""};
  fault.reason = "scheduled for '" + (to.empty() ? std::string("publish") : to)
                 + "', refused for good when due: " + why;
  fault.at = std::chrono::system_clock::now();
  fault.original_address = to;
  auto file = append_dead_letter(st.dead_letter_directory, dead_letter_name, *msg, fault);
  if (file) {
    st.log.scheduled_send->error("cannot deliver scheduled message {} to '{}' ({}); wrote it to "
                                 "the dead-letter file '{}'",
                                 msg->message_id, to, why, *file);
    return;
  }
  st.log.scheduled_send->critical("cannot deliver scheduled message {} to '{}' ({}), nor write it "
                                  "to a dead-letter file ({}): it is lost",
                                  msg->message_id, to, why, to_string(file.error()));
}

caf::behavior holder(holder_actor* self, transport_ptr transport, loggers log,
                     std::string dead_letter_directory) {
  self->state.transport = std::move(transport);
  self->state.log = std::move(log);
  self->state.dead_letter_directory = std::move(dead_letter_directory);
  self->set_exit_handler([=](caf::exit_msg& m) {
    for (auto& msg : self->state.pending.drain())
      self->state.log.scheduled_send->error(
          "the bus is gone: scheduled message {} for '{}' is lost (in memory nothing outlives the "
          "bus)",
          msg->message_id, msg->destination_address);
    self->quit(m.reason);
  });
  return {
      [=](later_atom, held_message& msg, duration delay) {
        self->state.pending.push(self->clock().now() + std::max(delay, duration::zero()),
                                 std::move(msg));
        arm(self);
      },
      [=](due_atom, std::uint64_t generation) {
        auto& st = self->state;
        if (generation != st.generation)
          return;
        st.armed = false;
        st.pending.pop_due(self->clock().now(), [&](held_message msg) { hand_over(self, msg); });
        arm(self);
      },
      [=](refused_atom, held_message& msg, bool for_now, const std::string& why) {
        if (!for_now) {
          keep_in_file(self, msg, why);
          return;
        }
        // Out of reach for now: the transport may come back.
        self->state.log.scheduled_send->error(
            "cannot deliver scheduled message {} to '{}': {}; trying again in 1 s", msg->message_id,
            msg->destination_address, why);
        self->state.pending.push(self->clock().now() + std::chrono::seconds(1), std::move(msg));
        arm(self);
      },
  };
}

} // namespace

scheduled_sends::scheduled_sends(caf::actor_system& system, transport_ptr transport, loggers log,
                                 std::string dead_letter_directory)
    : system_(&system), transport_(std::move(transport)), log_(std::move(log)),
      dead_letter_directory_(std::move(dead_letter_directory)) {}

scheduled_sends::~scheduled_sends() {
  if (holder_)
    caf::anon_send_exit(holder_, caf::exit_reason::user_shutdown);
}

caf::actor scheduled_sends::holder() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (!holder_)
    holder_ = system_->spawn(detail::holder, transport_, log_, dead_letter_directory_);
  return holder_;
}

void scheduled_sends::send_later(std::string queue, envelope msg, duration delay, completion done) {
  // Checked now, not when it is due: a queue that is missing then is
  // refused far from the call (in memory, retried in a loop of log lines;
  // on RabbitMQ dropped at the last delay level). A broker transport
  // checks as it takes the message (its send_delayed binds the queue).
  if (!queue.empty())
    if (auto exists = transport_->check_queue(queue); !exists) {
      done(error{exists.error().code, "cannot schedule message " + msg.message_id + " for '"
                                        + queue + "': " + exists.error().message});
      return;
    }
  if (transport_->capabilities().delayed_delivery) {
    // The broker holds it: it survives this process.
    if (queue.empty()) {
      done(error{errc::invalid_configuration,
                 "a scheduled publish needs a transport that holds it in memory; send it to a "
                 "queue instead"});
      return;
    }
    transport_->async_send_delayed(queue, std::move(msg), std::max(delay, duration::zero()),
                                   std::move(done));
    return;
  }
  msg.destination_address = std::move(queue);
  caf::anon_send(holder(), later_atom::value, std::make_shared<envelope>(std::move(msg)), delay);
  done(result<void>{});
}

} // namespace bus::detail
