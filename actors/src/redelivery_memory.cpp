#include "redelivery_memory.hpp"

#include <caf/all.hpp>

#include "atoms.hpp"

namespace bus::detail {

std::vector<pending_redelivery> redelivery_memory::take_over(const caf::actor_addr& owner) {
  std::vector<pending_redelivery> left;
  std::lock_guard<std::mutex> guard(mutex_);
  owner_ = owner;
  if (in_hand) {
    // The call that should have taken it threw: no answer will come.
    --returning_;
    left.push_back(std::move(in_hand));
    in_hand.reset();
  }
  for (auto& r : refused_)
    left.push_back(std::move(r.message));
  refused_.clear();
  return left;
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
  return !waiting.empty() || in_hand || returning_ > 0 || !refused_.empty();
}

// Runs on whatever thread the transport answers on. It holds the memory,
// not the scheduler: the answer counts even if its scheduler died since.
completion redelivery_memory::answer_for(pending_redelivery msg) {
  return [memory = shared_from_this(), msg = std::move(msg)](result<void> sent) mutable {
    caf::actor_addr wake;
    {
      std::lock_guard<std::mutex> guard(memory->mutex_);
      --memory->returning_;
      if (!sent)
        memory->refused_.push_back(refused_return{std::move(msg), sent.error()});
      if (!sent || (memory->wake_when_idle_ && memory->returning_ == 0))
        wake = memory->owner_;
    }
    if (auto owner = caf::actor_cast<caf::actor>(wake))
      caf::anon_send(owner, returned_atom::value);
  };
}

} // namespace bus::detail
