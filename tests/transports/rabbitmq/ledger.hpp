// The ledger of a worker process: one line per step of every message
// (received, each attempt, immediate retry, redelivery scheduled, handled,
// dead-lettered), appended by the worker and read by the test while the
// worker runs and after it was killed.
//
// Each line is one write() on a descriptor opened with O_APPEND: there is
// no buffer in the process, so a kill -9 loses no line that was written,
// and lines of concurrent threads never interleave. Lines carry the time of
// the system-wide monotonic clock (steady_clock), so the test can tell how
// long ago a step happened.
//
//   <ms> <pid> <kind> <message id> <delivery count> <attempt> [key=value ...]
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace bus::test {

inline std::int64_t monotonic_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class ledger_writer {
public:
  explicit ledger_writer(const std::string& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)),
        pid_(::getpid()) {
    if (fd_ < 0)
      throw std::runtime_error("cannot open the ledger " + path);
  }
  ~ledger_writer() { ::close(fd_); }
  ledger_writer(const ledger_writer&) = delete;
  ledger_writer& operator=(const ledger_writer&) = delete;

  // Thread-safe: one write() per line. `id` must not contain blanks.
  void write(const std::string& kind, const std::string& id = "-", std::uint32_t delivery = 0,
             int attempt = 0, const std::string& extra = {}) const {
    std::ostringstream line;
    line << monotonic_ms() << ' ' << pid_ << ' ' << kind << ' ' << id << ' ' << delivery << ' '
         << attempt;
    if (!extra.empty())
      line << ' ' << extra;
    line << '\n';
    auto text = line.str();
    while (::write(fd_, text.data(), text.size()) < 0 && errno == EINTR) {
    }
  }

private:
  int fd_;
  int pid_;
};

struct ledger_entry {
  std::int64_t at_ms = 0;
  int pid = 0;
  std::string kind;
  std::string id;
  std::uint32_t delivery = 0;
  int attempt = 0;
  std::map<std::string, std::int64_t> values; // the key=value fields
};

// Every complete line of the ledger at `path`, in the order written. A last
// line without its newline is being written: it is left for the next read.
inline std::vector<ledger_entry> read_ledger(const std::string& path) {
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<ledger_entry> out;
  std::size_t start = 0;
  for (auto end = content.find('\n'); end != std::string::npos;
       start = end + 1, end = content.find('\n', start)) {
    std::istringstream line(content.substr(start, end - start));
    ledger_entry e;
    if (!(line >> e.at_ms >> e.pid >> e.kind >> e.id >> e.delivery >> e.attempt))
      throw std::runtime_error("malformed ledger line: " + content.substr(start, end - start));
    std::string field;
    while (line >> field) {
      auto eq = field.find('=');
      if (eq != std::string::npos)
        e.values[field.substr(0, eq)] = std::stoll(field.substr(eq + 1));
    }
    out.push_back(std::move(e));
  }
  return out;
}

} // namespace bus::test
