// busctl: the operator CLI for the error queues of a bus on RabbitMQ
// (docs/busctl.md). Everything but reading argv and the environment is in
// commands.cpp.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "connection_settings.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return bus::ctl::run(args, std::getenv(bus::ctl::url_variable), std::cout, std::cerr,
                       std::getenv("BUS_RABBITMQ_CTL"));
}
