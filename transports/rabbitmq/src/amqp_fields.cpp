#include "amqp_fields.hpp"

#include <string>

#include "amqp_bytes.hpp"

namespace bus::detail {

namespace {

using json = nlohmann::json;

json table_to_json(const amqp_table_t& t) {
  auto out = json::object();
  for (int i = 0; i < t.num_entries; ++i)
    out[text_of(t.entries[i].key)] = field_to_json(t.entries[i].value);
  return out;
}

} // namespace

json field_to_json(const amqp_field_value_t& v) {
  switch (v.kind) {
    case AMQP_FIELD_KIND_UTF8:
    case AMQP_FIELD_KIND_BYTES:
      return text_of(v.value.bytes);
    case AMQP_FIELD_KIND_BOOLEAN:
      return v.value.boolean != 0;
    case AMQP_FIELD_KIND_I8:
      return v.value.i8;
    case AMQP_FIELD_KIND_U8:
      return v.value.u8;
    case AMQP_FIELD_KIND_I16:
      return v.value.i16;
    case AMQP_FIELD_KIND_U16:
      return v.value.u16;
    case AMQP_FIELD_KIND_I32:
      return v.value.i32;
    case AMQP_FIELD_KIND_U32:
      return v.value.u32;
    case AMQP_FIELD_KIND_I64:
      return v.value.i64;
    case AMQP_FIELD_KIND_U64:
    case AMQP_FIELD_KIND_TIMESTAMP:
      return v.value.u64;
    case AMQP_FIELD_KIND_F32:
      return v.value.f32;
    case AMQP_FIELD_KIND_F64:
      return v.value.f64;
    case AMQP_FIELD_KIND_DECIMAL:
      return std::to_string(v.value.decimal.value) + "e-" + std::to_string(v.value.decimal.decimals);
    case AMQP_FIELD_KIND_TABLE:
      return table_to_json(v.value.table);
    case AMQP_FIELD_KIND_ARRAY: {
      auto out = json::array();
      for (int i = 0; i < v.value.array.num_entries; ++i)
        out.push_back(field_to_json(v.value.array.entries[i]));
      return out;
    }
    case AMQP_FIELD_KIND_VOID:
      return nullptr;
  }
  return nullptr;
}

json properties_to_json(const amqp_basic_properties_t& p) {
  auto out = json::object();
  auto text = [&](amqp_flags_t flag, const char* name, amqp_bytes_t value) {
    if (p._flags & flag)
      out[name] = text_of(value);
  };
  text(AMQP_BASIC_CONTENT_TYPE_FLAG, "content_type", p.content_type);
  text(AMQP_BASIC_CONTENT_ENCODING_FLAG, "content_encoding", p.content_encoding);
  if (p._flags & AMQP_BASIC_DELIVERY_MODE_FLAG)
    out["delivery_mode"] = p.delivery_mode;
  if (p._flags & AMQP_BASIC_PRIORITY_FLAG)
    out["priority"] = p.priority;
  text(AMQP_BASIC_CORRELATION_ID_FLAG, "correlation_id", p.correlation_id);
  text(AMQP_BASIC_REPLY_TO_FLAG, "reply_to", p.reply_to);
  text(AMQP_BASIC_EXPIRATION_FLAG, "expiration", p.expiration);
  text(AMQP_BASIC_MESSAGE_ID_FLAG, "message_id", p.message_id);
  if (p._flags & AMQP_BASIC_TIMESTAMP_FLAG)
    out["timestamp"] = p.timestamp;
  text(AMQP_BASIC_TYPE_FLAG, "type", p.type);
  text(AMQP_BASIC_USER_ID_FLAG, "user_id", p.user_id);
  text(AMQP_BASIC_APP_ID_FLAG, "app_id", p.app_id);
  text(AMQP_BASIC_CLUSTER_ID_FLAG, "cluster_id", p.cluster_id);
  return out;
}

rabbitmq_queued_message to_queued_message(const amqp_message_t& m, bool redelivered) {
  rabbitmq_queued_message out;
  out.redelivered = redelivered;
  const auto& p = m.properties;
  if (p._flags & AMQP_BASIC_HEADERS_FLAG)
    for (int i = 0; i < p.headers.num_entries; ++i)
      out.headers.push_back(
        rabbitmq_header{text_of(p.headers.entries[i].key), field_to_json(p.headers.entries[i].value)});
  out.properties = properties_to_json(p);
  out.body = text_of(m.body);
  return out;
}

} // namespace bus::detail
