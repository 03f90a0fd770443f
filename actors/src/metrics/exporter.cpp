// The Prometheus families of a bus and the sync that fills them from the
// bus's counters and instruments (see exporter.hpp and docs/metrics.md).
#include "exporter.hpp"

#include <functional>
#include <map>
#include <set>
#include <utility>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "endpoint_runtime.hpp"

namespace bus::detail::metrics {

namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// OpenTelemetry's messaging.destination.name: the endpoint's queue.
const char* const endpoint_label = "messaging_destination_name";
const char* const type_label = "bus_message_type";

Family<Counter>& counter(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}
Family<Gauge>& gauge(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}
Family<Histogram>& histogram(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}

Histogram::BucketBoundaries bounds() {
  return {duration_bounds.begin(), duration_bounds.end()};
}

// A Prometheus counter that follows a monotonic source: it grows by what
// the source grew since the last push.
struct counter_link {
  Counter* target = nullptr;
  std::uint64_t last = 0;
  void push(std::uint64_t now) {
    if (now > last) {
      target->Increment(static_cast<double>(now - last));
      last = now;
    }
  }
};

// The same for a histogram: per-bucket increases and the sum's increase.
struct histogram_link {
  Histogram* target = nullptr;
  duration_histogram::snapshot last{};
  void push(const duration_histogram& source) {
    auto now = source.read();
    std::vector<double> increments(duration_histogram::buckets);
    bool any = false;
    for (std::size_t i = 0; i < increments.size(); ++i) {
      auto grown = now.counts[i] - last.counts[i];
      increments[i] = static_cast<double>(grown);
      any = any || grown > 0;
    }
    if (!any)
      return;
    auto sum_ns = now.sum_ns >= last.sum_ns ? now.sum_ns - last.sum_ns : 0;
    target->ObserveMultiple(increments, static_cast<double>(sum_ns) / 1e9);
    last = now;
  }
};

} // namespace

struct exporter::families {
  explicit families(prometheus::Registry& r)
    : received(counter(r, "messaging_client_consumed_messages_total",
                       "Deliveries the endpoint took from the transport (bus.stats().received)")),
      handled(counter(r, "bus_messages_handled_total", "Messages whose handler succeeded")),
      failed(counter(r, "bus_failed_attempts_total", "Handler attempts that failed")),
      immediate_retries(counter(r, "bus_immediate_retries_total", "Immediate retries started")),
      redeliveries(counter(r, "bus_redeliveries_scheduled_total",
                           "Messages handed to the scheduler for a later redelivery")),
      dead_lettered(counter(r, "bus_messages_dead_lettered_total",
                            "Messages moved to the error queue")),
      discarded(counter(r, "bus_messages_discarded_total", "Messages dropped by a rule")),
      skipped(counter(r, "bus_messages_skipped_total",
                      "Messages without a handler, moved to the skipped queue")),
      requeued(counter(r, "bus_messages_requeued_total",
                       "Deliveries given back to the transport unfinished")),
      retries_denied(counter(r, "bus_retries_denied_total",
                             "Retries the retry budget refused (each took its fallback)")),
      expired(counter(r, "bus_messages_expired_total",
                      "Messages that arrived expired and never ran (also discarded or "
                      "dead-lettered)")),
      dependency_pauses(counter(r, "bus_dependency_pauses_total",
                                "Times the endpoint paused for a dependency breaker")),
      held_back(counter(r, "bus_messages_held_back_total",
                        "Deliveries given back unharmed while a dependency was down")),
      duplicates(counter(r, "bus_inbox_duplicates_total",
                         "Copies of a message handled already, acknowledged by the outbox's "
                         "inbox without their handler")),
      inbox_cleanups(counter(r, "bus_inbox_cleanups_total",
                             "Cleanups of the outbox's inbox records that ran through")),
      inbox_cleaned(counter(r, "bus_inbox_records_cleaned_total",
                            "Inbox records deleted after their retention")),
      probes(counter(r, "bus_dependency_probes_total",
                     "Messages let through as a half-open dependency breaker's probe")),
      rate_limit_transitions(counter(r, "bus_rate_limit_transitions_total",
                                     "Changes of rate-limit state, by the state entered")),
      reconnects(counter(r, "bus_transport_reconnects_total",
                         "Connections the transport re-established after a loss")),
      republished(counter(r, "bus_transport_republished_total",
                          "Messages published again because their confirm never came; each "
                          "may be on the broker twice")),
      in_flight(gauge(r, "bus_messages_in_flight", "Deliveries taken and not settled yet")),
      busy_slots(gauge(r, "bus_busy_slots", "Slots holding a delivery")),
      slots(gauge(r, "bus_slots", "Slots of the endpoint (concurrent handler calls)")),
      concurrency_limit(gauge(r, "bus_concurrency_limit",
                              "Handler calls the endpoint allows at once now: its slots, or "
                              "the limit adaptive slots estimate")),
      pending(gauge(r, "bus_redeliveries_pending",
                    "Redeliveries the bus's scheduler holds for later")),
      rate_limited(gauge(r, "bus_rate_limited",
                         "1 while the endpoint runs one message at a time, else 0")),
      consuming(gauge(r, "bus_endpoint_consuming", "1 while the endpoint consumes, else 0")),
      dependency_paused(gauge(r, "bus_dependency_paused",
                              "1 while a dependency breaker the endpoint depends on is not "
                              "closed, else 0")),
      connected(gauge(r, "bus_transport_connected", "1 while the transport is connected, else 0")),
      stalled(gauge(r, "bus_transport_stalled_messages",
                    "Messages a broker queue the transport watches holds without moving them "
                    "(a stranded delay level); 0 once they move")),
      outbox_pending(gauge(r, "bus_outbox_pending_messages",
                           "Messages handled whose stored sends are not all out, as the "
                           "outbox's last sweep counted them")),
      outbox_pending_sends(gauge(r, "bus_outbox_pending_sends",
                                 "Their stored sends not yet out, as the last sweep counted them")),
      stream_offset(gauge(r, "bus_stream_offset",
                          "A stream endpoint's last offset with everything up to it settled, "
                          "the one a restart resumes after; -1 before the first")),
      stream_lag(gauge(r, "bus_stream_lag_messages",
                       "Messages of the stream after the endpoint's offset, as of the last "
                       "message it read or settled")),
      outbox_dispatch(histogram(r, "bus_outbox_dispatch_duration_seconds",
                                "From the commit of a handler's transaction that stored sends "
                                "to their mark as sent")),
      process(histogram(r, "messaging_process_duration_seconds",
                        "Duration of handler attempts, by outcome")),
      send_to_start(histogram(r, "bus_send_to_handler_start_seconds",
                              "From a message's bus-sent-at to its handler's first start")),
      operation(histogram(r, "messaging_client_operation_duration_seconds",
                          "Sends and publishes from outside handlers until the transport "
                          "answered (on a broker: its publisher confirm)")) {}

