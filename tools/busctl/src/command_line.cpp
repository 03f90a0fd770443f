#include "command_line.hpp"

#include <charconv>
#include <map>

namespace bus::ctl {

namespace {

const std::map<std::string, command_kind>& commands() {
  static const std::map<std::string, command_kind> names{
    {"help", command_kind::help},     {"list", command_kind::list},
    {"groups", command_kind::groups}, {"show", command_kind::show},
    {"replay", command_kind::replay}, {"purge", command_kind::purge},
    {"move-leader", command_kind::move_leader}, {"outbox", command_kind::outbox}};
  return names;
}

bool takes_selection(command_kind c) {
  return c == command_kind::replay || c == command_kind::purge;
}

// The options that take a value; each may also be written --name=value.
bool takes_value(const std::string& name) {
  return name == "--url" || name == "--url-file" || name == "--queue" || name == "--limit"
         || name == "--exception-type" || name == "--message-type" || name == "--vhost"
         || name == "--sqlite" || name == "--postgres" || name == "--to";
}

struct raw_options {
  std::map<std::string, std::string> values; // the last one given wins
  bool json = false;
  bool all = false;
  bool help = false;
  std::vector<std::string> positional;
};

void read_tokens(const std::vector<std::string>& args, raw_options& raw,
                 std::vector<std::string>& mistakes) {
  bool options_done = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if (options_done || a.size() < 2 || a[0] != '-') {
      raw.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    auto eq = a.find('=');
    auto name = a.substr(0, eq);
    if (takes_value(name)) {
      if (eq != std::string::npos) {
        raw.values[name] = a.substr(eq + 1);
      } else if (i + 1 < args.size()) {
        raw.values[name] = args[++i];
      } else {
        mistakes.push_back(name + " needs a value");
      }
    } else if (eq != std::string::npos) {
      mistakes.push_back(name + " takes no value");
    } else if (a == "--json") {
      raw.json = true;
    } else if (a == "--all") {
      raw.all = true;
    } else if (a == "-h" || a == "--help") {
      raw.help = true;
    } else {
      mistakes.push_back("unknown option '" + a + "'");
    }
  }
}

std::optional<std::string> take(raw_options& raw, const std::string& name) {
  auto it = raw.values.find(name);
  if (it == raw.values.end())
    return std::nullopt;
  auto v = it->second;
  raw.values.erase(it);
  return v;
}

// outbox reads a database, not a broker: no endpoint, no queue, no URL.
void parse_outbox(raw_options& raw, const std::vector<std::string>& rest, command_line& out,
                  std::vector<std::string>& mistakes) {
  if (!rest.empty())
    mistakes.push_back("outbox takes no ENDPOINT (it shows every endpoint of the store); "
                       "unexpected '"
                       + rest[0] + "'");
  out.sqlite = take(raw, "--sqlite");
  out.postgres = take(raw, "--postgres");
  if (out.sqlite && out.postgres)
    mistakes.push_back("--sqlite and --postgres both given; outbox reads one store");
  else if (!out.sqlite && !out.postgres)
    mistakes.push_back("outbox needs its store: --sqlite FILE or --postgres CONNINFO");
  else if (out.sqlite && out.sqlite->empty())
    mistakes.push_back("--sqlite needs the path of the store's file");
  else if (out.postgres && out.postgres->empty())
    mistakes.push_back("--postgres needs a connection string (\"host=... dbname=...\")");
  out.json = raw.json;
  for (const auto& [option, value] : raw.values)
    mistakes.push_back(option + " does not apply to outbox (only --sqlite, --postgres and --json)");
  if (raw.all)
    mistakes.push_back("--all does not apply to outbox");
}

std::string joined(const std::vector<std::string>& mistakes) {
  std::string out;
  for (const auto& m : mistakes)
    out += (out.empty() ? "" : "; ") + m;
  return out;
}

} // namespace

result<command_line> parse_command_line(const std::vector<std::string>& args) {
  std::vector<std::string> mistakes;
  raw_options raw;
  read_tokens(args, raw, mistakes);
  command_line out;

  if (raw.help || raw.positional.empty()) {
    if (!mistakes.empty())
      return error{errc::invalid_configuration, joined(mistakes)};
    if (raw.positional.empty() && !raw.help)
      return error{errc::invalid_configuration, "no command given (list, groups, show, replay, "
                                                "purge, move-leader, outbox; busctl --help)"};
    out.command = command_kind::help;
    return out;
  }

  auto found = commands().find(raw.positional[0]);
  if (found == commands().end())
    return error{errc::invalid_configuration,
                 joined(mistakes) + (mistakes.empty() ? "" : "; ") + "unknown command '"
                   + raw.positional[0]
                   + "' (list, groups, show, replay, purge, move-leader, outbox; busctl --help)"};
  out.command = found->second;
  if (out.command == command_kind::help)
    return out;

  std::vector<std::string> rest(raw.positional.begin() + 1, raw.positional.end());
  const auto& name = raw.positional[0];
  if (out.command == command_kind::move_leader) {
    // A broker queue, not an endpoint; rabbitmqctl, not AMQP.
    if (rest.size() != 1 || rest[0].empty())
      mistakes.push_back("move-leader needs exactly one QUEUE (a delay level, say)");
    else
      out.queue = rest[0];
    if (auto v = take(raw, "--vhost"))
      out.vhost = *v;
    out.json = raw.json;
    for (const auto& [option, value] : raw.values)
      mistakes.push_back(option + " does not apply to move-leader (only --vhost and --json)");
    if (raw.all)
      mistakes.push_back("--all does not apply to move-leader");
    if (!mistakes.empty())
      return error{errc::invalid_configuration, joined(mistakes)};
    return out;
  }
  if (out.command == command_kind::outbox) {
    parse_outbox(raw, rest, out, mistakes);
    if (!mistakes.empty())
      return error{errc::invalid_configuration, joined(mistakes)};
    return out;
  }
  if (auto v = take(raw, "--vhost"))
    mistakes.push_back("--vhost applies to move-leader only (the URL names the vhost)");
  auto sqlite = take(raw, "--sqlite");
  auto postgres = take(raw, "--postgres");
  if (sqlite || postgres)
    mistakes.push_back("--sqlite and --postgres name the store of outbox, not of " + name);
  if (rest.empty() || rest[0].empty()) {
    mistakes.push_back(name + " needs an ENDPOINT");
  } else {
    out.endpoint = rest[0];
    rest.erase(rest.begin());
  }

  out.url = take(raw, "--url");
  out.url_file = take(raw, "--url-file");
  if (out.url && out.url_file)
    mistakes.push_back("--url and --url-file both given; use one");
  out.json = raw.json;
  if (auto q = take(raw, "--queue")) {
    if (q->empty())
      mistakes.push_back("--queue needs a queue name");
    out.queue = *q;
  } else if (!out.endpoint.empty()) {
    out.queue = out.endpoint + "_error";
  }
  if (auto limit = take(raw, "--limit")) {
    unsigned long long n = 0;
    auto [end, ec] = std::from_chars(limit->data(), limit->data() + limit->size(), n);
    if (ec != std::errc() || end != limit->data() + limit->size() || limit->empty())
      mistakes.push_back("--limit: '" + *limit + "' is not a count (0 or more)");
    else
      out.limit = static_cast<std::size_t>(n);
  }

  if (auto to = take(raw, "--to")) {
    if (out.command != command_kind::replay)
      mistakes.push_back("--to names where replay sends messages, not " + name);
    else if (to->empty())
      mistakes.push_back("--to needs a queue name");
    else if (*to == out.queue)
      mistakes.push_back("--to names '" + *to + "', the queue the messages are replayed from");
    else
      out.replay_to = *to;
  }

  auto exception_type = take(raw, "--exception-type");
  auto message_type = take(raw, "--message-type");
  bool group = exception_type || message_type;

  if (takes_selection(out.command)) {
    int ways = (rest.empty() ? 0 : 1) + (group ? 1 : 0) + (raw.all ? 1 : 0);
    if (ways == 0)
      mistakes.push_back(name
                         + " needs a selection: MESSAGE_ID..., --exception-type T [--message-type M],"
                           " or --all");
    else if (ways > 1)
      mistakes.push_back(name + " takes one selection: message ids, a group or --all, not several");
    else if (!rest.empty())
      out.selection = by_ids{rest};
    else if (group)
      out.selection = by_group{exception_type, message_type};
    else
      out.selection = every_message{};
  } else {
    if (group || raw.all)
      mistakes.push_back("--exception-type, --message-type and --all select messages for replay "
                         "or purge, not for "
                         + name);
    if (out.command == command_kind::show) {
      if (rest.size() != 1 || rest[0].empty())
        mistakes.push_back("show needs exactly one MESSAGE_ID after the endpoint");
      else
        out.message_id = rest[0];
    } else if (!rest.empty()) {
      mistakes.push_back(name + " takes only an ENDPOINT; unexpected '" + rest[0] + "'");
    }
  }

  if (!mistakes.empty())
    return error{errc::invalid_configuration, joined(mistakes)};
  return out;
}

std::string usage_text() {
  return R"(busctl: the error queue of a bus endpoint on RabbitMQ, and the backlog of an outbox store

usage:
  busctl list   ENDPOINT                 the messages on the error queue, oldest first
  busctl groups ENDPOINT                 the same, counted by exception type and message type
  busctl show   ENDPOINT MESSAGE_ID      one message: its headers, properties and body
  busctl replay ENDPOINT SELECTION       back to their original queue, fault headers removed
                                         (--to QUEUE: to that queue instead; a message read
                                         from a stream goes back only this way)
  busctl purge  ENDPOINT SELECTION       delete for good
  busctl move-leader QUEUE [--vhost V]   move a quorum queue's leadership to another member:
                                         the remedy for a stranded delay level (its dead
                                         letters move on); runs rabbitmqctl (the program in
                                         $BUS_RABBITMQ_CTL if set) on this machine
  busctl outbox --sqlite FILE            what an outbox store still has to send, per endpoint:
  busctl outbox --postgres CONNINFO      messages handled whose stored sends are not all out;
                                         reads the database only (no broker, no URL)

SELECTION is one of:
  MESSAGE_ID...                          these messages
  --exception-type T [--message-type M]  one group (names as `groups` prints them)
  --message-type M                       every message of one type
  --all                                  every message on the queue

options (anywhere on the line):
  --url URL         amqp[s]://user:password@host:port/vhost
  --url-file PATH   the URL on the first line of a file (keeps the password out of `ps`)
                    without either: the environment variable BUS_RABBITMQ_URL
  --queue QUEUE     read this queue instead of ENDPOINT_error (a skipped queue, say)
  --limit N         look at no more than N messages from the head of the queue
  --to QUEUE        replay: send the messages to QUEUE, not to their original queue
  --sqlite FILE     outbox: the SQLite store's file (never created: it must exist)
  --postgres CONNINFO
                    outbox: the PostgreSQL store, a libpq connection string or URI
                    ("host=db dbname=orders"; PGPASSWORD and ~/.pgpass keep the password out of `ps`)
  --json            one JSON document on standard output, for scripts
  -h, --help        this text

exit codes: 0 done, 1 nothing matched (unknown id, empty selection),
2 usage or settings, 3 broker unreachable or login refused (outbox: the store
cannot be opened or read), 4 no such queue, 5 the broker refused part of the work
(docs/busctl.md)
)";
}

} // namespace bus::ctl
