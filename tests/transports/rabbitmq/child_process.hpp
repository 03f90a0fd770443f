// A program the test starts as a process of its own (a worker on the
// broker), with extra environment variables and its output in a file,
// that it can kill -9, stop with SIGTERM, and wait for with a deadline.
// Destroying a child_process that still runs kills it: a failed test
// leaves no worker behind.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/eventually.hpp"

extern char** environ;

namespace bus::test {

class child_process {
public:
  // Starts `program` with `args`, the test's environment plus `env`
  // ("NAME=value" entries), stdout and stderr appended to `output`.
  child_process(const std::string& program, const std::vector<std::string>& args,
                const std::vector<std::string>& env, const std::string& output) {
    std::vector<std::string> argv_text{program};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_text)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_text = env;
    std::vector<char*> envp;
    for (auto& e : env_text)
      envp.push_back(e.data());
    for (char** e = environ; *e != nullptr; ++e)
      envp.push_back(*e);
    envp.push_back(nullptr);

    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, output.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
    int failed = posix_spawn(&pid_, program.c_str(), &files, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&files);
    if (failed != 0)
      throw std::runtime_error("cannot start " + program + ": error " + std::to_string(failed));
  }

  ~child_process() {
    if (!status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  [[nodiscard]] pid_t pid() const noexcept { return pid_; }

  // Whether it still runs (it has not exited, or it has not been reaped yet).
  bool running() {
    if (status_)
      return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_)
      status_ = status;
    return !status_;
  }

  void signal(int sig) { ::kill(pid_, sig); }

  // Its wait status once it exited within `deadline`, else nothing.
  std::optional<int> wait(std::chrono::milliseconds deadline) {
    if (!eventually([&] { return !running(); }, deadline))
      return std::nullopt;
    return status_;
  }

private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

} // namespace bus::test
