#include "error_queue_admin.hpp"

#include <utility>
#include <vector>

#include "replay_headers.hpp"

namespace bus::ctl {

namespace {

// What busctl reads and selects: the seam's messages, numbered from the
// head of the queue.
std::vector<queued_message> numbered(const rabbitmq_browse& b) {
  std::vector<queued_message> out;
  out.reserve(b.messages().size());
  for (const auto& m : b.messages())
    out.push_back(to_queued_message(m, out.size() + 1));
  return out;
}

} // namespace

error_queue_admin::error_queue_admin(rabbitmq_settings settings,
                                     std::unique_ptr<rabbitmq_admin> admin)
    : settings_(std::move(settings)), admin_(std::move(admin)) {}

error_queue_admin::~error_queue_admin() = default;

result<std::unique_ptr<error_queue_admin>>
error_queue_admin::connect(const rabbitmq_settings& settings) {
  auto admin = rabbitmq_admin::connect(settings);
  if (!admin)
    return admin.error();
  return std::unique_ptr<error_queue_admin>(
    new error_queue_admin(settings, std::move(*admin)));
}

error error_queue_admin::explain(error e, const std::string& queue) const {
  if (e.code == errc::unknown_queue)
    e.message = "no queue '" + queue + "' on " + settings_.describe()
                + " (is the endpoint name right? its error queue is ENDPOINT_error unless "
                  "--queue names another)";
  return e;
}

result<queue_listing> error_queue_admin::peek(const std::string& queue, std::size_t limit) {
  auto browse = admin_->browse(queue, limit);
  if (!browse)
    return explain(browse.error(), queue);
  queue_listing out;
  out.queue = queue;
  out.consumers = browse->consumers();
  out.truncated = browse->truncated();
  out.messages = numbered(*browse);
  // Whether or not the broker answers, nothing was acknowledged: every
  // message goes back (at the latest when the connection closes).
  browse->give_back();
  return out;
}

result<replay_report> error_queue_admin::replay(const std::string& queue, std::size_t limit,
                                                const selector& which,
                                                const std::string& endpoint_queue,
                                                time_point now,
                                                const std::optional<std::string>& to) {
  auto browse = admin_->browse(queue, limit);
  if (!browse)
    return explain(browse.error(), queue);
  auto messages = numbered(*browse);
  auto chosen = select(messages, which);

  replay_report report;
  report.queue = queue;
  report.consumers = browse->consumers();
  report.truncated = browse->truncated();
  report.unknown_ids = chosen.unknown_ids;
  std::string stopped; // why the remaining ones were not attempted
  bool acked_any = false;
  for (auto index : chosen.chosen) {
    const auto& m = messages[index];
    auto destination = replay_destination(m, endpoint_queue, to);
    if (!stopped.empty()) {
      report.failed.push_back({m.id, destination, "not attempted: " + stopped});
      continue;
    }
    if (destination == queue) {
      report.failed.push_back(
        {m.id, destination, "its destination is the queue it is on (no original address?)"});
      continue;
    }
    if (auto refusal = replay_refusal(m, destination); !refusal.empty()) {
      report.failed.push_back({m.id, destination, refusal});
      continue;
    }
    rabbitmq_copy_changes changes;
    changes.keep_header = [](std::string_view name) { return kept_on_replay(name); };
    changes.added_headers = replay_additions(m, now, queue);
    if (auto copied = browse->copy_to(index, destination, changes); !copied) {
      report.failed.push_back({m.id, destination, copied.error().message});
      if (!browse->can_publish())
        stopped = copied.error().message;
      continue;
    }
    // Confirmed: the copy is safe on the destination, the original may go.
    if (auto acked = browse->ack(index); !acked) {
      report.replayed.push_back({m.id, destination, {}});
      report.warning = "lost the connection before removing replayed messages from '" + queue
                       + "' (" + acked.error().message + "): they are on both queues now";
      stopped = "connection lost";
      continue;
    }
    acked_any = true;
    report.replayed.push_back({m.id, destination, {}});
  }
  // The close is answered only after the broker processed the acks before it.
  if (!browse->give_back() && acked_any && report.warning.empty())
    report.warning = "the broker did not confirm the removal of the replayed messages from '"
                     + queue + "': some may be on both queues now";
  return report;
}

result<purge_report> error_queue_admin::purge(const std::string& queue, std::size_t limit,
                                              const selector& which) {
  purge_report report;
  report.queue = queue;

  if (std::holds_alternative<every_message>(which) && limit == 0) {
    auto depth = admin_->depth(queue);
    if (!depth)
      return explain(depth.error(), queue);
    report.consumers = depth->consumers;
    auto purged = admin_->purge(queue);
    if (!purged)
      return explain(purged.error(), queue);
    report.purged = *purged;
    return report;
  }

  auto browse = admin_->browse(queue, limit);
  if (!browse)
    return explain(browse.error(), queue);
  report.consumers = browse->consumers();
  report.truncated = browse->truncated();
  auto messages = numbered(*browse);
  auto chosen = select(messages, which);
  report.unknown_ids = chosen.unknown_ids;
  for (auto index : chosen.chosen) {
    if (auto acked = browse->ack(index); !acked) {
      report.warning = "lost the connection while deleting (" + acked.error().message
                       + "): the messages not listed as purged are still on '" + queue + "'";
      break;
    }
    report.ids.push_back(messages[index].id);
  }
  report.purged = report.ids.size();
  if (!browse->give_back() && report.purged > 0 && report.warning.empty())
    report.warning = "the broker did not confirm the deletion: some of the messages listed as "
                     "purged may still be on '"
                     + queue + "'";
  return report;
}

} // namespace bus::ctl
