// DeliveryWorker: sends the outbox (WebhookDelivery objects in phase Pending, written by
// OutboxStore) to the receivers, on threads of its own: a slow or dead receiver delays only
// other deliveries, never the API or the engine.
//
// One claimer thread lists the due deliveries (nextAttemptTime reached, no live lease) and
// claims as many as there are idle sender threads, all in one commit of resourceVersion-
// guarded updates that set status.lease (so that several replicas, and several threads,
// send each attempt once; when another replica won one of them the batch fails as a whole
// and the claimer claims them one by one instead). Each sender thread takes one claimed
// delivery (it waits in memory only until a sender is free: the batch is no larger than the
// idle senders), POSTs spec.body exactly as stored
// with X-Gantry-Signature and X-Gantry-Delivery (the delivery's name: the same across retries
// and restarts), and records the outcome: Delivered on a 2xx; otherwise Pending again with
// nextAttemptTime pushed back exponentially (backoff_base doubling, at most backoff_max),
// or Failed once max_age has passed since the delivery was created. The outcomes of attempts
// that end while another sender's record is being committed are recorded together in the next
// commit (a group commit: no added wait when the store is idle); when that commit fails, each
// is recorded alone as before (Record: re-read and re-apply on a conflict). The webhook's
// status.lastDelivery {time, code, error} follows the attempts: written when the outcome
// (code, error) or the second (time) changes, so a burst costs one write a second.
//
// A crash between the POST and the record leaves the lease, which expires (lease: attempt
// timeout plus a margin); the delivery is then sent again with the same id: at least once.
//
// Every attempt counts in gantry_webhook_deliveries_total{result}: delivered, retried (a
// non-2xx answer or no answer, tried again later), failed (given up: max_age passed or the
// webhook is gone). Deliveries that ended (Delivered, Failed) longer than `retention` ago are
// deleted by the claimer, 100 per commit, checked every min(1h, retention/2): the history
// (`gantry webhooks deliveries NAME`) keeps a week by default.
//
// Thread-safety: Start/Stop from one thread; Notify from any thread (commit observers).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/metrics.h"
#include "common/secrets.h"
#include "store/store.h"

namespace gantry::webhooks {

struct DeliveryOptions {
  std::string holder;                                // this replica, in status.lease.holder
  int threads = 8;                                   // concurrent attempts (sender threads)
  std::chrono::milliseconds attempt_timeout{10000};  // per POST
  std::chrono::milliseconds backoff_base{1000};      // first retry delay
  std::chrono::milliseconds backoff_max{std::chrono::hours(1)};
  std::chrono::seconds max_age{std::chrono::hours(24)};  // then Failed
  std::chrono::milliseconds poll{1000};                  // re-scan without a Notify
  // Ended deliveries older than this (by creationTimestamp) are deleted.
  std::chrono::seconds retention{std::chrono::hours(24 * 7)};
  Metrics* metrics = nullptr;  // may be null: nothing counted
};

class DeliveryWorker {
 public:
  DeliveryWorker(store::Store& store, const SecretBox& secrets, const Clock& clock,
                 DeliveryOptions options);
  ~DeliveryWorker();
  DeliveryWorker(const DeliveryWorker&) = delete;
  DeliveryWorker& operator=(const DeliveryWorker&) = delete;

  void Start();
  // Ends the threads after their current attempt (at most attempt_timeout).
  void Stop();
  // A delivery was added: scan now.
  void Notify();

 private:
  // The claimer: claims due deliveries for the idle senders and prunes.
  void ClaimLoop();
  // A sender: attempts claimed deliveries.
  void SendLoop();
  // Claims up to `room` due deliveries and queues them for the senders; returns how many.
  size_t Pass(size_t room);
  // Claims `due` (leases set): in one commit, or one by one when that commit fails.
  std::vector<boost::json::object> Claim(std::vector<boost::json::object> due);
  // Sends the claimed delivery `d` and records the outcome.
  void Attempt(boost::json::object d);
  // Records the queued outcomes (this one among them) in batches, unless another sender is.
  void RecordQueued(boost::json::object d, const absl::StatusOr<int>& outcome);
  struct Outcome {
    boost::json::object delivery;  // as claimed
    absl::StatusOr<int> outcome;
  };
  void RecordBatch(std::vector<Outcome> batch);
  // The attempt's HTTP status, or why there is none.
  absl::StatusOr<int> Send(const boost::json::object& d);
  // Stores the attempt's outcome on the delivery, retrying when a concurrent write won.
  void Record(boost::json::object d, const absl::StatusOr<int>& outcome);
  std::string Apply(boost::json::object& d, const absl::StatusOr<int>& outcome,
                    const std::string& claim) const;
  // Counts the stored attempt and tells the webhook's status.lastDelivery.
  void Recorded(const boost::json::object& d, const absl::StatusOr<int>& outcome,
                const std::string& result);
  void RecordOnWebhook(const boost::json::object& d, const boost::json::object& last);
  // Deletes ended deliveries past the retention when a prune is due (one thread at a time).
  void MaybePrune();
  void Prune(std::chrono::system_clock::time_point now);
  // Deletes `old` (ended deliveries) in one commit, or one by one when that fails.
  void DeleteEnded(const std::vector<boost::json::object>& old);

  store::Store& store_;
  const SecretBox& secrets_;
  const Clock& clock_;
  const DeliveryOptions options_;
  std::mutex mu_;
  std::condition_variable claimer_cv_;                  // a Notify, a sender became idle, Stop
  std::condition_variable sender_cv_;                   // a delivery was claimed, Stop
  uint64_t wakeups_ = 0;                                // guarded by mu_
  bool stop_ = false;                                   // guarded by mu_
  size_t idle_ = 0;                                     // senders waiting, guarded by mu_
  std::deque<boost::json::object> claimed_;             // guarded by mu_
  std::vector<Outcome> outcomes_;                       // to record, guarded by mu_
  bool recording_ = false;                              // a sender records, guarded by mu_
  std::chrono::system_clock::time_point next_prune_{};  // the claimer's own
  std::vector<std::thread> threads_;
};

}  // namespace gantry::webhooks
