#include "facade/bus_state.hpp"

#include <caf/all.hpp>

#include "atoms.hpp"
#include "bus/masstransit.hpp"
#include "bus/nservicebus.hpp"
#include "endpoint_actor.hpp"
#include "outbox_sweeper_actor.hpp"
#include "stream/offset_file.hpp"
#include "stream/offset_in_store.hpp"
#include "stream/reader.hpp"
#include "validation.hpp"

namespace bus {

result<message_bus::impl::launched> message_bus::impl::launch(const endpoint_entry& e) {
  auto& t = *transport;
  const auto& def = e.definition;
  // Every queue of the endpoint tells the transport the endpoint's error
  // queue, so a broker dead-letters there whatever it is named: the
  // endpoint's definition is the one place that knows it.
  queue_options endpoint_queue;
  endpoint_queue.dead_letter_queue = def.error_queue;
  // A stream endpoint reads its stream, not a queue of its own name; what
  // is published of its types is appended to the stream (once, however
  // many endpoints read it).
  const auto& input = def.stream ? def.stream->stream : def.name;
  auto declared = def.stream ? t.declare_stream(input, def.stream->retention)
                             : t.declare_queue_with(input, endpoint_queue);
  if (!declared)
    return declared.error();
  for (const auto* queue : {&def.error_queue, &def.skipped_queue})
    if (auto ok = t.declare_queue_with(*queue, endpoint_queue); !ok)
      return ok.error();
  for (const auto& slot : def.handlers)
    if (auto ok = t.subscribe(input, registry->find(slot.cpp_type)->name); !ok)
      return ok.error();
  // What MassTransit publishers send goes to an exchange per type; of
  // the types it handles only: the others name what it sends.
  auto handles = [&](const std::string& registered) {
    for (const auto& slot : def.handlers)
      if (auto type = registry->find(slot.cpp_type); type && type->name == registered)
        return true;
    return false;
  };
  if (def.masstransit)
    for (const auto& [urn, registered] : def.masstransit->urns())
      if (handles(registered))
        if (auto ok = t.subscribe(def.name, masstransit::exchange_of(urn)); !ok)
          return ok.error();
  // NServiceBus sends to an exchange named after the endpoint, and
  // publishes to one per type: of the types it handles only.
  if (def.nservicebus) {
    if (auto ok = t.subscribe(def.name, def.name); !ok)
      return ok.error();
    for (const auto& [type, registered] : def.nservicebus->types())
      if (handles(registered))
        if (auto ok = t.subscribe(def.name, nservicebus::exchange_of(type)); !ok)
          return ok.error();
  }
  // An outbox's records are this process's under its store's lease: a
  // minute from open(), then three sweep intervals, renewed at each sweep.
  // Renewed here, before the first delivery, not at the sweeper's first
  // turn: a process killed in between would keep its stored sends from
  // every other sweeper for the whole minute.
  if (def.store)
    if (auto leased = def.store->renew_lease(detail::outbox_lease_end(clock(), def.outbox)); !leased)
      log.outbox->warn("cannot renew the outbox's lease for endpoint '{}' at its start ({}); its "
                        "sweeper tries again",
                        def.name, to_string(leased.error()));
  log_policies(def);
  auto run = std::make_shared<detail::endpoint_run>();
  auto budget = detail::budget_for(def, options, budgets);
  // A stream endpoint resumes after the offset it saved, if any: in its
  // store when it has one, else in a file of the bus's own.
  std::shared_ptr<detail::stream_reader> reader;
  if (def.stream) {
    std::unique_ptr<detail::stream_offset_keeper> kept;
    if (def.store)
      kept = std::make_unique<detail::stream_offset_in_store>(def.store, input, def.name);
    else
      kept = std::make_unique<detail::stream_offset_file>(stream_offset_directory, input, def.name);
    auto opened = detail::stream_reader::open(def.name, input, std::move(kept), t,
                                              e.status->counters, log);
    if (!opened)
      return opened.error();
    reader = std::move(*opened);
  }
  detail::endpoint_runtime::settings settings{limits,
                                              servicecontrol_headers,
                                              jitter_seed,
                                              observer,
                                              dead_letter_directory,
                                              deterministic,
                                              spans,
                                              gates,
                                              budget,
                                              send_later(),
                                              reader};
  auto rt = std::make_shared<const detail::endpoint_runtime>(def, registry, transport, log, clock,
                                                             e.status, run, std::move(settings));
  const auto prefetch = rt->prefetch();
  auto actor = system->spawn(detail::endpoint_actor, std::move(rt));
  auto deliver = [actor, reader](delivery d) {
    if (reader && d.stream_offset)
      reader->read(*d.stream_offset);
    caf::anon_send(actor, detail::deliver_atom::value, std::move(d));
  };
  // A stream's reader is named after its endpoint, so that the stop's
  // cancel(def.name) ends it as it ends a queue's consumption.
  auto consuming = def.stream ? t.consume_stream(def.name, input,
                                                 reader->start(def.stream->start), prefetch,
                                                 std::move(deliver))
                              : t.consume(def.name, prefetch, std::move(deliver));
  if (!consuming) {
    // The endpoint stops its consumers, scheduler and breaker, as in any
    // stop; the definition stays, so a later start can try again.
    stop_endpoint(*run, actor);
    return consuming.error();
  }
  return launched{std::move(run), std::move(actor), std::move(budget)};
}

void message_bus::impl::commit(endpoint_entry& e, launched l) {
  caf::anon_send(l.actor, detail::go_atom::value);
  e.run = std::move(l.run);
  e.actor = std::move(l.actor);
  e.budget = std::move(l.budget);
}

void message_bus::impl::abandon(const endpoint_entry& e, const launched& l) const {
  transport->cancel(e.definition.name);
  stop_endpoint(*l.run, l.actor);
}

void message_bus::impl::stop_endpoint(detail::endpoint_run& run, const caf::actor& actor) {
  run.stop_requested.store(true);
  caf::anon_send(actor, detail::stop_atom::value);
}

message_bus::message_bus(std::unique_ptr<impl> state) : impl_(std::move(state)) {}

message_bus::~message_bus() {
  // Never block here (a bus on the test coordinator would hang): ask the
  // endpoints to drain; the actor system waits for them.
  request_stop();
}

result<void> message_bus::start() {
  std::lock_guard<std::mutex> turn(impl_->lifecycle);
  std::vector<impl::endpoint_entry*> to_launch;
  {
    std::lock_guard<std::mutex> guard(impl_->mutex);
    if (impl_->state == impl::phase::running)
      return error{errc::invalid_configuration, "the bus is already started"};
    for (auto& [name, e] : impl_->endpoints) {
      if (e.active())
        return error{errc::not_running,
                     "endpoint '" + name + "' is still stopping; start again once stop() returned"};
      if (!e.removed)
        to_launch.push_back(&e);
    }
  }
  // All or nothing: if one endpoint cannot start, those launched before it
  // stop again without handling anything, and a later start() can try
  // them all anew. The broker round trips happen outside `mutex`; the
  // entries stay, as only this turn's holder could erase them.
  std::vector<std::pair<impl::endpoint_entry*, impl::launched>> started;
  for (auto* e : to_launch) {
    auto launched = impl_->launch(*e);
    if (!launched) {
      for (const auto& [done, l] : started)
        impl_->abandon(*done, l);
      return error{launched.error().code, "cannot start endpoint '" + e->definition.name
                                              + "': " + launched.error().message};
    }
    started.emplace_back(e, std::move(*launched));
  }
  std::lock_guard<std::mutex> guard(impl_->mutex);
  for (auto& [e, l] : started)
    impl::commit(*e, std::move(l));
  impl_->state = impl::phase::running;
  return {};
}

void message_bus::request_stop() {
  std::lock_guard<std::mutex> turn(impl_->lifecycle);
  std::lock_guard<std::mutex> guard(impl_->mutex);
  if (impl_->state == impl::phase::running)
    impl_->state = impl::phase::stopped;
  for (auto& [name, e] : impl_->endpoints)
    if (e.active())
      impl::stop_endpoint(*e.run, e.actor);
}

void message_bus::stop() {
  request_stop();
  std::vector<caf::actor> actors;
  {
    std::lock_guard<std::mutex> guard(impl_->mutex);
    for (auto& [name, e] : impl_->endpoints)
      if (e.actor)
        actors.push_back(e.actor);
  }
  caf::scoped_actor self{*impl_->system};
  for (auto& a : actors)
    self->monitor(a);
  for (std::size_t i = 0; i < actors.size(); ++i)
    self->receive([](const caf::down_msg&) {});
}

bool message_bus::running() const noexcept {
  return impl_->state == impl::phase::running;
}

bool message_bus::stopped() const noexcept {
  std::lock_guard<std::mutex> guard(impl_->mutex);
  for (const auto& [name, e] : impl_->endpoints)
    if (e.active())
      return false;
  return impl_->state != impl::phase::running;
}

result<void> message_bus::add_endpoint(endpoint_builder endpoint) {
  auto def = std::move(endpoint).definition();
  detail::complete(def);
  auto mistakes = detail::mistakes_in(def, *impl_->registry);
  for (auto& m :
       detail::resolve_recoverability(def, impl_->scopes, impl_->options, *impl_->registry))
    mistakes.push_back(std::move(m));
  for (auto& m : detail::resolve_dependencies(def, impl_->dependencies))
    mistakes.push_back(std::move(m));
  std::lock_guard<std::mutex> turn(impl_->lifecycle);
  impl::endpoint_entry* added = nullptr;
  {
    std::lock_guard<std::mutex> guard(impl_->mutex);
    if (auto it = impl_->endpoints.find(def.name);
        it != impl_->endpoints.end() && !(it->second.actor && !it->second.active()))
      mistakes.push_back("endpoint '" + def.name + "' exists already");
    if (!mistakes.empty())
      return error{errc::invalid_configuration, detail::join_lines(mistakes)};
    auto name = def.name;
    added = &(impl_->endpoints[name] = impl::endpoint_entry{});
    added->definition = std::move(def);
    impl_->equip(*added);
  }
  if (impl_->state != impl::phase::running)
    return {};
  // The broker round trips happen outside `mutex`, as in start().
  auto launched = impl_->launch(*added);
  if (!launched)
    return launched.error();
  std::lock_guard<std::mutex> guard(impl_->mutex);
  impl::commit(*added, std::move(*launched));
  return {};
}

result<void> message_bus::remove_endpoint(const std::string& name) {
  std::lock_guard<std::mutex> turn(impl_->lifecycle);
  std::lock_guard<std::mutex> guard(impl_->mutex);
  auto it = impl_->endpoints.find(name);
  if (it == impl_->endpoints.end())
    return error{errc::invalid_configuration, "there is no endpoint '" + name + "'"};
  if (it->second.active()) {
    it->second.removed = true;
    impl::stop_endpoint(*it->second.run, it->second.actor);
  } else {
    impl_->endpoints.erase(it);
  }
  return {};
}

bool message_bus::wait_for(const std::function<bool()>& ready) {
  if (!impl_->deterministic)
    return true;
  // Virtual time moves only when this thread moves it: run what is due,
  // then fire the next timer, one due time at a time, as the harness does.
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(impl_->system->scheduler());
  sched.run();
  while (!ready()) {
    auto& clock = sched.clock();
    const auto& schedule = clock.schedule();
    if (schedule.empty())
      return false;
    auto next = schedule.begin()->first;
    clock.advance_time(next > clock.now() ? next - clock.now()
                                          : caf::actor_clock::duration_type{0});
    sched.run();
  }
  return true;
}

} // namespace bus
