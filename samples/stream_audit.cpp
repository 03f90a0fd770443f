// Reading a stream (README "Reading a stream"): an audit stream of orders,
// read by a projection from its first message and, later, by a second
// reader from an offset of its own. The projection's handler fails on one
// order: that order goes to the error queue at once, never retried, and
// the reading goes on. Then the process "restarts" (a new bus on the same
// transport and offset directory): the projection resumes after the
// offset it saved instead of reading the stream again.
//
// Exit code 0 if every reader read what it should; 1 if not, or if the
// readers did not settle in time.
//
//   build/bin/stream_audit [DIR]   offsets in DIR (./stream_audit by default), made anew
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include <caf/all.hpp>

#include "bus/bus.hpp"
#include "bus/in_memory_transport.hpp"
#include "order_messages.hpp"

using namespace std::chrono_literals;
using samples::order_placed;

namespace {

// Waits up to 10 s for `done`, looking every 10 ms.
bool settles(const std::function<bool()>& done) {
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(10ms))
    if (done())
      return true;
  return done();
}

// Messages a reader has settled for good.
std::uint64_t settled(const bus::message_bus& bus, const std::string& endpoint) {
  auto s = *bus.stats(endpoint);
  return s.handled + s.dead_lettered + s.discarded;
}

// The handler runs on the endpoint's thread and main reads the totals:
// a mutex orders the two (the bus's stats are counters, not a fence).
class projection {
public:
  void add(const order_placed& m) {
    if (m.order_id == "o-7")
      throw std::runtime_error("order o-7 has no customer");
    std::lock_guard<std::mutex> guard(mutex_);
    total_ += m.amount;
    ++orders_;
  }
  int orders() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return orders_;
  }
  double total() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return total_;
  }

private:
  mutable std::mutex mutex_;
  double total_ = 0;
  int orders_ = 0;
};

std::unique_ptr<bus::message_bus> audit_bus(caf::actor_system& sys,
                                            std::shared_ptr<bus::in_memory_transport> transport,
                                            const std::string& offsets, projection& totals,
                                            std::atomic<int>* replayed) {
  bus::bus_builder b{sys};
  b.name("stream-audit")
    .transport(std::move(transport))
    .stream_offset_directory(offsets)
    .message<order_placed>("order_placed")
    .stream_endpoint("projection", "audit", [&](bus::endpoint_builder& e) {
      e.start_from(bus::stream_start::first()).handle<order_placed>([&](const order_placed& m) {
        totals.add(m);
      });
    });
  if (replayed)
    b.stream_endpoint("replay", "audit", [=](bus::endpoint_builder& e) {
      e.start_from(bus::stream_start::at_offset(5)).handle<order_placed>([=](const order_placed&) {
        ++*replayed;
      });
    });
  auto built = b.build();
  if (!built)
    throw std::runtime_error(built.error().message);
  if (auto started = (*built)->start(); !started)
    throw std::runtime_error(to_string(started.error()));
  return std::move(*built);
}

void append(bus::message_bus& bus, int from, int to) {
  for (int i = from; i < to; ++i)
    if (auto sent = bus.send("audit", order_placed{"o-" + std::to_string(i), "c", 10.0}); !sent)
      throw std::runtime_error(sent.error().message);
}

} // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "stream_audit";
  std::filesystem::remove_all(dir);
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto transport = std::make_shared<bus::in_memory_transport>();
  bool ok = true;
  auto expect = [&](bool holds, const char* what) {
    std::printf("%s %s\n", holds ? "ok  " : "FAIL", what);
    ok = ok && holds;
  };
  try {
    // 1. Ten orders, read from the first: o-7 fails and goes to the error
    //    queue at once, the other nine are projected.
    projection first;
    {
      auto bus = audit_bus(sys, transport, dir, first, nullptr);
      append(*bus, 0, 10);
      expect(settles([&] { return settled(*bus, "projection") == 10; }), "the projection read 10");
      expect(bus->stats("projection")->dead_lettered == 1 && first.orders() == 9,
             "o-7 went to the error queue, never retried, and the reading went on");
      expect(bus->stats("projection")->stream_offset == 9, "its offset is 9");
      bus->stop();
    }
    // 2. Started again with five more orders: the projection resumes after
    //    offset 9; a new reader starts at offset 5 and reads ten.
    projection again;
    std::atomic<int> replayed{0};
    auto bus = audit_bus(sys, transport, dir, again, &replayed);
    append(*bus, 10, 15);
    expect(settles([&] {
             return settled(*bus, "projection") == 5 && settled(*bus, "replay") == 10;
           }),
           "both readers settled");
    expect(again.orders() == 5, "the projection resumed after offset 9: 5 orders, none read twice");
    expect(replayed == 10, "the reader from offset 5 read o-5 to o-14");
    expect(bus->stats("projection")->stream_offset == 14
             && bus->stats("projection")->stream_lag == 0,
           "the projection stands at offset 14, with no lag");
    std::printf("projected %.2f over %d orders\n", first.total() + again.total(),
                first.orders() + again.orders());
    bus->stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stream_audit: %s\n", e.what());
    return 1;
  }
  return ok ? 0 : 1;
}
