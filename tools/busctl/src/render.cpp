#include "render.hpp"

#include "text_table.hpp"

namespace bus::ctl {

namespace {

using json = nlohmann::json;

json optional_number(const std::optional<std::int64_t>& n) {
  return n ? json(*n) : json(nullptr);
}

std::string number_or_dash(const std::optional<std::int64_t>& n) {
  return n ? std::to_string(*n) : std::string("-");
}

std::string or_dash(const std::string& text) {
  return text.empty() ? std::string("-") : text;
}

json fault_json(const fault_summary& f) {
  return json{{"exception_type", f.exception_type},
              {"exception_message", f.exception_message},
              {"reason", f.reason},
              {"failed_at", f.at},
              {"endpoint", f.endpoint},
              {"original_address", f.original_address},
              {"immediate_retries", optional_number(f.immediate_retries)},
              {"delivery_count", optional_number(f.delivery_count)},
              {"replay_count", optional_number(f.replay_count)}};
}

json message_summary_json(const queued_message& m) {
  auto f = fault_of(m);
  return json{{"position", m.position},
              {"id", m.id},
              {"message_type", message_type_of(m)},
              {"exception_type", f.exception_type},
              {"exception_message", f.exception_message},
              {"reason", f.reason},
              {"failed_at", f.at},
              {"original_address", f.original_address},
              {"immediate_retries", optional_number(f.immediate_retries)},
              {"delivery_count", optional_number(f.delivery_count)},
              {"replay_count", optional_number(f.replay_count)},
              {"redelivered", m.redelivered}};
}

json outcomes_json(const std::vector<replayed_message>& list, bool with_problem) {
  auto out = json::array();
  for (const auto& r : list) {
    json item{{"id", r.id}, {"destination", r.destination}};
    if (with_problem)
      item["problem"] = r.problem;
    out.push_back(std::move(item));
  }
  return out;
}

// A header value as one line of text: strings as they are, anything else
// (numbers, the broker's x-death tables) as compact JSON.
std::string value_text(const json& v) {
  if (v.is_string())
    return v.get<std::string>();
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace

// -- JSON ----------------------------------------------------------------------

std::string to_text(const nlohmann::json& doc) {
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

json list_json(const queue_listing& l) {
  auto messages = json::array();
  for (const auto& m : l.messages)
    messages.push_back(message_summary_json(m));
  return json{{"queue", l.queue},
              {"count", l.messages.size()},
              {"truncated", l.truncated},
              {"consumers", l.consumers},
              {"messages", std::move(messages)}};
}

json groups_json(const queue_listing& l) {
  auto groups = json::array();
  for (const auto& g : group_messages(l.messages))
    groups.push_back(json{{"exception_type", g.exception_type},
                          {"message_type", g.message_type},
                          {"count", g.count},
                          {"first_failure_at", g.first_failure_at},
                          {"last_failure_at", g.last_failure_at},
                          {"ids", g.ids}});
  return json{{"queue", l.queue},
              {"count", l.messages.size()},
              {"truncated", l.truncated},
              {"consumers", l.consumers},
              {"groups", std::move(groups)}};
}

json show_json(const std::string& queue, const queued_message& m) {
  // An array keeps the wire order, and a header the broker sent twice.
  auto headers = json::array();
  for (const auto& h : m.headers)
    headers.push_back(json{{"name", h.name}, {"value", h.value}});
  return json{{"queue", queue},
              {"position", m.position},
              {"id", m.id},
              {"message_type", message_type_of(m)},
              {"redelivered", m.redelivered},
              {"fault", fault_json(fault_of(m))},
              {"headers", std::move(headers)},
              {"properties", m.properties},
              {"body", m.body}};
}

json replay_json(const replay_report& r) {
  return json{{"queue", r.queue},
              {"replayed", outcomes_json(r.replayed, false)},
              {"failed", outcomes_json(r.failed, true)},
              {"unknown_ids", r.unknown_ids},
              {"warning", r.warning},
              {"consumers", r.consumers},
              {"truncated", r.truncated}};
}

json purge_json(const purge_report& r) {
  return json{{"queue", r.queue},         {"purged", r.purged},
              {"ids", r.ids},             {"unknown_ids", r.unknown_ids},
              {"warning", r.warning},     {"consumers", r.consumers},
              {"truncated", r.truncated}};
}

json error_json(exit_code code, const std::string& message) {
  return json{{"error", json{{"exit_code", to_int(code)}, {"message", message}}}};
}

// -- text ----------------------------------------------------------------------

std::string list_text(const queue_listing& l) {
  std::string out = "queue '" + l.queue + "': " + plural(l.messages.size(), "message", "messages")
                    + (l.truncated ? " (the first ones only: --limit)" : "") + "\n";
  if (l.messages.empty())
    return out;
  std::vector<table_row> rows;
  for (const auto& m : l.messages) {
    auto f = fault_of(m);
    rows.push_back({std::to_string(m.position), or_dash(m.id), or_dash(message_type_of(m)),
                    or_dash(f.exception_type), or_dash(f.at), number_or_dash(f.immediate_retries),
                    number_or_dash(f.delivery_count), number_or_dash(f.replay_count)});
  }
  return out
         + render_table({"#", "MESSAGE ID", "MESSAGE TYPE", "EXCEPTION", "FAILED AT", "RETRIES",
                         "REDELIVERIES", "REPLAYS"},
                        rows);
}

std::string groups_text(const queue_listing& l) {
  auto groups = group_messages(l.messages);
  std::string out = "queue '" + l.queue + "': " + plural(l.messages.size(), "message", "messages")
                    + " in " + plural(groups.size(), "group", "groups")
                    + (l.truncated ? " (the first ones only: --limit)" : "") + "\n";
  if (groups.empty())
    return out;
  std::vector<table_row> rows;
  for (const auto& g : groups)
    rows.push_back({std::to_string(g.count), or_dash(g.exception_type), or_dash(g.message_type),
                    or_dash(g.first_failure_at), or_dash(g.last_failure_at)});
  return out
         + render_table({"COUNT", "EXCEPTION", "MESSAGE TYPE", "FIRST FAILURE", "LAST FAILURE"},
                        rows);
}

std::string show_text(const std::string& queue, const queued_message& m) {
  auto f = fault_of(m);
  std::string out = "message " + or_dash(m.id) + " (position " + std::to_string(m.position)
                    + " on '" + queue + "'" + (m.redelivered ? ", delivered before" : "") + ")\n";
  out += render_table({"", ""}, {{"  message type", or_dash(message_type_of(m))},
                                 {"  exception", or_dash(f.exception_type)},
                                 {"  message", or_dash(f.exception_message)},
                                 {"  reason", or_dash(f.reason)},
                                 {"  failed at", or_dash(f.at)},
                                 {"  endpoint", or_dash(f.endpoint)},
                                 {"  replays to", or_dash(f.original_address)}})
           .substr(1); // no header row: drop its (empty) line
  out += "headers:\n";
  std::vector<table_row> rows;
  for (const auto& h : m.headers)
    rows.push_back({"  " + h.name, value_text(h.value)});
  if (!rows.empty())
    out += render_table({"", ""}, rows).substr(1);
  out += "properties:\n";
  rows.clear();
  for (const auto& [name, value] : m.properties.items())
    rows.push_back({"  " + name, value_text(value)});
  if (!rows.empty())
    out += render_table({"", ""}, rows).substr(1);
  out += "body:\n";
  auto parsed = json::parse(m.body, nullptr, /*allow_exceptions=*/false);
  out += parsed.is_discarded() ? m.body + "\n" : to_text(parsed);
  return out;
}

std::string replay_text(const replay_report& r) {
  std::string out;
  for (const auto& m : r.replayed)
    out += "replayed " + or_dash(m.id) + " to '" + m.destination + "'\n";
  out += "replayed " + std::to_string(r.replayed.size()) + " of "
         + std::to_string(r.replayed.size() + r.failed.size()) + " selected "
         + (r.replayed.size() + r.failed.size() == 1 ? "message" : "messages") + " from '" + r.queue
         + "'\n";
  return out;
}

std::string purge_text(const purge_report& r) {
  std::string out;
  for (const auto& id : r.ids)
    out += "purged " + or_dash(id) + "\n";
  out += "purged " + plural(r.purged, "message", "messages") + " from '" + r.queue + "'\n";
  return out;
}

std::vector<std::string> notes(const std::string& queue, std::uint32_t consumers, bool truncated) {
  std::vector<std::string> out;
  if (consumers > 0)
    out.push_back("note: " + plural(consumers, "consumer is", "consumers are") + " attached to '"
                  + queue + "': messages delivered to them and not yet acknowledged were not seen");
  if (truncated)
    out.push_back("note: --limit stopped the reading before the end of '" + queue + "'");
  return out;
}

std::vector<std::string> problem_lines(const replay_report& r) {
  std::vector<std::string> out;
  for (const auto& id : r.unknown_ids)
    out.push_back("no message '" + id + "' on '" + r.queue + "'");
  for (const auto& f : r.failed)
    out.push_back("not replayed: " + or_dash(f.id) + " to '" + f.destination + "': " + f.problem
                  + " (it is still on '" + r.queue + "')");
  if (!r.warning.empty())
    out.push_back("warning: " + r.warning);
  for (auto& n : notes(r.queue, r.consumers, r.truncated))
    out.push_back(std::move(n));
  return out;
}

std::vector<std::string> problem_lines(const purge_report& r) {
  std::vector<std::string> out;
  for (const auto& id : r.unknown_ids)
    out.push_back("no message '" + id + "' on '" + r.queue + "'");
  if (!r.warning.empty())
    out.push_back("warning: " + r.warning);
  for (auto& n : notes(r.queue, r.consumers, r.truncated))
    out.push_back(std::move(n));
  return out;
}

} // namespace bus::ctl
