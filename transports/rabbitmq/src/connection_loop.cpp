#include "connection_loop.hpp"

#include <algorithm>
#include <utility>

#include "bus/policy/backoff.hpp"

namespace bus::detail {

std::chrono::milliseconds reconnect_delay(const rabbitmq_settings& settings, int attempt,
                                          std::mt19937_64& random) {
  // Capped before the jitter, not after as a retry policy does: capped
  // after, every process that failed long enough would wait exactly the
  // maximum, and they would all come back in lockstep.
  auto nominal = std::min(
    backoff_delay(backoff::exponential, settings.reconnect_delay_min, attempt),
    settings.reconnect_delay_max);
  return apply_jitter(nominal, random);
}

result<std::unique_ptr<amqp_session>> open_session(const rabbitmq_settings& settings,
                                                   const std::string& role) {
  return amqp_session::open(settings, role);
}

connection_loop::connection_loop(const rabbitmq_settings& settings, std::string role,
                                 std::string name, std::shared_ptr<const rabbitmq_logger> log,
                                 owner& side)
    : settings_(settings), role_(std::move(role)), name_(std::move(name)), log_(std::move(log)),
      owner_(side) {}

connection_loop::~connection_loop() {
  stop_and_join();
}

result<void> connection_loop::start() {
  std::promise<result<void>> first;
  auto connected = first.get_future();
  thread_ = std::thread([this, p = std::move(first)]() mutable { run(std::move(p)); });
  return connected.get();
}

void connection_loop::stop_and_join() {
  wake_.notify();
  if (thread_.joinable())
    thread_.join();
}

void connection_loop::run(std::promise<result<void>> first) {
  if (!connect()) {
    first.set_value(error{errc::transport_failure, last_failure_});
    return;
  }
  first.set_value(result<void>{});
  for (;;) {
    wake_.clear();
    if (!owner_.turn())
      break;
    if (session_ && !session_->alive())
      continue; // reconnect at once rather than after a poll
    wait_readable(session_ ? session_->fd() : -1, wake_.fd(), idle_wait(clock::now()));
    if (session_)
      amqp_maybe_release_buffers(session_->raw());
  }
  owner_.stopped();
  connected_ = false;
  session_.reset();
}

bool connection_loop::connect() {
  auto opened = open_session(settings_, role_);
  if (!opened) {
    if (ever_connected_ && opened.error().message != last_failure_)
      log_->warn(name_ + ": " + opened.error().message + "; retrying");
    last_failure_ = opened.error().message;
    return false;
  }
  session_ = std::move(*opened);
  if (auto why = owner_.session_opened(*session_)) {
    last_failure_ = std::move(*why);
    session_.reset();
    return false;
  }
  failed_attempts_ = 0;
  if (ever_connected_) {
    ++reconnects_;
    log_->info(name_ + " to " + settings_.describe() + " is back" + owner_.back_note());
  }
  ever_connected_ = true;
  connected_ = true;
  return true;
}

void connection_loop::drop_if_dead() {
  if (!session_ || session_->alive())
    return;
  connected_ = false;
  auto why = describe(session_->death());
  last_failure_ = "RabbitMQ at " + settings_.describe() + ": connection lost (" + why + ")";
  auto fate = owner_.session_lost();
  log_->warn(name_ + " to " + settings_.describe() + " lost (" + why + "); " + fate);
  session_.reset();
  next_attempt_ = clock::now() + reconnect_delay(settings_, ++failed_attempts_, random_);
}

void connection_loop::maintain() {
  drop_if_dead();
  if (!session_ && clock::now() >= next_attempt_ && !connect())
    next_attempt_ = clock::now() + reconnect_delay(settings_, ++failed_attempts_, random_);
}

std::chrono::milliseconds connection_loop::idle_wait(clock::time_point now) const {
  // Heartbeats are sent and checked only inside rabbitmq-c calls: come back
  // well within a heartbeat interval even when idle.
  std::chrono::milliseconds wait = std::chrono::seconds(1);
  // In milliseconds before dividing: heartbeat is in whole seconds, and
  // 2 s / 4 in seconds is 0, a wait of nothing (the thread spun).
  if (settings_.heartbeat.count() > 0)
    wait = std::min(wait, std::chrono::milliseconds(settings_.heartbeat) / 4);
  auto until = [&](clock::time_point t) {
    if (t == clock::time_point::max())
      return;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - now)
                + std::chrono::milliseconds(1);
    wait = std::max(std::chrono::milliseconds(0), std::min(wait, left));
  };
  if (!session_)
    until(next_attempt_);
  until(owner_.next_deadline());
  return wait;
}

} // namespace bus::detail