  Family<Counter>& received;
  Family<Counter>& handled;
  Family<Counter>& failed;
  Family<Counter>& immediate_retries;
  Family<Counter>& redeliveries;
  Family<Counter>& dead_lettered;
  Family<Counter>& discarded;
  Family<Counter>& skipped;
  Family<Counter>& requeued;
  Family<Counter>& retries_denied;
  Family<Counter>& expired;
  Family<Counter>& dependency_pauses;
  Family<Counter>& held_back;
  Family<Counter>& duplicates;
  Family<Counter>& inbox_cleanups;
  Family<Counter>& inbox_cleaned;
  Family<Counter>& probes;
  Family<Counter>& rate_limit_transitions;
  Family<Counter>& reconnects;
  Family<Counter>& republished;
  Family<Gauge>& in_flight;
  Family<Gauge>& busy_slots;
  Family<Gauge>& slots;
  Family<Gauge>& concurrency_limit;
  Family<Gauge>& pending;
  Family<Gauge>& rate_limited;
  Family<Gauge>& consuming;
  Family<Gauge>& dependency_paused;
  Family<Gauge>& connected;
  Family<Gauge>& stalled;
  Family<Gauge>& outbox_pending;
  Family<Gauge>& outbox_pending_sends;
  Family<Gauge>& stream_offset;
  Family<Gauge>& stream_lag;
  Family<Histogram>& outbox_dispatch;
  Family<Histogram>& process;
  Family<Histogram>& send_to_start;
  Family<Histogram>& operation;
};

struct exporter::endpoint_series {
  struct per_handler {
    const handler_instruments* source;
    histogram_link handled, failed, send_to_start;
  };

  // Adds a series to `family`, remembering how to take it out again.
  template <class Metric, class... Args>
  Metric* add(Family<Metric>& family, const prometheus::Labels& labels, Args&&... args) {
    auto* metric = &family.Add(labels, std::forward<Args>(args)...);
    removals.emplace_back([&family, metric] { family.Remove(metric); });
    return metric;
  }

