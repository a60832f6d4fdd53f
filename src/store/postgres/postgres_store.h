// PostgresStore: the Store on a PostgreSQL database (libpq), shared by several gantryd
// replicas. It behaves like SqliteStore (same resourceVersions, list order, continue tokens,
// selectors, guarded commits, compaction and 410s); the store unit tests run against both.
//
// Layout (migrations in postgres_store.cc, versioned in the schema_version table):
//   gantry_state(id=1, rv)      the last resourceVersion handed out; every commit locks
//                               and advances this row, so commits of all replicas are
//                               serialised, numbered without gaps and visible in rv order
//   objects(id, kind, namespace, name, rv, labels jsonb, phase, ref_name, search, body)
//   object_labels(object_id, kind, key, value)   the label index: one row per label of an
//                               object, written in the statement that writes the object;
//                               List answers `key=value` and `key in (...)` from it (the
//                               other selector forms read the labels column)
//   events(rv, commit_rv, type, kind, namespace, name, body)   ordered history for watch;
//                               commit_rv (the commit's last rv) groups a commit's events
//   revisions(kind, namespace, name, revision, created, spec)
//   meta(key, value)            compaction watermark
//   flushes(pid, n)             one row per connection, written by Flush (below)
//
// Commit: a group commit, as SqliteStore's (store/group_commit.h): concurrent Commit calls
// of a replica queue; the call at the head (the leader) commits itself and up to
// kMaxBatch calls behind it in ONE transaction, with consecutive resourceVersions in queue
// order, and answers each. A batch is four round trips, whatever its size (libpq pipelines,
// postgres_commit.cc):
//   1. BEGIN; lock the rows that updates and deletes target, in key order (`FOR UPDATE SKIP
//      LOCKED` when every write to the row is guarded by a resourceVersion: a row another
//      transaction is changing right now, e.g. a run another replica is claiming, is a
//      conflict at once rather than a wait); lock gantry_state and read the last
//      resourceVersion; SAVEPOINT.
//   2. Every call's writes. Expected refusals (exists, changed, gone) fail no statement:
//      creates insert nothing ON CONFLICT, guarded updates and deletes change no row and say
//      whether it exists. When a call is refused, the batch rolls back to the savepoint and
//      goes again without it, so a refused call fails alone and the others keep gap-free
//      resourceVersions.
//   3. The events of deletes; advance gantry_state; NOTIFY gantry_events; COMMIT.
//   4. Flush (below), when any call of the batch is durable.
// Metrics (when PostgresOptions::metrics is set): as SqliteStore's, per replica
// (gantry_store_transactions_total, gantry_store_commits_total, gantry_store_commits_waiting).
// Rows are always locked before gantry_state, in key order, and the holder of gantry_state
// never waits for a row it has not locked yet, so commits cannot deadlock on it.
//
// Durability without serialised fsyncs: every commit is made with synchronous_commit=off,
// so gantry_state is released as soon as the commit is in the WAL buffers, not after the
// fsync (holding it across the fsync capped every replica together at one commit per
// fsync). A kDurable batch then makes a tiny synchronous commit (Flush), which returns
// once the WAL is flushed past its own commit record and therefore past this one;
// concurrent flushes share fsyncs. Commits are thus visible to other
// sessions a moment before they are durable; watchers only ever get durable events (own
// commits are delivered after Flush, the tail thread flushes before delivering), and a
// client is answered only once its write is durable. What a crash of the database server
// in that moment can lose is what no client was told about.
//
// Watch across replicas: every replica tails the events table. A thread LISTENs on
// gantry_events and, when another replica's commit is notified (and once a second), reads
// the events after the last one it delivered and calls the commit observer with them, one
// commit at a time, in rv order. A replica's own commit delivers everything up to its rv
// before Commit returns, so the observer contract of store.h holds as for SQLite. Each
// NOTIFY names the replica that sent it (payload "<rv> <replica tag>"), and the tail thread
// passes over its own replica's: the committer delivers those from memory, so a replica
// writing alone reads no events and makes no second flush per commit. A committer that
// could not deliver (its commit's answer lost, a failed read) wakes the tail thread.
//
// Failures: a lost connection is UNAVAILABLE for that call and the connection is replaced
// on the next; unlike SQLite a failure is not sticky, because the database (not this
// process) owns the state and another replica may be using it fine. A COMMIT whose answer
// was lost is UNAVAILABLE: the caller re-reads (every engine write is guarded).
//
// Thread-safety: every method may be called from any thread; connections come from a pool.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "store/group_commit.h"
#include "store/store.h"

typedef struct pg_conn PGconn;

namespace gantry::store {
namespace pg {
class Result;
}  // namespace pg

struct PostgresOptions {
  std::string url;                   // postgres://… or postgresql://… (libpq conninfo)
  int64_t event_retention = 100000;  // events kept for watch resumption
  size_t max_idle_connections = 16;
  Metrics* metrics = nullptr;  // the group commit's figures; must outlive the store
};

class PostgresStore final : public Store {
 public:
  // Connects, migrates the schema (under an advisory lock, so replicas starting together
  // take turns) and starts tailing events. INVALID_ARGUMENT for a URL that is not
  // postgres://…; UNAVAILABLE when the server cannot be reached or the schema is newer than
  // this gantryd understands.
  static absl::StatusOr<std::unique_ptr<PostgresStore>> Open(const PostgresOptions& options);
  ~PostgresStore() override;

