#include "stream/offset_in_store.hpp"

namespace bus::detail {

stream_offset_in_store::stream_offset_in_store(std::shared_ptr<message_store> store,
                                               std::string stream, std::string reader)
    : store_(std::move(store)), stream_(std::move(stream)), reader_(std::move(reader)) {}

result<std::optional<std::uint64_t>> stream_offset_in_store::load() {
  return store_->stream_offset(reader_, stream_);
}

result<void> stream_offset_in_store::save(std::uint64_t committed) {
  return store_->save_stream_offset(reader_, stream_, committed);
}

std::string stream_offset_in_store::where() const {
  return "the " + std::string(store_->name()) + " store";
}

} // namespace bus::detail
