#include "management_api.hpp"

#include <mutex>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include "percent_encoding.hpp"

namespace bus::detail {

struct management_api::curl_state {
  CURL* handle = nullptr;
  char error[CURL_ERROR_SIZE] = {};
};

namespace {

// libcurl's global state, set up once for the process before any handle
// (thread-safe since 7.84; Debian 12 has 7.88, this keeps older ones right).
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::size_t append(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// libcurl's progress callback: a non-zero answer ends the transfer.
int abort_if_asked(void* abort, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(abort)->load() ? 1 : 0;
}

std::uint64_t count_of(const nlohmann::json& item, const char* key) {
  auto it = item.find(key);
  return it != item.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

} // namespace

management_api::management_api(const rabbitmq_settings& settings, const std::atomic<bool>& abort)
    : base_(settings.management_url), user_(settings.user), password_(settings.password),
      vhost_(settings.vhost), timeout_ms_(static_cast<long>(settings.operation_timeout.count())),
      abort_(abort), curl_(std::make_unique<curl_state>()) {
  while (!base_.empty() && base_.back() == '/')
    base_.pop_back();
  init_curl_once();
  curl_->handle = curl_easy_init();
}

management_api::~management_api() {
  if (curl_->handle != nullptr)
    curl_easy_cleanup(curl_->handle);
}

result<std::string> management_api::get(const std::string& path) {
  auto fail = [&](const std::string& why) -> result<std::string> {
    return error{errc::transport_failure, "the management API at " + base_ + ": " + why};
  };
  CURL* h = curl_->handle;
  if (h == nullptr)
    return fail("libcurl could not make a handle");
  std::string body;
  curl_easy_reset(h);
  curl_->error[0] = '\0';
  curl_easy_setopt(h, CURLOPT_URL, (base_ + path).c_str());
  curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
  curl_easy_setopt(h, CURLOPT_USERNAME, user_.c_str()); // apart: a ':' in either is fine
  curl_easy_setopt(h, CURLOPT_PASSWORD, password_.c_str());
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms_);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); // timeouts without SIGALRM: threads are about
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_->error);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &append);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &abort_if_asked);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &abort_);
  auto code = curl_easy_perform(h);
  if (code != CURLE_OK)
    return fail(curl_->error[0] != '\0' ? curl_->error : curl_easy_strerror(code));
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  if (status == 401)
    return fail("refused the user (401): it needs the management or monitoring tag");
  if (status != 200)
    return fail("answered HTTP " + std::to_string(status) + " to GET " + path);
  return body;
}

result<std::vector<level_sample>> management_api::queues_named(const std::string& prefix) {
  // A page of the names containing `prefix`: one request however many
  // queues the vhost has. Without the rate statistics, the cheap form for
  // large brokers, with the totals kept (3.10's `columns` would drop them).
  auto body = get("/api/queues/" + percent_encode(vhost_)
                  + "?page=1&page_size=500&name=" + percent_encode(prefix)
                  + "&use_regex=false&disable_stats=true&enable_queue_totals=true");
  if (!body)
    return body.error();
  auto doc = nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("items") || !doc["items"].is_array())
    return error{errc::transport_failure,
                 "the management API at " + base_ + " answered something that is not a page "
                 "of queues"};
  std::vector<level_sample> out;
  for (const auto& item : doc.at("items")) {
    if (!item.is_object() || !item.contains("name") || !item.at("name").is_string())
      continue;
    auto name = item.at("name").get<std::string>();
    if (name.compare(0, prefix.size(), prefix) != 0)
      continue; // the API matches anywhere in the name
    level_sample s;
    s.queue = std::move(name);
    s.messages = count_of(item, "messages");
    s.ready = count_of(item, "messages_ready");
    if (auto it = item.find("leader"); it != item.end() && it->is_string())
      s.leader = it->get<std::string>();
    out.push_back(std::move(s));
  }
  return out;
}

} // namespace bus::detail
