// An edit for tcp_relay that gives a publisher the confirms of a quorum
// queue's failover on a live connection: the broker's new leader refuses
// one publish (basic.nack) while the confirm of the next one is lost with
// the old leader. A real cluster rarely does both in one round (the sends
// usually wait out the election), so the test makes it happen.
//
// On the first channel that confirms anything, the confirm of publish 1
// becomes a basic.nack and every later confirm on that channel is
// dropped; the nack goes out only once publish 2's confirm came too, so
// both are in flight when it arrives. Every other frame, and every other
// channel's confirms, pass as they are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace bus::test {

class failover_confirms {
public:
  std::string operator()(std::string_view bytes) {
    pending_.append(bytes);
    std::string out;
    std::size_t at = 0;
    while (pending_.size() - at >= header_size) {
      auto size = static_cast<std::size_t>(big_endian(pending_, at + 3, 4));
      auto whole = header_size + size + 1; // the frame-end octet
      if (pending_.size() - at < whole)
        break;
      pass_or_edit(std::string_view(pending_).substr(at, whole), out);
      at += whole;
    }
    pending_.erase(0, at);
    return out;
  }

private:
  static constexpr std::size_t header_size = 7; // type, channel, payload size
  static constexpr std::uint64_t method_frame = 1;
  static constexpr std::uint64_t basic_class = 60;
  static constexpr std::uint64_t ack_method = 80;
  static constexpr std::uint64_t nack_method = 120;

  static std::uint64_t big_endian(std::string_view bytes, std::size_t at, std::size_t octets) {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < octets; ++i)
      value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
    return value;
  }

  void pass_or_edit(std::string_view frame, std::string& out) {
    auto be = [frame](std::size_t at, std::size_t octets) { return big_endian(frame, at, octets); };
    bool ack = frame.size() >= 21 && be(0, 1) == method_frame && be(7, 2) == basic_class
               && be(9, 2) == ack_method;
    if (!ack) {
      out.append(frame);
      return;
    }
    auto channel = be(1, 2);
    if (channel_ == 0)
      channel_ = channel;
    if (channel != channel_ || nacked_) {
      if (channel != channel_)
        out.append(frame);
      return; // the victim channel's later confirms are lost
    }
    auto tag = be(11, 8);
    bool multiple = (be(19, 1) & 1) != 0;
    first_confirmed_ = first_confirmed_ || tag == 1 || multiple;
    second_confirmed_ = second_confirmed_ || tag >= 2;
    if (!first_confirmed_ || !second_confirmed_)
      return; // held back (dropped) until both were confirmed
    // basic.nack of publish 1 alone: the same size as the ack, another
    // method id, delivery tag 1, neither multiple nor requeue.
    std::string nack(frame);
    nack[10] = static_cast<char>(nack_method);
    for (std::size_t k = 0; k < 8; ++k)
      nack[11 + k] = static_cast<char>(k == 7 ? 1 : 0);
    nack[19] = 0;
    out.append(nack);
    nacked_ = true;
  }

  std::string pending_;   // a frame not whole yet
  std::uint64_t channel_ = 0; // the channel whose confirms are edited
  bool first_confirmed_ = false;
  bool second_confirmed_ = false;
  bool nacked_ = false;
};

} // namespace bus::test
