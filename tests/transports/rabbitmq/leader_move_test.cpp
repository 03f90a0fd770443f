// busctl move-leader on the three-node cluster. Ra's transfer_leadership
// answers "ok" as soon as the leader takes the request; a member that does
// not answer then leaves the leadership where it was, and the leader deaf
// for 30 s. A member that does not answer is made here by suspending its
// Ra server (sys:suspend: alive, connected, silent), the first other
// member in the queue's member list, the one a move asked first before it
// pinged them. A clean clone's CI saw both halves: an eviction that never
// happened, and a stranded level still stranded after "moved".
#include <catch2/catch.hpp>

#include <string>

#include "broker.hpp"
#include "cluster_tools.hpp"

namespace {

// `rabbitmqctl -q eval EXPRESSION` on the cluster; its first line.
std::string eval_first_line(const std::string& expression) {
  auto ran = bus::test::run_broker_tool("BUS_RABBITMQ_CTL", "-q eval '" + expression + "'");
  INFO("rabbitmqctl eval said:\n" << ran.text);
  REQUIRE(ran.ok);
  return ran.text.substr(0, ran.text.find('\n'));
}

std::string lookup(const std::string& queue) {
  return "{ok, Q} = rabbit_amqqueue:lookup(rabbit_misc:r(<<\"/\">>, queue, <<\"" + queue
         + "\">>)), {Name, From} = amqqueue:get_pid(Q), ";
}

// Suspends the Ra server of the first member of `queue` other than its
// leader; returns that member's node.
std::string suspend_first_follower(const std::string& queue) {
  return eval_first_line(lookup(queue)
                         + "#{nodes := Members} = amqqueue:get_type_state(Q), "
                           "[First | _] = [M || M <- Members, M =/= From], "
                           "ok = sys:suspend({Name, First}), io:format(\"~s~n\", [First]).");
}

// When the case ends: the silent member speaks again, then the queue goes
// (a delete waits for every member).
struct resume_and_delete {
  std::string queue, node;
  ~resume_and_delete() {
    (void)bus::test::run_broker_tool("BUS_RABBITMQ_CTL", "-q eval '" + lookup(queue)
                                                             + "sys:resume({Name, list_to_atom(\""
                                                             + node + "\")}).'");
    bus::test::rabbitmqctl("delete_queue '" + queue + "'");
  }
};

} // namespace

TEST_CASE("busctl move-leader passes over a member that does not answer and says the leadership "
          "moved only once another member leads",
          "[rabbitmq][cluster][busctl]") {
  auto queue = bus::test::unique_name("cluster.move");
  {
    auto settings = bus::test::test_settings();
    settings.queue_type = bus::rabbitmq_queue_type::quorum;
    auto declarer = bus::test::connect_transport(settings);
    REQUIRE(declarer->declare_queue(queue));
  }
  int leader = bus::test::leader_of(queue);
  REQUIRE(leader != 0);
  auto silent = suspend_first_follower(queue);
  resume_and_delete cleanup{queue, silent};
  std::string taker;
  for (int n = 1; n <= 3; ++n)
    if (n != leader && bus::test::node_name(n) != silent)
      taker = bus::test::node_name(n);
  REQUIRE_FALSE(taker.empty());

  auto moved = bus::test::busctl_move_leader(queue);
  INFO("busctl said: " << moved.text << "the silent member: " << silent);
  REQUIRE(moved.ok);
  CHECK(moved.text
        == "moved the leadership of '" + queue + "' from " + bus::test::node_name(leader) + " to "
               + taker + "\n");
  CHECK(bus::test::node_name(bus::test::leader_of(queue)) == taker);
}