  // Takes every series of the endpoint out of the registry: it was removed
  // from the bus, and a scrape must not show it for ever.
  void remove() {
    for (auto& take_out : removals)
      take_out();
    removals.clear();
  }

  endpoint_series(families& f, const endpoint_view& e) : status(e.status) {
    prometheus::Labels l{{endpoint_label, e.name}};
    auto link = [&](Family<Counter>& family) { return counter_link{add(family, l)}; };
    received = link(f.received);
    handled = link(f.handled);
    failed = link(f.failed);
    immediate_retries = link(f.immediate_retries);
    redeliveries = link(f.redeliveries);
    dead_lettered = link(f.dead_lettered);
    discarded = link(f.discarded);
    skipped = link(f.skipped);
    requeued = link(f.requeued);
    retries_denied = link(f.retries_denied);
    expired = link(f.expired);
    dependency_pauses = link(f.dependency_pauses);
    held_back = link(f.held_back);
    duplicates = link(f.duplicates);
    inbox_cleanups = link(f.inbox_cleanups);
    inbox_cleaned = link(f.inbox_cleaned);
    probes = link(f.probes);
    to_limited = counter_link{add(f.rate_limit_transitions, {{endpoint_label, e.name}, {"to", "limited"}})};
    to_full = counter_link{add(f.rate_limit_transitions, {{endpoint_label, e.name}, {"to", "full"}})};
    in_flight = add(f.in_flight, l);
    busy_slots = add(f.busy_slots, l);
    slots = add(f.slots, l);
    concurrency_limit = add(f.concurrency_limit, l);
    pending = add(f.pending, l);
    rate_limited = add(f.rate_limited, l);
    consuming = add(f.consuming, l);
    dependency_paused = add(f.dependency_paused, l);
    if (e.outbox) {
      outbox_pending = add(f.outbox_pending, l);
      outbox_pending_sends = add(f.outbox_pending_sends, l);
    }
    if (e.stream) {
      stream_offset = add(f.stream_offset, l);
      stream_lag = add(f.stream_lag, l);
    }
    if (auto inst = status->instruments) {
      instruments = inst;
      if (e.outbox)
        outbox_dispatch = histogram_link{add(f.outbox_dispatch, l, bounds())};
      for (const auto& h : inst->handlers()) {
        auto typed = [&](const char* outcome) {
          prometheus::Labels t{{endpoint_label, e.name}, {type_label, h->message_type}};
          if (outcome)
            t.emplace("outcome", outcome);
          return t;
        };
        handlers.push_back(per_handler{
          h.get(), histogram_link{add(f.process, typed("handled"), bounds())},
          histogram_link{add(f.process, typed("failed"), bounds())},
          histogram_link{add(f.send_to_start, typed(nullptr), bounds())}});
      }
    }
  }

  void push(const endpoint_view& e) {
    auto s = status->counters.snapshot();
    received.push(s.received);
    handled.push(s.handled);
    failed.push(s.failed_attempts);
    immediate_retries.push(s.immediate_retries);
    redeliveries.push(s.redeliveries_scheduled);
    dead_lettered.push(s.dead_lettered);
    discarded.push(s.discarded);
    skipped.push(s.skipped);
    requeued.push(s.requeued);
    retries_denied.push(s.retries_denied);
    expired.push(s.expired);
    dependency_pauses.push(s.dependency_pauses);
    held_back.push(s.held_back);
    duplicates.push(s.duplicates);
    inbox_cleanups.push(s.inbox_cleanups);
    inbox_cleaned.push(s.inbox_records_cleaned);
    probes.push(s.probes);
    to_limited.push(s.rate_limit_episodes);
    // Every episode but a current one has ended.
    to_full.push(s.rate_limit_episodes - (s.rate_limited && s.rate_limit_episodes > 0 ? 1 : 0));
    in_flight->Set(static_cast<double>(s.in_flight));
    busy_slots->Set(static_cast<double>(s.busy_slots));
    slots->Set(static_cast<double>(e.slots));
    concurrency_limit->Set(static_cast<double>(s.concurrency_limit));
    pending->Set(static_cast<double>(s.pending_redelivery));
    rate_limited->Set(s.rate_limited ? 1 : 0);
    consuming->Set(e.consuming ? 1 : 0);
    dependency_paused->Set(s.dependency_paused ? 1 : 0);
    if (outbox_pending) {
      outbox_pending->Set(static_cast<double>(s.outbox_pending));
      outbox_pending_sends->Set(static_cast<double>(s.outbox_pending_sends));
    }
    if (stream_offset) {
      stream_offset->Set(static_cast<double>(s.stream_offset));
      stream_lag->Set(static_cast<double>(s.stream_lag));
    }
    if (outbox_dispatch.target)
      outbox_dispatch.push(instruments->outbox_dispatch);
    for (auto& h : handlers) {
      h.handled.push(h.source->handled);
      h.failed.push(h.source->failed);
      h.send_to_start.push(h.source->send_to_start);
    }
  }

