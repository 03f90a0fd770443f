#include "request_client.hpp"

#include <unordered_map>

#include <caf/all.hpp>

#include "atoms.hpp"

namespace bus::detail {

namespace {

using expect_atom = caf::atom_constant<caf::atom("expect")>;   // bus -> client
using abandon_atom = caf::atom_constant<caf::atom("abandon")>; // bus or transport -> client
using expire_atom = caf::atom_constant<caf::atom("expire")>;   // client -> itself

struct waiting {
  reply_callback done;
  std::uint64_t id; // tells this wait's timer from an earlier one's for the same correlation id
};

struct client_state {
  transport_ptr transport;
  loggers log;
  std::string queue;
  std::unordered_map<std::string, waiting> waits; // by correlation id
  std::uint64_t next_id = 0;
  static inline const char* name = "bus.request_client";
};

using client_actor = caf::stateful_actor<client_state>;

// Ends the wait for `correlation_id` with `outcome`, if it still runs.
bool answer(client_actor* self, const std::string& correlation_id, result<envelope_ptr> outcome) {
  auto it = self->state.waits.find(correlation_id);
  if (it == self->state.waits.end())
    return false;
  auto done = std::move(it->second.done);
  self->state.waits.erase(it);
  done(std::move(outcome));
  return true;
}

caf::behavior client(client_actor* self, transport_ptr transport, loggers log, std::string queue) {
  self->state.transport = std::move(transport);
  self->state.log = std::move(log);
  self->state.queue = std::move(queue);
  self->set_exit_handler([=](caf::exit_msg& m) {
    auto waits = std::move(self->state.waits);
    for (auto& [correlation_id, w] : waits)
      w.done(error{errc::not_running, "the bus was destroyed while request " + correlation_id
                                          + " waited for its reply"});
    self->quit(m.reason);
  });
  return {
      [=](expect_atom, std::string& correlation_id, duration timeout, reply_callback& done,
          request_sender& sender) {
        auto& st = self->state;
        if (st.waits.count(correlation_id) != 0) {
          done(error{errc::duplicate, "a request with correlation id " + correlation_id
                                          + " already waits for its reply"});
          return;
        }
        auto id = st.next_id++;
        st.waits.emplace(correlation_id, waiting{std::move(done), id});
        self->delayed_send(self, timeout, expire_atom::value, correlation_id, id, timeout);
        sender.send(); // the transport's asynchronous send: never waits
      },
      [=](abandon_atom, const std::string& correlation_id, error& why) {
        answer(self, correlation_id, std::move(why));
      },
      [=](expire_atom, const std::string& correlation_id, std::uint64_t id, duration timeout) {
        auto it = self->state.waits.find(correlation_id);
        if (it == self->state.waits.end() || it->second.id != id)
          return; // answered already
        answer(self, correlation_id,
               error{errc::timeout,
                     "no reply to request " + correlation_id + " within " + to_hms(timeout)});
      },
      [=](deliver_atom, delivery& d) {
        auto& st = self->state;
        if (auto acked = st.transport->ack(d.tag); !acked)
          st.log.request->warn("cannot acknowledge reply {} on '{}': {}", d.message->message_id,
                               st.queue, to_string(acked.error()));
        const auto& correlation_id = d.message->correlation_id;
        if (!answer(self, correlation_id, d.message))
          st.log.request->warn(
              "dropping reply {} of type '{}' on '{}': no request waits for correlation id '{}' "
              "(it timed out, or was never sent from this bus)",
              d.message->message_id, d.message->message_type, st.queue, correlation_id);
      },
  };
}

} // namespace

request_client::request_client(caf::actor_system& system, transport_ptr transport, loggers log,
                               std::string reply_queue, bool temporary, bool prepare_inline)
    : system_(&system), transport_(std::move(transport)), log_(std::move(log)),
      reply_queue_(std::move(reply_queue)), temporary_(temporary),
      prepare_inline_(prepare_inline) {
  actor_ = system_->spawn(detail::client, transport_, log_, reply_queue_);
}

request_client::~request_client() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (stage_ == stage::consuming)
      transport_->cancel(reply_queue_);
  }
  caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
}

void request_client::when_ready(std::function<void(result<void>)> then) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (stage_ == stage::consuming) {
      lock.unlock();
      then({});
      return;
    }
    waiting_.push_back(std::move(then));
    if (stage_ == stage::preparing)
      return;
    stage_ = stage::preparing;
  }
  if (prepare_inline_) {
    prepare();
    return;
  }
  // The actor keeps this client alive until the preparation is over.
  system_->spawn<caf::detached>([client = shared_from_this()](caf::event_based_actor*) {
    client->prepare();
    return caf::behavior{}; // done: the actor ends here
  });
}

void request_client::prepare() {
  auto prepared = declare_and_consume();
  std::vector<std::function<void(result<void>)>> callers;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stage_ = prepared ? stage::consuming : stage::idle;
    callers.swap(waiting_);
  }
  for (auto& then : callers)
    then(prepared);
}

result<void> request_client::declare_and_consume() {
  queue_options options;
  options.temporary = temporary_;
  if (auto declared = transport_->declare_queue_with(reply_queue_, options); !declared)
    return declared.error();
  auto consumed = transport_->consume(reply_queue_, 64, [actor = actor_](delivery d) {
    caf::anon_send(actor, deliver_atom::value, std::move(d));
  });
  if (!consumed)
    return error{consumed.error().code, "cannot consume the reply queue '" + reply_queue_
                                            + "': " + consumed.error().message};
  return {};
}

void request_client::expect(std::string correlation_id, duration timeout, reply_callback done,
                            request_sender sender) {
  caf::anon_send(actor_, expect_atom::value, std::move(correlation_id), timeout, std::move(done),
                 std::move(sender));
}

void request_client::abandon(std::string correlation_id, error why) {
  caf::anon_send(actor_, abandon_atom::value, std::move(correlation_id), std::move(why));
}

} // namespace bus::detail
