// explain()'s plans drawn as SVG timelines (bus/policy/explain_svg.hpp),
// checked against golden files in golden/: the same explanation gives the
// same bytes. After a deliberate change of the drawing, regenerate them
// with BUS_UPDATE_GOLDEN=1 and look at them before committing; ctest's
// svg_timeline_is_well_formed_<name> parses each with xmllint.
#include "bus/policy/explain_svg.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "bus/policy/resilience.hpp"
#include "support/policy_support.hpp"

using namespace std::chrono_literals;
using namespace bus::test;

namespace {

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++n;
  return n;
}

// Compares `svg` with golden/<name>.svg, or writes it there when
// BUS_UPDATE_GOLDEN is set.
void check_golden(const std::string& name, const std::string& svg) {
  const std::string path = std::string(BUS_GOLDEN_DIR) + "/" + name + ".svg";
  if (std::getenv("BUS_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << svg;
    WARN("wrote " << path);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  INFO("golden file " << path << " (BUS_UPDATE_GOLDEN=1 writes it)");
  REQUIRE(in);
  std::stringstream golden;
  golden << in.rdbuf();
  CHECK(svg == golden.str());
}

} // namespace

TEST_CASE("a retry-then-redeliver plan is drawn as dots, solid retries, dashed redeliveries and "
          "the error queue",
          "[policy][svg]") {
  auto config = config_of([](bus::policy_builder& p) { p.on_any().retry(3).then_redeliver(); });
  auto e = bus::explain(config, transport_error("connection refused"));
  REQUIRE(e.plan.size() == 16);
  auto svg = bus::to_svg(e);
  CHECK(count_of(svg, "<circle") == 16);
  CHECK(count_of(svg, "stroke-dasharray") == 3); // the three redeliveries
  CHECK(count_of(svg, ">redeliver +") == 3);
  CHECK(svg.find(">redeliver +5m<") != std::string::npos);
  CHECK(svg.find(">+200ms<") != std::string::npos);
  CHECK(svg.find(">error queue<") != std::string::npos);
  // Each delivery's first attempt carries the time since the first failure.
  CHECK(svg.find(">00:05:01.400<") != std::string::npos);
  check_golden("retry_then_redeliver", svg);
}

TEST_CASE("a rule that discards is drawn as one attempt and its end, its text escaped",
          "[policy][svg]") {
  auto config = config_of([](bus::policy_builder& p) {
    p.on<validation_error>().discard();
    p.on_any().retry();
  });
  auto e = bus::explain(config, validation_error());
  auto svg = bus::to_svg(e);
  CHECK(count_of(svg, "<circle") == 1);
  CHECK(svg.find(">discarded<") != std::string::npos);
  CHECK(svg.find("on&lt;bus::test::validation_error&gt;") != std::string::npos);
  CHECK(svg.find("on<bus::") == std::string::npos);
  check_golden("discard", svg);
}

TEST_CASE("a plan longer than the drawing is drawn to its 24th attempt, then how many more",
          "[policy][svg]") {
  auto config = config_of(
      [](bus::policy_builder& p) { p.on_any().retry(59, 100ms, bus::backoff::constant); });
  auto e = bus::explain(config, transport_error());
  REQUIRE(e.plan.size() == 60);
  auto svg = bus::to_svg(e);
  CHECK(count_of(svg, "<circle") == bus::svg_plan_attempts);
  CHECK(svg.find(">... 36 more attempts<") != std::string::npos);
  CHECK(svg.find(">error queue<") != std::string::npos);
  check_golden("long_plan", svg);
}

TEST_CASE("a short plan's drawing is as wide as its bold summary line, so the line is never cut",
          "[policy][svg]") {
  // One attempt, then the error queue: a narrow timeline under a long
  // first line (the page shows such plans in a box as wide as the SVG).
  auto config = config_of([](bus::policy_builder& p) { p.on_any().dead_letter(); });
  auto e = bus::explain(config, validation_error());
  auto svg = bus::to_svg(e);
  auto start = svg.find("font-weight=\"bold\"");
  REQUIRE(start != std::string::npos);
  start = svg.find('>', start) + 1;
  auto summary = svg.substr(start, svg.find('<', start) - start);
  CHECK(summary.size() > 50);
  auto width_at = svg.find("width=\"") + 7;
  auto width = std::stoi(svg.substr(width_at, svg.find('"', width_at) - width_at));
  // 14 px bold: about 8.5 px a character in DejaVu Sans, plus the margins.
  CHECK(width >= static_cast<int>(summary.size()) * 17 / 2);
}
