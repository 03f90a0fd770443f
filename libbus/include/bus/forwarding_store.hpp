// A message store that passes every call on to another: the base of a
// decorator that watches or changes a few calls (timing them, pacing them
// in a test, failing one on purpose) and leaves the others as they are.
// The port grows now and then; a decorator built on this keeps compiling
// and keeps forwarding what it does not know of.
#pragma once

#include <memory>
#include <utility>

#include "bus/message_store.hpp"

namespace bus {

class forwarding_store : public message_store {
public:
  explicit forwarding_store(std::shared_ptr<message_store> inner) : inner_(std::move(inner)) {}

  [[nodiscard]] std::string_view name() const noexcept override { return inner_->name(); }
  result<inbox_entry> receive(const inbox_key& key, time_point now) override {
    return inner_->receive(key, now);
  }
  result<void> mark_dispatched(const inbox_key& key, time_point now) override {
    return inner_->mark_dispatched(key, now);
  }
  result<std::size_t> clean(const std::string& endpoint, time_point dispatched_before,
                            std::size_t batch) override {
    return inner_->clean(endpoint, dispatched_before, batch);
  }
  result<void> renew_lease(time_point until) override { return inner_->renew_lease(until); }
  result<std::vector<orphan>> claim_orphans(const std::string& endpoint, time_point now,
                                            std::size_t limit) override {
    return inner_->claim_orphans(endpoint, now, limit);
  }
  result<void> release(const inbox_key& key) override { return inner_->release(key); }
  result<std::vector<outbox_backlog>> backlog() override { return inner_->backlog(); }
  result<std::optional<std::uint64_t>> stream_offset(const std::string& reader,
                                                     const std::string& stream) override {
    return inner_->stream_offset(reader, stream);
  }
  result<void> save_stream_offset(const std::string& reader, const std::string& stream,
                                  std::uint64_t committed) override {
    return inner_->save_stream_offset(reader, stream, committed);
  }

protected:
  // The store the calls go to.
  [[nodiscard]] message_store& inner() const noexcept { return *inner_; }

private:
  std::shared_ptr<message_store> inner_;
};

} // namespace bus
