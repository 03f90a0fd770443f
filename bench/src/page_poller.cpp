#include "page_poller.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

namespace bench {

page_poller::page_poller(std::string address, int speed)
  : every_(std::chrono::microseconds(1'000'000 / std::max(speed, 1))) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos)
    throw std::invalid_argument("page_poller: no port in '" + address + "'");
  host_ = address.substr(0, colon);
  port_ = std::stoi(address.substr(colon + 1));
  get("/"); // the page itself, once, as a browser loads it
  thread_ = std::thread([this] { loop(); });
}

page_poller::~page_poller() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void page_poller::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (std::uint64_t tick = 0;; ++tick) {
    lock.unlock();
    get("/api/status");
    if (tick % 3 == 0)
      get("/api/failed");
    lock.lock();
    if (wake_.wait_for(lock, every_, [this] { return stopping_; }))
      return;
  }
}

bool page_poller::get(const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return false;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port_));
  bool ok = ::inet_pton(AF_INET, host_.c_str(), &to.sin_addr) == 1
            && ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0;
  std::string answer;
  if (ok) {
    auto request = "GET " + path + " HTTP/1.1\r\nHost: " + host_ + "\r\nConnection: close\r\n\r\n";
    ok = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL)
         == static_cast<ssize_t>(request.size());
    char buffer[16 * 1024];
    for (ssize_t n; ok && (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;)
      answer.append(buffer, static_cast<std::size_t>(n)); // the server closes: read to the end
  }
  ::close(fd);
  ok = ok && answer.compare(0, 12, "HTTP/1.1 200") == 0;
  if (ok)
    ++answered_;
  return ok;
}

} // namespace bench
