#include "leader_move.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace bus::ctl {

namespace {

// How long a member that answered a ping is given to take the leadership:
// 140 looks, 250 ms apart, 35 s, past Ra's 30 s await_condition timeout
// (after which a target that never called its election is given up on).
// An election takes well under a second on a quiet cluster.
constexpr int awaits_per_target = 140;
constexpr int ping_timeout_ms = 2000;

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

// Ra's transfer_leadership only asks: "ok" means the leader took the
// request, not that the target won. A target that does not answer leaves
// the leader waiting for it, deaf to every other request, for Ra's 30 s
// await_condition timeout. So only members that answer a ping are asked,
// one at a time, and each move is watched until the queue's record names
// another leader, for longer than that timeout.
std::string move_leader_expression(const std::string& vhost, const std::string& queue) {
  return "R = rabbit_misc:r(" + erlang_binary(vhost) + ", queue, " + erlang_binary(queue)
         + "),\n"
           "LeaderNow = fun() -> case rabbit_amqqueue:lookup(R) of\n"
           "    {ok, Now} -> element(2, amqqueue:get_pid(Now)); _ -> none end end,\n"
           "case rabbit_amqqueue:lookup(R) of\n"
           "  {error, not_found} -> io:format(\"not_found~n\");\n"
           "  {ok, Q} ->\n"
           "    {Name, From} = amqqueue:get_pid(Q),\n"
           "    #{nodes := Members} = amqqueue:get_type_state(Q),\n"
           "    Running = [M || M <- Members, M =/= From,\n"
           "                    lists:member(M, rabbit_nodes:all_running())],\n"
           "    Pings = [{M, ra:ping({Name, M}, "
         + std::to_string(ping_timeout_ms) + ")} || M <- Running],\n"
           "    Await = fun Await(0) -> From;\n"
           "                Await(K) -> case LeaderNow() of\n"
           "                              From -> timer:sleep(250), Await(K - 1);\n"
           "                              Other -> Other end end,\n"
           "    Try = fun Try([], Answers) ->\n"
           "                io:format(\"not_moved ~s ~w~n\", [From, lists:reverse(Answers)]);\n"
           "              Try([Target | Rest], Answers) ->\n"
           "                Answer = ra:transfer_leadership({Name, From}, {Name, Target}),\n"
           "                case Await("
         + std::to_string(awaits_per_target) + ") of\n"
           "                  From -> Try(Rest, [{Target, Answer} | Answers]);\n"
           "                  To -> io:format(\"moved ~s ~s~n\", [From, To])\n"
           "                end\n"
           "          end,\n"
           "    case {Members -- [From], [M || {M, {pong, _}} <- Pings]} of\n"
           "      {[], _} -> io:format(\"single_member~n\");\n"
           "      {_, []} -> io:format(\"no_answering_member ~s ~w~n\", [From, Pings]);\n"
           "      {_, Targets} ->\n"
           "        Try(Targets, [{M, P} || {M, P} <- Pings, element(1, P) =/= pong])\n"
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
    for (const char* known :
         {"not_found", "single_member", "no_answering_member ", "not_moved ", "moved "})
      if (line.rfind(known, 0) == 0)
        answer = line;
  std::istringstream words(answer);
  std::string word, from, to;
  words >> word >> from;
  if (ran.status == 0 && word == "not_found")
    return error{errc::unknown_queue,
                 "no queue '" + queue + "' in vhost '" + vhost + "' (rabbitmqctl list_queues)"};
  if (ran.status == 0 && word == "single_member")
    return error{errc::transport_failure,
                 "quorum queue '" + queue
                     + "' has one member: its leader cannot move (add a "
                       "member with rabbitmq-queues add_member, or restart its node)"};
  if (ran.status == 0 && word == "moved" && words >> to)
    return leader_moved{queue, from, to};
  std::string answers;
  std::getline(words >> std::ws, answers);
  if (ran.status == 0 && word == "no_answering_member")
    return error{errc::transport_failure,
                 "quorum queue '" + queue + "' is led by " + from
                     + " and none of its other members answers a ping within "
                     + std::to_string(ping_timeout_ms / 1000) + " s (" + answers
                     + "): start their nodes, or wait for them to catch up, then move it"};
  if (ran.status == 0 && word == "not_moved")
    return error{errc::transport_failure,
                 "the leadership of '" + queue + "' stayed on " + from
                     + ": no other member took it (Ra answered " + answers
                     + "); try again, or see docs/rabbitmq.md, \"Stranded delay levels\""};
  return error{errc::transport_failure,
               "rabbitmqctl did not move the leader of '" + queue + "'"
                   + (ran.status < 0 ? std::string(" (it did not run)")
                                     : " (exit code " + std::to_string(ran.status) + ")")
                   + ": " + (text.empty() ? "no output" : text)};
}

} // namespace bus::ctl
