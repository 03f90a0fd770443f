// Builders for error-queue messages in busctl's unit tests: a message as
// the bus writes it to an error queue, with only what a test names.
#pragma once

#include <string>

#include "bus/header_names.hpp"
#include "queued_message.hpp"

namespace bus::ctl::test {

struct failed_message {
  std::string id;
  std::string type = "order_placed";
  std::string exception = "std::out_of_range";
  std::string at = "2026-11-22T18:00:00.000Z";
  std::string original_address = "billing";
};

inline queued_message make_message(const failed_message& f, std::size_t position = 1) {
  queued_message m;
  m.position = position;
  m.id = f.id;
  m.headers = {
    {std::string(header::message_id), f.id},
    {std::string(header::message_type), f.type},
    {std::string(header::fault_exception_type), f.exception},
    {std::string(header::fault_message), "it broke"},
    {std::string(header::fault_at), f.at},
    {std::string(header::fault_original_address), f.original_address},
    {std::string(header::fault_immediate_retries), "2"},
    {std::string(header::fault_delivery_count), "1"},
  };
  m.body = R"({"order_id":")" + f.id + R"("})";
  return m;
}

} // namespace bus::ctl::test
