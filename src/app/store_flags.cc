#include "app/store_flags.h"

#include <filesystem>
#include <utility>

#include "store/postgres/postgres_store.h"
#include "store/sqlite/sqlite_store.h"

namespace gantry::app {

void AddStoreFlags(CLI::App& app, StoreFlags& f) {
  app.add_option("--store", f.url,
                 "postgres://USER:PASSWORD@HOST/DB for a PostgreSQL store shared by several "
                 "replicas (default: SQLite in --data-dir)");
  app.add_option("--sqlite-cache-mib", f.sqlite_cache_mib,
                 "Memory for the texts of objects read recently (SQLite), so that reading one "
                 "again needs no database transaction; 0: off")
      ->check(CLI::Range(0, 65536))
      ->capture_default_str();
  app.add_option("--sqlite-synchronous", f.synchronous,
                 "FULL: acknowledged writes survive power loss; NORMAL: survive a crash of gantryd")
      ->check(CLI::IsMember({"FULL", "NORMAL"}))
      ->capture_default_str();
  app.add_option("--event-retention", f.event_retention,
                 "Changes kept for watch resumption; older resourceVersions get 410 Expired")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}))
      ->capture_default_str();
}

absl::StatusOr<OpenedStore> OpenStore(const StoreFlags& f, const std::string& data_dir,
                                      Metrics& metrics) {
  if (f.postgres()) {
    store::PostgresOptions options;
    options.url = f.url;
    options.event_retention = f.event_retention;
    options.metrics = &metrics;
    auto pg = store::PostgresStore::Open(options);
    if (!pg.ok()) return pg.status();
    return OpenedStore{std::move(*pg), store::PostgresStore::Redacted(f.url)};
  }
  store::SqliteOptions options;
  options.path = (std::filesystem::path(data_dir) / "gantry.db").string();
  options.synchronous = f.synchronous;
  options.event_retention = f.event_retention;
  options.metrics = &metrics;
  options.object_cache_bytes = static_cast<size_t>(f.sqlite_cache_mib) << 20;
  auto sqlite = store::SqliteStore::Open(options);
  if (!sqlite.ok()) return sqlite.status();
  return OpenedStore{std::move(*sqlite), options.path};
}

}  // namespace gantry::app
