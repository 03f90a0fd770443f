// A non-owning handle on the caller's random generator. The policy library
// has no randomness of its own: jitter draws from whatever the caller passes
// in, a std::mt19937_64 in the runtime, a scripted sequence in a test.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>

namespace bus {

class random_source {
public:
  // Binds to `generator`, which must outlive this handle and every copy of
  // it. The generator must produce full 64-bit words (min() == 0, max() ==
  // 2^64 - 1): std::mt19937_64 does, std::mt19937 does not.
  //
  // Implicit on purpose: like std::string_view it is a view that callers
  // never spell out, so `decide(config, context, generator)` reads as the
  // call it is.
  template <class Generator,
            class = std::enable_if_t<!std::is_same_v<std::remove_cv_t<Generator>, random_source>>>
  random_source(Generator& generator) noexcept // NOLINT(google-explicit-constructor)
      : generator_(std::addressof(generator)), draw_(&draw<Generator>) {
    static_assert(
        Generator::min() == 0 && Generator::max() == std::numeric_limits<std::uint64_t>::max(),
        "bus::random_source needs a generator of full 64-bit words, e.g. std::mt19937_64");
  }

  // One draw, uniform over all 64-bit words. Advances the generator.
  [[nodiscard]] std::uint64_t operator()() const { return draw_(generator_); }

  // A uniform value in [0, 1) made of the top 53 bits of one draw, so the
  // mapping is exact and the same on every platform: the draw 0 gives 0.0,
  // the draw 2^63 gives exactly 0.5, the draw 2^64 - 1 the largest double
  // below 1.
  [[nodiscard]] double unit() const { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }

private:
  template <class Generator> static std::uint64_t draw(void* generator) {
    return static_cast<std::uint64_t>((*static_cast<Generator*>(generator))());
  }

  void* generator_;
  std::uint64_t (*draw_)(void*);
};

} // namespace bus
