// Where the RabbitMQ transport connects and how it lays its topology out on
// the broker: built in code, or parsed from an amqp:// or amqps:// URL given
// directly, in an environment variable or in a file. The password never
// leaves this struct as text: describe() and every error message redact it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bus/error.hpp"

namespace bus {

// The queue type of the queues declare_queue() creates.
// - classic (the default): a requeued message goes back to the head of its
//   queue, the order the transport contract (and its conformance suite)
//   asks for. No replication, no redelivery count of the broker's own.
// - quorum: replicated (survives the loss of a cluster node) and counts
//   redeliveries itself (x-delivery-count, capabilities().native_delivery_count),
//   but RabbitMQ 3.10 puts a requeued message behind the ones waiting.
// The delay levels are quorum queues whatever this says (docs/rabbitmq.md).
enum class rabbitmq_queue_type { classic, quorum };

// One node of a cluster: where to connect when the ones before it fail.
struct rabbitmq_node {
  std::string host;
  std::uint16_t port = 5672;
};

enum class rabbitmq_log_level { debug, info, warn, error };

// Receives the transport's log lines (connection lost, reconnected, a
// consumer cancelled by the broker, ...). Called from the transport's I/O
// threads; it must be thread-safe and should not block. Whatever it throws
// is swallowed: logging never breaks the transport.
using rabbitmq_log_sink = std::function<void(rabbitmq_log_level, const std::string& line)>;

struct rabbitmq_settings {
  // amqp://user:password@host:port/vhost
  std::string host = "localhost";
  std::uint16_t port = 5672;
  std::string vhost = "/";
  std::string user = "guest";
  std::string password = "guest"; // never logged; describe() leaves it out
  // More nodes of the same cluster (amqp://u:p@h1:5672,h2:5673/vhost).
  // Each connect (the first one and each reconnect after a loss, with the
  // backoff below between rounds) tries host:port first and then these, in
  // order, and takes the first that logs in: a node killed with kill -9
  // refuses at once, so its followers are reached without waiting. The
  // user, password, vhost and TLS settings are the same for all of them.
  std::vector<rabbitmq_node> failover_nodes;

  // amqps://: TLS through rabbitmq-c's OpenSSL socket. The broker's
  // certificate is verified by default; turning that off is for a test
  // bench only and says so in describe().
  bool tls = false;
  std::string ca_cert_file;     // PEM the broker's chain must end in; empty: the system's bundle
  std::string client_cert_file; // PEM, for brokers that want a client certificate; empty: none
  std::string client_key_file;  // its private key; set both or neither
  bool verify_peer = true;      // the certificate chains to a trusted CA ...
  bool verify_hostname = true;  // ... and names `host`

  // Heartbeats find a dead broker or a dead network: a connection with no
  // traffic for twice this long is closed and reconnected. 0 turns them off.
  std::chrono::seconds heartbeat{10};
  // TCP connect, TLS handshake and AMQP login, each.
  std::chrono::milliseconds connect_timeout{5000};
  // The longest any call waits: a declaration's reply, a publisher confirm,
  // a reconnect that a send or a consume waits for. Past it the call fails
  // with errc::transport_failure instead of hanging.
  std::chrono::milliseconds operation_timeout{10000};
  // A publish unconfirmed this long makes the publisher suspect its channel
  // (a quorum queue's leader died and RabbitMQ 3.10 dropped what the channel
  // sent it). It then asks the broker on a fresh channel whether it still
  // reads this connection, and moves to that channel, publishing everything
  // unconfirmed again, only if the broker answers and the old channel then
  // confirms nothing sent before the question for half this time again. A
  // network pause or a slow broker is waited out instead: nothing is
  // published twice for it. 0: a quarter of operation_timeout, at least 1 s.
  std::chrono::milliseconds confirm_stall_timeout{0};
  // After a connection loss: the first retry comes after the minimum, each
  // failed one doubles the wait, up to the maximum (with +-20% jitter, so
  // that many processes do not reconnect in lockstep).
  std::chrono::milliseconds reconnect_delay_min{250};
  std::chrono::milliseconds reconnect_delay_max{4000};

  rabbitmq_queue_type queue_type = rabbitmq_queue_type::classic;

  // Quorum queues only: every endpoint, error and skipped queue is declared
  // with x-delivery-limit = delivery_limit and dead-letters (at least once,
  // x-overflow=reject-publish) to the endpoint's error queue, which the bus
  // names as it declares them (queue_options::dead_letter_queue), whatever
  // that queue is called. Only a queue declared without one (declare_queue
  // from a tool of your own) falls back to names: the queue name with
  // `error_queue_suffix` appended (a skipped queue, a name ending in
  // skipped_queue_suffix, to the error queue of its endpoint; an error
  // queue into itself).
  // The broker counts a delivery that returns unsettled: a consumer crash,
  // a lost connection, a reject with requeue. The bus's own retries never
  // count (docs/rabbitmq.md, "Quorum queues and the delivery limit"). So a
  // message whose consumer crashes delivery_limit + 1 times in a row lands
  // on the error queue with x-death reason "delivery_limit", never dropped.
  // Explicit, because RabbitMQ 4.0 sets 20 by default and drops the message
  // at the limit when no dead-letter target is set. Ignored for classic.
  std::int64_t delivery_limit = 20;
  std::string error_queue_suffix = "_error";
  std::string skipped_queue_suffix = "_skipped";

