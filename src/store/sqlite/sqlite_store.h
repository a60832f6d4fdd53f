// SqliteStore: the embedded Store on one SQLite file in WAL mode.
//
// Layout (migrations in sqlite_store.cc, versioned with PRAGMA user_version):
//   objects(id, kind, namespace, name, rv, labels, phase, ref_name, search, body)
//     id orders objects by creation (newest first = id DESC); labels/phase/ref_name/search
//     are copies of fields of body so selectors run inside SQLite.
//   label_index(kind, key, value, id)                one row per string label (sqlite_query.h)
//   events(rv, type, kind, namespace, name, body)   history for watch, compacted to a window
//   revisions(kind, namespace, name, revision, created, spec)
//   meta(key, value)                                 compaction watermark
//
// Group commit (store/group_commit.h): concurrent Commit calls queue. The caller at the head
// of the queue (the leader, as in LevelDB's DBImpl::Write) takes every call queued behind it
// (up to kMaxBatch), commits them in ONE transaction, with one fsync, giving them consecutive
// resourceVersions in queue order, then acknowledges each and hands the queue to the next
// leader. Each call's writes run inside their own SAVEPOINT: a call that fails its checks
// (409, 404, 400...) is rolled back to it and fails alone; the others commit. A call is
// answered only after the transaction is committed (with synchronous=FULL, the default,
// after the WAL is flushed). The batch is flushed unless every call in it is relaxed.
// The commit observer gets each call's events, in resourceVersion order, after the commit.
//
// Reads of one object (Get, GetText) are answered from an ObjectCache (store/object_cache.h)
// when the object was read before: after its COMMIT and before any of its calls is
// acknowledged, a batch puts the text it wrote into the entries of the objects it wrote that
// were cached (so a read after a write, the engine's usual step, still hits), and drops
// those it deleted.
//
// Checkpoints (copying the WAL back into the database file) run on a thread of their own,
// not inside the COMMIT that fills the log (store/sqlite/wal_checkpointer.h).
//
// Metrics (when SqliteOptions::metrics is set): the group commit's (store/group_commit.h).
//
// Durability: with synchronous=FULL an acknowledged write survives power loss, with NORMAL
// it survives a crash of gantryd.
//
// Thread-safety: one writer connection behind write_mu_ (held by a batch's leader); a pool
// of reader connections. Every connection caches its prepared statements.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "store/group_commit.h"
#include "store/object_cache.h"
#include "store/sqlite/sqlite_db.h"
#include "store/sqlite/wal_checkpointer.h"
#include "store/store.h"

namespace gantry::store {

struct SqliteOptions {
  std::string path;                  // the database file
  std::string synchronous = "FULL";  // FULL or NORMAL
  int64_t event_retention = 100000;  // events kept for watch resumption
  Metrics* metrics = nullptr;        // the group commit's figures; must outlive the store
  // The texts of objects read recently (store/object_cache.h), at most this many bytes; 0:
  // every read is a database transaction.
  size_t object_cache_bytes = size_t{32} << 20;
};

class SqliteStore final : public Store {
 public:
  // Opens (creating if needed) and migrates the database. INVALID_ARGUMENT for bad options,
  // UNAVAILABLE when the file cannot be opened or is not a Gantry database.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const SqliteOptions& options);
  ~SqliteStore() override;

  absl::StatusOr<boost::json::object> Get(const std::string& kind, const std::string& ns,
                                          const std::string& name) override;
  absl::StatusOr<std::string> GetText(const std::string& kind, const std::string& ns,
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

  GroupCommitStats CommitStats();
  ObjectCacheStats CacheStats();
  sqlite::WalCheckpointer::Stats CheckpointStats();

  // The most Commit calls one transaction takes.
  static constexpr size_t kMaxBatch = 128;

 private:
  class Reader;    // RAII lease of a reader connection
  struct Current;  // the stored row a write replaces
  explicit SqliteStore(SqliteOptions options);
  absl::Status Init();
  // Calls `use` with the stored body of one object (valid during the call only): the one
  // query of Get and GetText. NOT_FOUND as Get.
  absl::Status ReadBody(const std::string& kind, const std::string& ns, const std::string& name,
                        absl::FunctionRef<void(std::string_view body)> use);
  absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::StatusOr<std::unique_ptr<sqlite::Connection>> OpenConnection(bool writer);
  Reader AcquireReader();
  void ReleaseReader(sqlite::Connection* conn);

  // Commits a batch of the queue in one transaction; returns how many calls it committed.
  size_t CommitBatch(const std::vector<PendingCommit*>& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::Status ApplyCall(PendingCommit& call, int64_t* rv, bool* broken)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Applies one write at `rv` and adds its event (with the object as stored) to `events`.
  absl::Status ApplyWrite(Write& w, int64_t rv, std::vector<Event>* events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::StatusOr<Current> ReadCurrent(const Write& w, const std::string& ns,
                                      const std::string& name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::Status ApplyPut(Write& w, int64_t rv, std::vector<Event>* events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::Status ApplyDelete(Write& w, int64_t rv, std::vector<Event>* events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::Status ApplyRevision(const Write& w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  void MaybeCompact() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // After a batch's COMMIT (`committed`) or its failure: each object the batch wrote keeps
  // its cached entry with the text written (ObjectCache::Refresh), or loses it when it was
  // deleted or the commit failed; then forgets the batch's texts.
  void UpdateCache(bool committed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);

  // Constant after construction.
  const SqliteOptions options_;

  GroupCommitQueue queue_;
  ObjectCache cache_;

  std::mutex write_mu_;
  std::unique_ptr<sqlite::Connection> writer_ ABSL_GUARDED_BY(write_mu_);
  std::unique_ptr<sqlite::WalCheckpointer> checkpointer_;  // set by Init, hooks writer_
  int64_t last_rv_ ABSL_GUARDED_BY(write_mu_) = 0;
  int64_t commits_since_compaction_ ABSL_GUARDED_BY(write_mu_) = 0;
  absl::Status sticky_error_ ABSL_GUARDED_BY(write_mu_);
  // What the batch being committed wrote, in order, for UpdateCache: each object's cache key
  // and stored text (none: deleted; also each revision a delete took along). A call that
  // fails takes its own back out.
  struct Written {
    std::string key;
    std::optional<std::string> text;
  };
  std::vector<Written> written_ ABSL_GUARDED_BY(write_mu_);
  std::function<void(const std::vector<Event>&)> observer_;  // set before the first write

  std::mutex readers_mu_;
  std::vector<sqlite::Connection*> idle_readers_ ABSL_GUARDED_BY(readers_mu_);
  std::vector<std::unique_ptr<sqlite::Connection>> all_readers_ ABSL_GUARDED_BY(readers_mu_);

  // Published under write_mu_, read without it.
  std::atomic<int64_t> current_rv_{0};
  std::atomic<int64_t> compacted_through_{0};
};

}  // namespace gantry::store