  absl::StatusOr<boost::json::object> Get(const std::string& kind, const std::string& ns,
                                          const std::string& name) override;
  absl::StatusOr<std::string> GetText(const std::string& kind, const std::string& ns,
                                      const std::string& name) override;
  // One query for all of `keys`.
  absl::StatusOr<std::vector<boost::json::object>> GetMany(
      const std::vector<ObjectKey>& keys) override;
  absl::StatusOr<ListResult> List(const ListOptions& options) override;
  absl::StatusOr<std::vector<boost::json::object>> Commit(
      std::vector<Write> writes, Durability durability = Durability::kDurable) override;
  absl::StatusOr<std::vector<Event>> EventsSince(int64_t after, size_t max) override;
  // The last resourceVersion this replica delivered to its observer.
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
  // How this replica's observer got its commits: from the committing call's memory, or by
  // reading the events table (another replica's commits, or when a batch's own could not
  // follow on directly).
  struct DeliveryStats {
    int64_t direct = 0;       // batches of this replica delivered without a read
    int64_t reads = 0;        // reads of the events table that delivered at least one commit
    int64_t empty_reads = 0;  // reads that found nothing to deliver
  };
  DeliveryStats Deliveries();

  // The URL without its password, for logs.
  static std::string Redacted(const std::string& url);

 private:
  class Conn;   // a connection and its prepared statements
  class Lease;  // RAII lease of a pooled connection
  explicit PostgresStore(PostgresOptions options);
  absl::Status Init();
  // The stored body of one object: the one query of Get and GetText. NOT_FOUND as Get.
  absl::StatusOr<std::string> Body(const std::string& kind, const std::string& ns,
                                   const std::string& name);
  absl::StatusOr<std::unique_ptr<Conn>> Connect();
  absl::StatusOr<Lease> Acquire();
  void Release(std::unique_ptr<Conn> conn);
  // The group commit (postgres_commit.cc; the steps in the comment at the top).
  static constexpr size_t kMaxBatch = 64;
  // Commits a batch of the queue; returns how many calls it committed.
  size_t CommitBatch(const std::vector<PendingCommit*>& batch);
  // Step 1: the transaction, its row locks and the last resourceVersion. Sets
  // (*refusals)[i] for a call whose guarded write targets a row it could not lock.
  absl::StatusOr<int64_t> BeginBatch(Conn& c, const std::vector<PendingCommit*>& batch,
                                     std::vector<absl::Status>* refusals);
  // Step 2: the writes of `live` from resourceVersion base + 1; removes and answers each
  // call that is refused. Not OK when the database failed (every call fails).
  absl::Status ApplyCalls(Conn& c, int64_t base, std::vector<PendingCommit*>* live);
  // The answers and events of `live`, whose writes' results start at rs[first].
  void Collect(int64_t base, const std::vector<PendingCommit*>& live,
               const std::vector<pg::Result>& rs, size_t first);
  // Steps 3 and 4.
  absl::Status EndBatch(Conn& c, int64_t base, const std::vector<PendingCommit*>& live);
  // Returns once every commit made so far is durable (WAL flushed).
  absl::Status Flush(Conn& c);
  void MaybeCompact(Conn& c);
  // Tail thread: refreshes the planner's statistics of objects and its label index after a
  // burst of writes (see there); true when it ran ANALYZE.
  bool MaybeAnalyze(Conn& c);
  // Delivers events through `through` (the batch's own events, one vector per call, when
  // they follow on directly from own_first, else read from the database with `c`).
  void DeliverThrough(Conn& c, int64_t through, const std::vector<const std::vector<Event>*>& own,
                      int64_t own_first);
  // Reads and delivers committed events after delivered_; false on a database error.
  bool DeliverFromDatabase(Conn& c, int64_t through) ABSL_EXCLUSIVE_LOCKS_REQUIRED(deliver_mu_);
  void TailLoop();
  // Waits on the LISTEN connection until another replica's commit past delivered_ is
  // notified (returns its rv), the periodic catch-up is due or the thread is woken (returns
  // the largest rv: read everything), or the connection failed (returns 0: reconnect).
  int64_t WaitForForeignCommit(Conn& c);
  // Ends the tail thread's wait at once (shutdown, or a commit its committer did not deliver).
  void WakeTail();
  // Reads the wake-ups WakeTail wrote (the tail thread, once its wait ended on them).
  void DrainWake();

  // Constant after construction.
  const PostgresOptions options_;
  const std::string replica_tag_;  // random; names this replica's NOTIFYs

  GroupCommitQueue queue_;

  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Conn>> idle_ ABSL_GUARDED_BY(pool_mu_);

  std::mutex deliver_mu_;  // one delivery at a time, in rv order
  std::function<void(const std::vector<Event>&)> observer_ ABSL_GUARDED_BY(deliver_mu_);
  std::atomic<int64_t> delivered_{0};  // written under deliver_mu_
  DeliveryStats deliveries_ ABSL_GUARDED_BY(deliver_mu_);

  std::atomic<int64_t> commits_since_compaction_{0};
  std::atomic<int64_t> writes_since_analyze_{0};  // objects written (MaybeAnalyze)
  int64_t analyzed_rows_ = 0;                     // tail thread only
  bool analyze_refused_ = false;                  // tail thread only
  std::atomic<bool> stopping_{false};
  int wake_fd_ = -1;  // eventfd that ends the tail thread's wait
  std::thread tailer_;
};

}  // namespace gantry::store
