#include <catch2/catch.hpp>

#include "command_line.hpp"

using namespace bus::ctl;

namespace {

command_line parsed(std::vector<std::string> args) {
  auto cl = parse_command_line(args);
  if (!cl)
    FAIL("refused: " << cl.error().message);
  return *cl;
}

std::string refusal(std::vector<std::string> args) {
  auto cl = parse_command_line(args);
  if (cl)
    FAIL("accepted what should be refused");
  CHECK(cl.error().code == bus::errc::invalid_configuration);
  return cl.error().message;
}

} // namespace

TEST_CASE("list reads the error queue of the endpoint it names") {
  auto cl = parsed({"list", "billing"});
  CHECK(cl.command == command_kind::list);
  CHECK(cl.endpoint == "billing");
  CHECK(cl.queue == "billing_error");
  CHECK_FALSE(cl.json);
  CHECK(cl.limit == 0);
  CHECK_FALSE(cl.url);
  CHECK_FALSE(cl.url_file);
}

TEST_CASE("the queue read is ENDPOINT_error unless --queue names another") {
  CHECK(parsed({"groups", "billing", "--queue", "billing_skipped"}).queue == "billing_skipped");
  CHECK(parsed({"--queue=legacy.errors", "list", "billing"}).queue == "legacy.errors");
}

TEST_CASE("options may come anywhere on the line, as --name value or --name=value") {
  auto cl = parsed({"--json", "show", "--url=amqp://u:p@h/", "billing", "--limit", "50", "id-1"});
  CHECK(cl.command == command_kind::show);
  CHECK(cl.json);
  CHECK(cl.url == std::optional<std::string>("amqp://u:p@h/"));
  CHECK(cl.limit == 50);
  CHECK(cl.message_id == "id-1");
}

TEST_CASE("replay selects message ids, a group, a message type or every message") {
  auto ids = parsed({"replay", "billing", "a", "b"});
  REQUIRE(ids.selection);
  REQUIRE(std::holds_alternative<by_ids>(*ids.selection));
  CHECK(std::get<by_ids>(*ids.selection).ids == std::vector<std::string>{"a", "b"});

  auto group = parsed({"replay", "billing", "--exception-type", "std::out_of_range",
                       "--message-type", "order_placed"});
  REQUIRE(std::holds_alternative<by_group>(*group.selection));
  CHECK(std::get<by_group>(*group.selection).exception_type == std::optional<std::string>("std::out_of_range"));
  CHECK(std::get<by_group>(*group.selection).message_type == std::optional<std::string>("order_placed"));

  auto type_only = parsed({"purge", "billing", "--message-type", "order_placed"});
  REQUIRE(std::holds_alternative<by_group>(*type_only.selection));
  CHECK_FALSE(std::get<by_group>(*type_only.selection).exception_type);

  auto all = parsed({"purge", "billing", "--all"});
  CHECK(all.command == command_kind::purge);
  CHECK(std::holds_alternative<every_message>(*all.selection));
}

TEST_CASE("replay and purge refuse to run without a selection or with two") {
  CHECK_THAT(refusal({"replay", "billing"}), Catch::Contains("replay needs a selection"));
  CHECK_THAT(refusal({"purge", "billing"}), Catch::Contains("purge needs a selection"));
  CHECK_THAT(refusal({"replay", "billing", "id-1", "--all"}), Catch::Contains("one selection"));
  CHECK_THAT(refusal({"purge", "billing", "--all", "--exception-type", "x"}),
             Catch::Contains("one selection"));
}

TEST_CASE("selections belong to replay and purge only") {
  CHECK_THAT(refusal({"list", "billing", "--all"}), Catch::Contains("not for list"));
  CHECK_THAT(refusal({"groups", "billing", "--exception-type", "x"}), Catch::Contains("not for groups"));
}

TEST_CASE("show needs exactly one message id after the endpoint") {
  CHECK_THAT(refusal({"show", "billing"}), Catch::Contains("exactly one MESSAGE_ID"));
  CHECK_THAT(refusal({"show", "billing", "a", "b"}), Catch::Contains("exactly one MESSAGE_ID"));
}

TEST_CASE("every mistake on the command line is named at once") {
  auto why = refusal({"list", "--limit", "many", "--colour", "--url", "a", "--url-file", "b"});
  CHECK_THAT(why, Catch::Contains("needs an ENDPOINT"));
  CHECK_THAT(why, Catch::Contains("--limit: 'many' is not a count"));
  CHECK_THAT(why, Catch::Contains("unknown option '--colour'"));
  CHECK_THAT(why, Catch::Contains("--url and --url-file both given"));
}

TEST_CASE("an unknown command, a missing command and a missing option value are refused") {
  CHECK_THAT(refusal({"requeue", "billing"}), Catch::Contains("unknown command 'requeue'"));
  CHECK_THAT(refusal({}), Catch::Contains("no command given"));
  CHECK_THAT(refusal({"list", "billing", "--queue"}), Catch::Contains("--queue needs a value"));
  CHECK_THAT(refusal({"list", "billing", "--json=yes"}), Catch::Contains("--json takes no value"));
  CHECK_THAT(refusal({"list", "billing", "extra"}), Catch::Contains("unexpected 'extra'"));
}

TEST_CASE("a double dash ends the options, so that a message id may start with a dash") {
  auto cl = parsed({"replay", "billing", "--", "-odd-id"});
  CHECK(std::get<by_ids>(*cl.selection).ids == std::vector<std::string>{"-odd-id"});
}

