#include "leader_move.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace bus::ctl {

namespace {

// "<<\"...\">>": a binary literal, with \ and " escaped.
std::string erlang_binary(const std::string& text) {
  std::string out = "<<\"";
  for (char c : text) {
    if (c == '\\' || c == '"')
      out += '\\';
    out += c;
  }
  return out + "\">>";
}

struct program_output {
  int status = -1;  // the exit code; -1: it did not run or was killed
  std::string text; // stdout and stderr together
};

program_output run_program(const std::vector<std::string>& argv) {
  program_output out;
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) {
    out.text = std::string("pipe: ") + std::strerror(errno);
    return out;
  }
  pid_t child = ::fork();
  if (child < 0) {
    out.text = std::string("fork: ") + std::strerror(errno);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return out;
  }
  if (child == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    std::vector<char*> args;
    for (const auto& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::string why = "cannot run '" + argv[0] + "': " + std::strerror(errno) + "\n";
    (void)!::write(STDOUT_FILENO, why.data(), why.size());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      break;
    out.text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status))
    out.status = WEXITSTATUS(status);
  return out;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

} // namespace

std::string move_leader_expression(const std::string& vhost, const std::string& queue) {
  return "case rabbit_amqqueue:lookup(rabbit_misc:r(" + erlang_binary(vhost) + ", queue, "
         + erlang_binary(queue)
         + ")) of\n"
           "  {error, not_found} -> io:format(\"not_found~n\");\n"
           "  {ok, Q} ->\n"
           "    {Name, Leader} = amqqueue:get_pid(Q),\n"
           "    #{nodes := Members} = amqqueue:get_type_state(Q),\n"
           "    case [M || M <- Members, M =/= Leader] of\n"
           "      [] -> io:format(\"single_member~n\");\n"
           "      [Target | _] ->\n"
           "        ok = ra:transfer_leadership({Name, Leader}, {Name, Target}),\n"
           "        io:format(\"moved ~s ~s~n\", [Leader, Target])\n"
           "    end\n"
           "end.";
}

result<leader_moved> move_leader(const std::string& rabbitmqctl, const std::string& vhost,
                                 const std::string& queue) {
  auto ran = run_program({rabbitmqctl, "-q", "eval", move_leader_expression(vhost, queue)});
  auto text = trimmed(ran.text);
  // What the expression printed; eval then prints its value ("ok").
  std::string answer;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line == "not_found" || line == "single_member" || line.rfind("moved ", 0) == 0)
      answer = line;
  if (ran.status == 0 && answer == "not_found")
    return error{errc::unknown_queue,
                 "no queue '" + queue + "' in vhost '" + vhost + "' (rabbitmqctl list_queues)"};
  if (ran.status == 0 && answer == "single_member")
    return error{errc::transport_failure,
                 "quorum queue '" + queue
                     + "' has one member: its leader cannot move (add a "
                       "member with rabbitmq-queues add_member, or restart its node)"};
  std::istringstream words(answer);
  std::string moved, from, to;
  if (ran.status == 0 && words >> moved >> from >> to && moved == "moved")
    return leader_moved{queue, from, to};
  return error{errc::transport_failure,
               "rabbitmqctl did not move the leader of '" + queue + "'"
                   + (ran.status < 0 ? std::string(" (it did not run)")
                                     : " (exit code " + std::to_string(ran.status) + ")")
                   + ": " + (text.empty() ? "no output" : text)};
}

} // namespace bus::ctl
