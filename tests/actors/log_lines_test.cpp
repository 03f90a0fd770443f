// The bus's log lines as production needs them: an exception's message is
// cut at the fault text limit in every line that carries it (a 1 MiB
// message through immediate retries, a redelivery and the error queue),
// and the optional JSON line format is valid JSON with the line's fields.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>

#include "bus/testing/harness.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::test::order_placed;

namespace {

constexpr std::size_t limit = 2048;
// What a line adds around its texts: logger, level, the sentence, a
// message id, an endpoint name, a delay, an exception type.
constexpr std::size_t prefix_bound = 512;

// 1 MiB of exception message; for JSON lines opening with what JSON must
// escape (a quote, a backslash, a newline, a control character, a byte
// that is not UTF-8). A text line keeps a newline as it is.
std::string huge_message(bool json) {
  std::string text = json ? "\"quoted\" \\ new\nline \x01 bad\xff " : "";
  text.resize(std::size_t(1) << 20, 'x');
  return text;
}

// A bus whose "billing" handler always throws the 1 MiB message: two
// attempts per delivery, one redelivery, then the error queue.
struct failing_bus {
  // Declared before the harness: the bus logs until the harness is gone.
  std::ostringstream text;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink =
    std::make_shared<spdlog::sinks::ostream_sink_mt>(text);
  bus::testing::harness h;

  explicit failing_bus(bool json) {
    sink->set_pattern("[%n] [%l] %v");
    auto b = h.builder();
    b.message<order_placed>("order_placed")
      .log_sinks({sink})
      .json_logs(json)
      .fault_text_limit(limit)
      .add_resilience([](bus::policy_builder& p) {
        p.on_any().retry({10ms}).then_redeliver({1min});
      })
      .endpoint("billing", [json](bus::endpoint_builder& e) {
        e.handle<order_placed>(
          [json](const order_placed&) { throw std::runtime_error(huge_message(json)); });
      });
    auto& bus = h.start(b);
    REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
    h.advance_until_idle();
    REQUIRE(h.error_queue("billing").size() == 1);
  }

  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::istringstream in(text.str());
    for (std::string line; std::getline(in, line);)
      out.push_back(line);
    return out;
  }
};

// Sets an environment variable for one test, and restores it.
struct scoped_env {
  std::string name;
  std::optional<std::string> before;
  scoped_env(std::string n, const char* value) : name(std::move(n)) {
    if (const char* old = std::getenv(name.c_str()))
      before = old;
    ::setenv(name.c_str(), value, 1);
  }
  ~scoped_env() {
    if (before)
      ::setenv(name.c_str(), before->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

} // namespace

TEST_CASE("a 1 MiB exception message is cut at the fault text limit in every log line") {
  failing_bus run(false);
  auto lines = run.lines();
  std::size_t retry = 0, redelivery = 0, error_queue = 0;
  for (const auto& line : lines) {
    CAPTURE(line.substr(0, 200));
    CHECK(line.size() < limit + prefix_bound);
    if (line.find("...(truncated)") == std::string::npos)
      continue;
    retry += line.rfind("[bus.immediate_retry]", 0) == 0;
    redelivery += line.rfind("[bus.delayed_retry]", 0) == 0;
    error_queue += line.rfind("[bus.move_to_error]", 0) == 0;
  }
  // The lines that carry the message are there, cut: one immediate retry
  // per delivery, the redelivery, the move to the error queue.
  CHECK(retry == 2);
  CHECK(redelivery == 1);
  CHECK(error_queue == 1);
}

TEST_CASE("JSON log lines are one valid object per line with the line's fields") {
  failing_bus run(true);
  auto lines = run.lines();
  REQUIRE_FALSE(lines.empty());
  bool saw_retry = false, saw_error_queue = false, saw_plain = false;
  for (const auto& line : lines) {
    CAPTURE(line.substr(0, 300));
    CHECK(line.size() < 2 * limit + prefix_bound); // escaping may lengthen a cut text
    auto j = nlohmann::json::parse(line); // throws, failing the test, if not JSON
    REQUIRE(j.is_object());
    CHECK(j["time"].get<std::string>().size() == 24); // 2026-11-22T10:15:30.123Z
    CHECK(j.contains("level"));
    CHECK(j["logger"].get<std::string>().rfind("bus.", 0) == 0);
    CHECK(j["text"].is_string());
    auto logger = j["logger"].get<std::string>();
    if (logger == "bus.immediate_retry") {
      saw_retry = true;
      CHECK(j["level"] == "info");
      CHECK_FALSE(j["message_id"].get<std::string>().empty());
      CHECK(j["endpoint"] == "billing");
      CHECK(j["attempt"] == 1);
      CHECK(j["exception_type"] == "std::runtime_error");
      // The message survives escaping, cut.
      CHECK(j["text"].get<std::string>().find("\"quoted\" \\ new\nline \x01 bad") != std::string::npos);
      CHECK_THAT(j["text"].get<std::string>(), Catch::Contains("...(truncated)"));
    } else if (logger == "bus.move_to_error") {
      saw_error_queue = true;
      CHECK(j["level"] == "error");
      CHECK(j["attempt"] == 2);
      CHECK(j["endpoint"] == "billing");
      CHECK_FALSE(j["reason"].get<std::string>().empty());
    } else if (logger == "bus.endpoint" && !j.contains("message_id")) {
      saw_plain = true; // a line without fields: time, level, logger, text
    }
  }
  CHECK(saw_retry);
  CHECK(saw_error_queue);
  CHECK(saw_plain);
}

TEST_CASE("BUS_LOG_FORMAT switches JSON lines on, and a value it does not know is refused") {
  SECTION("json") {
    scoped_env env("BUS_LOG_FORMAT", "json");
    failing_bus run(false);
    for (const auto& line : run.lines())
      CHECK(nlohmann::json::parse(line).is_object());
  }
  SECTION("a bad value") {
    scoped_env env("BUS_LOG_FORMAT", "xml");
    bus::testing::harness h;
    auto b = h.builder();
    auto built = b.build();
    REQUIRE_FALSE(built);
    CHECK_THAT(built.error().message, Catch::Contains("BUS_LOG_FORMAT is 'xml'"));
  }
}
