// Reading a bus's HTTP endpoints the way an operator's tools do: with
// curl, a real HTTP client, in a child process; and picking one sample out
// of Prometheus's text format.
#pragma once

#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace bus::test {

struct http_answer {
  int status = 0; // 0: curl could not connect
  std::string body;
};

// Runs curl (its arguments already quoted for the shell) and reads its
// answer: the body, then the status written by -w on a line of its own.
inline http_answer run_curl(const std::string& arguments) {
  auto command = "curl -s --max-time 10 -w '\\n%{http_code}' " + arguments;
  http_answer a;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe)
    return a;
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;)
    out.append(buf, n);
  ::pclose(pipe);
  auto nl = out.rfind('\n');
  if (nl == std::string::npos)
    return a;
  a.status = std::atoi(out.c_str() + nl + 1);
  a.body = out.substr(0, nl);
  return a;
}

// GET http://<address><path> with curl.
inline http_answer http_get(const std::string& address, const std::string& path) {
  return run_curl("'http://" + address + path + "'");
}

// `method` http://<address><path> with a JSON body (no single quotes in
// it) and, unless empty, an Authorization header.
inline http_answer http_send(const std::string& method, const std::string& address,
                             const std::string& path, const std::string& json_body,
                             const std::string& authorization = {}) {
  std::string args = "-X " + method + " -H 'Content-Type: application/json' --data '" + json_body
                     + "' ";
  if (!authorization.empty())
    args += "-H 'Authorization: " + authorization + "' ";
  return run_curl(args + "'http://" + address + path + "'");
}

// The value of the sample `name` whose labels include every one of
// `labels` (each written as in the text: key="value"), if there is one.
inline std::optional<double> sample(const std::string& text, const std::string& name,
                                    const std::vector<std::string>& labels = {}) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.compare(0, name.size(), name) != 0)
      continue;
    auto rest = line.substr(name.size());
    if (rest.empty() || (rest[0] != '{' && rest[0] != ' '))
      continue; // another metric whose name starts with this one
    bool all = true;
    for (const auto& l : labels)
      all = all && rest.find(l) != std::string::npos;
    if (all)
      return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return std::nullopt;
}

} // namespace bus::test
