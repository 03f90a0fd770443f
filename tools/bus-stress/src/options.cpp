#include "options.hpp"

#include <charconv>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#ifdef BUS_STRESS_WITH_RABBITMQ
#include "bus/rabbitmq_settings.hpp"
#endif

namespace stress {

const char* to_string(policy_kind kind) noexcept {
  switch (kind) {
    case policy_kind::retry:
      return "retry";
    case policy_kind::redeliver:
      return "redeliver";
    case policy_kind::dead_letter:
      return "dead_letter";
    case policy_kind::discard:
      return "discard";
    case policy_kind::max_attempts:
      return "max_attempts";
    case policy_kind::by_type:
      return "by_type";
  }
  return "?";
}

namespace {

const std::vector<policy_kind> all_policies = {policy_kind::retry,        policy_kind::redeliver,
                                               policy_kind::dead_letter,  policy_kind::discard,
                                               policy_kind::max_attempts, policy_kind::by_type};

template <class Int> bool parse_int(const std::string& text, Int& out) {
  auto end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

bool parse_probability(const std::string& text, double& out) {
  try {
    std::size_t used = 0;
    out = std::stod(text, &used);
    return used == text.size() && out >= 0 && out <= 1;
  } catch (...) {
    return false;
  }
}

// "N" or "MIN-MAX", each at least 1.
bool parse_slots(const std::string& text, int& lo, int& hi) {
  auto dash = text.find('-');
  if (dash == std::string::npos) {
    if (!parse_int(text, lo))
      return false;
    hi = lo;
  } else if (!parse_int(text.substr(0, dash), lo) || !parse_int(text.substr(dash + 1), hi)) {
    return false;
  }
  return lo >= 1 && hi >= lo;
}

bool parse_policies(const std::string& text, std::vector<policy_kind>& out) {
  out.clear();
  std::stringstream in(text);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name == "all") {
      out = all_policies;
      continue;
    }
    bool known = false;
    for (auto kind : all_policies)
      if (name == to_string(kind)) {
        out.push_back(kind);
        known = true;
      }
    if (!known)
      return false;
  }
  return !out.empty();
}

// "N,MS": a threshold of at least 1 and a wait in milliseconds.
bool parse_rate_limit(const std::string& text, int& threshold, int& wait_ms) {
  auto comma = text.find(',');
  if (comma == std::string::npos)
    return false;
  return parse_int(text.substr(0, comma), threshold) && parse_int(text.substr(comma + 1), wait_ms)
         && threshold >= 1 && wait_ms >= 0;
}

// BUS_RABBITMQ_URL of a KEY=VALUE file, as the project's test broker
// writes it (scripts/rabbitmq-test-broker.sh: DIR/broker.env), its quotes
// removed as a shell would. Without the transport there is no broker to use.
bool url_from_env_file(const std::string& path, std::string& url) {
#ifdef BUS_STRESS_WITH_RABBITMQ
  auto value = ::bus::env_file_value(path, "BUS_RABBITMQ_URL");
  if (!value)
    return false;
  url = std::move(*value);
  return !url.empty();
#else
  (void)path;
  (void)url;
  return false;
#endif
}

} // namespace

std::string usage() {
  return R"(usage: bus-stress [options]

Runs a topology of endpoints on real threads with random failures, consumer
deaths and a mix of exception policies, then checks the bus's invariants.
Exit code: 0 every invariant held, 1 one broke (or the run overran
--max-seconds), 2 a usage mistake or a transport that is not built.

  --endpoints N        endpoints (default 8)
  --slots N|MIN-MAX    slots of each endpoint, fixed or drawn (default 1-8)
  --messages N         messages to send (default 20000; the cap in duration mode)
  --duration-ms MS     send for this long instead of a fixed count
  --window N           deliveries sent and not yet ended, at most (default 1000)
  --failure-rate P     probability that a handler attempt fails (default 0.2)
  --death-rate P       probability that an actor-served attempt kills the
                       consumer that asked (default 0)
  --actor-share P      share of messages served by a handler actor (default 0.25)
  --publish-share P    share of messages published to every endpoint (default 0.02)
  --policies LIST      what endpoints draw from, comma separated: retry, redeliver,
                       dead_letter, discard, max_attempts, by_type, all (default all)
  --outage-ms MS       every handler fails for this long, from a quarter of the run;
                       turns rate limiting on (default 0: no outage)
  --rate-limit N,MS    rate limit after N consecutive failures, waiting MS between
                       attempts (default 5,20 with an outage, else off)
  --work-us US         a handler sleeps up to this long (default 100)
  --threads N          actor system worker threads (default 8)
  --seed S             random seed (default: drawn, and printed)
  --max-seconds S      fail the run if it takes longer (default 60)
  --transport NAME     in_memory (default) or rabbitmq
  --url URL            the broker's URL, for --transport rabbitmq
  --broker-env FILE    read it from FILE's BUS_RABBITMQ_URL= line instead (the
                       broker.env of scripts/rabbitmq-test-broker.sh)
  --log-file PATH      write the bus's log lines there (default: dropped)
  --help               this text
)";
}

