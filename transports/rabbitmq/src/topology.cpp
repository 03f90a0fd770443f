#include "topology.hpp"

#include <vector>

#include "amqp_bytes.hpp"

namespace bus::detail {

namespace {

// Queue arguments; the strings they point at must outlive the declare.
class arguments {
public:
  void add(const char* key, const char* value) {
    amqp_table_entry_t e{};
    e.key = amqp_cstring_bytes(key);
    e.value.kind = AMQP_FIELD_KIND_UTF8;
    e.value.value.bytes = amqp_cstring_bytes(value);
    entries_.push_back(e);
  }
  void add(const char* key, const std::string& value) {
    amqp_table_entry_t e{};
    e.key = amqp_cstring_bytes(key);
    e.value.kind = AMQP_FIELD_KIND_UTF8;
    e.value.value.bytes = bytes_of(value);
    entries_.push_back(e);
  }
  // Signed kinds only: RabbitMQ reads 'l' (I64) everywhere it wants a number.
  void add(const char* key, std::int64_t value) {
    amqp_table_entry_t e{};
    e.key = amqp_cstring_bytes(key);
    e.value.kind = AMQP_FIELD_KIND_I64;
    e.value.value.i64 = value;
    entries_.push_back(e);
  }
  amqp_table_t table() {
    return amqp_table_t{static_cast<int>(entries_.size()),
                        entries_.empty() ? nullptr : entries_.data()};
  }

private:
  std::vector<amqp_table_entry_t> entries_;
};

amqp_status declare_exchange(amqp_session& s, amqp_channel_t ch, const std::string& name,
                             const char* kind) {
  amqp_exchange_declare(s.raw(), ch, bytes_of(name), amqp_cstring_bytes(kind), /*passive=*/0,
                        /*durable=*/1, /*auto_delete=*/0, /*internal=*/0, amqp_empty_table);
  return s.rpc_status(ch);
}

} // namespace

void topology_record::add_queue(const std::string& q, const queue_options& options) {
  std::lock_guard<std::mutex> guard(mutex_);
  data_.queues[q] = options;
}

void topology_record::add_stream(const std::string& s, const stream_retention& retention) {
  std::lock_guard<std::mutex> guard(mutex_);
  data_.streams[s] = retention;
}

std::optional<stream_retention> topology_record::find_stream(const std::string& s) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = data_.streams.find(s);
  if (it == data_.streams.end())
    return std::nullopt;
  return it->second;
}

void topology_record::add_subscription(const std::string& q, const std::string& type) {
  std::lock_guard<std::mutex> guard(mutex_);
  data_.subscriptions.emplace(q, type);
}

void topology_record::add_delay_levels() {
  std::lock_guard<std::mutex> guard(mutex_);
  data_.delay_levels = true;
}

void topology_record::add_delay_destination(const std::string& q) {
  std::lock_guard<std::mutex> guard(mutex_);
  data_.delay_destinations.insert(q);
}

std::optional<queue_options> topology_record::find_queue(const std::string& q) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = data_.queues.find(q);
  if (it == data_.queues.end())
    return std::nullopt;
  return it->second;
}

topology_record::snapshot topology_record::copy() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return data_;
}

namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return !suffix.empty() && text.size() >= suffix.size()
         && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

std::string dead_letter_queue(const std::string& queue, const queue_options& options,
                              const rabbitmq_settings& settings) {
  if (!options.dead_letter_queue.empty())
    return options.dead_letter_queue;
  if (ends_with(queue, settings.error_queue_suffix))
    return queue;
  if (ends_with(queue, settings.skipped_queue_suffix))
    return queue.substr(0, queue.size() - settings.skipped_queue_suffix.size())
           + settings.error_queue_suffix;
  return queue + settings.error_queue_suffix;
}

