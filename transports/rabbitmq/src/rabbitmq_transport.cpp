#include "bus/rabbitmq_transport.hpp"

#include <exception>
#include <future>
#include <thread>

#include "bus/nservicebus.hpp"
#include "consumer.hpp"
#include "delay_levels.hpp"
#include "level_watch.hpp"
#include "log.hpp"
#include "masstransit_out.hpp"
#include "publisher.hpp"
#include "rabbitmq_error_queues.hpp"
#include "topology.hpp"

namespace bus {

namespace {

// AMQP names (queues, exchanges, routing keys) are short strings.
constexpr std::size_t max_name = 255;

// The exchange a publish goes to. MassTransit's subscribers listen on the
// exchange of the type's own MassTransit name (the first it lists),
// NServiceBus's on that of its .NET name, the bus's on its registered name.
std::string exchange_of(const envelope& msg) {
  if (auto urns = msg.headers.find(masstransit::header::write_as))
    return masstransit::exchange_of(urns->substr(0, urns->find(';')));
  if (auto theirs = nservicebus::publish_exchange(msg); !theirs.empty())
    return theirs;
  return msg.message_type;
}

result<void> check_name(const std::string& name, const char* what) {
  if (name.empty())
    return error{errc::invalid_configuration, std::string("a ") + what + " needs a non-empty name"};
  if (name.size() > max_name)
    return error{errc::invalid_configuration, std::string("the ") + what + " name '"
                                                  + name.substr(0, 40) + "...' is longer than "
                                                  + std::to_string(max_name) + " bytes"};
  return {};
}

// Runs an asynchronous operation and waits for its completion: the
// blocking forms are the asynchronous ones and a promise.
template <class Start> result<void> wait_for(Start&& start) {
  std::promise<result<void>> outcome;
  auto future = outcome.get_future();
  start([&outcome](result<void> r) { outcome.set_value(std::move(r)); });
  return future.get();
}

} // namespace

struct rabbitmq_transport::impl {
  explicit impl(rabbitmq_settings s)
      : settings(std::move(s)), levels(settings.delay_levels, settings.delay_unit),
        log(std::make_shared<const detail::rabbitmq_logger>(settings.log)),
        record(std::make_shared<detail::topology_record>()), publishing(settings, record, log),
        consuming(settings, record, log), failed(settings) {}

  const rabbitmq_settings settings;
  const detail::delay_levels levels;
  std::shared_ptr<const detail::rabbitmq_logger> log;
  std::shared_ptr<detail::topology_record> record;
  // Declared last, destroyed first: the consumer stops delivering before
  // anything else goes away.
  detail::publisher publishing;
  detail::consumer_pump consuming;
  // With a management_url: the delay levels watched for stranded messages.
  std::unique_ptr<detail::level_watch> watch;
  // The error queues as the bus's page sees them (a connection of its own,
  // opened at first use).
  detail::rabbitmq_error_queues failed;
  // The base of MassTransit's addresses on this broker: for messages the
  // bus sends in its convention.
  const std::string masstransit_broker = detail::masstransit_broker(settings);

