// A run drawn as SVG (bus-scenario --timeline OUT.svg): each message at
// each endpoint a lane, left to right in the order things happened; each
// attempt a dot (red failed, green handled, grey held back for a
// dependency), immediate retries as solid links, redeliveries as dashed
// ones labelled with their delay, and where and when the message ended.
// The gaps grow with the logarithm of the time between two events, as in
// an explained policy's timeline (bus/svg_drawing.hpp), so a run of
// milliseconds and one of hours both fit; the same run gives the same bytes.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bus::scenario {

// `events`: the run's event lines as event_log writes them, in order.
// `title`: the picture's first line.
[[nodiscard]] std::string run_timeline_svg(const std::vector<nlohmann::ordered_json>& events,
                                           const std::string& title);

// "what <file's name> did": the title of a scenario file's run.
[[nodiscard]] std::string timeline_title(const std::string& file);

// Writes run_timeline_svg(events, title) to `path`; false, having said why
// on `err`, if it cannot.
bool write_run_timeline(const std::vector<nlohmann::ordered_json>& events,
                        const std::string& title, const std::string& path, std::ostream& err);

} // namespace bus::scenario
