// SqliteStore: the embedded Store on one SQLite file in WAL mode.
//
// Layout (migrations in sqlite_store.cc, versioned with PRAGMA user_version):
//   objects(id, kind, namespace, name, rv, labels, phase, ref_name, search, body)
//     id orders objects by creation (newest first = id DESC); labels/phase/ref_name/search
//     are copies of fields of body so selectors run inside SQLite.
//   events(rv, type, kind, namespace, name, body)   history for watch, compacted to a window
//   revisions(kind, namespace, name, revision, created, spec)
//   meta(key, value)                                 compaction watermark
//
// Durability: every Commit is one transaction; with synchronous=FULL (the default) an
// acknowledged write survives power loss, with NORMAL it survives a crash of gantryd.
//
// Thread-safety: one writer connection behind write_mu_; a pool of reader connections.
#pragma once

#include <sqlite3.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "store/store.h"

namespace gantry::store {

struct SqliteOptions {
  std::string path;                  // the database file
  std::string synchronous = "FULL";  // FULL or NORMAL
  int64_t event_retention = 100000;  // events kept for watch resumption
};

class SqliteStore final : public Store {
 public:
  // Opens (creating if needed) and migrates the database. INVALID_ARGUMENT for bad options,
  // UNAVAILABLE when the file cannot be opened or is not a Gantry database.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const SqliteOptions& options);
  ~SqliteStore() override;

  absl::StatusOr<boost::json::object> Get(const std::string& kind, const std::string& ns,
                                          const std::string& name) override;
  absl::StatusOr<ListResult> List(const ListOptions& options) override;
  absl::StatusOr<std::vector<boost::json::object>> Commit(
      std::vector<Write> writes, Durability durability = Durability::kDurable) override;
  absl::StatusOr<std::vector<Event>> EventsSince(int64_t after, size_t max) override;
  int64_t CurrentResourceVersion() override;
  absl::StatusOr<std::vector<Revision>> ListRevisions(const std::string& kind,
                                                      const std::string& ns,
                                                      const std::string& name) override;
  absl::StatusOr<Revision> GetRevision(const std::string& kind, const std::string& ns,
                                       const std::string& name, int64_t revision) override;
  absl::StatusOr<int64_t> Count(const std::string& kind, std::optional<std::string> ns,
                                const std::vector<FieldFilter>& fields) override;
  void SetCommitObserver(std::function<void(const std::vector<Event>&)> observer) override;
  absl::Status Ping() override;

 private:
  class Reader;  // RAII lease of a reader connection
  explicit SqliteStore(SqliteOptions options);
  absl::Status Init();
  absl::StatusOr<sqlite3*> OpenConnection(bool writer);
  Reader AcquireReader();
  void ReleaseReader(sqlite3* db);
  absl::Status ApplyWrite(Write& w, int64_t rv, std::vector<Event>* events,
                          boost::json::object* stored) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  void MaybeCompact() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);

  // Constant after construction.
  const SqliteOptions options_;

  std::mutex write_mu_;
  sqlite3* writer_ ABSL_GUARDED_BY(write_mu_) = nullptr;
  int64_t last_rv_ ABSL_GUARDED_BY(write_mu_) = 0;
  int64_t commits_since_compaction_ ABSL_GUARDED_BY(write_mu_) = 0;
  absl::Status sticky_error_ ABSL_GUARDED_BY(write_mu_);
  std::function<void(const std::vector<Event>&)> observer_;  // set before the first write

  std::mutex readers_mu_;
  std::vector<sqlite3*> idle_readers_ ABSL_GUARDED_BY(readers_mu_);
  std::vector<sqlite3*> all_readers_ ABSL_GUARDED_BY(readers_mu_);

  // Published under write_mu_, read without it.
  std::atomic<int64_t> current_rv_{0};
  std::atomic<int64_t> compacted_through_{0};
};

}  // namespace gantry::store
