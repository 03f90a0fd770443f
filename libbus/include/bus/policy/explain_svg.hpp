// A plan of explain() drawn as a timeline, for a page or a document: each
// attempt a dot, immediate retries as solid links, redeliveries as dashed
// ones, and where the message ends. Self-contained SVG (no script, no
// external font or style), the same bytes for the same explanation.
#pragma once

#include <cstddef>
#include <string>

#include "bus/policy/explain.hpp"

namespace bus {

// At most this many attempts are drawn; a longer plan shows how many more
// there are before its end.
inline constexpr std::size_t svg_plan_attempts = 24;

// The timeline of `e` as an SVG document. The gap between two attempts
// grows with the logarithm of the delay, so that a 200 ms retry and a
// 30 min redelivery both fit; each gap is labelled with its delay, the
// first attempt of each delivery and the last attempt with the time since
// the first failure.
[[nodiscard]] std::string to_svg(const explanation& e);

} // namespace bus
