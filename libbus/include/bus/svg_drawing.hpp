// What the bus's SVG pictures share (an explained policy, bus/policy/
// explain_svg.hpp; a scenario run, bus-scenario --timeline): one palette,
// one scale for time, and a small writer of self-contained SVG (no script,
// no external font or style), so that the same input gives the same bytes
// and golden files can hold them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bus/time.hpp"

namespace bus::detail::svg {

// The palette, shared with the bus's page.
inline constexpr std::string_view retry_colour = "#3b6fc4";      // first delivery, retries
inline constexpr std::string_view redelivery_colour = "#c77c1e"; // a delivery after a redelivery
inline constexpr std::string_view handled_colour = "#2e8b57";
inline constexpr std::string_view error_colour = "#b3261e";
inline constexpr std::string_view discard_colour = "#6b6b6b";
inline constexpr std::string_view text_colour = "#222222";
inline constexpr std::string_view note_colour = "#555555";

inline constexpr int margin = 20;
inline constexpr int dot_radius = 7;
inline constexpr int line_height = 16;
inline constexpr int wrap_at = 110;        // characters per line of a paragraph
inline constexpr int char_width = 7;       // an estimate at 12 px, for a document's width
inline constexpr int bold_char_width = 9;  // the same at 14 px bold, rounded up
inline constexpr int end_box_width = 96;

// `text` with &, <, > and " escaped.
[[nodiscard]] std::string escaped(std::string_view text);

// "200ms", "1.5s", "5m", "1h 30m": short enough to label a gap.
[[nodiscard]] std::string short_duration(duration d);

// Words of `text` in lines of at most wrap_at characters (a longer word
// gets a line of its own).
[[nodiscard]] std::vector<std::string> wrapped(std::string_view text);

// The width of a gap before a delay: logarithmic in milliseconds, so that
// 0 ms is 36 px, 1 s 84 px, 5 min 124 px and a day 175 px.
[[nodiscard]] int gap_width(duration delay);

// The elements of a document, in the order drawn.
class canvas {
public:
  void text(int x, int y, std::string_view content, std::string_view attributes = {});
  // A horizontal line at `y`.
  void line(int x1, int y, int x2, std::string_view colour, bool dashed);
  void dot(int x, int y, std::string_view colour);
  void box(int x, int y, int width, int height, std::string_view colour);
  // Lines of wrapped text from `y` on, at the left margin; returns the y after them.
  int paragraph(int y, std::string_view content, std::string_view attributes);

  // The SVG document: white, `width` by `height`, with a <title>.
  [[nodiscard]] std::string document(int width, int height, std::string_view title) const;

private:
  std::string body_;
};

} // namespace bus::detail::svg