  // Delayed delivery through binary delay levels (docs/rabbitmq.md): level k
  // holds messages 2^k units; the longest delay is (2^delay_levels - 1)
  // units, and a delay is rounded up to whole units, never down. The
  // defaults (28 levels of 1 s, about 8.5 years) are NServiceBus's. Every
  // process on one broker that sends delayed messages to each other's
  // queues must use the same two values: they name the level queues.
  std::chrono::milliseconds delay_unit{1000};
  unsigned delay_levels = 28;

  // The broker's management API (the rabbitmq_management plugin), for what
  // AMQP cannot see: a delay level that holds messages past their delay and
  // does not forward them, which RabbitMQ can leave behind after a leader
  // change (docs/rabbitmq.md, "Stranded delay levels"). "http://host:15672"
  // or https, no user info: the API is asked as `user` with `password`
  // (the management or monitoring tag is enough). Empty: not watched.
  std::string management_url;
  // How often the levels are looked at through it, and how long past a
  // level's TTL its held messages may go without moving before the level
  // counts as stranded (the API's figures are up to 5 s old).
  std::chrono::milliseconds level_watch_interval{15000};
  std::chrono::milliseconds stranded_margin{30000};

  // Shown by `rabbitmqctl list_connections name client_properties`, with
  // " publisher" or " consumer" appended.
  std::string connection_name = "bus";

  // Empty: warnings and errors go to stderr.
  rabbitmq_log_sink log;

  // "amqp://guest@localhost:5672/%2F": the URL without the password, for
  // log lines and error messages (every node, comma-separated).
  [[nodiscard]] std::string describe() const;
  // host:port followed by failover_nodes: the order connects try them in.
  [[nodiscard]] std::vector<rabbitmq_node> nodes() const;

  // Every mistake at once, in one error (errc::invalid_configuration), or
  // nothing.
  [[nodiscard]] result<void> validate() const;
};

// Parses amqp[s]://[user[:password]@]host[:port][,host[:port]...][/vhost][?key=value&...]
// over the defaults above. As in RabbitMQ's URI spec: user, password and
// vhost are percent-decoded, so the vhost "/" is written %2F; an empty or
// missing vhost means "/" too. amqps switches TLS on and the default port
// to 5671. Query keys (RabbitMQ's own names where they exist):
//   heartbeat=<s>  connection_timeout=<ms>  operation_timeout=<ms>  confirm_stall_timeout=<ms>
//   cacertfile=<path>  certfile=<path>  keyfile=<path>
//   verify=verify_peer|verify_none  verify_hostname=true|false
//   queue_type=quorum|classic  delay_unit=<ms>  delay_levels=<n>
//   reconnect_delay_min=<ms>  reconnect_delay_max=<ms>  connection_name=<text>
//   delivery_limit=<n>  error_queue_suffix=<text>  skipped_queue_suffix=<text>
//   management_url=<http[s]://host:port>  level_watch_interval=<ms>  stranded_margin=<ms>
// Several comma-separated hosts are the cluster's nodes: the first is
// host:port, the others failover_nodes, each with the scheme's default port
// unless it gives its own.
// An unknown key, a bad number or a bad scheme is an error that quotes the
// URL with its password redacted. The result is validated.
[[nodiscard]] result<rabbitmq_settings> parse_rabbitmq_url(std::string_view url);

// parse_rabbitmq_url of the environment variable `variable`; an error if it
// is unset or empty.
[[nodiscard]] result<rabbitmq_settings>
rabbitmq_settings_from_env(const char* variable = "BUS_RABBITMQ_URL");

// parse_rabbitmq_url of the first line of `path` that is neither blank nor
// a '#' comment. A file keeps the password out of the process environment
// and the command line.
[[nodiscard]] result<rabbitmq_settings> rabbitmq_settings_from_file(const std::string& path);

// The value of `key` in a KEY=VALUE file written for a shell to source,
// such as the broker.env of scripts/rabbitmq-test-broker.sh: a value is
// taken as it stands, from inside single quotes (where '\'' stands for one
// quote), or from inside double quotes (where \" and \\ stand for " and \).
// The last line that sets `key` wins, as in a shell; blank and '#' lines
// are skipped. errc::invalid_configuration if the file cannot be read, has
// no such key, or a quote is never closed.
[[nodiscard]] result<std::string> env_file_value(const std::string& path, const std::string& key);

// `url` with the password part of its user info replaced by "***". Safe
// for anything that looks like a URL, including a malformed one.
[[nodiscard]] std::string redact_url(std::string_view url);

} // namespace bus
