#include "bus/policy/json.hpp"

#include <nlohmann/json.hpp>

#include "bus/policy/error_context.hpp"

namespace bus {

namespace {

nlohmann::json optional_scope(const std::optional<scope_level>& scope) {
  return scope ? nlohmann::json(to_string(*scope)) : nlohmann::json(nullptr);
}

} // namespace

void to_json(nlohmann::json& j, const retry_schedule& schedule) {
  j = nlohmann::json::object();
  j["count"] = retry_count(schedule);
  struct delays_of {
    nlohmann::json& j;
    void operator()(const backoff_delays& d) const {
      j["delays"] = to_string(d.kind);
      j["base_delay_ms"] = d.base.count();
    }
    void operator()(const interval_delays& d) const {
      j["delays"] = "intervals";
      auto& list = j["intervals_ms"] = nlohmann::json::array();
      for (const auto interval : d.intervals)
        list.push_back(interval.count());
    }
    void operator()(const exception_delays&) const { j["delays"] = "from_exception"; }
  };
  std::visit(delays_of{j}, schedule.delays);
  j["jitter"] = schedule.jitter;
  j["max_delay_ms"] = schedule.max_delay.count();
}

void to_json(nlohmann::json& j, const rule& r) {
  j = nlohmann::json::object();
  j["rule"] = describe(r);
  j["exception"] = r.type ? nlohmann::json(r.type->name()) : nlohmann::json("*");
  j["predicate"] = static_cast<bool>(r.predicate);
  j["retry"] = r.retry ? nlohmann::json(*r.retry) : nlohmann::json(nullptr);
  j["redelivery"] = r.redelivery ? nlohmann::json(*r.redelivery) : nlohmann::json(nullptr);
  j["terminal"] = r.terminal ? to_string(*r.terminal) : "error_queue";
  j["max_attempts"] = r.max_attempts ? nlohmann::json(*r.max_attempts) : nlohmann::json(nullptr);
  j["max_time_ms"] = r.max_time ? nlohmann::json(r.max_time->count()) : nlohmann::json(nullptr);
  if (!r.trips.empty()) // absent otherwise, so descriptions of rules without it stay as they were
    j["trips"] = r.trips;
}

void to_json(nlohmann::json& j, const rule_set& rules) {
  j = nlohmann::json::array();
  for (const auto& r : rules.rules())
    j.push_back(r);
}

void to_json(nlohmann::json& j, const recoverability_config& config) {
  j = nlohmann::json::object();
  j["scope"] = optional_scope(config.scope);
  j["rules"] = config.rules;
  j["error_queue"] = config.options.error_queue;
  j["max_retry_time_ms"] = config.options.max_retry_time.count();
  j["capabilities"] = {{"immediate_retries", config.options.available.immediate_retries},
                       {"delayed_delivery", config.options.available.delayed_delivery}};
  // Only where it is so: the policy of a queue's endpoint reads as before.
  if (config.options.available.reads_stream)
    j["capabilities"]["reads_stream"] = true;
  auto& unrecoverable = j["unrecoverable"] = nlohmann::json::array();
  unrecoverable.push_back(detail::type_name(typeid(message_deserialization_error)));
  for (const auto& type : config.options.unrecoverable.types())
    unrecoverable.push_back(type.name());
  j["custom_policy"] = static_cast<bool>(config.options.custom);
  if (const auto& budget = config.options.retry_budget)
    j["retry_budget"] = {{"name", budget->name},
                         {"ratio", budget->ratio},
                         {"window_ms", budget->window.count()},
                         {"min_retries_per_second", budget->min_retries_per_second},
                         {"fallback", to_string(budget->fallback)}};
  else
    j["retry_budget"] = nullptr;
  j["expired_messages"] = to_string(config.options.expired_messages);
}

void to_json(nlohmann::json& j, const action& a) {
  struct json_of {
    nlohmann::json operator()(const immediate_retry& r) const {
      return {{"action", "immediate_retry"}, {"delay_ms", r.delay.count()}};
    }
    nlohmann::json operator()(const delayed_retry& r) const {
      return {{"action", "delayed_retry"}, {"delay_ms", r.delay.count()}};
    }
    nlohmann::json operator()(const move_to_error& m) const {
      return {{"action", "move_to_error"}, {"reason", m.reason}, {"queue", m.queue}};
    }
    nlohmann::json operator()(const discard& d) const {
      return {{"action", "discard"}, {"reason", d.reason}};
    }
  };
  j = std::visit(json_of{}, a);
}

void to_json(nlohmann::json& j, const explanation& e) {
  j = nlohmann::json::object();
  j["scope"] = optional_scope(e.scope);
  j["exception_type"] = e.exception_type;
  j["rule"] = e.rule ? nlohmann::json(*e.rule) : nlohmann::json(nullptr);
  j["rule_text"] = e.rule_text;
  j["reason"] = e.reason;
  auto& candidates = j["candidates"] = nlohmann::json::array();
  for (const auto& c : e.candidates)
    candidates.push_back({{"rule", c.rule},
                          {"name", c.name},
                          {"rank", c.rank},
                          {"exact_type", c.exact_type},
                          {"verdict", to_string(c.verdict)}});
  auto& plan = j["plan"] = nlohmann::json::array();
  for (const auto& p : e.plan) {
    nlohmann::json then;
    to_json(then, p.then);
    plan.push_back({{"attempt", p.attempt},
                    {"delivery", p.delivery},
                    {"immediate_attempt", p.immediate_attempt},
                    {"elapsed_ms", p.elapsed.count()},
                    {"then", std::move(then)}});
  }
  j["truncated"] = e.truncated;
}

} // namespace bus
