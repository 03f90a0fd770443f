// What an open bus page does to the bus (issue 24's figure): from a thread
// of its own, GET /api/status every second and /api/failed every three
// seconds, as page.html does, over plain HTTP/1.1 sockets like a
// browser's. Stops and joins when destroyed; counts the answers it got.
// `speed` > 1 polls that many times as often: as many pages open at once,
// or one page's cost magnified above the noise of a throughput run.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace bench {

class page_poller {
public:
  // `address`: the bus's "host:port" (message_bus::metrics_address).
  explicit page_poller(std::string address, int speed = 1);
  ~page_poller();
  page_poller(const page_poller&) = delete;
  page_poller& operator=(const page_poller&) = delete;

  // Answers with status 200 so far; a poll that failed is not counted.
  [[nodiscard]] std::uint64_t answered() const noexcept { return answered_.load(); }

private:
  void loop();
  bool get(const std::string& path); // true on a 200

  std::string host_;
  int port_ = 0;
  std::chrono::microseconds every_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false; // guarded by mutex_
  std::atomic<std::uint64_t> answered_{0};
  std::thread thread_;
};

} // namespace bench
