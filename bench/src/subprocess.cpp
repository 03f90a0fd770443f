#include "subprocess.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace bench {

std::string self_path() {
  char buf[4096] = {};
  auto n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("bus-bench");
}

nlohmann::json run_case_process(const std::vector<std::string>& argv,
                                const std::map<std::string, std::string>& env) {
  int out[2];
  if (pipe(out) != 0)
    return {{"error", std::string("pipe: ") + std::strerror(errno)}};
  pid_t child = fork();
  if (child < 0)
    return {{"error", std::string("fork: ") + std::strerror(errno)}};
  if (child == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    for (const auto& [name, value] : env)
      setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "bus-bench: cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(out[1]);
  std::string output;
  char buf[4096];
  for (;;) {
    auto n = read(out[0], buf, sizeof(buf));
    if (n > 0)
      output.append(buf, static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR)
      break;
  }
  close(out[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  std::string command;
  for (const auto& a : argv)
    command += (command.empty() ? "" : " ") + a;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return {{"error",
             command + ": "
                 + (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                      : "killed by signal " + std::to_string(WTERMSIG(status)))}};
  // The last line that parses as a JSON object is the result.
  std::istringstream lines(output);
  std::string line;
  nlohmann::json result = {{"error", command + ": printed no result"}};
  while (std::getline(lines, line)) {
    auto parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object())
      result = std::move(parsed);
  }
  return result;
}

} // namespace bench
