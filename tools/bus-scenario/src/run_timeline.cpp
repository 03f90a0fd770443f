#include "run_timeline.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <utility>

#include "bus/svg_drawing.hpp"

namespace bus::scenario {

namespace {

using namespace bus::detail::svg;

constexpr int lane_height = 48;
constexpr int column_step = 26; // between two events at the same time

// An event that takes a place on the time axis: an attempt's end or a
// message's end.
bool placed(const std::string& event) {
  return event == "failed" || event == "handled" || event == "dead_lettered"
         || event == "discarded" || event == "skipped";
}

struct mark {
  std::string event;
  long long time_ms = 0;
  int x = 0;
  std::optional<long long> delay_ms; // the retry or redelivery it asked for
  bool redelivery = false;
};

struct lane {
  std::string message;
  std::string endpoint;
  std::vector<mark> marks;
};

std::string text_of(const nlohmann::ordered_json& line, const char* key) {
  auto it = line.find(key);
  return it != line.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The lanes in order of their first event; each event's x on the shared axis.
std::vector<lane> lanes_of(const std::vector<nlohmann::ordered_json>& events, int left,
                           int& right) {
  std::vector<lane> lanes;
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  int x = left;
  std::optional<long long> last_time;
  for (const auto& line : events) {
    auto message = text_of(line, "message");
    if (message.empty())
      continue;
    auto key = std::make_pair(message, text_of(line, "endpoint"));
    auto found = index.find(key);
    if (found == index.end()) {
      found = index.emplace(key, lanes.size()).first;
      lanes.push_back({key.first, key.second, {}});
    }
    auto& l = lanes[found->second];
    auto event = text_of(line, "event");
    auto time = line.value("time_ms", 0LL);
    // What follows a failure says what became of that attempt.
    if (event == "immediate_retry" || event == "redelivery_scheduled") {
      if (!l.marks.empty()) {
        l.marks.back().delay_ms = line.value("delay_ms", 0LL);
        l.marks.back().redelivery = event == "redelivery_scheduled";
      }
      continue;
    }
    if (event == "held_back") {
      if (!l.marks.empty() && l.marks.back().event == "failed")
        l.marks.back().event = "held_back";
      continue;
    }
    if (!placed(event))
      continue;
    if (last_time)
      x += column_step
           + (time > *last_time ? gap_width(duration(time - *last_time)) - gap_width({}) : 0);
    last_time = time;
    l.marks.push_back({event, time, x, std::nullopt, false});
  }
  right = x;
  return lanes;
}

bool is_attempt(const mark& m) {
  return m.event == "failed" || m.event == "handled" || m.event == "held_back";
}

std::string_view colour_of(const mark& m) {
  if (m.event == "handled")
    return handled_colour;
  if (m.event == "held_back")
    return discard_colour;
  return error_colour;
}

// The box that says where the message ended, if it did.
std::optional<std::pair<std::string, std::string_view>> ending_of(const mark& m) {
  if (m.event == "handled")
    return std::make_pair(std::string("handled"), handled_colour);
  if (m.event == "dead_lettered")
    return std::make_pair(std::string("error queue"), error_colour);
  if (m.event == "discarded")
    return std::make_pair(std::string("discarded"), discard_colour);
  if (m.event == "skipped")
    return std::make_pair(std::string("skipped"), discard_colour);
  return std::nullopt;
}

// Draws one lane on the line at `axis`; returns the x where it ends.
int draw_lane(canvas& svg, const lane& l, int axis) {
  const std::string note = "fill=\"" + std::string(note_colour) + "\"";
  const std::string small = "text-anchor=\"middle\" font-size=\"10\" " + note;
  svg.text(margin, axis + 4, l.message + " at " + l.endpoint,
           "fill=\"" + std::string(text_colour) + "\"");
  int end = 0;
  const mark* previous = nullptr;
  for (const auto& m : l.marks) {
    if (previous && is_attempt(m)) {
      bool redelivery = previous->redelivery;
      svg.line(previous->x + dot_radius, axis, m.x - dot_radius,
               redelivery ? redelivery_colour : retry_colour, redelivery);
      // Immediate retries without a delay go unlabelled: a row of "+0ms"
      // would only crowd the picture.
      if (previous->delay_ms && (redelivery || *previous->delay_ms > 0))
        svg.text((previous->x + m.x) / 2, axis - 12,
                 (redelivery ? "redeliver +" : "+") + short_duration(duration(*previous->delay_ms)),
                 small);
    }
    if (is_attempt(m)) {
      svg.dot(m.x, axis, colour_of(m));
      // When it began, unless its end (labelled beside it) is this very attempt.
      if (!previous && &m != &l.marks.back())
        svg.text(m.x, axis + 24, to_hms(duration(m.time_ms)), small);
    }
    if (auto box = ending_of(m)) {
      const int start = m.event == "handled" ? m.x + dot_radius : m.x;
      if (m.event != "handled" && previous) // from the last attempt to its end
        svg.line(previous->x + dot_radius, axis, start, box->second, false);
      const int width =
        std::max(end_box_width, char_width * static_cast<int>(box->first.size()) + 16);
      svg.line(start, axis, start + 14, box->second, false);
      svg.box(start + 14, axis - 11, width, 22, box->second);
      svg.text(start + 14 + width / 2, axis + 4, box->first,
               "text-anchor=\"middle\" fill=\"#ffffff\"");
      // When it ended, beside its end (below, it would meet the first
      // attempt's time in a short lane).
      auto when = to_hms(duration(m.time_ms));
      svg.text(start + 14 + width + 8, axis + 4, when, note);
      end = std::max(end, start + 14 + width + 8 + char_width * static_cast<int>(when.size()));
    }
    end = std::max(end, m.x + dot_radius);
    if (is_attempt(m))
      previous = &m;
  }
  return end;
}

} // namespace

std::string run_timeline_svg(const std::vector<nlohmann::ordered_json>& events,
                             const std::string& title) {
  canvas svg;
  svg.text(margin, margin + 6, title,
           "font-size=\"14\" font-weight=\"bold\" fill=\"" + std::string(text_colour) + "\"");
  // The labels' column: as wide as the longest "message at endpoint".
  std::size_t label = 0;
  for (const auto& line : events)
    label = std::max(label,
                     text_of(line, "message").size() + 4 + text_of(line, "endpoint").size());
  const int left = margin + char_width * static_cast<int>(label) + 24;
  int right = left;
  auto lanes = lanes_of(events, left, right);
  int width = std::max(right, margin + bold_char_width * static_cast<int>(title.size()));
  int axis = margin + 6 + lane_height;
  for (const auto& l : lanes) {
    width = std::max(width, draw_lane(svg, l, axis));
    axis += lane_height;
  }
  if (lanes.empty())
    svg.text(margin, axis, "nothing happened", "fill=\"" + std::string(note_colour) + "\"");
  return svg.document(width + margin, axis - lane_height / 2 + margin, title);
}

std::string timeline_title(const std::string& file) {
  return "what " + file.substr(file.find_last_of('/') + 1) + " did";
}

bool write_run_timeline(const std::vector<nlohmann::ordered_json>& events,
                        const std::string& title, const std::string& path, std::ostream& err) {
  std::ofstream file(path, std::ios::binary);
  file << run_timeline_svg(events, title);
  file.close();
  if (file)
    return true;
  err << "bus-scenario: cannot write the timeline to " << path << '\n';
  return false;
}

} // namespace bus::scenario
