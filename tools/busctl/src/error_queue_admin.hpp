// The broker operations of busctl on one queue: read every message without
// taking it away, replay a selection to its original queue with publisher
// confirms, delete a selection. Built on the transport's public admin seam
// (bus/rabbitmq_admin.hpp): one connection, owned by the calling thread,
// with the transport's connection code (timeouts, TLS, errors that name the
// broker without its password).
//
// Reading is a browse: the messages are taken without acknowledgement, then
// given back, in their places on a classic queue (docs/busctl.md has the
// limits).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "bus/error.hpp"
#include "bus/rabbitmq_admin.hpp"
#include "bus/rabbitmq_settings.hpp"
#include "bus/time.hpp"
#include "reports.hpp"
#include "selection.hpp"

namespace bus::ctl {

class error_queue_admin {
public:
  // Connects and logs in, within the settings' connect timeout.
  // errc::transport_failure when the broker is unreachable or refuses the
  // login (the message says which, and never contains the password).
  [[nodiscard]] static result<std::unique_ptr<error_queue_admin>>
  connect(const rabbitmq_settings& settings);

  ~error_queue_admin();
  error_queue_admin(const error_queue_admin&) = delete;
  error_queue_admin& operator=(const error_queue_admin&) = delete;

  // Errors of the operations below: errc::unknown_queue if `queue` does not
  // exist; errc::transport_failure if the broker or the connection failed.
  // `limit` 0 reads the whole queue, else at most that many from its head.

  // Every message of `queue`, head first; all of them stay on the queue.
  [[nodiscard]] result<queue_listing> peek(const std::string& queue, std::size_t limit);

  // Each selected message is published to its destination (`to` if given,
  // else its original address, else `endpoint_queue`) with the replay
  // headers (replay_headers.hpp); one read from a stream is not sent back
  // into it (it is listed as failed, with the reason, and stays),
  // and removed from `queue` only once the broker confirmed the copy: a
  // failure at any point leaves it on `queue`, never on neither. Publishes
  // one at a time, each waiting for its confirm.
  [[nodiscard]] result<replay_report> replay(const std::string& queue, std::size_t limit,
                                             const selector& which,
                                             const std::string& endpoint_queue, time_point now,
                                             const std::optional<std::string>& to = {});

  // Deletes the selected messages. --all without a limit is the broker's
  // queue.purge (it counts, it does not list); anything else reads the
  // queue and acknowledges the selected messages.
  [[nodiscard]] result<purge_report> purge(const std::string& queue, std::size_t limit,
                                           const selector& which);

private:
  error_queue_admin(rabbitmq_settings settings, std::unique_ptr<rabbitmq_admin> admin);
  // The seam's errors, with a hint for the operator where it helps.
  [[nodiscard]] error explain(error e, const std::string& queue) const;

  rabbitmq_settings settings_;
  std::unique_ptr<rabbitmq_admin> admin_;
};

} // namespace bus::ctl
