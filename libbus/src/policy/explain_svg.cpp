#include "bus/policy/explain_svg.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "bus/svg_drawing.hpp"

namespace bus {

namespace {

using namespace detail::svg;

struct link {
  duration delay{};
  bool redelivery = false;
};

// The delay that follows an attempt, if the plan goes on after it.
std::optional<link> link_after(const action& then) {
  return std::visit(
      [](const auto& a) -> std::optional<link> {
        using kind = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<kind, immediate_retry>)
          return link{a.delay, false};
        else if constexpr (std::is_same_v<kind, delayed_retry>)
          return link{a.delay, true};
        else
          return std::nullopt;
      },
      then);
}

// Where a plan ends: the box's text, the summary's words, the box's colour.
struct ending {
  std::string box;
  std::string phrase;
  std::string_view colour;
};

std::optional<ending> ending_of(const explanation& e) {
  if (e.plan.empty())
    return std::nullopt;
  return std::visit(
      [](const auto& a) -> std::optional<ending> {
        using kind = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<kind, move_to_error>) {
          if (a.queue.empty())
            return ending{"error queue", "the error queue", error_colour};
          return ending{a.queue, "error queue '" + a.queue + "'", error_colour};
        } else if constexpr (std::is_same_v<kind, discard>) {
          return ending{"discarded", "discarded", discard_colour};
        } else {
          return std::nullopt; // cut by explain_plan_limit
        }
      },
      e.plan.back().then);
}

std::string summary(const explanation& e) {
  if (e.plan.empty())
    return e.exception_type;
  auto attempts = e.plan.size();
  std::string text = e.exception_type + ": " + std::to_string(attempts)
                     + (attempts == 1 ? " attempt" : " attempts");
  if (e.plan.back().elapsed.count() > 0)
    text += " over " + short_duration(e.plan.back().elapsed);
  if (auto end = ending_of(e))
    return text + ", then " + end->phrase;
  return text + ", and more: the plan stops at " + std::to_string(explain_plan_limit);
}

// Draws the dots, links and end of `e`'s plan on the line at `axis`;
// returns the x where the drawing ends.
int draw_timeline(canvas& svg, const explanation& e, int axis) {
  const std::string note = "fill=\"" + std::string(note_colour) + "\"";
  const std::string small = "text-anchor=\"middle\" font-size=\"10\" " + note;
  const auto drawn = std::min(e.plan.size(), svg_plan_attempts);
  int x = margin + 28; // room for the first time label, centred under the dot
  for (std::size_t i = 0; i < drawn; ++i) {
    const auto& step = e.plan[i];
    const bool new_delivery = step.delivery > 0 && step.immediate_attempt == 1;
    svg.dot(x, axis, new_delivery ? redelivery_colour : retry_colour);
    svg.text(x, axis + 22, std::to_string(step.attempt), small);
    if (i == 0 || new_delivery || i + 1 == e.plan.size())
      svg.text(x, axis + 36, to_hms(step.elapsed), small);
    auto next = link_after(step.then);
    if (!next || i + 1 == drawn)
      break;
    const int gap = gap_width(next->delay);
    svg.line(x + dot_radius, axis, x + gap - dot_radius,
             next->redelivery ? redelivery_colour : retry_colour, next->redelivery);
    svg.text(x + gap / 2, axis - 12,
             (next->redelivery ? "redeliver +" : "+") + short_duration(next->delay), small);
    x += gap;
  }
  if (e.plan.size() > drawn || e.truncated) {
    auto hidden = e.plan.size() - drawn;
    x += 14;
    svg.text(x, axis + 4,
             "... " + std::to_string(hidden) + (hidden == 1 ? " more attempt" : " more attempts")
                 + (e.truncated ? ", and more" : ""),
             note);
    x += 190;
  }
  if (auto end = ending_of(e)) {
    const int start = x + dot_radius;
    x = start + 24;
    svg.line(start, axis, x, end->colour, false);
    const int box_width =
        std::max(end_box_width, char_width * static_cast<int>(end->box.size()) + 16);
    svg.box(x, axis - 12, box_width, 24, end->colour);
    svg.text(x + box_width / 2, axis + 4, end->box, "text-anchor=\"middle\" fill=\"#ffffff\"");
    x += box_width;
  }
  return x;
}

} // namespace

std::string to_svg(const explanation& e) {
  canvas svg;
  int y = margin + 6;
  const auto first_line = summary(e);
  svg.text(margin, y, first_line,
           "font-size=\"14\" font-weight=\"bold\" fill=\"" + std::string(text_colour) + "\"");
  y += line_height + 4;
  const std::string note = "fill=\"" + std::string(note_colour) + "\"";
  y = svg.paragraph(y, e.rule ? "rule: " + e.rule_text : "no rule decides", note);
  y = svg.paragraph(y, "why: " + e.reason, note);

  // The timeline: a row of delay labels above the line, two rows below.
  const int axis = y + 26;
  const int right = draw_timeline(svg, e, axis);

  y = axis + 62;
  if (ending_of(e))
    y = svg.paragraph(y, "ends: " + describe(e.plan.back().then), note);
  if (!e.dependency_clause.empty())
    y = svg.paragraph(y, "dependencies: " + e.dependency_clause, note);
  if (e.retry_budget)
    y = svg.paragraph(y, "retries charged to the " + describe(*e.retry_budget), note);

  // Wide enough for the timeline and for the longest line of text.
  int width = std::max(right + margin,
                       margin * 2 + bold_char_width * static_cast<int>(first_line.size()));
  for (const std::string* text : {&e.rule_text, &e.reason, &e.dependency_clause})
    width = std::max(width, margin * 2 + char_width * std::min<int>(wrap_at, text->size()));
  return svg.document(width, y + margin - line_height / 2,
                      "What " + e.exception_type + " goes through");
}

} // namespace bus
