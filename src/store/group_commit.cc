#include "store/group_commit.h"

#include <algorithm>

#include "store/store_common.h"

namespace gantry::store {

GroupCommitQueue::GroupCommitQueue(size_t max_batch, Metrics* metrics)
    : max_batch_(max_batch), metrics_(metrics) {
  DescribeGroupCommitMetrics(metrics_);
}

absl::StatusOr<std::vector<boost::json::object>> GroupCommitQueue::Commit(std::vector<Write> writes,
                                                                          Durability durability,
                                                                          CommitBatch commit) {
  PendingCommit me(std::move(writes), durability);
  std::unique_lock<std::mutex> lock(mu_);
  queue_.push_back(&me);
  SetCommitsWaiting(metrics_, queue_.size());
  me.cv.wait(lock, [&] { return me.done || queue_.front() == &me; });
  if (me.done) return std::move(me.result);
  // The leader: commits itself and the calls queued behind it, in queue order.
  const auto n = static_cast<std::ptrdiff_t>(std::min(queue_.size(), max_batch_));
  std::vector<PendingCommit*> batch(queue_.begin(), queue_.begin() + n);
  lock.unlock();
  if (size_t committed = commit(batch); committed > 0) {
    ++transactions_;
    calls_ += static_cast<int64_t>(committed);
    CountGroupCommit(metrics_, committed);
  }
  lock.lock();
  for (PendingCommit* call : batch) {
    queue_.pop_front();
    call->done = true;
    if (call != &me) call->cv.notify_one();
  }
  SetCommitsWaiting(metrics_, queue_.size());
  if (!queue_.empty()) queue_.front()->cv.notify_one();  // the next leader
  return std::move(me.result);
}

GroupCommitStats GroupCommitQueue::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return {transactions_.load(), calls_.load(), static_cast<int64_t>(queue_.size())};
}

void FailCalls(const std::vector<PendingCommit*>& calls, const absl::Status& status) {
  if (status.ok()) return;
  for (PendingCommit* call : calls) {
    if (call->result.ok() || call->result.status().code() == absl::StatusCode::kUnknown) {
      call->result = status;
      call->events.clear();
    }
  }
}

void AnswerFromEvents(PendingCommit* call) {
  std::vector<boost::json::object> answer(call->writes.size());
  size_t event = 0;
  for (size_t i = 0; i < call->writes.size() && event < call->events.size(); ++i)
    if (call->writes[i].op != Write::Op::kPutRevision)
      answer[i] = std::move(call->events[event++].object);
  call->result = std::move(answer);
}

}  // namespace gantry::store
