// The RabbitMQ transport's error_queue_access (bus/failed_messages.hpp),
// what the bus's page reads, replays and deletes through. Built on the
// admin seam (bus/rabbitmq_admin.hpp), on a connection of its own: opened
// at the first call, not with the transport (a bus whose page nobody opens
// holds no third connection), opened again after a failure, used by one
// call at a time.
//
// Reading is a browse given back at once: on a classic queue the messages
// return to their places; a quorum queue counts each read as a delivery
// (the bus declares its quorum error queues without a delivery limit, so
// nothing is dead-lettered) and puts them behind the others. Since the page
// polls, a read is answered from the last one while the queue's depth has
// not changed and the last read is younger than `fresh_for`; a replay or a
// purge through here forgets it.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bus/failed_messages.hpp"
#include "bus/rabbitmq_admin.hpp"
#include "bus/rabbitmq_settings.hpp"

namespace bus::detail {

// The failed message a browse read at `queue`: its id is bus-message-id,
// else the AMQP message-id property; its type bus-message-type, else the
// AMQP type property; headers that are not text are written as JSON.
[[nodiscard]] failed_message failed_message_of(const rabbitmq_queued_message& m,
                                               const std::string& queue);

class rabbitmq_error_queues final : public error_queue_access {
public:
  explicit rabbitmq_error_queues(rabbitmq_settings settings,
                                 std::chrono::seconds fresh_for = std::chrono::seconds(30));
  ~rabbitmq_error_queues() override;

  result<std::vector<failed_message>> read(const std::string& queue, std::size_t limit) override;
  // One message at a time: its copy published with a confirm, then the
  // original acknowledged (removed).
  result<std::size_t> replay(const std::string& queue, const failed_selector& selected,
                             const std::string& fallback, time_point now) override;
  // Acknowledges the selected messages of a browse.
  result<std::size_t> purge(const std::string& queue, const failed_selector& selected) override;

  // How many reads went to the broker (the others were answered from the
  // last one): for tests.
  [[nodiscard]] std::size_t browses() const;

private:
  struct last_read {
    std::size_t limit = 0;
    rabbitmq_queue_depth depth;
    std::chrono::steady_clock::time_point at;
    std::vector<failed_message> messages;
  };

  // The connection, opened if it is not; the caller holds mutex_.
  [[nodiscard]] result<rabbitmq_admin*> admin();
  // A browse of `queue` and its messages as failed_message.
  struct browsed;
  [[nodiscard]] result<browsed> browse(const std::string& queue, std::size_t limit);

  const rabbitmq_settings settings_;
  const std::chrono::seconds fresh_for_;
  mutable std::mutex mutex_;
  std::unique_ptr<rabbitmq_admin> admin_;
  std::map<std::string, last_read> reads_;
  std::size_t browses_ = 0;
};

} // namespace bus::detail
