#include "bus/testing/harness.hpp"

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include <caf/all.hpp>
#include <spdlog/sinks/ostream_sink.h>

namespace bus::testing {

namespace {

caf::actor_system_config& on_test_coordinator(caf::actor_system_config& cfg) {
  cfg.set("scheduler.policy", caf::atom("testing"));
  return cfg;
}

// A fresh directory for one harness's stream offsets: a test's readers
// must not resume where another test, or an earlier run, left off.
std::string scratch_directory() {
  auto pattern = (std::filesystem::temp_directory_path() / "bus-harness-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("cannot create a scratch directory from " + pattern);
  return pattern;
}

} // namespace

struct harness::impl {
  caf::actor_system_config cfg;
  caf::actor_system system{on_test_coordinator(cfg)};
  caf::scheduler::test_coordinator& sched =
    dynamic_cast<caf::scheduler::test_coordinator&>(system.scheduler());
  caf::actor_clock::time_point started = sched.clock().now();
  std::shared_ptr<in_memory_transport> transport = std::make_shared<in_memory_transport>();
  std::ostringstream log_text;
  std::shared_ptr<spdlog::sinks::ostream_sink_st> log_sink =
    std::make_shared<spdlog::sinks::ostream_sink_st>(log_text);
  std::vector<recorded_event> events;
  std::unique_ptr<message_bus> bus;
  std::string stream_offsets = scratch_directory();

  // The earliest pending timer, if any.
  std::optional<caf::actor_clock::time_point> next_timer() {
    const auto& schedule = sched.clock().schedule();
    if (schedule.empty())
      return std::nullopt;
    return schedule.begin()->first;
  }

  // Fires every timer due at or before `until`, one due time at a time.
  void advance_to(caf::actor_clock::time_point until) {
    sched.run();
    while (auto next = next_timer()) {
      if (*next > until)
        break;
      auto& clock = sched.clock();
      if (*next > clock.now())
        clock.advance_time(*next - clock.now());
      else
        clock.advance_time(caf::actor_clock::duration_type{0});
      sched.run();
    }
    if (sched.clock().now() < until)
      sched.clock().advance_time(until - sched.clock().now());
    sched.run();
  }
};

harness::harness() : impl_(std::make_unique<impl>()) {
  impl_->log_sink->set_pattern("[%n] [%l] %v");
}

harness::~harness() {
  // Stop the bus, then drop timers that would keep actors alive, so the
  // actor system can shut down.
  if (impl_->bus) {
    impl_->bus->request_stop();
    impl_->sched.run();
    impl_->bus.reset();
  }
  impl_->sched.clock().cancel_all();
  impl_->sched.run();
  std::error_code ignored;
  std::filesystem::remove_all(impl_->stream_offsets, ignored);
}

caf::actor_system& harness::system() { return impl_->system; }

const std::string& harness::stream_offset_directory() const noexcept {
  return impl_->stream_offsets;
}

in_memory_transport& harness::transport() { return *impl_->transport; }

bus_builder harness::builder() {
  bus_builder b{impl_->system};
  b.transport(impl_->transport)
    .log_sinks({impl_->log_sink})
    .jitter_seed(42)
    .stream_offset_directory(impl_->stream_offsets)
    .observe([state = impl_.get()](const bus_event& e) {
      // On the test coordinator's one thread: its clock is the event's time.
      recorded_event r{e, {}};
      r.since_start =
        std::chrono::duration_cast<duration>(state->sched.clock().now() - state->started);
      state->events.push_back(std::move(r));
    });
  return b;
}

message_bus& harness::start(bus_builder& b) {
  auto built = b.build();
  if (!built)
    throw std::runtime_error("the bus was refused: " + to_string(built.error()));
  impl_->bus = std::move(*built);
  if (auto started = impl_->bus->start(); !started)
    throw std::runtime_error("the bus did not start: " + to_string(started.error()));
  impl_->sched.run();
  return *impl_->bus;
}

message_bus& harness::bus() {
  if (!impl_->bus)
    throw std::logic_error("the harness has no bus yet: call start() first");
  return *impl_->bus;
}

void harness::run() { impl_->sched.run(); }

void harness::advance(duration d) { impl_->advance_to(impl_->sched.clock().now() + d); }

duration harness::advance_until_idle(duration limit) {
  auto from = impl_->sched.clock().now();
  auto until = from + limit;
  impl_->sched.run();
  while (auto next = impl_->next_timer()) {
    if (*next > until)
      break;
    impl_->advance_to(*next);
  }
  return std::chrono::duration_cast<duration>(impl_->sched.clock().now() - from);
}

duration harness::advance_until(const std::function<bool()>& done, duration limit) {
  auto from = impl_->sched.clock().now();
  auto until = from + limit;
  impl_->sched.run();
  while (!done()) {
    auto next = impl_->next_timer();
    if (!next || *next > until)
      break;
    impl_->advance_to(*next);
  }
  return std::chrono::duration_cast<duration>(impl_->sched.clock().now() - from);
}

duration harness::elapsed() const {
  return std::chrono::duration_cast<duration>(impl_->sched.clock().now() - impl_->started);
}

void harness::stop() {
  bus().request_stop();
  impl_->sched.run();
}

const std::vector<recorded_event>& harness::events() const noexcept { return impl_->events; }

std::vector<recorded_event> harness::events_of(event_kind kind) const {
  std::vector<recorded_event> out;
  for (const auto& e : impl_->events)
    if (e.kind == kind)
      out.push_back(e);
  return out;
}

std::vector<recorded_event> harness::events_for(const std::string& message_id) const {
  std::vector<recorded_event> out;
  for (const auto& e : impl_->events)
    if (e.message_id == message_id)
      out.push_back(e);
  return out;
}

std::vector<std::string> harness::log_lines() const {
  std::vector<std::string> out;
  std::istringstream in(impl_->log_text.str());
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

bool harness::logged(const std::string& part) const {
  return impl_->log_text.str().find(part) != std::string::npos;
}

endpoint_stats harness::stats(const std::string& endpoint) const {
  auto s = impl_->bus ? impl_->bus->stats(endpoint) : std::nullopt;
  if (!s)
    throw std::logic_error("there is no endpoint '" + endpoint + "'");
  return *s;
}

std::vector<envelope_ptr> harness::queue(const std::string& name) const {
  return impl_->transport->browse(name);
}

std::vector<envelope_ptr> harness::error_queue(const std::string& endpoint) const {
  return queue(endpoint + "_error");
}

std::vector<envelope_ptr> harness::skipped_queue(const std::string& endpoint) const {
  return queue(endpoint + "_skipped");
}

} // namespace bus::testing
