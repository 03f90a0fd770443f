#include "bus/policy/explain_svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace bus {

namespace {

// Colours of the attempt kinds, from one palette the page uses too.
constexpr std::string_view retry_colour = "#3b6fc4";      // first delivery, immediate retries
constexpr std::string_view redelivery_colour = "#c77c1e"; // a delivery after a redelivery
constexpr std::string_view error_colour = "#b3261e";
constexpr std::string_view discard_colour = "#6b6b6b";
constexpr std::string_view text_colour = "#222222";
constexpr std::string_view note_colour = "#555555";

constexpr int margin = 20;
constexpr int dot_radius = 7;
constexpr int line_height = 16;
constexpr int wrap_at = 110;     // characters per line of the texts above and below
constexpr int char_width = 7;    // an estimate at 12 px, for the document's width
constexpr int bold_char_width = 9; // the same at 14 px bold (the summary line), rounded up
constexpr int end_box_width = 96;

std::string escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// "200ms", "1.5s", "5m", "1h 30m": short enough to label a gap.
std::string short_duration(duration d) {
  auto ms = std::max<long long>(d.count(), 0);
  if (ms < 1000)
    return std::to_string(ms) + "ms";
  if (ms < 60'000) {
    auto text = std::to_string(ms / 1000);
    if (auto rest = ms % 1000; rest != 0) {
      auto fraction = std::to_string(1000 + rest).substr(1); // three digits
      fraction.erase(fraction.find_last_not_of('0') + 1);
      text += "." + fraction;
    }
    return text + "s";
  }
  auto join = [](long long big, const char* big_unit, long long small, const char* small_unit) {
    return std::to_string(big) + big_unit
           + (small ? " " + std::to_string(small) + small_unit : std::string());
  };
  auto seconds = ms / 1000;
  if (seconds < 3600)
    return join(seconds / 60, "m", seconds % 60, "s");
  if (seconds < 86'400)
    return join(seconds / 3600, "h", seconds / 60 % 60, "m");
  return join(seconds / 86'400, "d", seconds / 3600 % 24, "h");
}

// Words of `text` in lines of at most wrap_at characters (a longer word
// gets a line of its own).
std::vector<std::string> wrapped(std::string_view text) {
  std::vector<std::string> lines;
  std::string line;
  while (!text.empty()) {
    auto space = text.find(' ');
    auto word = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    if (!line.empty() && line.size() + 1 + word.size() > static_cast<std::size_t>(wrap_at)) {
      lines.push_back(std::move(line));
      line.clear();
    }
    if (!line.empty())
      line += ' ';
    line += word;
  }
  if (!line.empty())
    lines.push_back(std::move(line));
  return lines;
}

// The width of a gap before a delay: logarithmic in milliseconds, so that
// 0 ms is 36 px, 1 s 84 px, 5 min 124 px and a day 175 px.
int gap_width(duration delay) {
  auto ms = static_cast<double>(std::max<long long>(delay.count(), 0));
  return 36 + static_cast<int>(std::lround(16.0 * std::log10(1.0 + ms)));
}

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

class svg_text {
public:
  void text(int x, int y, std::string_view content, std::string_view attributes = {}) {
    body_ += "<text x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\"";
    if (!attributes.empty())
      body_ += " " + std::string(attributes);
    body_ += ">" + escaped(content) + "</text>\n";
  }
  void line(int x1, int y, int x2, std::string_view colour, bool dashed) {
    body_ += "<line x1=\"" + std::to_string(x1) + "\" y1=\"" + std::to_string(y) + "\" x2=\""
             + std::to_string(x2) + "\" y2=\"" + std::to_string(y) + "\" stroke=\""
             + std::string(colour) + "\" stroke-width=\"2\""
             + (dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
  }
  void dot(int x, int y, std::string_view colour) {
    body_ += "<circle cx=\"" + std::to_string(x) + "\" cy=\"" + std::to_string(y) + "\" r=\""
             + std::to_string(dot_radius) + "\" fill=\"" + std::string(colour) + "\"/>\n";
  }
  void box(int x, int y, int width, int height, std::string_view colour) {
    body_ += "<rect x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\" width=\""
             + std::to_string(width) + "\" height=\"" + std::to_string(height)
             + "\" rx=\"4\" fill=\"" + std::string(colour) + "\"/>\n";
  }
  // Lines of wrapped text from `y` on; returns the y after them.
  int paragraph(int y, std::string_view content, std::string_view attributes) {
    for (const auto& l : wrapped(content)) {
      text(margin, y, l, attributes);
      y += line_height;
    }
    return y;
  }

  [[nodiscard]] std::string document(int width, int height, std::string_view title) const {
    auto w = std::to_string(width);
    auto h = std::to_string(height);
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + h
           + "\" viewBox=\"0 0 " + w + " " + h
           + "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n<title>"
           + escaped(title) + "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
           + body_ + "</svg>\n";
  }

private:
  std::string body_;
};

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
int draw_timeline(svg_text& svg, const explanation& e, int axis) {
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
  svg_text svg;
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