  // `msg` as it goes out: in MassTransit's envelope if the bus marked it
  // so (masstransit::header::write_as), else in the bus's own form.
  result<detail::outgoing_message> encode(const envelope& msg) const {
    if (auto urns = msg.headers.find(masstransit::header::write_as))
      return detail::outgoing_message::in_masstransit_envelope(msg, *urns, masstransit_broker,
                                                               masstransit::this_host());
    return detail::outgoing_message::from(msg);
  }
};

result<std::shared_ptr<rabbitmq_transport>>
rabbitmq_transport::connect(rabbitmq_settings settings) {
  if (auto valid = settings.validate(); !valid)
    return valid.error();
  try {
    auto state = std::make_unique<impl>(std::move(settings));
    if (auto up = state->publishing.start(); !up)
      return up.error();
    if (auto up = state->consuming.start(); !up)
      return up.error();
    if (!state->settings.management_url.empty())
      state->watch =
          std::make_unique<detail::level_watch>(state->settings, state->levels, *state->log);
    state->log->info("connected to " + state->settings.describe());
    return std::shared_ptr<rabbitmq_transport>(new rabbitmq_transport(std::move(state)));
  } catch (const std::exception& e) { // thread or eventfd creation
    return error{errc::transport_failure,
                 std::string("cannot start the RabbitMQ transport: ") + e.what()};
  }
}

rabbitmq_transport::rabbitmq_transport(std::unique_ptr<impl> state) : impl_(std::move(state)) {}

rabbitmq_transport::~rabbitmq_transport() {
  // The last reference went inside one of this transport's own callbacks
  // (a completion holding a request's client, which holds the transport):
  // closing here would have that I/O thread join itself. A thread of its
  // own closes instead, once the callback on the stack returned; the state
  // lives until then.
  if (impl_ && (impl_->publishing.on_io_thread() || impl_->consuming.on_io_thread()))
    std::thread([state = std::move(impl_)]() mutable { state.reset(); }).detach();
}

transport_capabilities rabbitmq_transport::capabilities() const noexcept {
  transport_capabilities c;
  c.durable = true;
  c.native_delivery_count = impl_->settings.queue_type == rabbitmq_queue_type::quorum;
  c.delayed_delivery = true;
  c.streams = true;
  return c;
}

result<void> rabbitmq_transport::declare_queue(const std::string& queue) {
  return declare_queue_with(queue, {});
}

result<void> rabbitmq_transport::declare_queue_with(const std::string& queue,
                                                    const queue_options& options) {
  if (auto ok = check_name(queue, "queue"); !ok)
    return ok;
  if (!options.dead_letter_queue.empty())
    if (auto ok = check_name(options.dead_letter_queue, "queue"); !ok)
      return ok;
  return impl_->publishing.declare_queue(queue, options);
}

result<void> rabbitmq_transport::subscribe(const std::string& queue,
                                           const std::string& message_type) {
  if (auto ok = check_name(queue, "queue"); !ok)
    return ok;
  if (auto ok = check_name(message_type, "message type"); !ok)
    return ok;
  return impl_->publishing.subscribe(queue, message_type);
}

result<void> rabbitmq_transport::consume(const std::string& queue, std::size_t max_unacked,
                                         delivery_handler on_delivery) {
  if (auto ok = check_name(queue, "queue"); !ok)
    return ok;
  return impl_->consuming.consume(queue, max_unacked, std::move(on_delivery));
}

result<void> rabbitmq_transport::declare_stream(const std::string& stream,
                                                const stream_retention& retention) {
  if (auto ok = check_name(stream, "stream"); !ok)
    return ok;
  if (auto mistakes = validate(retention); !mistakes.empty())
    return error{errc::invalid_configuration, "stream '" + stream + "': " + mistakes};
  return impl_->publishing.declare_stream(stream, retention);
}

bool rabbitmq_transport::is_stream(const std::string& name) const {
  return impl_->record->find_stream(name).has_value();
}

result<void> rabbitmq_transport::consume_stream(const std::string& reader,
                                                const std::string& stream,
                                                const stream_start& start, std::size_t max_unacked,
                                                delivery_handler on_delivery) {
  if (auto ok = check_name(stream, "stream"); !ok)
    return ok;
  if (auto ok = check_name(reader, "reader"); !ok)
    return ok;
  return impl_->consuming.consume_stream(reader, stream, start, max_unacked,
                                         std::move(on_delivery));
}

std::optional<std::uint64_t> rabbitmq_transport::stream_tail(const std::string& stream) const {
  return impl_->consuming.stream_tail(stream);
}

bool rabbitmq_transport::settleable(std::uint64_t tag) const {
  return impl_->consuming.settleable(tag);
}

std::size_t rabbitmq_transport::unsettled() const {
  return impl_->consuming.unsettled();
}

void rabbitmq_transport::cancel(const std::string& queue) {
  impl_->consuming.cancel(queue);
}

result<void> rabbitmq_transport::send(const std::string& queue, envelope msg) {
  return wait_for([&](completion done) { async_send(queue, std::move(msg), std::move(done)); });
}

result<void> rabbitmq_transport::send_delayed(const std::string& queue, envelope msg,
                                              duration delay) {
  return wait_for([&](completion done) {
    async_send_delayed(queue, std::move(msg), delay, std::move(done));
  });
}

result<void> rabbitmq_transport::publish(envelope msg) {
  return wait_for([&](completion done) { async_publish(std::move(msg), std::move(done)); });
}

void rabbitmq_transport::async_send(const std::string& queue, envelope msg, completion done) {
  if (auto ok = check_name(queue, "queue"); !ok)
    return done(ok);
  auto out = impl_->encode(msg);
  if (!out)
    return done(out.error());
  impl_->publishing.async_send(queue, std::move(*out), std::move(done));
}

void rabbitmq_transport::async_send_delayed(const std::string& queue, envelope msg,
                                            duration delay, completion done) {
  if (auto ok = check_name(queue, "queue"); !ok)
    return done(ok);
  const auto& levels = impl_->levels;
  if (delay > levels.max_delay())
    return done(error{errc::invalid_configuration,
                      "cannot hold message " + msg.message_id + " for " + to_hms(delay)
                          + ": the delay levels hold at most " + to_hms(levels.max_delay())
                          + " (raise delay_levels or delay_unit)"});
  auto units = levels.units(delay);
  if (units == 0)
    return async_send(queue, std::move(msg), std::move(done));
  // The queue's name ends the routing key and its delay binding; a word
  // that is a wildcard there would catch other queues' messages.
  std::size_t start = 0;
  while (start <= queue.size()) {
    auto dot = queue.find('.', start);
    auto word = queue.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (word == "*" || word == "#")
      return done(error{errc::invalid_configuration, "queue '" + queue
                                                         + "' cannot take delayed messages: '"
                                                         + word
                                                         + "' is a wildcard in a routing key"});
    if (dot == std::string::npos)
      break;
    start = dot + 1;
  }
  if (2 * levels.count() + queue.size() > max_name)
    return done(error{errc::invalid_configuration,
                      "queue '" + queue + "' cannot take delayed messages: with "
                          + std::to_string(levels.count())
                          + " delay levels its name may have at most "
                          + std::to_string(max_name - 2 * levels.count()) + " bytes"});
  auto out = impl_->encode(msg);
  if (!out)
    return done(out.error());
  impl_->publishing.async_send_delayed(queue, units, std::move(*out), std::move(done));
}

void rabbitmq_transport::async_publish(envelope msg, completion done) {
  // No type, no exchange: nobody can have subscribed (subscribe refuses an
  // empty type), and a publish without listeners is no error.
  if (msg.message_type.empty())
    return done(result<void>{});
  auto type = exchange_of(msg);
  if (auto ok = check_name(type, "message type"); !ok)
    return done(ok);
  auto out = impl_->encode(msg);
  if (!out)
    return done(out.error());
  impl_->publishing.async_publish(type, std::move(*out), std::move(done));
}

result<void> rabbitmq_transport::ack(std::uint64_t tag) {
  return impl_->consuming.settle(tag, /*ack=*/true, /*requeue=*/false);
}

result<void> rabbitmq_transport::reject(std::uint64_t tag, bool requeue) {
  return impl_->consuming.settle(tag, /*ack=*/false, requeue);
}

result<std::size_t> rabbitmq_transport::message_count(const std::string& queue) {
  if (auto ok = check_name(queue, "queue"); !ok)
    return ok.error();
  auto count = impl_->publishing.message_count(queue);
  if (!count)
    return count.error();
  return static_cast<std::size_t>(*count);
}

error_queue_access* rabbitmq_transport::error_queues() noexcept { return &impl_->failed; }

std::uint64_t rabbitmq_transport::reconnects() const noexcept {
  return impl_->publishing.reconnects() + impl_->consuming.reconnects();
}

transport_health rabbitmq_transport::health() const {
  transport_health h;
  h.reconnects = reconnects();
  h.republished = impl_->publishing.republished();
  const bool publishing = impl_->publishing.connected();
  const bool consuming = impl_->consuming.connected();
  h.connected = publishing && consuming;
  if (!publishing && !consuming)
    h.detail = "both connections to RabbitMQ at " + describe() + " are down";
  else if (!publishing)
    h.detail = "the publishing connection to RabbitMQ at " + describe() + " is down";
  else if (!consuming)
    h.detail = "the consuming connection to RabbitMQ at " + describe() + " is down";
  if (impl_->watch)
    h.stalled = impl_->watch->stranded();
  return h;
}

std::string rabbitmq_transport::describe() const {
  return impl_->settings.describe();
}

} // namespace bus