amqp_status declare_endpoint_queue(amqp_session& s, amqp_channel_t ch, const std::string& queue,
                                   const queue_options& options,
                                   const rabbitmq_settings& settings) {
  arguments args;
  if (options.temporary) {
    // Classic whatever queue_type says: a quorum queue would replicate what
    // only this process reads, and one process's replies need no delivery
    // limit. Durable, as RabbitMQ 4 deprecates transient shared queues;
    // x-expires deletes it once unused, after its process is gone.
    args.add("x-expires", temporary_queue_expiry_ms);
    amqp_queue_declare(s.raw(), ch, bytes_of(queue), /*passive=*/0, /*durable=*/1,
                       /*exclusive=*/0, /*auto_delete=*/0, args.table());
    return s.rpc_status(ch);
  }
  // A classic queue is declared without x-queue-type, as every other client
  // does, so that it stays equivalent to queues they declared.
  std::string target;
  bool error_queue = false;
  if (settings.queue_type == rabbitmq_queue_type::quorum) {
    args.add("x-queue-type", "quorum");
    target = dead_letter_queue(queue, options, settings);
    // An error queue (its own dead-letter target) has no delivery limit:
    // nothing consumes it but an operator's tool, whose reads (basic.get,
    // then the message given back) the broker counts as deliveries. With
    // a limit, a few reads would dead-letter a message into its own queue,
    // in flight and missing from the next read, its headers rewritten.
    // RabbitMQ 3.10 has no default limit; 4.0 applies 20 to a quorum queue
    // without one (docs/rabbitmq.md says how to lift it there).
    error_queue = target == queue;
  }
  if (settings.queue_type == rabbitmq_queue_type::quorum && !error_queue) {
    // The broker's own limit, explicit (RabbitMQ 4.0 would otherwise apply
    // 20 and drop), dead-lettering through the default exchange straight
    // into the error queue. At-least-once: the message leaves this queue
    // only once the error queue has it; that needs reject-publish overflow
    // (no length limit is set, so nothing is refused for being full), or
    // the broker silently falls back to at-most-once.
    args.add("x-delivery-limit", settings.delivery_limit);
    args.add("x-dead-letter-exchange", "");
    args.add("x-dead-letter-routing-key", target);
    args.add("x-dead-letter-strategy", "at-least-once");
    args.add("x-overflow", "reject-publish");
  }
  amqp_queue_declare(s.raw(), ch, bytes_of(queue), /*passive=*/0, /*durable=*/1, /*exclusive=*/0,
                     /*auto_delete=*/0, args.table());
  auto failed = s.rpc_status(ch);
  if (failed && failed->reply_code == AMQP_PRECONDITION_FAILED)
    failed->text += std::string(" (queue '") + queue + "' already exists with other arguments; "
                    + "the bus declares it as a "
                    + (error_queue ? std::string("quorum error queue without a delivery limit")
                       : settings.queue_type == rabbitmq_queue_type::quorum
                           ? "quorum queue with x-delivery-limit="
                                 + std::to_string(settings.delivery_limit)
                                 + " dead-lettering to '" + target + "'"
                           : std::string("classic queue without arguments"))
                    + ": move its messages and delete it, or set queue_type and delivery_limit "
                      "to match it)";
  return failed;
}

amqp_status declare_stream_queue(amqp_session& s, amqp_channel_t ch, const std::string& stream,
                                 const stream_retention& retention) {
  arguments args;
  args.add("x-queue-type", "stream");
  if (retention.max_length_bytes > 0)
    args.add("x-max-length-bytes", static_cast<std::int64_t>(retention.max_length_bytes));
  // RabbitMQ reads the age as a number with a unit (Y, M, D, h, m, s).
  const auto age = std::to_string(retention.max_age.count()) + "s";
  if (retention.max_age.count() > 0)
    args.add("x-max-age", age);
  amqp_queue_declare(s.raw(), ch, bytes_of(stream), /*passive=*/0, /*durable=*/1, /*exclusive=*/0,
                     /*auto_delete=*/0, args.table());
  auto failed = s.rpc_status(ch);
  if (failed && failed->reply_code == AMQP_PRECONDITION_FAILED)
    failed->text += " ('" + stream + "' exists already as a queue, or as a stream with another "
                    + "retention; the bus declares it as a stream with x-max-length-bytes="
                    + std::to_string(retention.max_length_bytes) + " and x-max-age=" + age
                    + ", 0 meaning none)";
  return failed;
}

amqp_status inspect_queue(amqp_session& s, amqp_channel_t ch, const std::string& queue,
                          std::uint32_t& message_count) {
  auto* ok =
      amqp_queue_declare(s.raw(), ch, bytes_of(queue), /*passive=*/1, 0, 0, 0, amqp_empty_table);
  if (auto failed = s.rpc_status(ch))
    return failed;
  message_count = ok ? ok->message_count : 0;
  return std::nullopt;
}

