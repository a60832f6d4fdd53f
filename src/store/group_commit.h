// The queue of both stores' group commit (LevelDB's DBImpl::Write): concurrent Commit calls
// queue; the caller at the head (the leader) commits its call and the calls queued behind it
// (up to max_batch) as one batch, answers each, then hands the queue to the next leader.
// What a batch is (one SQLite transaction, one PostgreSQL pipeline) is the store's.
//
// Metrics (when set): gantry_store_transactions_total (batches that committed something),
// gantry_store_commits_total (calls they committed: the two divided are the calls per
// transaction) and the gauge gantry_store_commits_waiting (calls queued now, the one being
// committed included).
//
// Thread-safety: Commit may be called from any thread; one batch runs at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "store/store.h"

namespace gantry::store {

// One Commit call in the queue, and what the batch that commits it answers.
struct PendingCommit {
  PendingCommit(std::vector<Write> w, Durability d) : writes(std::move(w)), durability(d) {}
  std::vector<Write> writes;
  Durability durability;
  absl::StatusOr<std::vector<boost::json::object>> result = absl::UnknownError("not committed");
  std::vector<Event> events;  // what the commit observer is told of it
  bool done = false;          // guarded by the queue's mutex
  std::condition_variable cv;
};

class GroupCommitQueue {
 public:
  // Commits `batch` (in queue order): sets each call's result and events, and returns how
  // many calls it committed.
  using CommitBatch = absl::FunctionRef<size_t(const std::vector<PendingCommit*>& batch)>;

  GroupCommitQueue(size_t max_batch, Metrics* metrics);

  // Queues a call and returns its answer, committing a batch with `commit` when the call is
  // at the head of the queue.
  absl::StatusOr<std::vector<boost::json::object>> Commit(std::vector<Write> writes,
                                                          Durability durability,
                                                          CommitBatch commit);
  GroupCommitStats Stats();

 private:
  const size_t max_batch_;
  Metrics* const metrics_;
  std::mutex mu_;
  std::deque<PendingCommit*> queue_ ABSL_GUARDED_BY(mu_);  // front: the leader
  std::atomic<int64_t> transactions_{0};
  std::atomic<int64_t> calls_{0};
};

// Fails the calls of `calls` not already refused on their own with `status` (nothing when
// it is OK).
void FailCalls(const std::vector<PendingCommit*>& calls, const absl::Status& status);

// Sets the result of a committed `call` from its events, once the commit observer has seen
// them: each write's stored object is moved out of its event (every write but a revision's
// has one, in order; a revision's write answers an empty object). The store copies no
// object on the way: a write's object moves into its event, then into the answer.
void AnswerFromEvents(PendingCommit* call);

}  // namespace gantry::store
