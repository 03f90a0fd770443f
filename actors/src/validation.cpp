#include "validation.hpp"

#include <set>

#include "bus/exception_info.hpp"

namespace bus::detail {

namespace {

// The registered name of a handler's type, for mistakes that name it.
std::string type_name_of(const handler_slot& slot, const message_registry& registry) {
  auto type = registry.find(slot.cpp_type);
  return type ? type->name : std::string(slot.cpp_type.name());
}

} // namespace

void complete(endpoint_definition& def) {
  if (def.error_queue.empty())
    def.error_queue = def.name + "_error";
  if (def.skipped_queue.empty())
    def.skipped_queue = def.name + "_skipped";
}

std::vector<std::string> mistakes_in(const endpoint_definition& def,
                                     const message_registry& registry) {
  std::vector<std::string> out;
  auto where = "endpoint '" + def.name + "': ";
  if (def.name.empty())
    out.push_back("an endpoint has an empty name");
  if (def.adaptive) {
    if (auto bad = validate(*def.adaptive); !bad.empty())
      out.push_back(where + "adaptive slots: " + bad);
  } else if (def.slots == 0) {
    out.push_back(where + "slots must be at least 1");
  }
  if (def.error_queue == def.name || def.skipped_queue == def.name)
    out.push_back(where + "its error and skipped queues must differ from its input queue");
  if (def.drain_timeout.count() < 0)
    out.push_back(where + "the drain timeout must not be negative");
  if (def.handlers.empty())
    out.push_back(where + "it has no handler");
  if (def.rate_limit.consecutive_failures < 0)
    out.push_back(where + "the rate limit's threshold of consecutive failures must not be negative");
  if (def.rate_limit.wait_between_attempts.count() < 0)
    out.push_back(where + "the rate limit's wait between attempts must not be negative");
  if (def.stream) {
    const auto& reading = *def.stream;
    if (reading.stream.empty())
      out.push_back(where + "the stream it reads needs a non-empty name");
    if (reading.stream == def.name || reading.stream == def.error_queue
        || reading.stream == def.skipped_queue)
      out.push_back(where + "the stream it reads must be named apart from the endpoint and its "
                            "error and skipped queues");
    if (auto bad = validate(reading.retention); !bad.empty())
      out.push_back(where + bad);
    if (def.masstransit || def.nservicebus)
      out.push_back(where + "an endpoint that reads a stream speaks the bus's own envelope only");
  }
  if (def.store) {
    const auto& o = def.outbox;
    if (o.retention.count() <= 0 || o.cleanup_interval.count() <= 0 || o.cleanup_batch == 0
        || o.sweep_interval.count() <= 0 || o.sweep_batch == 0)
      out.push_back(where + "the outbox's retention, cleanup and sweep intervals and batches must "
                            "be positive");
    if (def.threads == handler_threads::caf_workers)
      out.push_back(where + "its outbox's database calls block, so its handlers need a thread per "
                            "slot: drop handler_threads(caf_workers)");
    for (const auto& slot : def.handlers)
      if (slot.via_actor)
        out.push_back(where + "a handler served by an actor cannot write in the outbox's "
                              "transaction: use a function handler on an endpoint with an outbox");
  }
  out.insert(out.end(), def.mistakes.begin(), def.mistakes.end());
  std::set<std::string> seen;
  for (const auto& slot : def.handlers) {
    auto type = registry.find(slot.cpp_type);
    if (!type) {
      out.push_back(where + "a handler takes C++ type " + slot.cpp_type.name()
                    + ", which is not a registered message (call message<T>(name) first)");
      continue;
    }
    if (!seen.insert(type->name).second)
      out.push_back(where + "more than one handler for message '" + type->name + "'");
  }
  // A MassTransit or NServiceBus name the endpoint has no handler for
  // names what its handlers send (endpoint_builder::masstransit,
  // nservicebus); it must still be a message.
  auto not_a_message = [&](const char* convention, const std::string& name,
                           const std::string& registered) {
    if (!registry.find(registered))
      out.push_back(where + convention + " '" + name + "' names '" + registered
                    + "', which is not a registered message (call message<T>(name) first)");
  };
  if (def.masstransit)
    for (const auto& [urn, registered] : def.masstransit->urns())
      not_a_message("MassTransit's", urn, registered);
  if (def.nservicebus)
    for (const auto& [type, registered] : def.nservicebus->types())
      not_a_message("NServiceBus's", type, registered);
  return out;
}

std::vector<std::string> resolve_recoverability(endpoint_definition& def,
                                                const recoverability_scopes& shared,
                                                const recoverability_options& shared_options,
                                                const message_registry& registry) {
  std::vector<std::string> out;
  auto options = shared_options;
  options.error_queue = def.error_queue;
  options.available.immediate_retries = def.immediate_retries;
  // Every endpoint has a scheduler, so delayed delivery is always there,
  // but for a stream's reader: no retry of any kind (bus/stream.hpp), and a
  // custom policy that asks for one ends the message in fault instead.
  options.available.delayed_delivery = !def.stream;
  if (def.stream) {
    options.available.immediate_retries = false;
    options.available.reads_stream = true;
  }
  for (auto add_to : def.unrecoverable)
    add_to(options.unrecoverable);
  if (def.custom)
    options.custom = def.custom;
  if (def.retry_budget)
    options.retry_budget = def.retry_budget;
  if (def.expired_messages)
    options.expired_messages = *def.expired_messages;
  for (auto& slot : def.handlers) {
    auto scopes = shared;
    if (def.rules)
      scopes.assign(scope_level::endpoint, *def.rules);
    if (slot.rules)
      scopes.assign(scope_level::consumer, *slot.rules);
    auto config = make_recoverability_config(scopes, options);
    if (!config) {
      out.push_back("endpoint '" + def.name + "', handler of '" + type_name_of(slot, registry)
                    + "': " + config.error().message);
      continue;
    }
    if (def.stream)
      if (auto refused = validate_for_stream(scopes.resolve()); !refused) {
        out.push_back("endpoint '" + def.name + "' reads the stream '" + def.stream->stream
                      + "', handler of '" + type_name_of(slot, registry)
                      + "': " + refused.error().message);
        continue;
      }
    slot.recoverability = std::make_shared<const recoverability_config>(std::move(*config));
    if (def.store && def.outbox.retention.count() > 0) {
      auto longest = longest_retry_time(*slot.recoverability);
      if (longest > def.outbox.retention) {
        out.push_back("endpoint '" + def.name + "': its outbox keeps inbox records for "
                      + to_hms(def.outbox.retention) + ", but the handler of '"
                      + type_name_of(slot, registry) + "' may retry a message for "
                      + to_hms(longest)
                      + " after its first failure; keep them at least that long "
                        "(outbox_options::retention) or retry for less (max_retry_time, "
                        "max_time)");
      }
    }
  }
  return out;
}

} // namespace bus::detail