  std::vector<std::function<void()>> removals; // one per series, see add()
  std::shared_ptr<const endpoint_status> status; // keeps the key of endpoints_ alive
  std::shared_ptr<const endpoint_instruments> instruments;
  counter_link received, handled, failed, immediate_retries, redeliveries, dead_lettered,
    discarded, skipped, requeued, retries_denied, expired, dependency_pauses, held_back, duplicates,
    inbox_cleanups, inbox_cleaned, probes, to_limited, to_full;
  Gauge* in_flight = nullptr;
  Gauge* busy_slots = nullptr;
  Gauge* slots = nullptr;
  Gauge* concurrency_limit = nullptr;
  Gauge* pending = nullptr;
  Gauge* rate_limited = nullptr;
  Gauge* consuming = nullptr;
  Gauge* dependency_paused = nullptr;
  Gauge* outbox_pending = nullptr;       // with an outbox only
  Gauge* outbox_pending_sends = nullptr; // with an outbox only
  Gauge* stream_offset = nullptr;        // a stream endpoint's only
  Gauge* stream_lag = nullptr;           // a stream endpoint's only
  histogram_link outbox_dispatch;        // with an outbox and instruments only
  std::vector<per_handler> handlers;
};

struct exporter::transport_series {
  transport_series(families& f, const std::string& system) {
    prometheus::Labels l{{"messaging_system", system}};
    reconnects = counter_link{&f.reconnects.Add(l)};
    republished = counter_link{&f.republished.Add(l)};
    connected = &f.connected.Add(l);
    auto op = [&](const char* name) {
      return histogram_link{
        &f.operation.Add({{"messaging_system", system}, {"messaging_operation_name", name}},
                         bounds())};
    };
    send = op("send");
    publish = op("publish");
  }

  counter_link reconnects;
  counter_link republished;
  Gauge* connected = nullptr;
  histogram_link send, publish;
  // A series per queue ever reported stalled; 0 once it moves again.
  std::map<std::string, Gauge*> stalled;
};

exporter::exporter(std::shared_ptr<prometheus::Registry> registry,
                   std::function<bus_view()> view, std::shared_ptr<const send_instruments> sends)
  : registry_(std::move(registry)), view_(std::move(view)), sends_(std::move(sends)),
    families_(std::make_unique<families>(*registry_)) {}

exporter::~exporter() = default;

bus_view exporter::sync() {
  auto view = view_();
  std::lock_guard<std::mutex> guard(mutex_);
  std::set<const endpoint_status*> present;
  for (const auto& e : view.endpoints) {
    auto& series = endpoints_[e.status.get()];
    if (!series)
      series = std::make_unique<endpoint_series>(*families_, e);
    series->push(e);
    present.insert(e.status.get());
  }
  // An endpoint no longer in the view was removed from the bus: its series
  // go (one added again under its name starts new ones from zero).
  for (auto it = endpoints_.begin(); it != endpoints_.end();) {
    if (present.count(it->first) != 0) {
      ++it;
      continue;
    }
    it->second->remove();
    it = endpoints_.erase(it);
  }
  if (!transport_)
    transport_ = std::make_unique<transport_series>(*families_, view.transport_name);
  transport_->reconnects.push(view.transport.reconnects);
  transport_->republished.push(view.transport.republished);
  transport_->connected->Set(view.transport.connected ? 1 : 0);
  for (auto& [queue, series] : transport_->stalled)
    series->Set(0);
  for (const auto& q : view.transport.stalled) {
    auto& series = transport_->stalled[q.queue];
    if (series == nullptr)
      series = &families_->stalled.Add(
          {{"messaging_system", view.transport_name}, {"messaging_destination_name", q.queue}});
    series->Set(static_cast<double>(q.messages));
  }
  if (sends_) {
    transport_->send.push(sends_->send);
    transport_->publish.push(sends_->publish);
  }
  return view;
}

} // namespace bus::detail::metrics
