#include "bus/policy/rule.hpp"

#include <variant>

namespace bus {

namespace {

std::string interval_list(const std::vector<duration>& intervals) {
  std::string out = "{";
  for (std::size_t i = 0; i < intervals.size(); ++i) {
    if (i > 0)
      out += ", ";
    out += to_short_string(intervals[i]);
  }
  return out + "}";
}

// The arguments of retry(...) or redeliver(...) that produce `schedule`.
// The count and the intervals are always spelled out, defaults or not:
// the text is for people who want to see what a rule does.
std::string schedule_arguments(const retry_schedule& schedule, bool redelivery) {
  struct arguments_of {
    bool redelivery;
    std::string operator()(const backoff_delays& d) const {
      const auto default_kind = redelivery ? redelivery_defaults::kind : retry_defaults::kind;
      if (!redelivery && d.base == retry_defaults::base_delay && d.kind == default_kind)
        return std::to_string(d.count);
      std::string out = std::to_string(d.count) + ", " + to_short_string(d.base);
      if (d.kind != default_kind)
        out += ", " + std::string(to_string(d.kind));
      return out;
    }
    std::string operator()(const interval_delays& d) const { return interval_list(d.intervals); }
    std::string operator()(const exception_delays& d) const {
      return std::to_string(d.count) + ", <delay from the exception>";
    }
  };
  return std::visit(arguments_of{redelivery}, schedule.delays);
}

// ".jitter(false)" and ".max_delay(10s)" where they differ from what the
// DSL call alone would have produced.
std::string schedule_modifiers(const retry_schedule& schedule, bool redelivery) {
  const bool from_exception = std::holds_alternative<exception_delays>(schedule.delays);
  const bool default_jitter =
      !from_exception && (redelivery ? redelivery_defaults::jitter : retry_defaults::jitter);
  const duration default_max =
      redelivery ? redelivery_defaults::max_delay : retry_defaults::max_delay;
  std::string out;
  if (schedule.jitter != default_jitter)
    out += schedule.jitter ? ".jitter(true)" : ".jitter(false)";
  if (schedule.max_delay != default_max)
    out += ".max_delay(" + to_short_string(schedule.max_delay) + ")";
  return out;
}

} // namespace

std::string_view to_string(terminal_action action) noexcept {
  switch (action) {
    case terminal_action::dead_letter:
      return "dead_letter";
    case terminal_action::discard:
      return "discard";
  }
  return "unknown";
}

bool has_action(const rule& r) noexcept {
  // A rule that only trips a dependency breaker gives every failure it
  // matches back to the queue unharmed (see rule::trips).
  return r.retry.has_value() || r.redelivery.has_value() || r.terminal.has_value()
         || !r.trips.empty();
}

std::string describe_target(const rule& r) {
  if (!r.type)
    return r.predicate ? "on_any(predicate)" : "on_any()";
  return "on<" + r.type->name() + ">(" + (r.predicate ? "predicate" : "") + ")";
}

std::string describe(const rule& r) {
  std::string out = describe_target(r);
  if (r.max_attempts)
    out += ".max_attempts(" + std::to_string(*r.max_attempts) + ")";
  if (r.max_time)
    out += ".max_time(" + to_short_string(*r.max_time) + ")";
  for (const auto& dependency : r.trips)
    out += ".trips(\"" + dependency + "\")";
  const bool chained = r.retry.has_value();
  if (r.retry)
    out +=
        ".retry(" + schedule_arguments(*r.retry, false) + ")" + schedule_modifiers(*r.retry, false);
  if (r.redelivery)
    out += std::string(chained ? ".then_redeliver(" : ".redeliver(")
           + schedule_arguments(*r.redelivery, true) + ")"
           + schedule_modifiers(*r.redelivery, true);
  if (r.terminal) {
    const bool after_tier = r.retry || r.redelivery;
    switch (*r.terminal) {
      case terminal_action::dead_letter:
        out += after_tier ? ".then_dead_letter()" : ".dead_letter()";
        break;
      case terminal_action::discard:
        // Only a hand-built rule discards after its tiers: the DSL has no
        // then_discard(), so say it in words rather than invent a call.
        out += after_tier ? " (then discard)" : ".discard()";
        break;
    }
  }
  return out;
}

} // namespace bus
