#include "script_book.hpp"

#include <stdexcept>

namespace bus::scenario {

const step& step_for(const std::vector<step>& script, int attempt) {
  int first = 1; // the first attempt the current step covers
  for (const auto& s : script) {
    if (attempt < first + s.times)
      return s;
    first += s.times;
  }
  return script.back();
}

script_book::script_book(std::function<duration()> clock, const scenario& s)
    : clock_(std::move(clock)) {
  for (const auto& m : s.sends)
    if (m.script)
      own_scripts_.emplace(m.name, *m.script);
}

step script_book::next(const handler_spec& h, const std::string& name) {
  auto now = clock_();
  int attempt = 0;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    attempt = ++attempts_[name];
  }
  for (const auto& o : h.outages)
    if (now >= o.from && now < o.until) {
      auto s = step::of(step::kind::raise);
      s.exception = o.exception;
      s.message = o.message;
      s.fields = o.fields;
      return s;
    }
  auto own = own_scripts_.find(name);
  return step_for(own == own_scripts_.end() ? h.script : own->second, attempt);
}

void script_book::record_death() {
  std::lock_guard<std::mutex> guard(mutex_);
  ++deaths_;
}

int script_book::attempts(const std::string& name) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = attempts_.find(name);
  return it == attempts_.end() ? 0 : it->second;
}

int script_book::total_attempts() const {
  std::lock_guard<std::mutex> guard(mutex_);
  int total = 0;
  for (const auto& [name, n] : attempts_)
    total += n;
  return total;
}

int script_book::deaths() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return deaths_;
}

void perform(const step& s, handler_context& ctx) {
  switch (s.what) {
    case step::kind::succeed:
      return;
    case step::kind::raise:
      std::rethrow_exception(make_exception(*find_exception_type(s.exception), s.message, s.fields));
    case step::kind::poison:
      ctx.poison(s.message.empty() ? "the script marked the message as poison" : s.message);
      return;
    case step::kind::die:
      break;
  }
  throw std::logic_error("a handler served by a function cannot kill its consumer");
}

} // namespace bus::scenario
