// A stream endpoint's offset in its message store (bus/message_store.hpp,
// stream_offset and save_stream_offset): the SQLite or PostgreSQL database
// of its inbox, so that the offset lives where the endpoint's other state
// does and is backed up with it, with no file beside the process.
#pragma once

#include <memory>
#include <string>

#include "bus/message_store.hpp"
#include "stream/offset_keeper.hpp"

namespace bus::detail {

class stream_offset_in_store final : public stream_offset_keeper {
public:
  stream_offset_in_store(std::shared_ptr<message_store> store, std::string stream,
                         std::string reader);

  [[nodiscard]] result<std::optional<std::uint64_t>> load() override;
  [[nodiscard]] result<void> save(std::uint64_t committed) override;
  [[nodiscard]] std::string where() const override;

private:
  std::shared_ptr<message_store> store_;
  std::string stream_;
  std::string reader_;
};

} // namespace bus::detail
