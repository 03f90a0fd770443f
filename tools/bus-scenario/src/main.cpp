// bus-scenario: runs a topology described in a JSON file and prints what
// happened to every message. docs/scenarios.md describes the file and the
// output.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "exception_types.hpp"
#include "explain_run.hpp"
#include "run.hpp"
#include "scenario.hpp"

namespace {

using namespace bus::scenario;

constexpr const char* usage =
  "usage: bus-scenario [options] FILE.json\n"
  "       bus-scenario --explain ENDPOINT --exception SPEC [--message TYPE]\n"
  "                    [--svg OUT.svg] [--json] FILE.json\n"
  "\n"
  "Runs the scenario in FILE.json and prints one JSON object per line for each\n"
  "event, then a summary object. Virtual time by default: hours of redelivery\n"
  "take milliseconds and the output is the same on every run.\n"
  "\n"
  "options:\n"
  "  --real-time           run on the wall clock, in an actor system with threads\n"
  "  --transport NAME      in-memory (default) or rabbitmq (implies --real-time)\n"
  "  --url URL             the broker, for --transport rabbitmq (amqp://...)\n"
  "  --timeout SECONDS     real time: stop waiting for messages to end (default 60)\n"
  "  --log                 print the bus's log lines to standard error\n"
  "  --timeline OUT.svg    also draw the run: a lane per message and endpoint\n"
  "  --list-exceptions     print the exception types a scenario can name\n"
  "  --help                print this text\n"
  "\n"
  "  --explain ENDPOINT    run nothing: print what ENDPOINT's policy does with the\n"
  "                        exception, attempt by attempt (the rule and why, each\n"
  "                        delay, where it ends), the bus built as a run builds it\n"
  "  --exception SPEC      a type name (http_error) or a \"throw\" step as in a\n"
  "                        script: '{\"throw\": \"http_error\", \"fields\": {\"status\": 429}}'\n"
  "  --message TYPE        the handler of that message type (needed when the\n"
  "                        endpoint has more than one)\n"
  "  --svg OUT.svg         also draw the plan as a timeline\n"
  "  --json                the explanation as JSON\n"
  "\n"
  "exit codes: 0 ran (or explained), 1 the run failed (did not start, timed out;\n"
  "--svg not written), 2 invalid arguments, file or bus configuration, 3 it ran\n"
  "and an expectation (\"expect\") did not hold\n";

void list_exceptions(std::ostream& out) {
  for (const auto& t : exception_types()) {
    out << t.name << (t.base.empty() ? "" : " : " + t.base)
        << (t.throwable ? "" : " (match only)") << "\n    " << t.meaning << '\n';
    for (const auto& f : t.fields)
      out << "    " << f.name << " (" << bus::samples::to_string(f.kind) << ", default "
          << bus::samples::to_string(f.default_value) << "): " << f.meaning << '\n';
  }
}

struct arguments {
  run_options options;
  std::optional<explain_request> explain; // --explain
  std::string file;
  bool help = false;
  bool list = false;
};

// Parses the command line; a mistake is reported on `err`.
std::optional<arguments> parse_arguments(int argc, char** argv, std::ostream& err) {
  arguments a;
  explain_request explain;
  bool explaining = false;      // --explain
  bool explain_options = false; // one of --exception, --message, --svg, --json
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 < argc)
        return std::string(argv[++i]);
      err << "bus-scenario: " << arg << " needs a value\n";
      return std::nullopt;
    };
    if (arg == "--help" || arg == "-h") {
      a.help = true;
    } else if (arg == "--list-exceptions") {
      a.list = true;
    } else if (arg == "--real-time") {
      a.options.real_time = true;
    } else if (arg == "--log") {
      a.options.show_logs = true;
    } else if (arg == "--timeline") {
      auto v = value();
      if (!v)
        return std::nullopt;
      a.options.timeline_file = *v;
    } else if (arg == "--transport") {
      auto v = value();
      if (!v)
        return std::nullopt;
      if (*v == "in-memory") {
        a.options.transport = transport_kind::in_memory;
      } else if (*v == "rabbitmq") {
        a.options.transport = transport_kind::rabbitmq;
      } else {
        err << "bus-scenario: unknown transport \"" << *v << "\" (in-memory or rabbitmq)\n";
        return std::nullopt;
      }
    } else if (arg == "--url") {
      auto v = value();
      if (!v)
        return std::nullopt;
      a.options.url = *v;
    } else if (arg == "--timeout") {
      auto v = value();
      if (!v)
        return std::nullopt;
      auto seconds = std::strtol(v->c_str(), nullptr, 10);
      if (seconds <= 0 || std::to_string(seconds) != *v) {
        err << "bus-scenario: --timeout takes a positive number of seconds\n";
        return std::nullopt;
      }
      a.options.timeout = std::chrono::seconds(seconds);
    } else if (arg == "--explain" || arg == "--exception" || arg == "--message"
               || arg == "--svg") {
      auto v = value();
      if (!v)
        return std::nullopt;
      std::string* field = arg == "--explain"     ? &explain.endpoint
                           : arg == "--exception" ? &explain.exception
                           : arg == "--message"   ? &explain.message_type
                                                  : &explain.svg_file.emplace();
      *field = *v;
      explaining = explaining || arg == "--explain";
      explain_options = explain_options || arg != "--explain";
    } else if (arg == "--json") {
      explain.json = explain_options = true;
    } else if (arg.rfind("--", 0) == 0) {
      err << "bus-scenario: unknown option " << arg << "\n\n" << usage;
      return std::nullopt;
    } else if (a.file.empty()) {
      a.file = arg;
    } else {
      err << "bus-scenario: one scenario file at a time (got " << a.file << " and " << arg
          << ")\n";
      return std::nullopt;
    }
  }
  if (a.help || a.list)
    return a;
  if (a.file.empty()) {
    err << usage;
    return std::nullopt;
  }
  if (explaining) {
    if (explain.exception.empty()) {
      err << "bus-scenario: --explain needs --exception TYPE (or a \"throw\" step as JSON)\n";
      return std::nullopt;
    }
    if (a.options.real_time || a.options.transport != transport_kind::in_memory
        || a.options.timeline_file) {
      err << "bus-scenario: --explain runs nothing: no --real-time, --transport or --timeline\n";
      return std::nullopt;
    }
    a.explain = std::move(explain);
    return a;
  }
  if (explain_options) {
    err << "bus-scenario: --exception, --message, --svg and --json go with --explain\n";
    return std::nullopt;
  }
  if (a.options.transport == transport_kind::rabbitmq) {
    // A broker keeps its own time: there is no virtual time on it.
    a.options.real_time = true;
    if (a.options.url.empty()) {
      err << "bus-scenario: --transport rabbitmq needs --url amqp://...\n";
      return std::nullopt;
    }
  } else if (!a.options.url.empty()) {
    err << "bus-scenario: --url is for --transport rabbitmq\n";
    return std::nullopt;
  }
  return a;
}