amqp_status declare_type_exchange(amqp_session& s, amqp_channel_t ch, const std::string& type) {
  return declare_exchange(s, ch, type, "fanout");
}

amqp_status bind_subscription(amqp_session& s, amqp_channel_t ch, const std::string& queue,
                              const std::string& type) {
  if (auto failed = declare_type_exchange(s, ch, type))
    return failed;
  amqp_queue_bind(s.raw(), ch, bytes_of(queue), bytes_of(type), amqp_empty_bytes, amqp_empty_table);
  return s.rpc_status(ch);
}

namespace {

// Level k's queue: quorum, with at-least-once dead-lettering, so a message
// moves to the next level only once that level has it and a broker crash
// between two levels loses nothing (classic queues dead-letter at most
// once). At-least-once needs reject-publish overflow, else the broker
// silently falls back to at-most-once. `balanced`: its leader goes to the
// node that leads the fewest queues, not to the node the declaring client
// happens to be on, so that one node's death changes the leaders of a
// share of the levels, not of all of them (docs/rabbitmq.md: a leader
// change is when RabbitMQ can strand a level's dead letters).
amqp_status declare_level_queue(amqp_session& s, amqp_channel_t ch, const delay_levels& levels,
                                unsigned k, bool balanced) {
  auto name = levels.level_name(k);
  auto next = levels.next_exchange(k); // the arguments point into it
  arguments args;
  args.add("x-queue-type", "quorum");
  args.add("x-message-ttl", levels.level_ttl_ms(k));
  args.add("x-dead-letter-exchange", next);
  args.add("x-dead-letter-strategy", "at-least-once");
  args.add("x-overflow", "reject-publish");
  if (balanced)
    args.add("x-queue-leader-locator", "balanced");
  amqp_queue_declare(s.raw(), ch, bytes_of(name), 0, /*durable=*/1, 0, 0, args.table());
  return s.rpc_status(ch);
}

// The 406 of a level declared before levels were placed `balanced`: the
// broker compares x-queue-leader-locator when a queue is declared again.
bool placed_otherwise(const amqp_failure& f) {
  return f.scope == failure_scope::channel && f.reply_code == AMQP_PRECONDITION_FAILED
         && f.text.find("x-queue-leader-locator") != std::string::npos;
}

} // namespace

amqp_status declare_delay_levels(amqp_session& s, amqp_channel_t ch, const delay_levels& levels) {
  if (auto failed = declare_exchange(s, ch, levels.delivery_exchange(), "topic"))
    return failed;
  for (unsigned k = 0; k < levels.count(); ++k)
    if (auto failed = declare_exchange(s, ch, levels.level_name(k), "topic"))
      return failed;
  for (unsigned k = 0; k < levels.count(); ++k) {
    auto name = levels.level_name(k);
    auto failed = declare_level_queue(s, ch, levels, k, /*balanced=*/true);
    if (failed && placed_otherwise(*failed)) {
      // An older bus declared it without a placement: it stays where it
      // is, and the refusal closed the channel.
      if (auto reopen = s.open_channel(ch))
        return reopen;
      failed = declare_level_queue(s, ch, levels, k, /*balanced=*/false);
    }
    if (failed)
      return failed;
    auto park = levels.bit_binding(k, true);
    amqp_queue_bind(s.raw(), ch, bytes_of(name), bytes_of(name), bytes_of(park), amqp_empty_table);
    if (auto failed = s.rpc_status(ch))
      return failed;
    auto pass = levels.bit_binding(k, false);
    amqp_exchange_bind(s.raw(), ch, /*destination=*/bytes_of(levels.next_exchange(k)),
                       /*source=*/bytes_of(name), bytes_of(pass), amqp_empty_table);
    if (auto failed = s.rpc_status(ch))
      return failed;
  }
  return std::nullopt;
}

amqp_status bind_delay_destination(amqp_session& s, amqp_channel_t ch, const delay_levels& levels,
                                   const std::string& queue) {
  auto key = levels.destination_binding(queue);
  auto exchange = levels.delivery_exchange();
  amqp_queue_bind(s.raw(), ch, bytes_of(queue), bytes_of(exchange), bytes_of(key),
                  amqp_empty_table);
  return s.rpc_status(ch);
}

} // namespace bus::detail
