// One stream endpoint's reading (issue 27): where it stands, shown in the
// endpoint's counters and saved each time it moves, so that a process
// started again resumes after the last message settled, skipping none and
// reading again only what was in flight.
//
// Two sides touch it, each on its own thread: the transport's delivery
// callback says what was read (in offset order), and the consumers say
// what settled (in any order, from several slots). A mutex orders them;
// the save happens under it, so two saves never race and the kept offset
// never goes back.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "bus/endpoint_counters.hpp"
#include "bus/stream.hpp"
#include "bus/transport.hpp"
#include "logging.hpp"
#include "stream/offset_keeper.hpp"

namespace bus::detail {

class stream_reader {
public:
  // The reading of `stream` by the endpoint `reader`, resuming after the
  // offset `kept` holds if there is one. An unreadable offset is an error:
  // starting over would read again or skip what it remembers.
  [[nodiscard]] static result<std::shared_ptr<stream_reader>>
  open(const std::string& reader, const std::string& stream,
       std::unique_ptr<stream_offset_keeper> kept, const ::bus::transport& transport,
       endpoint_counters& counters, loggers log);

  // Where the transport starts delivering: after the saved offset, or
  // else `configured` (the endpoint's start_from).
  [[nodiscard]] stream_start start(const stream_start& configured) const;

  // The transport delivered the message at `offset`.
  void read(std::uint64_t offset);

  // The message at `offset` is settled for good (handled, on the error
  // queue, discarded, skipped). Saves the offset when it moves.
  void settled(std::uint64_t offset);

private:
  stream_reader(std::string reader, std::string stream, std::unique_ptr<stream_offset_keeper> kept,
                std::optional<std::uint64_t> saved, const ::bus::transport& transport,
                endpoint_counters& counters, loggers log);
  // Under the mutex: the counters from the position and `tail_`.
  void show();

  const std::string reader_;
  const std::string stream_;
  const std::unique_ptr<stream_offset_keeper> kept_; // used under mutex_
  const std::optional<std::uint64_t> saved_; // when it started
  const ::bus::transport& transport_;
  endpoint_counters& counters_;
  const loggers log_;
  std::mutex mutex_;
  stream_position position_;
  std::optional<std::uint64_t> tail_; // the stream's last offset, as last seen
  bool save_failing_ = false;         // logged once until a save works again
};

} // namespace bus::detail