TEST_CASE("help, --help and -h ask for the usage text, which names every command and exit code") {
  CHECK(parsed({"--help"}).command == command_kind::help);
  CHECK(parsed({"list", "-h"}).command == command_kind::help);
  CHECK(parsed({"help"}).command == command_kind::help);
  auto text = usage_text();
  for (auto word : {"list", "groups", "show", "replay", "purge", "outbox", "--sqlite",
                    "--postgres", "--json", "BUS_RABBITMQ_URL",
                    "0 done", "1 nothing matched", "2 usage", "3 broker unreachable",
                    "4 no such queue", "5 the broker refused"})
    CHECK_THAT(text, Catch::Contains(word));
}

TEST_CASE("move-leader takes one broker queue and a vhost, not an endpoint's options") {
  auto cl = parsed({"move-leader", "bus.delay.1000ms.28.level.03"});
  CHECK(cl.command == command_kind::move_leader);
  CHECK(cl.queue == "bus.delay.1000ms.28.level.03");
  CHECK(cl.vhost == "/");
  CHECK(parsed({"move-leader", "q", "--vhost", "orders", "--json"}).vhost == "orders");
  CHECK_THAT(refusal({"move-leader"}), Catch::Contains("exactly one QUEUE"));
  CHECK_THAT(refusal({"move-leader", "a", "b"}), Catch::Contains("exactly one QUEUE"));
  CHECK_THAT(refusal({"move-leader", "q", "--limit", "3"}),
             Catch::Contains("--limit does not apply to move-leader"));
  CHECK_THAT(refusal({"list", "billing", "--vhost", "x"}),
             Catch::Contains("--vhost applies to move-leader only"));
}

TEST_CASE("outbox reads the store --sqlite or --postgres names, with no endpoint and no broker") {
  auto sqlite = parsed({"outbox", "--sqlite", "/var/lib/orders/bus.db"});
  CHECK(sqlite.command == command_kind::outbox);
  CHECK(sqlite.sqlite == std::optional<std::string>("/var/lib/orders/bus.db"));
  CHECK_FALSE(sqlite.postgres);
  CHECK(sqlite.endpoint.empty());
  CHECK(sqlite.queue.empty());
  CHECK_FALSE(sqlite.url);
  CHECK_FALSE(sqlite.json);

  auto postgres = parsed({"--json", "outbox", "--postgres=host=db dbname=orders"});
  CHECK(postgres.postgres == std::optional<std::string>("host=db dbname=orders"));
  CHECK_FALSE(postgres.sqlite);
  CHECK(postgres.json);
}

TEST_CASE("outbox needs exactly one store, and refuses an endpoint and the broker's options") {
  CHECK_THAT(refusal({"outbox"}), Catch::Contains("outbox needs its store: --sqlite FILE or "
                                                  "--postgres CONNINFO"));
  CHECK_THAT(refusal({"outbox", "--sqlite", "a.db", "--postgres", "host=db"}),
             Catch::Contains("--sqlite and --postgres both given"));
  CHECK_THAT(refusal({"outbox", "--sqlite="}), Catch::Contains("--sqlite needs the path"));
  CHECK_THAT(refusal({"outbox", "--postgres", ""}),
             Catch::Contains("--postgres needs a connection string"));
  CHECK_THAT(refusal({"outbox", "--sqlite"}), Catch::Contains("--sqlite needs a value"));
  CHECK_THAT(refusal({"outbox", "billing", "--sqlite", "a.db"}),
             Catch::Contains("outbox takes no ENDPOINT"));

  auto why = refusal({"outbox", "--sqlite", "a.db", "--url", "amqp://h/", "--limit", "3", "--all"});
  CHECK_THAT(why, Catch::Contains("--url does not apply to outbox"));
  CHECK_THAT(why, Catch::Contains("--limit does not apply to outbox"));
  CHECK_THAT(why, Catch::Contains("--all does not apply to outbox"));
}

TEST_CASE("the store options --sqlite and --postgres belong to outbox only") {
  CHECK_THAT(refusal({"list", "billing", "--sqlite", "a.db"}),
             Catch::Contains("--sqlite and --postgres name the store of outbox, not of list"));
  CHECK_THAT(refusal({"purge", "billing", "--all", "--postgres", "host=db"}),
             Catch::Contains("not of purge"));
  CHECK_THAT(refusal({"move-leader", "q", "--sqlite", "a.db"}),
             Catch::Contains("--sqlite does not apply to move-leader"));
}

TEST_CASE("replay --to names the queue the messages go to instead of their original one") {
  CHECK(parsed({"replay", "audit-reader", "--all", "--to", "audit.fixes"}).replay_to
        == std::optional<std::string>("audit.fixes"));
  CHECK_FALSE(parsed({"replay", "audit-reader", "--all"}).replay_to);
  CHECK_THAT(refusal({"purge", "audit-reader", "--all", "--to", "x"}),
             Catch::Contains("--to names where replay sends messages, not purge"));
  CHECK_THAT(refusal({"replay", "audit-reader", "--all", "--to="}),
             Catch::Contains("--to needs a queue name"));
  CHECK_THAT(refusal({"replay", "audit-reader", "--all", "--to", "audit-reader_error"}),
             Catch::Contains("the queue the messages are replayed from"));
}
