// Edits for tcp_relay that change the confirms a broker sends a publisher,
// to make confirm sequences happen that a real broker gives rarely or only
// under a race: a failover's, and a refusal whose next attempt is lost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace bus::test {

namespace detail {

// Cuts the broker's byte stream into whole AMQP frames and hands each
// basic.ack frame to `edit_ack(frame, channel, out)`, which appends what
// goes on in its place (itself, a nack, or nothing); every other frame
// passes as it is.
template <class Derived>
class confirm_edit {
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

protected:
  static std::uint64_t big_endian(std::string_view bytes, std::size_t at, std::size_t octets) {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < octets; ++i)
      value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
    return value;
  }

  // basic.nack of publish `tag` alone in place of the ack `frame`: the same
  // size, another method id, neither multiple nor requeue.
  static std::string nack_of(std::string_view frame, std::uint64_t tag) {
    std::string nack(frame);
    nack[10] = static_cast<char>(nack_method);
    for (std::size_t k = 0; k < 8; ++k)
      nack[11 + k] = static_cast<char>(tag >> (8 * (7 - k)));
    nack[19] = 0;
    return nack;
  }

  static std::uint64_t tag_of(std::string_view ack) { return big_endian(ack, 11, 8); }
  static bool multiple(std::string_view ack) { return (big_endian(ack, 19, 1) & 1) != 0; }

private:
  static constexpr std::size_t header_size = 7; // type, channel, payload size
  static constexpr std::uint64_t method_frame = 1;
  static constexpr std::uint64_t basic_class = 60;
  static constexpr std::uint64_t ack_method = 80;
  static constexpr std::uint64_t nack_method = 120;

  void pass_or_edit(std::string_view frame, std::string& out) {
    auto be = [frame](std::size_t at, std::size_t octets) { return big_endian(frame, at, octets); };
    bool ack = frame.size() >= 21 && be(0, 1) == method_frame && be(7, 2) == basic_class
               && be(9, 2) == ack_method;
    if (ack)
      static_cast<Derived*>(this)->edit_ack(frame, be(1, 2), out);
    else
      out.append(frame);
  }

  std::string pending_; // a frame not whole yet
};

} // namespace detail

// A quorum queue's failover on a live connection: the broker's new leader
// refuses one publish (basic.nack) while the confirm of the next one is
// lost with the old leader. A real cluster rarely does both in one round
// (the sends usually wait out the election), so the test makes it happen.
//
// On the first channel that confirms anything, the confirm of publish 1
// becomes a basic.nack and every later confirm on that channel is
// dropped; the nack goes out only once publish 2's confirm came too, so
// both are in flight when it arrives. Every other channel's confirms pass
// as they are.
class failover_confirms : public detail::confirm_edit<failover_confirms> {
public:
  void edit_ack(std::string_view frame, std::uint64_t channel, std::string& out) {
    if (channel_ == 0)
      channel_ = channel;
    if (channel != channel_ || nacked_) {
      if (channel != channel_)
        out.append(frame);
      return; // the victim channel's later confirms are lost
    }
    auto tag = tag_of(frame);
    first_confirmed_ = first_confirmed_ || tag == 1 || multiple(frame);
    second_confirmed_ = second_confirmed_ || tag >= 2;
    if (!first_confirmed_ || !second_confirmed_)
      return; // held back (dropped) until both were confirmed
    out.append(nack_of(frame, 1));
    nacked_ = true;
  }

private:
  std::uint64_t channel_ = 0; // the channel whose confirms are edited
  bool first_confirmed_ = false;
  bool second_confirmed_ = false;
  bool nacked_ = false;
};

// A refusal, then silence: every publish on the first channel that
// confirms anything is refused (its acks become nacks of the same
// publish), and the confirms of every later channel are lost. A send is
// refused once, published again on a new channel, and never hears back:
// what a queue at its length limit gives when its deadline falls while the
// next attempt is on its way.
class refusal_then_silence : public detail::confirm_edit<refusal_then_silence> {
public:
  void edit_ack(std::string_view frame, std::uint64_t channel, std::string& out) {
    if (channel_ == 0)
      channel_ = channel;
    if (channel == channel_ && !multiple(frame))
      out.append(nack_of(frame, tag_of(frame)));
  }

private:
  std::uint64_t channel_ = 0; // the channel whose publishes are refused
};

} // namespace bus::test
