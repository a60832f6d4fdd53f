// LifecycleController: gives GPUs back by itself (API.md "Lifecycle policies"). It fires the
// deadlines of engine/lifecycle_deadlines.h — a ttl that expired, an instance idle for too
// long, a schedule's stop and start — through the Engine's own actions (Engine::Stop,
// Engine::Start, Engine::Destroy), warns before a stop, and audits and counts what it did.
//
// Durable and once (docs/lifecycle-controller.md):
//   - every deadline is derived from stored fields (status.expiresAt, idleSince, startedAt,
//     the last run's completion for a stopped instance) and the pinned profile revision's
//     policy; memory holds only the next wake-up, a cache of decoded revisions and backoffs.
//     A gantryd restarted, or a replica taking over, fires what fell due meanwhile.
//   - firing is the Engine's guarded transaction on the instance's resourceVersion: when
//     two replicas fire the same deadline one queues the run and the other gets a 409
//     (the instance is no longer running) and does nothing.
//   - warnings are stored Events with a deterministic name (WarningEventName): a second
//     create, by a restart or another replica, is AlreadyExists and sends nothing. A
//     deadline reached before any of its warnings went out (a late pass, gantryd down) gets
//     the shortest one just before the action: no automatic stop is unexplained.
//
// Two kinds of pass (docs/lifecycle-controller.md "The loop"):
//   - a pass over all lists the compute and service instances in phase Success and Stopped
//     (field selector on status.phase), never other kinds, and notes the earliest moment any
//     of them needs a look (a deadline, a warning, a retry): at most kRescan ahead;
//   - a pass over the touched reads only the instances that commits touched since the last
//     pass (OnCommit, the store's commit observer), and lowers that moment by theirs.
// A pass is over all at that moment, at the first pass, after Notify, and when more instances
// were touched than kMaxTouched; else over the touched. So commits cost a pass in proportion
// to what they changed, not to how many instances run. The loop sleeps on the Clock until the
// earliest deadline or warning, at most kRescan; OnCommit and Notify wake it early, at most
// once per min_pass_interval.
//
// An action the engine refuses (the driver cannot stop this instance, it has services) leaves
// the instance where it was with condition LifecyclePolicy False, reason ActionRefused, and
// is tried again after a backoff (1 min doubling to 1 h; at once when the instance changed).
// An idle policy on a driver without GPU metrics puts condition IdleReclaim False, reason
// NoGpuMetrics, on the instance instead.
//
// Thread-safety: Start/Stop from one thread; Notify, StoredEvents and WaitForPass from any.
#pragma once

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "auth/audit.h"
#include "common/clock.h"
#include "common/loop_thread.h"
#include "common/metrics.h"
#include "drivers/driver.h"
#include "engine/engine.h"
#include "engine/lifecycle_deadlines.h"
#include "engine/stored_events.h"
#include "store/store.h"

namespace gantry::engine {

class Approvals;
inline constexpr char kLifecycleUser[] = "system:lifecycle";

struct LifecycleControllerOptions {
  // Commits wake the loop at most this often (a burst of commits makes one pass).
  std::chrono::milliseconds min_pass_interval{1000};
  // Lifecycle Events older than this (lastTimestamp) are deleted, checked once an hour.
  std::chrono::seconds event_retention{std::chrono::hours(24 * 7)};
};

class LifecycleController {
 public:
  // The longest the loop sleeps without a deadline: it passes over all at least this often.
  static constexpr std::chrono::seconds kRescan{60};
  // More instances touched between two passes than this make the next pass one over all.
  static constexpr size_t kMaxTouched = 1024;

  LifecycleController(store::Store& store, Engine& engine, const drivers::DriverRegistry& drivers,
                      auth::AuditLog& audit, const Clock& clock, Metrics& metrics,
                      LifecycleControllerOptions options = {});
  LifecycleController(const LifecycleController&) = delete;
  LifecycleController& operator=(const LifecycleController&) = delete;

  // The approval gates whose stored expiries the passes fire too (engine/approvals.h; may be
  // null: none): listed when a request was made or changed, when the earliest expiry comes,
  // and in a pass over all. Set before Start.
  void SetApprovals(Approvals* approvals) { approvals_ = approvals; }
  // Starts the loop; its first pass is at once. Call after Engine::Start.
  void Start();
  // Ends the loop (waits for a pass in progress). Idempotent; call before Engine::Stop.
  void Stop();
  // Look at every instance soon (a pass over all): what a test calls after moving the clock.
  void Notify();
  // The store's commit observer: a commit that leaves a compute or service instance running
  // (Success) or Stopped wakes the loop soon (a pass over the touched, which reads those);
  // instances in other phases have no deadline. One that leaves an instance waiting for
  // approval wakes it to read the pending requests' expiries. Other kinds are ignored.
  void OnCommit(const std::vector<store::Event>& events);
  // Waits (on real time, at most `timeout`) until a pass that began at `at_least` or later
  // (on the Clock) has finished; tests call it after Notify. False on timeout.
  bool WaitForPass(WallTime at_least, std::chrono::milliseconds timeout) const;

