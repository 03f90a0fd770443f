#include "stranded_levels.hpp"

namespace bus::detail {

stranded_levels::stranded_levels(const delay_levels& levels, std::chrono::milliseconds margin)
    : margin_(margin) {
  for (unsigned k = 0; k < levels.count(); ++k)
    levels_[levels.level_name(k)].ttl = std::chrono::milliseconds(levels.level_ttl_ms(k));
}

std::vector<level_change> stranded_levels::observe(const std::vector<level_sample>& samples,
                                                   clock::time_point now) {
  std::vector<level_change> changes;
  for (const auto& sample : samples) {
    auto it = levels_.find(sample.queue);
    if (it == levels_.end())
      continue;
    auto& level = it->second;
    auto held = sample.messages > sample.ready ? sample.messages - sample.ready : 0;
    // Past TTL + margin since the checkpoint, every message ready then has
    // expired: a level that forwards holds fewer than it held then plus
    // those. (The margin also covers the API's figures being seconds old.)
    auto since = now - level.checkpoint_at;
    auto floor = level.held_then + (since > level.ttl + margin_ ? level.ready_then : 0);
    if (!level.seen || held == 0 || held < floor) {
      level.checkpoint_at = now;
      level.held_then = held;
      level.ready_then = sample.ready;
      since = clock::duration::zero();
    }
    level.seen = true;
    level.held = held;
    level.leader = sample.leader;
    auto stuck_for = std::chrono::duration_cast<std::chrono::milliseconds>(since);
    bool stranded = held > 0 && stuck_for > level.ttl + margin_;
    if (stranded != level.stranded)
      changes.push_back({sample.queue, stranded, held, stuck_for, sample.leader});
    level.stranded = stranded;
  }
  return changes;
}

std::vector<stalled_queue> stranded_levels::stranded(clock::time_point now) const {
  std::vector<stalled_queue> out;
  for (const auto& [queue, level] : levels_)
    if (level.stranded)
      out.push_back(
          {queue, level.held,
           std::chrono::duration_cast<std::chrono::milliseconds>(now - level.checkpoint_at),
           remedy(queue)});
  return out;
}

std::string stranded_levels::remedy(const std::string& queue) {
  return "busctl move-leader " + queue;
}

} // namespace bus::detail
