// The pure core of the redelivery scheduler: values waiting for a due time,
// in a binary heap, so that hundreds of thousands pending cost one vector
// entry each and the scheduler needs one timer: for the earliest due time.
// Values with the same due time come out in the order they went in.
//
// Not thread-safe: it belongs to one actor.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace bus {

template <class TimePoint, class T>
class delay_queue {
public:
  void push(TimePoint due, T value) {
    heap_.push_back(entry{due, next_seq_++, std::move(value)});
    std::push_heap(heap_.begin(), heap_.end(), later{});
  }

  [[nodiscard]] std::optional<TimePoint> next_due() const {
    if (heap_.empty())
      return std::nullopt;
    return heap_.front().due;
  }

  // Calls f(value) for every value due at or before `now`, earliest first,
  // at most `max` of them, and removes it. Returns how many it took.
  template <class F>
  std::size_t pop_due(TimePoint now, F&& f,
                      std::size_t max = std::numeric_limits<std::size_t>::max()) {
    std::size_t n = 0;
    while (n < max && due_at(now)) {
      std::pop_heap(heap_.begin(), heap_.end(), later{});
      auto value = std::move(heap_.back().value);
      heap_.pop_back();
      ++n;
      f(std::move(value));
    }
    return n;
  }

  // Whether a value is due at or before `now`.
  [[nodiscard]] bool due_at(TimePoint now) const {
    return !heap_.empty() && !(now < heap_.front().due);
  }

  // Removes and returns everything, earliest first (for shutdown).
  std::vector<T> drain() {
    std::sort_heap(heap_.begin(), heap_.end(), later{}); // ascending by "later": latest first
    std::vector<T> out;
    out.reserve(heap_.size());
    for (auto it = heap_.rbegin(); it != heap_.rend(); ++it)
      out.push_back(std::move(it->value));
    heap_.clear();
    return out;
  }

  [[nodiscard]] std::size_t size() const noexcept { return heap_.size(); }
  [[nodiscard]] bool empty() const noexcept { return heap_.empty(); }
  void reserve(std::size_t n) { heap_.reserve(n); }

private:
  struct entry {
    TimePoint due;
    std::uint64_t seq; // ties broken by arrival: FIFO among equal due times
    T value;
  };

  // Heap order: std heaps are max-heaps, so "greater" is the later entry,
  // which puts the earliest at the front. A type, not a function: the
  // heap's algorithms inline it (called through a pointer, it was the
  // largest item in a profile of a million redeliveries firing).
  struct later {
    bool operator()(const entry& a, const entry& b) const {
      if (b.due < a.due)
        return true;
      if (a.due < b.due)
        return false;
      return a.seq > b.seq;
    }
  };

  std::vector<entry> heap_;
  std::uint64_t next_seq_ = 0;
};

} // namespace bus
