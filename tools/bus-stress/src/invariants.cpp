#include "invariants.hpp"

#include <sstream>

namespace stress {

namespace {

using bus::event_kind;

// Collects the first few examples of what broke, and how many in all.
class evidence {
public:
  void add(const std::string& what) {
    if (++count_ <= 3)
      text_ += (text_.empty() ? "" : "; ") + what;
  }
  [[nodiscard]] bool empty() const { return count_ == 0; }
  [[nodiscard]] std::string str() const {
    return count_ <= 3 ? text_ : text_ + "; ... (" + std::to_string(count_) + " in all)";
  }

private:
  std::size_t count_ = 0;
  std::string text_;
};

std::string num(std::uint64_t n) {
  return std::to_string(n);
}

check every_delivery_ends_once(const run_context& run, const run_facts& facts) {
  check c{"every delivery ended in exactly one terminal outcome", false, {}};
  auto journeys = run.book.journeys();
  std::uint64_t unfinished = 0, twice = 0, after_end = 0;
  evidence bad;
  for (const auto& [key, j] : journeys) {
    if (j.terminal == 0) {
      ++unfinished;
      bad.add(key + " never ended (last step: " + std::string(bus::to_string(j.last)) + ")");
    } else if (j.terminal > 1) {
      ++twice;
      bad.add(key + " ended " + num(j.terminal) + " times");
    }
    if (j.after_end > 0) {
      ++after_end;
      bad.add(key + " had " + num(j.after_end) + " steps after its end (first: "
              + std::string(bus::to_string(j.first_after_end)) + ")");
    }
  }
  std::uint64_t seen = journeys.size();
  if (seen != facts.expected_deliveries)
    bad.add(num(facts.expected_deliveries) + " deliveries were sent but " + num(seen)
            + " were seen");
  c.held = bad.empty();
  std::ostringstream d;
  d << seen << " of " << facts.expected_deliveries << " deliveries seen, " << unfinished
    << " unfinished, " << twice << " ended twice, " << after_end << " touched after their end";
  if (!c.held)
    d << ": " << bad.str();
  c.detail = d.str();
  return c;
}

check counters_reconcile(const run_context& run, const bus::message_bus& bus) {
  check c{"every endpoint's counters reconcile, with nothing in flight or pending at the end",
          false,
          {}};
  evidence bad;
  std::uint64_t received = 0;
  for (int i = 0; i < run.book.endpoint_count(); ++i) {
    const auto& name = run.book.tally(i).name;
    auto s = bus.stats(name);
    if (!s) {
      bad.add(name + " has no counters");
      continue;
    }
    received += s->received;
    auto accounted = s->handled + s->dead_lettered + s->discarded + s->skipped + s->requeued
                     + s->redeliveries_scheduled + static_cast<std::uint64_t>(s->in_flight);
    if (s->received != accounted)
      bad.add(name + ": received " + num(s->received) + " != " + num(accounted) + " accounted for");
    if (s->in_flight != 0)
      bad.add(name + ": " + std::to_string(s->in_flight) + " in flight");
    if (s->pending_redelivery != 0)
      bad.add(name + ": " + std::to_string(s->pending_redelivery) + " pending redelivery");
  }
  c.held = bad.empty();
  c.detail = num(static_cast<std::uint64_t>(run.book.endpoint_count())) + " endpoints, "
             + num(received) + " receptions" + (c.held ? "" : ": " + bad.str());
  return c;
}

// The counters against the event stream, kind by kind, and against the
// error queues.
check events_agree(const run_context& run, const bus::message_bus& bus,
                   const chosen_transport& transport) {
  check c{"the event stream and the error queues agree with the counters", false, {}};
  evidence bad;
  for (int i = 0; i < run.book.endpoint_count(); ++i) {
    const auto& t = run.book.tally(i);
    auto s = bus.stats(t.name);
    if (!s)
      continue; // reported by counters_reconcile
    auto compare = [&](const char* what, std::uint64_t counter, std::uint64_t events) {
      if (counter != events)
        bad.add(t.name + ": " + what + " counter " + num(counter) + " != " + num(events)
                + " events");
    };
    compare("received", s->received, t.count(event_kind::received));
    compare("handled", s->handled, t.count(event_kind::handled));
    compare("dead-lettered", s->dead_lettered, t.count(event_kind::dead_lettered));
    compare("discarded", s->discarded, t.count(event_kind::discarded));
    compare("skipped", s->skipped, t.count(event_kind::skipped));
    compare("requeued", s->requeued, t.count(event_kind::requeued));
    compare("redeliveries scheduled", s->redeliveries_scheduled,
            t.count(event_kind::redelivery_scheduled));
    compare("immediate retries", s->immediate_retries, t.count(event_kind::immediate_retry));
    // A consumer's death is a failed attempt with no `failed` event; once
    // the run has drained, every requeue comes from one.
    compare("failed attempts", s->failed_attempts,
            t.count(event_kind::failed) + t.count(event_kind::requeued));
    if (auto on_error_queue = transport.depth(t.name + "_error"))
      compare("dead-lettered (error queue depth)", s->dead_lettered, *on_error_queue);
    else
      bad.add(t.name + ": the depth of its error queue cannot be read");
  }
  c.held = bad.empty();
  c.detail = c.held ? "received, handled, failed, retried, redelivered, dead-lettered, discarded, "
                      "requeued: all equal"
                    : bad.str();
  return c;
}

check no_handler_after_success(const run_context& run) {
  check c{"no handler ran again for a delivery that had succeeded", false, {}};
  auto again = run.book.ran_after_success();
  c.held = again == 0;
  c.detail = num(again) + " handler runs after a success";
  return c;
}

check slots_respected(const run_context& run) {
  check c{"no endpoint ran more handlers at once than its slots", false, {}};
  evidence bad;
  int full = 0;
  std::ostringstream most;
  for (int i = 0; i < run.book.endpoint_count(); ++i) {
    const auto& t = run.book.tally(i);
    auto peak = t.most_running.load();
    if (t.over_limit.load() > 0)
      bad.add(t.name + ": " + std::to_string(peak) + " at once with " + std::to_string(t.slots)
              + " slots");
    full += peak == t.slots;
    if (i < 8)
      most << (i ? " " : "") << peak << "/" << t.slots;
  }
  c.held = bad.empty();
  c.detail = "most at once / slots: " + most.str() + (run.book.endpoint_count() > 8 ? " ..." : "")
             + " (" + std::to_string(full) + " endpoints used every slot)"
             + (c.held ? "" : ": " + bad.str());
  return c;
}

// A consumer's death is a failed attempt of its message, decided by the
// policy like an exception; only while an endpoint stops does the message
// go back to the queue instead.
check deaths_counted(const run_context& run, const bus::message_bus& bus) {
  check c{"every consumer death was a failed attempt of its message (or, while stopping, returned "
          "it to the queue)",
          false,
          {}};
  std::uint64_t kills = 0, failed = 0, requeued = 0;
  evidence bad;
  for (int i = 0; i < run.book.endpoint_count(); ++i) {
    const auto& t = run.book.tally(i);
    auto s = bus.stats(t.name);
    auto k = t.kills.load();
    auto f = t.died_attempts.load();
    kills += k;
    failed += f;
    if (!s)
      continue;
    requeued += s->requeued;
    if (f + s->requeued != k)
      bad.add(t.name + ": " + num(k) + " consumers killed, " + num(f) + " failed attempts for it, "
              + num(s->requeued) + " requeued");
  }
  c.held = bad.empty();
  c.detail = num(kills) + " consumers killed, " + num(failed) + " failed attempts for it, "
             + num(requeued) + " requeued" + (c.held ? "" : ": " + bad.str());
  return c;
}

check rate_limit_recovers(const run_context& run, const bus::message_bus& bus) {
  bool outage = run.opts.outage_ms > 0;
  check c{outage ? "rate limiting tripped during the outage, and every episode ended"
                 : "every rate limiting episode ended",
          false,
          {}};
  evidence bad;
  int tripped = 0;
  std::uint64_t episodes = 0;
  for (int i = 0; i < run.book.endpoint_count(); ++i) {
    const auto& t = run.book.tally(i);
    auto started = t.count(event_kind::rate_limit_started);
    auto ended = t.count(event_kind::rate_limit_ended);
    tripped += started > 0;
    episodes += started;
    if (started != ended)
      bad.add(t.name + ": " + num(started) + " started, " + num(ended) + " ended");
    if (auto s = bus.stats(t.name)) {
      if (s->rate_limited)
        bad.add(t.name + " is still rate limited");
      if (s->rate_limit_episodes != started)
        bad.add(t.name + ": " + num(s->rate_limit_episodes) + " episodes counted, " + num(started)
                + " events");
    }
  }
  if (outage && tripped == 0)
    bad.add("no endpoint was rate limited although every handler failed for "
            + std::to_string(run.opts.outage_ms) + " ms (" + num(run.book.outage_attempts())
            + " attempts failed in the outage)");
  c.held = bad.empty();
  c.detail =
      std::to_string(tripped) + " of " + std::to_string(run.book.endpoint_count())
      + " endpoints tripped, " + num(episodes) + " episodes, all recovered"
      + (outage ? ", " + num(run.book.outage_attempts()) + " attempts failed in the outage" : "");
  if (!c.held)
    c.detail = bad.str();
  return c;
}

check finished_in_time(const run_context& run, const run_facts& facts) {
  check c{"the run finished by itself within --max-seconds", facts.finished_in_time, {}};
  std::ostringstream d;
  d.precision(1);
  d << std::fixed << facts.seconds << " s of " << run.opts.max_seconds << " s allowed";
  c.detail = d.str();
  return c;
}

} // namespace

std::vector<check> check_invariants(const run_context& run, const bus::message_bus& bus,
                                    const chosen_transport& transport,
                                    const run_facts& facts) {
  std::vector<check> checks;
  checks.push_back(finished_in_time(run, facts));
  checks.push_back(every_delivery_ends_once(run, facts));
  checks.push_back(counters_reconcile(run, bus));
  checks.push_back(events_agree(run, bus, transport));
  checks.push_back(no_handler_after_success(run));
  checks.push_back(slots_respected(run));
  checks.push_back(deaths_counted(run, bus));
  if (run.opts.rate_limit_threshold > 0)
    checks.push_back(rate_limit_recovers(run, bus));
  return checks;
}

} // namespace stress