// The document in `file`, or nothing after reporting why not.
std::optional<nlohmann::json> read_json(const std::string& file, std::ostream& err) {
  std::ifstream in(file);
  if (!in) {
    err << file << ": cannot read: " << std::strerror(errno) << '\n';
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    // what() is "[json.exception.parse_error.101] parse error at line 3, column 5: ..."
    std::string what = e.what();
    if (auto close = what.find("] "); what.rfind("[json.exception", 0) == 0 && close != std::string::npos)
      what = what.substr(close + 2);
    err << file << ": invalid JSON: " << what << '\n';
    return std::nullopt;
  }
}

} // namespace

int main(int argc, char** argv) {
  auto args = parse_arguments(argc, argv, std::cerr);
  if (!args)
    return exit_invalid;
  if (args->help) {
    std::cout << usage;
    return exit_ok;
  }
  if (args->list) {
    list_exceptions(std::cout);
    return exit_ok;
  }
  auto document = read_json(args->file, std::cerr);
  if (!document)
    return exit_invalid;
  diagnostics d;
  auto s = parse_scenario(*document, d);
  if (!s) {
    for (const auto& e : d.errors())
      std::cerr << args->file << ": " << e << '\n';
    return exit_invalid;
  }
  if (args->explain)
    return explain_on_scenario(*s, *args->explain, args->file, std::cout, std::cerr);
  return args->options.real_time
           ? run_on_real_time(*s, args->options, args->file, std::cout, std::cerr)
           : run_on_virtual_time(*s, args->options, args->file, std::cout, std::cerr);
}
