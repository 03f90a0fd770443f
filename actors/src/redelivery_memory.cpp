#include "redelivery_memory.hpp"

#include <caf/all.hpp>

#include "atoms.hpp"

namespace bus::detail {

std::vector<pending_redelivery> redelivery_memory::take_over(const caf::actor_addr& owner) {
  std::vector<pending_redelivery> left;
  std::lock_guard<std::mutex> guard(mutex_);
  owner_ = owner;
  if (in_hand_) {
    // The call that should have taken them threw: for those it did not
    // answer, no answer will come.
    auto& batch = *in_hand_;
    for (std::size_t i = 0; i < batch.messages.size(); ++i)
      if (!batch.answered[i]) {
        batch.answered[i] = true; // a late answer finds it taken
        --returning_;
        left.push_back(batch.messages[i]);
      }
    in_hand_.reset();
  }
  for (auto& r : refused_)
    left.push_back(std::move(r.message));
  refused_.clear();
  return left;
}

void redelivery_memory::hold(time_point due, pending_redelivery msg) {
  std::lock_guard<std::mutex> guard(mutex_);
  waiting_.push(due, std::move(msg));
}

bool redelivery_memory::take_due(time_point now, std::size_t max,
                                 std::vector<pending_redelivery>& out) {
  std::lock_guard<std::mutex> guard(mutex_);
  waiting_.pop_due(now, [&](pending_redelivery msg) { out.push_back(std::move(msg)); }, max);
  return waiting_.due_at(now);
}

std::optional<redelivery_memory::time_point>
redelivery_memory::plan_wake(std::optional<time_point> armed) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto due = waiting_.next_due();
  if (!due || (armed && *armed <= *due)) {
    // Nothing waits, or the armed timer comes first: it wakes the owner,
    // which plans again then.
    wake_at_ = armed.value_or(time_point::max());
    return std::nullopt;
  }
  wake_at_ = *due;
  return due;
}

std::vector<pending_redelivery> redelivery_memory::close_and_drain() {
  std::lock_guard<std::mutex> guard(mutex_);
  closed_ = true;
  return waiting_.drain();
}

std::size_t redelivery_memory::waiting() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return waiting_.size();
}

std::vector<refused_return> redelivery_memory::take_refused() {
  std::lock_guard<std::mutex> guard(mutex_);
  return std::exchange(refused_, {});
}

bool redelivery_memory::returning() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return returning_ > 0;
}

void redelivery_memory::wake_when_idle() {
  std::lock_guard<std::mutex> guard(mutex_);
  wake_when_idle_ = true;
}

bool redelivery_memory::holds_any() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return !waiting_.empty() || in_hand_ || returning_ > 0 || !refused_.empty();
}

// Runs on whatever thread the transport answers on. It holds the memory,
// not the scheduler: the answer counts even if its scheduler died since.
indexed_completion redelivery_memory::answer_for(std::shared_ptr<returning_batch> batch) {
  return [memory = shared_from_this(), batch = std::move(batch)](std::size_t i, result<void> sent) {
    caf::actor_addr wake;
    {
      std::lock_guard<std::mutex> guard(memory->mutex_);
      if (i >= batch->answered.size() || batch->answered[i])
        return; // a replacement took it over already, or a second answer
      batch->answered[i] = true;
      --memory->returning_;
      if (!sent)
        memory->refused_.push_back(refused_return{batch->messages[i], sent.error()});
      if (!sent || (memory->wake_when_idle_ && memory->returning_ == 0))
        wake = memory->owner_;
    }
    if (auto owner = caf::actor_cast<caf::actor>(wake))
      caf::anon_send(owner, returned_atom::value);
  };
}

} // namespace bus::detail
