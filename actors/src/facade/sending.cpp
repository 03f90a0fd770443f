#include "facade/bus_state.hpp"

#include <future>

#include <caf/all.hpp>

#include "outgoing.hpp"
#include "tracing.hpp"

namespace bus {

void message_bus::warn_outbox(const std::string& line) const {
  impl_->log.outbox->warn("{}", line);
}

result<::bus::outbox_session> message_bus::outbox_session(std::shared_ptr<message_store> store) {
  std::string endpoint;
  {
    std::lock_guard<std::mutex> guard(impl_->mutex);
    for (const auto& [name, e] : impl_->endpoints)
      if (!e.removed && store && e.definition.store == store) {
        endpoint = name;
        break;
      }
  }
  if (endpoint.empty())
    return error{errc::invalid_configuration,
                 "an outbox session needs the store of an endpoint's outbox, whose sweeper sends "
                 "what a crash leaves unsent; no endpoint of this bus has this one"};
  // The session's record is filed under that endpoint, with an id of its own.
  inbox_key key{endpoint, detail::new_message_id()};
  auto entry = store->receive(key, now());
  if (!entry)
    return entry.error();
  if (entry->state != inbox_state::first) // a fresh id: only a broken store says otherwise
    return error{errc::store_failure, "the store knows the fresh session id " + key.message_id};
  return ::bus::outbox_session(*this, std::move(store), std::move(key),
                               std::move(entry->transaction));
}

result<envelope> message_bus::stamp(const std::string& queue, result<message_body> body,
                                    send_options options) {
  if (impl_->state == impl::phase::stopped)
    return error{errc::not_running, "the bus is stopped; start() it again to send"};
  if (!body)
    return body.error();
  auto env = detail::stamp_outgoing(std::move(*body), impl_->name, impl_->clock(), queue,
                                    std::move(options), nullptr);
  detail::start_trace(env); // a valid traceparent of the caller's is kept
  return env;
}

result<std::string> message_bus::dispatch(const std::string& queue, result<message_body> body,
                                          send_options options) {
  auto env = stamp(queue, std::move(body), std::move(options));
  if (!env)
    return env.error();
  auto id = env->message_id;
  // Timed from the stamp's own clock read (bus-sent-at), with metrics on.
  auto started = env->sent_at;
  auto sent = queue.empty() ? impl_->transport->publish(std::move(*env))
                            : impl_->transport->send(queue, std::move(*env));
  if (impl_->sends)
    (queue.empty() ? impl_->sends->publish : impl_->sends->send).observe(impl_->clock() - started);
  if (!sent)
    return sent.error();
  return id;
}

void message_bus::dispatch_async(const std::string& queue, result<message_body> body,
                                 send_options options, send_completion done) {
  auto env = stamp(queue, std::move(body), std::move(options));
  if (!env) {
    done(env.error());
    return;
  }
  // The transport answers success or failure; the caller gets the id, so a
  // confirmed send can be matched to a log line or a reply.
  completion answered = [id = env->message_id, done = std::move(done)](result<void> r) {
    if (r)
      done(id);
    else
      done(r.error());
  };
  if (impl_->sends) {
    // Timed until the transport answers; the instruments outlive the call.
    auto* histogram = queue.empty() ? &impl_->sends->publish : &impl_->sends->send;
    // On the steady clock: the answer may come after the bus (and the
    // actor system behind its clock) is gone.
    answered = [sends = impl_->sends, histogram, started = std::chrono::steady_clock::now(),
                answered = std::move(answered)](result<void> r) {
      histogram->observe(std::chrono::steady_clock::now() - started);
      answered(std::move(r));
    };
  }
  if (queue.empty())
    impl_->transport->async_publish(std::move(*env), std::move(answered));
  else
    impl_->transport->async_send(queue, std::move(*env), std::move(answered));
}

result<std::string> message_bus::dispatch_later(const std::string& queue, result<message_body> body,
                                                send_options options, duration delay) {
  // Shuttle.Esb's rule for streams (bus/stream.hpp): nothing is deferred
  // to one.
  if (impl_->transport->is_stream(queue))
    return error{errc::invalid_configuration,
                 "'" + queue + "' is a stream: a message cannot be deferred or scheduled to it, "
                 "since every reader would read it when it comes; send it now"};
  auto env = stamp(queue, std::move(body), std::move(options));
  if (!env)
    return env.error();
  auto id = env->message_id;
  // Called inline in memory, on the broker's I/O thread otherwise: this
  // caller is outside the actors, so it may wait.
  std::promise<result<void>> held;
  auto future = held.get_future();
  impl_->later->send_later(queue, std::move(*env), delay,
                           [&held](result<void> r) { held.set_value(std::move(r)); });
  if (auto r = future.get(); !r)
    return r.error();
  return id;
}

void message_bus::dispatch_request(const std::string& queue, result<message_body> body,
                                   send_options options, duration timeout,
                                   std::function<void(result<envelope_ptr>)> done) {
  auto client = impl_->request_client();
  options.response_address = client->address();
  auto env = stamp(queue, std::move(body), std::move(options));
  if (!env) {
    done(env.error());
    return;
  }
  if (env->correlation_id.empty())
    env->correlation_id = env->message_id;
  // The first request waits for the reply queue off the caller's thread;
  // what follows needs nothing of this bus but its transport, which may be
  // gone by then.
  client->when_ready([client, transport = impl_->transport, queue, timeout, env = std::move(*env),
                      done = std::move(done)](result<void> ready) mutable {
    if (!ready) {
      done(ready.error());
      return;
    }
    auto correlation_id = env.correlation_id;
    // Sent by the client once the wait is registered: its reply cannot
    // come first, and a request it refuses never goes out. The completion
    // holds no owner (a client gone answered its waits already), so that
    // no last reference is dropped on the transport's thread.
    std::weak_ptr<detail::request_client> waiting_client = client;
    detail::request_sender sender{[waiting_client, transport, queue, correlation_id,
                                   env = std::make_shared<envelope>(std::move(env))] {
      transport->async_send(queue, std::move(*env),
                            [waiting_client, correlation_id](result<void> sent) {
                              if (auto c = waiting_client.lock(); c && !sent)
                                c->abandon(correlation_id, sent.error());
                            });
    }};
    client->expect(correlation_id, timeout, std::move(done), std::move(sender));
  });
}

std::string message_bus::describe_failure(const std::string& message_id,
                                          const std::string& endpoint, const std::string& reason,
                                          const std::string& exception_type,
                                          const std::string& exception_message) {
  return "request " + message_id + " failed in endpoint '" + endpoint + "' (" + reason
         + "): " + exception_type + ": " + exception_message;
}

duration message_bus::until(time_point when) const {
  auto left = std::chrono::duration_cast<duration>(when - impl_->clock());
  return std::max(left, duration::zero());
}

} // namespace bus
