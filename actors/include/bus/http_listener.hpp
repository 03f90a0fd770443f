// How the bus's own HTTP listener (bus_builder::metrics: /metrics, the
// health probes and the page) shares its threads. It serves a connection
// per thread, so a peer that connects and says nothing (a slow client, a
// scanner, a browser's preconnect) holds a thread until its request
// deadline; the probes answer at once while fewer such peers than threads
// are connected, and within the deadline otherwise.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "bus/time.hpp"

namespace bus {

struct http_listener_settings {
  // Connections served at once.
  std::size_t threads = 8;
  // How long the listener waits on a connection, per read or write of a
  // request or an answer, before it closes it: a peer that sends nothing
  // holds a thread for this long, not for civetweb's default 30 s.
  duration request_timeout = std::chrono::seconds(5);
};

// The settings' mistakes, one sentence each joined by "; ", or empty.
[[nodiscard]] std::string validate(const http_listener_settings& settings);

} // namespace bus
