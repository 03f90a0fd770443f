// Wakes an I/O thread that waits in poll() on its socket: other threads
// hand it work through a queue and then notify(); the I/O thread includes
// fd() in its poll set and clear()s it before it takes the queue.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <system_error>

namespace bus::detail {

class wakeup {
public:
  wakeup() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0)
      throw std::system_error(errno, std::generic_category(), "eventfd");
  }
  ~wakeup() { ::close(fd_); }
  wakeup(const wakeup&) = delete;
  wakeup& operator=(const wakeup&) = delete;

  [[nodiscard]] int fd() const noexcept { return fd_; }

  // Thread-safe, never blocks (the counter saturates long after any use).
  void notify() noexcept {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
  }

  // Only the I/O thread calls this.
  void clear() noexcept {
    std::uint64_t value = 0;
    [[maybe_unused]] auto n = ::read(fd_, &value, sizeof value);
  }

private:
  int fd_;
};

} // namespace bus::detail