parsed parse(int argc, char** argv) {
  parsed result;
  options o;
  o.policies = all_policies;
  bool rate_limit_given = false;
  using setter = std::function<bool(const std::string&)>;
  const std::map<std::string, setter> setters = {
      {"endpoints",
       [&](const std::string& v) {
         return parse_int(v, o.endpoints) && o.endpoints >= 1 && o.endpoints <= 4000;
       }},
      {"slots", [&](const std::string& v) { return parse_slots(v, o.min_slots, o.max_slots); }},
      {"messages",
       [&](const std::string& v) { return parse_int(v, o.messages) && o.messages >= 1; }},
      {"duration-ms",
       [&](const std::string& v) {
         int d = 0;
         return parse_int(v, d) && d >= 1 && (o.duration_ms = d, true);
       }},
      {"window", [&](const std::string& v) { return parse_int(v, o.window) && o.window >= 1; }},
      {"failure-rate", [&](const std::string& v) { return parse_probability(v, o.failure_rate); }},
      {"death-rate", [&](const std::string& v) { return parse_probability(v, o.death_rate); }},
      {"actor-share", [&](const std::string& v) { return parse_probability(v, o.actor_share); }},
      {"publish-share",
       [&](const std::string& v) { return parse_probability(v, o.publish_share); }},
      {"policies", [&](const std::string& v) { return parse_policies(v, o.policies); }},
      {"outage-ms",
       [&](const std::string& v) { return parse_int(v, o.outage_ms) && o.outage_ms >= 0; }},
      {"rate-limit",
       [&](const std::string& v) {
         rate_limit_given = true;
         return parse_rate_limit(v, o.rate_limit_threshold, o.rate_limit_wait_ms);
       }},
      {"work-us", [&](const std::string& v) { return parse_int(v, o.work_us) && o.work_us >= 0; }},
      {"threads",
       [&](const std::string& v) {
         return parse_int(v, o.threads) && o.threads >= 1 && o.threads <= 256;
       }},
      {"seed", [&](const std::string& v) { return parse_int(v, o.seed); }},
      {"max-seconds",
       [&](const std::string& v) { return parse_int(v, o.max_seconds) && o.max_seconds >= 1; }},
      {"transport",
       [&](const std::string& v) {
         o.transport = v;
         return v == "in_memory" || v == "rabbitmq";
       }},
      {"broker-env", [&](const std::string& v) { return url_from_env_file(v, o.url); }},
      {"url",
       [&](const std::string& v) {
         o.url = v;
         return !v.empty();
       }},
      {"log-file",
       [&](const std::string& v) {
         o.log_file = v;
         return !v.empty();
       }},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      result.help = true;
      return result;
    }
    if (arg.rfind("--", 0) != 0) {
      result.mistakes.push_back("unexpected argument '" + arg + "'");
      continue;
    }
    std::string name = arg.substr(2), value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      result.mistakes.push_back("--" + name + " needs a value");
      continue;
    }
    auto it = setters.find(name);
    if (it == setters.end())
      result.mistakes.push_back("unknown option --" + name);
    else if (!it->second(value))
      result.mistakes.push_back("--" + name + ": invalid value '" + value + "'");
  }
  // An outage is there to trip rate limiting: on by default with one.
  if (o.outage_ms > 0 && !rate_limit_given)
    o.rate_limit_threshold = 5;
  if (o.transport == "rabbitmq" && o.url.empty())
    result.mistakes.push_back("--transport rabbitmq needs --url (or --broker-env)");
  if (result.mistakes.empty())
    result.value = o;
  return result;
}

} // namespace stress
