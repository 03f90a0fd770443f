#include "inbox_cleaner_actor.hpp"

#include <caf/all.hpp>

#include "atoms.hpp"

namespace bus::detail {

namespace {

using cleaner = caf::stateful_actor<inbox_cleaner_state>;

void clean_batch(cleaner* self) {
  auto& st = self->state;
  const auto& rt = *st.rt;
  const auto& options = rt.definition().outbox;
  auto before = rt.now() - options.retention;
  auto cleaned = rt.definition().store->clean(rt.name(), before, options.cleanup_batch);
  if (!cleaned) {
    rt.log().outbox->warn("cannot clean up the inbox records of endpoint '{}' ({}); trying again "
                          "in {}",
                          rt.name(), to_string(cleaned.error()), to_hms(options.cleanup_interval));
    st.cleaned = 0;
    self->delayed_send(self, options.cleanup_interval, clean_atom::value);
    return;
  }
  rt.counters().inbox_records_cleaned.fetch_add(*cleaned, std::memory_order_relaxed);
  st.cleaned += *cleaned;
  if (*cleaned >= options.cleanup_batch) {
    // More to go: the next batch queues behind whatever waits (a stop).
    self->send(self, clean_atom::value);
    return;
  }
  rt.counters().inbox_cleanups.fetch_add(1, std::memory_order_relaxed);
  if (st.cleaned > 0)
    rt.log().outbox->info("deleted {} inbox record(s) of endpoint '{}' dispatched before {}",
                          st.cleaned, rt.name(), to_iso8601(before));
  st.cleaned = 0;
  self->delayed_send(self, options.cleanup_interval, clean_atom::value);
}

} // namespace

caf::behavior inbox_cleaner_actor(cleaner* self, endpoint_runtime_ptr rt) {
  self->state.rt = std::move(rt);
  self->delayed_send(self, self->state.rt->definition().outbox.cleanup_interval, clean_atom::value);
  return {
    [=](clean_atom) { clean_batch(self); },
    [=](stop_atom) {
      self->quit();
      return ok_atom::value;
    },
  };
}

} // namespace bus::detail
