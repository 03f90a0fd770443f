#include "stream/reader.hpp"

#include <algorithm>

namespace bus::detail {

result<std::shared_ptr<stream_reader>>
stream_reader::open(const std::string& reader, const std::string& stream,
                    std::unique_ptr<stream_offset_keeper> kept,
                    const ::bus::transport& transport, endpoint_counters& counters, loggers log) {
  auto saved = kept->load();
  if (!saved)
    return error{saved.error().code, "endpoint '" + reader + "' cannot read its offset in the "
                                       "stream '" + stream + "' from " + kept->where() + ": "
                                       + saved.error().message};
  if (*saved)
    log.endpoint->info("endpoint '{}' resumes reading the stream '{}' after offset {} ({})",
                       reader, stream, **saved, kept->where());
  return std::shared_ptr<stream_reader>(new stream_reader(
    reader, stream, std::move(kept), *saved, transport, counters, std::move(log)));
}

stream_reader::stream_reader(std::string reader, std::string stream,
                             std::unique_ptr<stream_offset_keeper> kept,
                             std::optional<std::uint64_t> saved,
                             const ::bus::transport& transport, endpoint_counters& counters,
                             loggers log)
    : reader_(std::move(reader)), stream_(std::move(stream)), kept_(std::move(kept)),
      saved_(saved), transport_(transport), counters_(counters), log_(std::move(log)),
      position_(saved ? std::optional<std::uint64_t>(*saved + 1) : std::nullopt) {
  std::lock_guard<std::mutex> guard(mutex_);
  show();
}

stream_start stream_reader::start(const stream_start& configured) const {
  return saved_ ? stream_start::at_offset(*saved_ + 1) : configured;
}

void stream_reader::read(std::uint64_t offset) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (!position_.read(offset)) {
    // The transport's bug, not the handler's: the message runs anyway
    // (at least once), but its offset must not move the position back.
    log_.endpoint->error("endpoint '{}' was given offset {} of the stream '{}' after offset {}; "
                         "offsets must increase",
                         reader_, offset, stream_, position_.last_read().value_or(0));
    return;
  }
  // The delivery callback must not call back into the transport, so the
  // tail is only raised to what was read; settled() asks.
  tail_ = std::max(tail_.value_or(offset), offset);
  show();
}

void stream_reader::settled(std::uint64_t offset) {
  auto tail = transport_.stream_tail(stream_);
  std::lock_guard<std::mutex> guard(mutex_);
  auto before = position_.committed();
  if (!position_.settled(offset))
    return;
  if (tail)
    tail_ = std::max(tail_.value_or(*tail), *tail);
  show();
  auto now = position_.committed();
  if (!now || now == before)
    return;
  if (auto saved = kept_->save(*now); !saved) {
    if (!save_failing_)
      log_.endpoint->error("endpoint '{}' cannot save its offset {} in the stream '{}': {}; it "
                           "goes on reading, and tries again at each message, but a restart "
                           "now would read again what it read since the last save",
                           reader_, *now, stream_, to_string(saved.error()));
    save_failing_ = true;
  } else if (save_failing_) {
    log_.endpoint->info("endpoint '{}' saves its offset in the stream '{}' again (offset {})",
                        reader_, stream_, *now);
    save_failing_ = false;
  }
}

void stream_reader::show() {
  auto relaxed = std::memory_order_relaxed;
  auto committed = position_.committed();
  if (!committed && saved_)
    committed = saved_;
  counters_.stream_offset.store(committed ? static_cast<std::int64_t>(*committed) : -1, relaxed);
  counters_.stream_lag.store(tail_ ? position_.lag(*tail_) : 0, relaxed);
}

} // namespace bus::detail
