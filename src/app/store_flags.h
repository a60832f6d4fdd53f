// gantryd's store flags (--store, --sqlite-synchronous, --sqlite-cache-mib,
// --event-retention): AddStoreFlags declares them; OpenStore opens the store they name,
// PostgreSQL shared by replicas or SQLite in the data directory, or says what is wrong.
//
// Thread-safety: call from main before serving.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "store/store.h"

namespace gantry::app {

struct StoreFlags {
  std::string url;  // --store; empty or "sqlite": SQLite in the data directory
  std::string synchronous = "FULL";
  int sqlite_cache_mib = 32;  // store/object_cache.h
  int64_t event_retention = 100000;

  bool postgres() const { return !url.empty() && url != "sqlite"; }
};

struct OpenedStore {
  std::unique_ptr<store::Store> store;
  std::string where;  // for the log: the SQLite file, or the PostgreSQL URL without password
};

void AddStoreFlags(CLI::App& app, StoreFlags& f);
// INVALID_ARGUMENT for a malformed --store URL; what the store says otherwise.
absl::StatusOr<OpenedStore> OpenStore(const StoreFlags& f, const std::string& data_dir,
                                      Metrics& metrics);

}  // namespace gantry::app