  // The stored Events (stored_events.h: lifecycle, preemption and budget ones) of object
  // `name` of `kind` in `ns` (every name when `name` is empty, every kind when `kind` is), as
  // core v1 Events, for GET /api/v1/namespaces/NS/events.
  absl::StatusOr<std::vector<boost::json::object>> StoredEvents(const std::string& ns,
                                                                const std::string& kind,
                                                                const std::string& name) const;

 private:
  using Touched = std::tuple<std::string, std::string, std::string>;  // kind, ns, name
  void Loop(std::stop_token stop);
  // One pass at `now` (over all or over the touched); returns when to look next.
  WallTime Pass(WallTime now);
  // Every running and stopped instance; returns the earliest moment one needs a look.
  WallTime PassOverAll(WallTime now);
  // The `touched` instances as stored now; returns the earliest moment one needs a look.
  WallTime PassOverTouched(const std::set<Touched>& touched, WallTime now);
  // One running or stopped instance: fires what fell due, warns, accrues; lowers *next.
  void Look(const model::Instance& instance, WallTime now, WallTime* next);
  absl::StatusOr<std::vector<model::Instance>> ListPhase(const std::string& kind,
                                                         const std::string& phase);
  // The policy of the revision `instance` pinned (cached; nullptr when it cannot be read).
  const PolicyView* PolicyOf(const model::Instance& instance);
  // When a Stopped instance stopped: the completion of its last run (cached).
  std::optional<WallTime> StoppedAt(const model::Instance& instance);
  // Fires `due` when it fell due, else sends the warnings it is in; lowers *next to the next
  // moment it needs a look.
  void Handle(const model::Instance& instance, const Due& due, WallTime now, WallTime* next);
  void Fire(const model::Instance& instance, const Due& due);
  absl::Status Act(const model::Instance& instance, const Due& due);
  void Refused(const model::Instance& instance, const Due& due, const absl::Status& why);
  static std::vector<std::chrono::seconds> WarningLeads(const Due& due);
  void Warn(const model::Instance& instance, const Due& due, WallTime now, WallTime* next);
  void WarnIfNeverWarned(const model::Instance& instance, const Due& due, WallTime now);
  void StoreWarning(const model::Instance& instance, const Due& due, std::chrono::seconds lead,
                    WallTime now, const std::string& message);
  // Condition IdleReclaim on an instance whose driver reports no GPU utilisation.
  void NoteNoGpuMetrics(const model::Instance& instance, const PolicyView& view);
  // Writes condition `type` on the instance when it changes it; returns the stored
  // resourceVersion (0 when nothing was written).
  int64_t SetCondition(const model::Instance& instance, const std::string& type,
                       const std::string& reason, const std::string& message);
  void AccrueReclaimed(const model::Instance& instance, const PolicyView& view, WallTime now);
  void PruneEvents(WallTime now);

  // Constant after construction.
  store::Store& store_;
  Engine& engine_;
  const drivers::DriverRegistry& drivers_;
  auth::AuditLog& audit_;
  const Clock& clock_;
  Metrics& metrics_;
  const LifecycleControllerOptions options_;
  const WallTime started_;          // reclaimed GPU-seconds are counted from here
  Approvals* approvals_ = nullptr;  // set before Start

  // The loop's own state (one thread).
  using RevisionKey = std::tuple<std::string, std::string, std::string, int64_t, int64_t>;
  std::map<RevisionKey, std::optional<PolicyView>> policies_;
  std::map<std::string, WallTime> stopped_at_;  // "ns/run" -> completion
  struct Backoff {
    int64_t resource_version = 0;
    WallTime retry;
    std::chrono::seconds delay{0};
  };
  std::map<std::string, Backoff> backoff_;   // "uid/trigger"
  std::map<std::string, WallTime> accrued_;  // uid -> reclaimed GPU-seconds counted until
  std::map<std::string, WallTime> warned_;   // event names sent -> their deadline
  WallTime next_prune_;
  // The earliest moment an instance no commit touched since needs a look: the next pass
  // from then on is over all.
  WallTime pass_over_all_at_;
  // The earliest expiry of a pending approval request (or the rescan): the pass that
  // reaches it lists the pending requests again.
  WallTime approvals_due_at_ = WallTime::min();

  mutable std::mutex mu_;
  mutable std::condition_variable passed_;
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
  bool over_all_ ABSL_GUARDED_BY(mu_) = true;  // the next pass is over all
  std::set<Touched> touched_ ABSL_GUARDED_BY(mu_);
  bool approvals_touched_ ABSL_GUARDED_BY(mu_) = false;  // a request made or changed
  std::stop_source wake_ ABSL_GUARDED_BY(mu_){std::nostopstate};
  std::optional<WallTime> last_pass_ ABSL_GUARDED_BY(mu_);  // when the last pass began
  LoopThread thread_;                                       // last: stopped before the rest goes
};

}  // namespace gantry::engine
