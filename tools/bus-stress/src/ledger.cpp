#include "ledger.hpp"

#include <functional>

namespace stress {

namespace {

bool is_terminal(bus::event_kind k) {
  return k == bus::event_kind::handled || k == bus::event_kind::dead_lettered
         || k == bus::event_kind::discarded || k == bus::event_kind::skipped;
}

std::uint64_t success_key(int endpoint, std::uint64_t seq) {
  return seq * 4096 + static_cast<std::uint64_t>(endpoint);
}

void raise_to(std::atomic<int>& most, int value) {
  int seen = most.load(std::memory_order_relaxed);
  while (value > seen && !most.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

} // namespace

ledger::ledger(std::vector<std::pair<std::string, int>> endpoints) {
  for (auto& [name, slots] : endpoints) {
    index_.emplace(name, static_cast<int>(tallies_.size()));
    auto t = std::make_unique<endpoint_tally>();
    t->name = name;
    t->slots = slots;
    tallies_.push_back(std::move(t));
  }
}

void ledger::record(const bus::bus_event& e) noexcept {
  auto it = index_.find(e.endpoint);
  if (it == index_.end())
    return; // not one of ours: nothing else runs on this bus
  auto& t = *tallies_[it->second];
  t.events[static_cast<int>(e.kind)].fetch_add(1, std::memory_order_relaxed);
  if (e.kind == bus::event_kind::failed && e.exception_type == "bus::consumer_died")
    t.died_attempts.fetch_add(1, std::memory_order_relaxed);
  if (e.message_id.empty())
    return; // rate limit events are about the endpoint, not a message
  std::string key;
  key.reserve(e.endpoint.size() + 1 + e.message_id.size());
  key.append(e.endpoint).append(1, '/').append(e.message_id);
  auto& shard = journeys_[std::hash<std::string>{}(key) % shard_count];
  bool first_end = false;
  try {
    std::lock_guard<std::mutex> guard(shard.mutex);
    auto& j = shard.by_key[std::move(key)];
    if (j.terminal > 0 && j.after_end++ == 0)
      j.first_after_end = e.kind;
    if (is_terminal(e.kind))
      first_end = j.terminal++ == 0;
    j.last = e.kind;
  } catch (...) {
    return; // out of memory: the final checks will find the journey incomplete
  }
  if (first_end) {
    ended_.fetch_add(1, std::memory_order_release);
    changed_.notify_all();
  }
}

bool ledger::enter(int endpoint, std::uint64_t seq) {
  auto& t = *tallies_[endpoint];
  int now_running = t.running.fetch_add(1, std::memory_order_acq_rel) + 1;
  raise_to(t.most_running, now_running);
  if (now_running > t.slots)
    t.over_limit.fetch_add(1, std::memory_order_relaxed);
  return check_not_succeeded(endpoint, seq);
}

void ledger::leave(int endpoint, bool succeeded, std::uint64_t seq) {
  // Marked before the slot is given back: the bus cannot have seen the
  // success yet, so it cannot have delivered the message again either.
  if (succeeded)
    mark_succeeded(endpoint, seq);
  tallies_[endpoint]->running.fetch_sub(1, std::memory_order_acq_rel);
}

bool ledger::check_not_succeeded(int endpoint, std::uint64_t seq) {
  auto key = success_key(endpoint, seq);
  auto& shard = successes_[key % shard_count];
  std::lock_guard<std::mutex> guard(shard.mutex);
  if (shard.keys.count(key) == 0)
    return true;
  ran_after_success_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void ledger::mark_succeeded(int endpoint, std::uint64_t seq) {
  auto key = success_key(endpoint, seq);
  auto& shard = successes_[key % shard_count];
  std::lock_guard<std::mutex> guard(shard.mutex);
  shard.keys.insert(key);
}

std::uint64_t ledger::outage_attempts() const {
  std::uint64_t n = 0;
  for (const auto& t : tallies_)
    n += t->outage_attempts.load(std::memory_order_relaxed);
  return n;
}

std::unordered_map<std::string, journey> ledger::journeys() const {
  std::unordered_map<std::string, journey> all;
  for (const auto& shard : journeys_) {
    std::lock_guard<std::mutex> guard(shard.mutex);
    all.insert(shard.by_key.begin(), shard.by_key.end());
  }
  return all;
}

} // namespace stress
