#include "commands.hpp"

#include <algorithm>
#include <chrono>
#include <ostream>

#include <nlohmann/json.hpp>

#include "command_line.hpp"
#include "connection_settings.hpp"
#include "error_queue_admin.hpp"
#include "exit_codes.hpp"
#include "leader_move.hpp"
#include "outbox_store.hpp"
#include "render.hpp"

namespace bus::ctl {

namespace {

// Ends a command that failed: the reason on `err`, and with --json an error
// document on `out`, so a script always gets one document.
int failure(exit_code code, const std::string& message, bool json, std::ostream& out,
            std::ostream& err) {
  err << "busctl: " << message << "\n";
  if (json)
    out << to_text(error_json(code, message));
  return to_int(code);
}

exit_code code_of_operation_error(const error& e) {
  return e.code == errc::unknown_queue ? exit_code::no_such_queue : exit_code::failed;
}

void print_lines(std::ostream& err, const std::vector<std::string>& lines) {
  for (const auto& line : lines)
    err << "busctl: " << line << "\n";
}

int run_command(const command_line& cl, error_queue_admin& admin, std::ostream& out,
                std::ostream& err) {
  auto op_failure = [&](const error& e) {
    return failure(code_of_operation_error(e), e.message, cl.json, out, err);
  };
  switch (cl.command) {
    case command_kind::list:
    case command_kind::groups: {
      auto listing = admin.peek(cl.queue, cl.limit);
      if (!listing)
        return op_failure(listing.error());
      print_lines(err, notes(listing->queue, listing->consumers, listing->truncated));
      bool list = cl.command == command_kind::list;
      if (cl.json)
        out << to_text(list ? list_json(*listing) : groups_json(*listing));
      else
        out << (list ? list_text(*listing) : groups_text(*listing));
      return to_int(exit_code::ok);
    }
    case command_kind::show: {
      auto listing = admin.peek(cl.queue, cl.limit);
      if (!listing)
        return op_failure(listing.error());
      const auto* m = find_by_id(listing->messages, cl.message_id);
      if (m == nullptr) {
        print_lines(err, notes(listing->queue, listing->consumers, listing->truncated));
        return failure(exit_code::nothing_matched,
                       "no message '" + cl.message_id + "' on '" + cl.queue
                         + "' (busctl list shows the ids)",
                       cl.json, out, err);
      }
      out << (cl.json ? to_text(show_json(cl.queue, *m)) : show_text(cl.queue, *m));
      return to_int(exit_code::ok);
    }
    case command_kind::replay: {
      auto report =
        admin.replay(cl.queue, cl.limit, *cl.selection, cl.endpoint,
                     std::chrono::system_clock::now(), cl.replay_to);
      if (!report)
        return op_failure(report.error());
      print_lines(err, problem_lines(*report));
      auto code = exit_code_of(*report);
      if (report->replayed.empty() && report->failed.empty() && report->unknown_ids.empty())
        err << "busctl: the selection matched no message on '" << report->queue << "'\n";
      out << (cl.json ? to_text(replay_json(*report)) : replay_text(*report));
      return to_int(code);
    }
    case command_kind::purge: {
      auto report = admin.purge(cl.queue, cl.limit, *cl.selection);
      if (!report)
        return op_failure(report.error());
      print_lines(err, problem_lines(*report));
      auto code = exit_code_of(*report);
      if (report->purged == 0 && report->unknown_ids.empty())
        err << "busctl: the selection matched no message on '" << report->queue << "'\n";
      out << (cl.json ? to_text(purge_json(*report)) : purge_text(*report));
      return to_int(code);
    }
    case command_kind::help:
    case command_kind::move_leader: // run before a connection is made
    case command_kind::outbox:
      break;
  }
  out << usage_text();
  return to_int(exit_code::ok);
}

int run_move_leader(const command_line& cl, const char* env_ctl, std::ostream& out,
                    std::ostream& err) {
  std::string program = env_ctl != nullptr && *env_ctl != '\0' ? env_ctl : "rabbitmqctl";
  auto moved = move_leader(program, cl.vhost, cl.queue);
  if (!moved)
    return failure(code_of_operation_error(moved.error()), moved.error().message, cl.json, out,
                   err);
  if (cl.json)
    out << nlohmann::json{{"queue", moved->queue}, {"from", moved->from}, {"to", moved->to}}.dump(2)
        << "\n";
  else
    out << "moved the leadership of '" << moved->queue << "' from " << moved->from << " to "
        << moved->to << "\n";
  return to_int(exit_code::ok);
}

// Reads the database only: it runs without a broker or BUS_RABBITMQ_URL.
int run_outbox(const command_line& cl, std::ostream& out, std::ostream& err) {
  auto report = read_outbox(cl);
  if (!report) {
    // A connection string that does not parse is a setting, like a bad URL.
    auto code = report.error().code == errc::invalid_configuration ? exit_code::usage
                                                                    : exit_code::unreachable;
    return failure(code, report.error().message, cl.json, out, err);
  }
  auto now = std::chrono::system_clock::now();
  out << (cl.json ? to_text(outbox_json(*report, now)) : outbox_text(*report, now));
  return to_int(exit_code::ok);
}

} // namespace

int run(const std::vector<std::string>& args, const char* env_url, std::ostream& out,
        std::ostream& err, const char* env_ctl) {
  // Known before parsing, so that even a usage error is a JSON document.
  bool json = std::find(args.begin(), args.end(), "--json") != args.end();
  auto cl = parse_command_line(args);
  if (!cl) {
    auto why = cl.error().message;
    if (why.find("busctl --help") == std::string::npos)
      why += " (busctl --help)";
    return failure(exit_code::usage, why, json, out, err);
  }
  if (cl->command == command_kind::help) {
    out << usage_text();
    return to_int(exit_code::ok);
  }
  if (cl->command == command_kind::move_leader)
    return run_move_leader(*cl, env_ctl, out, err);
  if (cl->command == command_kind::outbox)
    return run_outbox(*cl, out, err);
  auto settings = resolve_settings(*cl, env_url);
  if (!settings)
    return failure(exit_code::usage, settings.error().message, cl->json, out, err);
  auto admin = error_queue_admin::connect(*settings);
  if (!admin)
    return failure(exit_code::unreachable, admin.error().message, cl->json, out, err);
  return run_command(*cl, **admin, out, err);
}

} // namespace bus::ctl
