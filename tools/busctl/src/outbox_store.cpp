#include "outbox_store.hpp"

#include <filesystem>
#include <memory>
#include <system_error>

#include "bus/postgres_store.hpp"
#include "bus/sqlite_store.hpp"

namespace bus::ctl {

namespace {

result<std::shared_ptr<message_store>> open_sqlite(const std::string& path) {
  // sqlite_store::open() creates a missing file: right for a bus, wrong for
  // a reader, for whom a typo would then show an empty outbox.
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return error{errc::store_failure,
                 "sqlite '" + path + "': " + (ec ? ec.message() : std::string("no such file"))
                     + " (busctl reads a store, it does not create one)"};
  auto store = sqlite_store::open({path});
  if (!store)
    return store.error();
  return std::shared_ptr<message_store>(std::move(*store));
}

result<std::shared_ptr<message_store>> open_postgres(const std::string& conninfo) {
  auto store = postgres_store::open({conninfo});
  if (!store)
    return store.error();
  return std::shared_ptr<message_store>(std::move(*store));
}

} // namespace

result<outbox_report> read_outbox(const command_line& cl) {
  auto store = cl.sqlite ? open_sqlite(*cl.sqlite) : open_postgres(cl.postgres.value_or(""));
  if (!store)
    return store.error();
  auto backlog = (*store)->backlog();
  if (!backlog)
    return backlog.error();
  return outbox_report{std::string((*store)->name()), cl.sqlite, std::move(*backlog)};
}

} // namespace bus::ctl
