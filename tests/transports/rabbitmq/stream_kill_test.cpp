// kill -9 of a process that reads a RabbitMQ stream (issue 27): the next
// process resumes after the offset the first one saved, so no message is
// skipped, and the only one handled twice is the one in flight at the kill.
//
// The reader is rabbitmq_fault_worker (fault_worker.cpp) in its stream
// mode: one slot, each handler call 10 ms, recording every step in the
// ledger that this test reads to choose the moment of the kill and to
// count, afterwards, how often each message ended.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "broker.hpp"
#include "child_process.hpp"
#include "fault_probe.hpp"
#include "ledger.hpp"
#include "support/eventually.hpp"
#include "support/file_text.hpp"

using namespace std::chrono_literals;
using bus::test::fault_probe;

namespace {

using bus::test::file_text;

constexpr int messages = 120;
constexpr int kill_after = 40; // messages ended by the first process

bool ends(const std::string& kind) {
  return kind == "handled" || kind == "dead_lettered" || kind == "discarded";
}

// Messages ended, by id, in the ledger lines of `pid` (0: of any process).
std::map<std::string, int> ended_by(const std::vector<bus::test::ledger_entry>& ledger, int pid) {
  std::map<std::string, int> out;
  for (const auto& e : ledger)
    if (ends(e.kind) && (pid == 0 || e.pid == pid))
      ++out[e.id];
  return out;
}

struct reader_files {
  std::string dir;
  std::string ledger() const { return dir + "/ledger"; }
  std::string output() const { return dir + "/worker.out"; }
  std::string offsets() const { return dir + "/offsets"; }
};

std::unique_ptr<bus::test::child_process> start_reader(const reader_files& files,
                                                       const std::string& endpoint,
                                                       const std::string& stream,
                                                       const std::string& type) {
  auto worker = std::make_unique<bus::test::child_process>(
    BUS_FAULT_WORKER, std::vector<std::string>{endpoint, type, files.ledger(), "1"},
    std::vector<std::string>{"BUS_RABBITMQ_URL=" + bus::test::broker_env("BUS_RABBITMQ_URL"),
                             "BUS_FAULT_WORKER_STREAM=" + stream,
                             "BUS_FAULT_WORKER_OFFSETS=" + files.offsets(),
                             "BUS_FAULT_WORKER_HANDLER_MS=10"},
    files.output());
  bool ready = bus::test::eventually(
    [&] {
      if (!worker->running())
        return true;
      for (const auto& e : bus::test::read_ledger(files.ledger()))
        if (e.kind == "ready" && e.pid == worker->pid())
          return true;
      return false;
    },
    30s);
  INFO("worker output:\n" << file_text(files.output()));
  REQUIRE(worker->running());
  REQUIRE(ready);
  return worker;
}

} // namespace

TEST_CASE("kill -9 of a stream reader: the next process resumes after the saved offset, "
          "skipping none and handling again only the one in flight",
          "[rabbitmq][bus][kill]") {
  auto endpoint = bus::test::unique_name("kill.projection");
  auto stream = bus::test::unique_name("kill.audit");
  auto type = bus::test::unique_name("fault_probe");
  std::string pattern = "/tmp/bus-stream-kill-XXXXXX";
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  reader_files files{pattern};
  INFO("worker files in " << files.dir);

  // The stream, as another process appended to it: every tenth message
  // fails, and goes to the error queue, which settles it as handling does.
  auto producer = bus::test::connect_transport();
  REQUIRE(producer->declare_stream(stream, {}));
  for (int i = 0; i < messages; ++i) {
    fault_probe p{"probe-" + std::to_string(i), i % 10 == 9 ? 100 : 0, 0, false};
    bus::envelope env;
    env.message_id = p.id;
    env.message_type = type;
    env.sent_at = std::chrono::system_clock::now();
    env.body = bus::message_body::text(nlohmann::json(p).dump());
    REQUIRE(producer->send(stream, std::move(env)));
  }

  auto first = start_reader(files, endpoint, stream, type);
  bool reached = bus::test::eventually(
    [&] { return ended_by(bus::test::read_ledger(files.ledger()), first->pid()).size()
                 >= static_cast<std::size_t>(kill_after); },
    60s, 2ms);
  first->signal(SIGKILL);
  auto killed = first->wait(10s);
  REQUIRE(killed);
  REQUIRE(WIFSIGNALED(*killed));
  REQUIRE(reached);
  const auto before = ended_by(bus::test::read_ledger(files.ledger()), first->pid());
  REQUIRE(before.size() < static_cast<std::size_t>(messages)); // killed in the middle

  auto second = start_reader(files, endpoint, stream, type);
  bool all_ended = bus::test::eventually(
    [&] { return ended_by(bus::test::read_ledger(files.ledger()), 0).size()
                 == static_cast<std::size_t>(messages); },
    60s);
  second->signal(SIGTERM);
  auto stopped = second->wait(30s);
  REQUIRE(stopped);
  CHECK(WIFEXITED(*stopped));
  REQUIRE(all_ended);

  // None skipped, each ended once but for at most one: the message the
  // first process was on when it died.
  const auto ledger = bus::test::read_ledger(files.ledger());
  const auto after = ended_by(ledger, second->pid());
  int twice = 0;
  for (const auto& [id, n] : ended_by(ledger, 0)) {
    INFO(id);
    CHECK(n <= 2);
    twice += n - 1;
  }
  CHECK(twice <= 1);
  // The second process started after what the first had ended, not at
  // the stream's first message, as start_from says for a first start only.
  CHECK(after.count("probe-0") == 0);
  CHECK(after.size() <= static_cast<std::size_t>(messages) - before.size() + 1);
  // Its offset is the last message's.
  CHECK(file_text(files.offsets() + "/" + stream + "." + endpoint + ".offset")
        == std::to_string(messages - 1) + "\n");
}
