#include "raw_pool.hpp"

#include <deque>
#include <utility>
#include <vector>

#include <caf/all.hpp>

namespace bench {

namespace {

using done_atom = caf::atom_constant<caf::atom("done")>;
using retry_atom = caf::atom_constant<caf::atom("retry")>;

caf::behavior raw_worker(caf::event_based_actor* self, caf::actor dispatcher,
                         std::shared_ptr<const raw_work> work) {
  auto attempt = [=](const ping& p, int n) {
    try {
      work->handle(p, n);
    } catch (...) {
      if (n == 1 && work->redeliver) {
        // Back to the dispatcher when due; this worker is free now.
        self->delayed_send(dispatcher, work->retry_delay, retry_atom::value, p, n + 1);
      } else if (n == 1) {
        self->delayed_send(self, work->retry_delay, retry_atom::value, p, n + 1);
        return;
      }
    }
    self->send(dispatcher, done_atom::value);
  };
  return {
      [=](const ping& p) { attempt(p, 1); },
      [=](retry_atom, const ping& p, int n) { attempt(p, n); },
  };
}

struct dispatcher_state {
  std::deque<std::pair<ping, int>> waiting; // and the attempt it is at
  std::vector<caf::actor> idle;
  static inline const char* name = "bench.raw_dispatcher";
};

using dispatcher = caf::stateful_actor<dispatcher_state>;

void dispatch(dispatcher* self) {
  auto& st = self->state;
  while (!st.idle.empty() && !st.waiting.empty()) {
    const auto& [p, attempt] = st.waiting.front();
    if (attempt == 1)
      self->send(st.idle.back(), p);
    else
      self->send(st.idle.back(), retry_atom::value, p, attempt);
    st.idle.pop_back();
    st.waiting.pop_front();
  }
}

caf::behavior raw_dispatcher(dispatcher* self, int workers, std::shared_ptr<const raw_work> work,
                             bool detached) {
  for (int i = 0; i < workers; ++i) {
    auto me = caf::actor_cast<caf::actor>(self);
    self->state.idle.push_back(detached
                                   ? self->spawn<caf::linked + caf::detached>(raw_worker, me, work)
                                   : self->spawn<caf::linked>(raw_worker, me, work));
  }
  return {
      [=](const ping& p) {
        self->state.waiting.emplace_back(p, 1);
        dispatch(self);
      },
      // A redelivery that is due.
      [=](retry_atom, const ping& p, int attempt) {
        self->state.waiting.emplace_back(p, attempt);
        dispatch(self);
      },
      [=](done_atom) {
        self->state.idle.push_back(caf::actor_cast<caf::actor>(self->current_sender()));
        dispatch(self);
      },
  };
}

} // namespace

caf::actor spawn_raw_pool(caf::actor_system& sys, int workers, std::shared_ptr<const raw_work> work,
                          bool detached) {
  return sys.spawn(raw_dispatcher, workers, std::move(work), detached);
}

} // namespace bench
