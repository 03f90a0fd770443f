// The bookkeeping behind batched acknowledgements (ack_window.hpp): which
// basic.ack frames the consuming thread sends for the settlements the
// application made, table by table, without a broker.
#include <catch2/catch.hpp>

#include <cstdint>
#include <utility>
#include <vector>

#include "ack_window.hpp"

using bus::detail::ack_window;

namespace {

using frames = std::vector<std::pair<std::uint64_t, bool>>; // (tag, multiple)

struct recorder {
  frames sent;
  auto send() {
    return [this](std::uint64_t tag, bool multiple) { sent.emplace_back(tag, multiple); };
  }
};

ack_window delivered(std::uint64_t n) {
  ack_window w;
  for (std::uint64_t tag = 1; tag <= n; ++tag)
    w.delivered(tag);
  return w;
}

} // namespace

TEST_CASE("acks of every delivery so far go out as one multiple ack of the highest",
          "[rabbitmq][ack_window]") {
  auto w = delivered(5);
  recorder r;
  for (std::uint64_t tag : {3, 1, 5, 2, 4})
    w.ack(tag, r.send());
  CHECK(r.sent.empty()); // queued until the flush
  w.flush(r.send());
  CHECK(r.sent == frames{{5, true}});
}

TEST_CASE("a single ack is sent without the multiple flag", "[rabbitmq][ack_window]") {
  auto w = delivered(1);
  recorder r;
  w.ack(1, r.send());
  w.flush(r.send());
  CHECK(r.sent == frames{{1, false}});
}

TEST_CASE("an open delivery ends the batch and the acks above it go out one by one",
          "[rabbitmq][ack_window]") {
  auto w = delivered(6);
  recorder r;
  for (std::uint64_t tag : {1, 2, 4, 6})
    w.ack(tag, r.send()); // 3 and 5 still running
  w.flush(r.send());
  CHECK(r.sent == frames{{2, true}, {4, false}, {6, false}});
  // Once 3 and 5 are acked, the front moves on over what was sent.
  r.sent.clear();
  w.ack(5, r.send());
  w.flush(r.send());
  CHECK(r.sent == frames{{5, false}}); // 3 still open: 5 alone
  r.sent.clear();
  w.ack(3, r.send());
  w.delivered(7);
  w.ack(7, r.send());
  w.flush(r.send());
  CHECK(r.sent == frames{{7, true}}); // 3 and 7; 4, 5, 6 were settled already
}

TEST_CASE("a reject is never overtaken: the acks before it go first, and the batch stops there",
          "[rabbitmq][ack_window]") {
  auto w = delivered(5);
  recorder r;
  w.ack(1, r.send());
  w.ack(2, r.send());
  // The owner rejects 3: it flushes first, sends the reject, then says so.
  w.flush(r.send());
  CHECK(r.sent == frames{{2, true}});
  r.sent.emplace_back(0, false); // stands for the reject of 3 on the wire
  w.settled_on_wire(3);
  w.ack(4, r.send());
  w.ack(5, r.send());
  w.flush(r.send());
  // The broker no longer counts 3: a multiple ack of 5 settles 4 and 5 only.
  CHECK(r.sent == frames{{2, true}, {0, false}, {5, true}});
}

TEST_CASE("an ack queued above a delivery later rejected does not cover it",
          "[rabbitmq][ack_window]") {
  auto w = delivered(3);
  recorder r;
  w.ack(3, r.send());
  w.ack(1, r.send());
  // 2 is rejected: the flush before it must not send a multiple ack of 3.
  w.flush(r.send());
  CHECK(r.sent == frames{{1, false}, {3, false}});
}

TEST_CASE("a skipped delivery tag stops coalescing: every ack goes out alone at once",
          "[rabbitmq][ack_window]") {
  ack_window w;
  w.delivered(1);
  w.delivered(3); // 2 never seen
  recorder r;
  w.ack(1, r.send());
  w.ack(3, r.send());
  CHECK(r.sent == frames{{1, false}, {3, false}});
  w.flush(r.send());
  CHECK(r.sent.size() == 2);
}

TEST_CASE("after a reset the window starts again at tag 1", "[rabbitmq][ack_window]") {
  auto w = delivered(3);
  recorder r;
  w.ack(2, r.send());
  w.reset(); // a new channel: tags of the old one mean nothing
  w.delivered(1);
  w.ack(1, r.send());
  w.flush(r.send());
  CHECK(r.sent == frames{{1, false}});
}

TEST_CASE("a window that would grow past its limit stops coalescing rather than grow",
          "[rabbitmq][ack_window]") {
  ack_window w(4);
  recorder r;
  for (std::uint64_t tag = 1; tag <= 4; ++tag)
    w.delivered(tag);
  // 1 stays open while 2..4 are acked alone and kept behind it.
  for (std::uint64_t tag = 2; tag <= 4; ++tag)
    w.ack(tag, r.send());
  w.flush(r.send());
  CHECK(r.sent == frames{{2, false}, {3, false}, {4, false}});
  r.sent.clear();
  w.delivered(5); // a fifth to remember: past the limit
  w.ack(5, r.send());
  w.ack(1, r.send());
  CHECK(r.sent == frames{{5, false}, {1, false}}); // alone, at once
}
