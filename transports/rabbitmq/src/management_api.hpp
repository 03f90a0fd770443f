// The RabbitMQ management API (the rabbitmq_management plugin), over
// libcurl: what AMQP cannot tell of a queue, such as the messages a quorum
// queue holds that are not ready and the node that leads it. Read-only.
// One instance per thread: it keeps its curl handle and connection.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "bus/error.hpp"
#include "bus/rabbitmq_settings.hpp"
#include "stranded_levels.hpp"

namespace bus::detail {

class management_api {
public:
  // Asks `settings.management_url` as settings.user, waiting at most
  // settings.operation_timeout per request; a request in progress gives up
  // as soon as `abort` turns true (the owner is being destroyed).
  management_api(const rabbitmq_settings& settings, const std::atomic<bool>& abort);
  ~management_api();
  management_api(const management_api&) = delete;
  management_api& operator=(const management_api&) = delete;

  // The quorum queues of the settings' vhost whose names start with
  // `prefix`, with their counts and leaders. errc::transport_failure when the
  // API cannot be reached or refuses (the message says which, never the
  // password).
  [[nodiscard]] result<std::vector<level_sample>> queues_named(const std::string& prefix);

  // "http://host:15672": where it asks, for messages.
  [[nodiscard]] const std::string& base() const noexcept { return base_; }

private:
  [[nodiscard]] result<std::string> get(const std::string& path);

  std::string base_;
  std::string user_;
  std::string password_;
  std::string vhost_;
  long timeout_ms_;
  const std::atomic<bool>& abort_;
  struct curl_state;
  std::unique_ptr<curl_state> curl_;
};

} // namespace bus::detail
