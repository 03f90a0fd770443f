#include "topology.hpp"

#include <stdexcept>
#include <thread>

#include <caf/all.hpp>

#include "bus/actor_handler.hpp"
#include "messages.hpp"

using namespace std::chrono_literals;

namespace stress {

namespace {

// The three kinds of failure a handler throws, so that by_type's rules
// each see theirs.
struct transient_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct fatal_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct benign_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Each handler thread draws from its own generator: no lock, and seeded
// from the run's seed so that runs differ only by scheduling.
std::mt19937_64& thread_random(std::uint64_t seed) {
  thread_local std::mt19937_64 random(seed
                                      ^ std::hash<std::thread::id>{}(std::this_thread::get_id()));
  return random;
}

double draw(std::mt19937_64& random) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(random);
}

[[noreturn]] void throw_random_failure(std::mt19937_64& random) {
  switch (random() % 3) {
    case 0:
      throw transient_failure("transient failure");
    case 1:
      throw fatal_failure("fatal failure");
    default:
      throw benign_failure("benign failure");
  }
}

// Delays are milliseconds, so a run sees every tier many times.
std::function<void(bus::policy_builder&)> policy_of(policy_kind kind) {
  switch (kind) {
    case policy_kind::retry:
      return [](bus::policy_builder& p) { p.on_any().retry(3, 1ms).then_dead_letter(); };
    case policy_kind::redeliver:
      return [](bus::policy_builder& p) { p.on_any().retry(1, 1ms).then_redeliver(3, 5ms); };
    case policy_kind::dead_letter:
      return [](bus::policy_builder& p) { p.on_any().dead_letter(); };
    case policy_kind::discard:
      return [](bus::policy_builder& p) { p.on_any().discard(); };
    case policy_kind::max_attempts:
      return [](bus::policy_builder& p) {
        p.on_any().max_attempts(4).retry(2, 1ms).then_redeliver(3, 5ms);
      };
    case policy_kind::by_type:
      return [](bus::policy_builder& p) {
        p.on<transient_failure>().retry(2, 1ms).then_redeliver(2, 5ms);
        p.on<fatal_failure>().dead_letter();
        p.on<benign_failure>().discard();
        p.on_any().retry(1, 1ms).then_dead_letter(); // a handler actor's error reply
      };
  }
  throw std::logic_error("unknown policy kind");
}

// A job's handler: sleeps a little so that slots overlap, fails by the
// outage or at random, and tells the ledger what it saw.
void run_job(run_context& run, int endpoint, std::uint64_t seq) {
  auto& book = run.book;
  book.enter(endpoint, seq);
  auto& random = thread_random(run.opts.seed);
  bool succeeded = false;
  try {
    if (run.opts.work_us > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(random() % (run.opts.work_us + 1)));
    if (run.in_outage()) {
      book.tally(endpoint).outage_attempts.fetch_add(1, std::memory_order_relaxed);
      throw transient_failure("outage: the shared resource is down");
    }
    if (draw(random) < run.opts.failure_rate)
      throw_random_failure(random);
    succeeded = true;
  } catch (...) {
    book.leave(endpoint, false, seq);
    throw;
  }
  book.leave(endpoint, succeeded, seq);
}

struct handler_actor_state {
  std::mt19937_64 random;
  static inline const char* name = "stress.handler";
};

// Serves actor_job for one endpoint: answers, fails, or kills the consumer
// that asked, which the endpoint must notice and replace, and which counts
// as a failed attempt of the message.
caf::behavior handler_actor(caf::stateful_actor<handler_actor_state>* self,
                            std::shared_ptr<run_context> run, int endpoint) {
  self->state.random.seed(run->opts.seed + 7919 * static_cast<std::uint64_t>(endpoint));
  return {
      [=](bus::handle_atom, const actor_job& m) -> caf::result<void> {
        auto& book = run->book;
        book.check_not_succeeded(endpoint, m.seq);
        if (run->in_outage()) {
          book.tally(endpoint).outage_attempts.fetch_add(1, std::memory_order_relaxed);
          return caf::make_error(caf::sec::runtime_error, "outage: the shared resource is down");
        }
        auto r = draw(self->state.random);
        if (r < run->opts.death_rate) {
          book.tally(endpoint).kills.fetch_add(1, std::memory_order_relaxed);
          self->send_exit(caf::actor_cast<caf::actor>(self->current_sender()),
                          caf::exit_reason::kill);
          return caf::delegated<void>{}; // no answer: the asker is gone
        }
        if (r < run->opts.death_rate + run->opts.failure_rate)
          return caf::make_error(caf::sec::runtime_error, "the handler actor failed");
        book.mark_succeeded(endpoint, m.seq);
        return caf::unit;
      },
  };
}

} // namespace

std::vector<endpoint_plan> draw_topology(const options& o, const std::string& names,
                                         std::mt19937_64& random) {
  std::vector<endpoint_plan> plan;
  for (int i = 0; i < o.endpoints; ++i) {
    endpoint_plan p;
    p.name = names + "-" + std::to_string(i);
    p.slots = std::uniform_int_distribution<int>(o.min_slots, o.max_slots)(random);
    p.policy = o.policies[random() % o.policies.size()];
    plan.push_back(p);
  }
  return plan;
}

std::vector<caf::actor> spawn_handler_actors(caf::actor_system& sys,
                                             std::shared_ptr<run_context> run) {
  std::vector<caf::actor> actors;
  for (int i = 0; i < run->book.endpoint_count(); ++i)
    actors.push_back(sys.spawn(handler_actor, run, i));
  return actors;
}

void add_endpoints(bus::bus_builder& b, const std::vector<endpoint_plan>& plan,
                   const std::vector<caf::actor>& actors, std::shared_ptr<run_context> run) {
  for (std::size_t i = 0; i < plan.size(); ++i) {
    auto index = static_cast<int>(i);
    const auto& p = plan[i];
    b.endpoint(p.name, [&](bus::endpoint_builder& e) {
      e.slots(static_cast<std::size_t>(p.slots))
          .drain_timeout(5s)
          .add_resilience(policy_of(p.policy))
          .handle<job>([run, index](const job& m) { run_job(*run, index, m.seq); })
          .handle<probe>([run, index](const probe& m) {
            run->book.enter(index, m.seq);
            run->book.leave(index, true, m.seq);
          })
          // Long enough never to expire: a late answer would be a failed
          // attempt after the actor counted a success.
          .handle_with_actor<actor_job>(actors[i], std::chrono::minutes(10));
      if (run->opts.rate_limit_threshold > 0)
        e.rate_limit(run->opts.rate_limit_threshold,
                     std::chrono::milliseconds(run->opts.rate_limit_wait_ms));
    });
  }
}

} // namespace stress
