// Engine: the durable deploy engine. "Deploy" is as dependable as a database commit:
//
//   POST …/deploy      one store transaction: instance -> Waiting + a Run (Queued)
//   dispatcher         claims the oldest Queued run (optimistic commit on its
//                      resourceVersion: exactly one claimer wins, also across replicas),
//                      instance -> InProgress, run -> Running with a lease
//   worker             calls the Driver, streams the log, then one transaction writes the
//                      run's end and the instance's status (Success / Failed / NotDeployed,
//                      outputs, deployedGeneration, conditions, reason, message)
//   heartbeat          renews the leases of running runs
//   Start (recovery)   runs left Running by a dead gantryd: the driver cleans up (kills the
//                      orphaned process group) and the run is re-queued when the driver says
//                      re-running is safe (at most kMaxAttempts), else it ends Failed with
//                      reason ControlPlaneRestarted
//   Stop               stops claiming, gives running runs the drain period, and leaves the
//                      rest Running for the next start to recover
//
// The parts, one file each: actions.cc (the lifecycle actions below), stop_start.cc (stop
// and start: CanStop, the services of a stopping compute instance), dispatcher.cc (loop,
// one AdmissionSnapshot per pass, the pure Admit of engine/admission.h, claims, workers),
// executor.cc (Execute, Finish: the instance status a run leaves is model::ApplyOutcome),
// recovery.cc (Recover, RecoverRun, AdoptWorkloads, heartbeat, workload events). Runs and
// instances are typed inside (model/objects.h) and JSON only in the store. Drivers are told
// apart by their Capabilities (driver.h), never by name.
//
// At most one active run per instance holds because every action changes the instance's
// phase in the same transaction that queues or claims the run, guarded by the instance's
// resourceVersion (model/lifecycle.h decides what is allowed).
//
// Thread-safety: public methods are safe from any thread.
#pragma once

#include <atomic>
#include <boost/json.hpp>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "common/secrets.h"
#include "drivers/driver.h"
#include "engine/admission.h"
#include "engine/budgets.h"
#include "engine/dispatch_wakes.h"
#include "engine/inventory.h"
#include "engine/run_log.h"
#include "model/objects.h"
#include "store/store.h"

namespace gantry::engine {

struct EngineOptions {
  int workers = 4;
  std::string holder;  // this replica's identity in leases
  std::string host;    // the host it runs on (host-bound drivers)
  std::chrono::seconds lease{30};
  // SQLite: no other replica can hold leases, so runs left Running are recovered at start.
  // false (PostgreSQL, several replicas): only expired leases are taken over, at start and
  // then every lease/3; the runs of host-bound drivers (local) stay with their host.
  bool sole_owner = true;
  std::chrono::seconds drain{10};              // how long Stop waits for running runs
  std::string state_dir;                       // per-instance driver state lives below it
  std::chrono::seconds default_timeout{3600};  // when a template sets none
};

inline constexpr int kMaxAttempts = 3;

class Engine : public drivers::WorkloadObserver {
 public:
  Engine(store::Store& store, drivers::DriverRegistry& drivers, const SecretBox& secrets,
         RunLogs& logs, const Clock& clock, Metrics& metrics, GpuAllocator& gpus,
         EngineOptions options);
  ~Engine() override;

  // What a long-running workload did (local driver): recorded in the instance's status.
  void OnWorkloadEvent(const drivers::WorkloadEvent& event) override;
  // This host's GPUs, their types and who holds them (GET /apis/…/nodes).
  boost::json::object NodeView();

  // Recovers interrupted runs, then starts the dispatcher, workers and heartbeat.
  absl::Status Start();
  // Graceful stop (see above). Idempotent. Returns false when runs were still executing
  // after the drain period (their threads are left to die with the process).
  bool Stop();
  bool Running() const { return running_; }

  // The actions of API.md's lifecycle table on an instance of `kind` (ComputeInstance or
  // ServiceInstance). Each returns the instance after the change, or a 409 from
  // model::Decide or engine/dependencies.h, 404, or UNAVAILABLE when the engine is stopping.
  // `cascade` (compute instances): destroy the services running on it first instead of
  // refusing with 409 HasServices. Destroy's `reason` (the lifecycle controller's TTLExpired)
  // is the run's spec.reason and the instance's status.reason once it is NotDeployed.
  // `also` (deploy, destroy, stop, start): a write committed with the one that queues the run
  // (the request's audit record), made from the instance as queued; left uncommitted when
  // nothing is queued (a deploy that cancels a queued destroy, a refusal).
  // `read` (deploy, start): the instance as the caller just read it (the approval gate), for
  // the first try; a concurrent change since makes the next try read it again.
  absl::StatusOr<boost::json::object> Deploy(const std::string& kind, const std::string& ns,
                                             const std::string& name,
                                             store::AlsoCommit* also = nullptr,
                                             std::optional<model::Instance> read = std::nullopt);
  absl::StatusOr<boost::json::object> Destroy(const std::string& kind, const std::string& ns,
                                              const std::string& name, bool cascade = false,
                                              const std::string& reason = "",
                                              store::AlsoCommit* also = nullptr);
  absl::StatusOr<boost::json::object> Cancel(const std::string& kind, const std::string& ns,
                                             const std::string& name);
  // POST …/stop: a stop run (the driver stops the workload, the GPUs are released, the
  // instance ends Stopped with `reason`: StoppedByUser for a person, TTLExpired, Idle,
  // Scheduled for the lifecycle controller). 409 when Decide refuses or the driver cannot
  // stop this instance (Driver::CanStop, its message).
  absl::StatusOr<boost::json::object> Stop(const std::string& kind, const std::string& ns,
                                           const std::string& name,
                                           const std::string& reason = "StoppedByUser",
                                           store::AlsoCommit* also = nullptr);
  // POST …/start: a start run of a Stopped instance, admitted like a deploy (quota,
  // capacity); `reason` is "" for a person, Scheduled for a schedule.
  absl::StatusOr<boost::json::object> Start(const std::string& kind, const std::string& ns,
                                            const std::string& name, const std::string& reason = "",
                                            store::AlsoCommit* also = nullptr,
                                            std::optional<model::Instance> read = std::nullopt);
  // The deploy or start (`action`) of an instance whose approval was just granted
  // (engine/approvals.h): `prepare` returns the loaded instance (Waiting, PendingApproval) to
  // the phase the action is decided on and records the answer, in the same transaction that
  // queues the run. Errors as Deploy and Start, and `prepare`'s own.
  using BeforeDecide = std::function<absl::Status(model::Instance&)>;
  absl::StatusOr<boost::json::object> QueueApproved(const std::string& kind, const std::string& ns,
                                                    const std::string& name,
                                                    model::RunAction action,
                                                    const BeforeDecide& prepare);
  // DELETE of a deployed instance: a destroy run that removes the record when it succeeds.
  absl::StatusOr<boost::json::object> DeleteDeployed(const std::string& kind, const std::string& ns,
                                                     const std::string& name, bool cascade = false);
  // DELETE of an instance: removes a NotDeployed one (with its runs) at once, or queues the
  // teardown of a deployed one (*accepted = true). A service that auto-created its compute
  // instance takes that instance with it.
  absl::StatusOr<boost::json::object> Delete(const std::string& kind, const std::string& ns,
                                             const std::string& name, bool cascade, bool* accepted);

  // The store's commit observer: wakes the dispatcher after a commit that may let a queued
  // run go (engine/dispatch_wakes.h).
  void OnCommit(const std::vector<store::Event>& events) {
    if (wakes_.Wakes(events)) Notify();
  }
  // Wakes the dispatcher: it looks at the queue at once.
  void Notify();
  // Queued runs right now (for /metrics).
  int64_t QueueDepth();

 private:
  struct Active {
    std::string ns, name, uid;
    std::atomic<bool> cancel{false};
  };
  class Context;
  // What Execute hands the driver (executor.cc).
  struct Prepared;

  // actions.cc: the lifecycle actions. `cause` is the run's spec.reason (stop, start).
  absl::StatusOr<boost::json::object> Queue(const std::string& kind, const std::string& ns,
                                            const std::string& name, model::RunAction action,
                                            bool delete_instance, bool cascade,
                                            const std::string& cause = "",
                                            const BeforeDecide* prepare = nullptr,
                                            store::AlsoCommit* also = nullptr,
                                            std::optional<model::Instance> read = std::nullopt);
  // What has to happen before `instance` gets a run of `action`: its services destroyed
  // first (compute destroy), its auto-created compute instance deployed (service deploy).
  absl::Status BeforeQueue(const model::Instance& instance, model::RunAction action,
                           bool delete_instance, bool cascade);
  // Destroys (and with `remove`, deletes) `services` ahead of their compute instance.
  absl::Status CascadeToServices(const std::vector<boost::json::object>& services, bool remove);
  // Removes a NotDeployed instance and its runs.
  absl::StatusOr<boost::json::object> RemoveRecord(const std::string& kind, const std::string& ns,
                                                   const std::string& name);
  // The runs of one instance.
  absl::StatusOr<std::vector<model::Run>> RunsOf(const std::string& kind, const std::string& ns,
                                                 const std::string& name);
  // Deletes of `runs` (with the instance, in one transaction).
  static std::vector<store::Write> DeletesOf(const std::vector<model::Run>& runs);
  // Cancel of a run the driver holds waiting (Running): the driver sees the cancellation.
  absl::StatusOr<boost::json::object> CancelRunning(const model::Instance& instance,
                                                    const model::Run& run, bool last_try);
  // After a service is removed: the compute instance it auto-created goes too (destroyed
  // first when deployed), unless other services run on it by now.
  void ReleaseCreatedCompute(const model::Instance& service);
  // stop_start.cc: 409 (the driver's reason) unless the driver of `instance`'s pinned
  // template can stop it (Driver::CanStop).
  absl::Status CheckCanStop(const model::Instance& instance);
  // Compute instance `compute` is to stop: the running services on it whose driver can stop
  // get a stop run (cause ComputeStopped) that goes first; the others a deploy that waits for
  // the compute instance to be Success again. `queued`: the compute's stop run is committed.
  void StopServicesOn(const model::Instance& compute, bool queued);
  // A service stopped because its compute instance stops is queued to start again: it waits
  // (ComputeNotReady) until the compute instance is Success.
  void RestartWhenComputeReady(const model::Instance& service);
  // After compute instance `compute` changed: the deployed services on it get condition
  // ComputeReady (True while it is Success, else False with its phase, reason and message).
  void NoteComputeState(const model::Instance& compute);

  // dispatcher.cc: the dispatcher and the workers.
  void DispatchLoop();
  // What one pass resolved already: revisions are immutable, so runs pinning the same
  // profile and template revisions share one resolution.
  using Targets = std::map<std::tuple<std::string, std::string, std::string, int64_t, int64_t>,
                           std::optional<Target>>;
  // One look at the queue: admits, claims, and tells waiting runs why. True when it claimed.
  bool DispatchPass(size_t free_slots);
  // The queue as one pass has read it so far, resolved against its snapshot.
  struct DispatchQueue {
    std::optional<AdmissionSnapshot> snapshot;  // taken with the first page
    std::vector<boost::json::object> projects;  // as the snapshot read them (budgets)
    Targets targets;
    std::vector<QueuedRun> queue;
    std::string next_page;  // the continue token of the next page
    int64_t page = 0;       // how many runs the next page reads
    bool done = false;      // no page after the last one read
    bool ordered = false;   // the whole queue is read and in OrderQueue's order
  };
  bool ReadQueuePage(DispatchQueue* pass);
  void OrderBeforeGpuRuns(DispatchQueue* pass, size_t next);
  // The claims of one pass, committed together when it ends (CommitClaims): a burst's pass
  // that claims 16 runs waits for the store's writer once, not 16 times.
  struct ClaimBatch {
    struct Pending {
      model::Run run;  // as queued
      Admission admission;
      size_t writes;  // how many of `writes` are its, in order: run, instance, usage
    };
    std::vector<Pending> claims;
    std::vector<store::Write> writes;
  };
  void Decide(const QueuedRun& queued, AdmissionPass* pass, AdmissionSnapshot* snapshot,
              ClaimBatch* claims);
  // What admission needs for the queued `runs` (one read of each, per pass); the projects
  // it read go to `projects`.
  absl::StatusOr<AdmissionSnapshot> TakeSnapshot(const std::vector<model::Run>& runs,
                                                 std::vector<boost::json::object>* projects);
  absl::Status AddForRuns(const std::vector<model::Run>& runs,
                          const std::vector<boost::json::object>& projects, AdmissionSnapshot* s);
  absl::Status AddQuotaProjects(const std::vector<model::Run>& runs, AdmissionSnapshot* s);
  absl::Status AddRunInstances(const std::vector<model::Run>& runs, AdmissionSnapshot* s);
  absl::Status AddComputes(std::vector<store::ObjectKey> keys, AdmissionSnapshot* s);
  absl::Status AddGpuHolders(AdmissionSnapshot* s);
  // The projects with a Block budget spent, among those of queued deploys and starts.
  absl::Status AddBudgets(const std::vector<boost::json::object>& projects,
                          const std::vector<model::Run>& runs, AdmissionSnapshot* s);
  QueuedRun Resolve(const AdmissionSnapshot& snapshot, model::Run run, Targets* targets);
  void NoteWaiting(const QueuedRun& queued, const Admission& a);
  // Adds the claim of `queued` to `claims`; false (logged) when it cannot be made. The
  // compute instance as the claim writes it replaces its entry in `snapshot`, so that later
  // runs of the pass see it (quotas).
  bool Claim(const QueuedRun& queued, const Admission& admission, AdmissionSnapshot* snapshot,
             ClaimBatch* claims);
  // A claim's writes: the run Running and leased, its instance InProgress (when it exists:
  // `instance` gets it as written) and the opened usage interval. The instance is `read`
  // (the pass's snapshot: a change since fails the commit) or, when null, read now. nullopt
  // (logged) when the interval cannot be opened.
  std::optional<std::vector<store::Write>> ClaimWrites(const model::Run& queued,
                                                       const Admission& admission,
                                                       const model::Instance* read,
                                                       std::optional<model::Instance>* instance);
  // Commits the pass's claims in one commit and hands their runs to the workers. When that
  // commit fails (another replica claimed a run, a concurrent change to an instance), each
  // claim is made again alone, and a lost one is lost alone: its GPUs go back. Returns how
  // many runs this replica now owns.
  size_t CommitClaims(ClaimBatch* claims);
  // `stored`: what the commit of one claim returned (the run first, then its instance).
  void HandOver(const model::Run& queued, std::vector<boost::json::object> stored);
  void ReleaseLost(const Admission& admission);
  // preemption.cc (fair share): stops the victims `a` names (cause Preempted, an Event naming
  // `queued`'s instance), queues a preempted instance's start once it is Stopped, and
  // recomputes status.admission in a project whose GPUs were released.
  void Preempt(const QueuedRun& queued, const Admission& a);
  // Several replicas: takes `queued`'s Run.reclaim for this replica before it preempts for it
  // (an optimistic commit: one replica wins), for the longest grace period of the victims
  // plus a minute. A replica that loses forgoes its victims (ForgoVictims).
  void TakeReclaim(const QueuedRun& queued, const AdmissionSnapshot& snapshot, Admission* a);
  void RestartPreempted(const model::Instance& instance);
  void RelabelAdmissions(const std::string& ns);
  // Records the GPUs `admission` hands out in the allocator; false when it cannot.
  bool HoldGpus(const Admission& admission);
  void WorkerLoop();

  // A run the dispatcher claimed, for a worker: as the claim's commit stored it, with its
  // instance as that commit stored it (none when the instance was gone).
  struct Claimed {
    model::Run run;
    std::optional<model::Instance> instance;
  };
  // executor.cc: runs a claimed run through its driver and records its end.
  void Execute(Claimed claimed);
  // What the driver is given, from `claimed` (the claim's instance; read again when there is
  // none).
  absl::StatusOr<Prepared> Prepare(const model::Run& run, std::optional<model::Instance> claimed);
  // The compute instance of service `service` as its driver sees it (request.compute).
  absl::Status AddCompute(const model::Instance& service, drivers::DeployRequest* req);
  // Writes the end of a run and the instance's resulting status, retrying on conflicts.
  // `reason` overrides the reason derived from `result`; `driver` is the driver that ran
  // (a long-running driver's state is kept on the instance for adoption).
  // `ttl`: the effective ttl of a deploy or start (status.expiresAt = now + ttl on success).
  void Finish(const model::Run& run, const absl::Status& result, const boost::json::object& outputs,
              const std::string& reason = "", const drivers::Driver* driver = nullptr,
              std::optional<std::chrono::seconds> ttl = std::nullopt);
  // One try of Finish; ABORTED when a concurrent write won.
  absl::Status FinishOnce(const model::Run& claimed, const model::RunOutcome& outcome,
                          const drivers::Driver* driver);

  // recovery.cc: restarts, leases, long-running workloads.
  absl::Status RebuildGpuAssignments();
  // Gives instance `i`'s GPUs back to the allocator when it holds some on this host.
  void RestoreGpus(const model::Instance& i);
  void AdoptWorkloads();
  void AdoptWorkload(const model::Instance& instance);
  // The request Adopt gets for deployed `instance` (nullopt when it cannot be resolved).
  std::optional<drivers::DeployRequest> AdoptRequest(const model::Instance& instance,
                                                     drivers::Driver** driver);
  // Runs left Running by a dead gantryd (see EngineOptions::sole_owner).
  absl::Status Recover();
  // Several replicas: takes over `run` when its lease expired.
  void TakeOver(const model::Run& run, std::chrono::system_clock::time_point now);
  // Cleans up after `run` (through its driver when `cleanup`) and re-queues or fails it.
  absl::Status RecoverRun(const model::Run& run, bool cleanup);
  // Changes the status of the instance of `run` with `mutate` (false: leave it), re-reading
  // on conflict.
  void UpdateInstanceOf(const model::Run& run,
                        const std::function<bool(model::InstanceStatus&)>& mutate);
  // The driver of a run's template revision (nullptr when it cannot be found).
  drivers::Driver* DriverOf(const model::Run& run);
  void HeartbeatLoop();

  // engine.cc
  // Updates a run with `mutate`, re-reading on conflict.
  absl::Status UpdateRun(const std::string& ns, const std::string& name,
                         const std::function<void(model::Run&)>& mutate);
  std::string Now() const;

  // Constant after construction.
  store::Store& store_;
  drivers::DriverRegistry& drivers_;
  const SecretBox& secrets_;
  RunLogs& logs_;
  const Clock& clock_;
  Metrics& metrics_;
  GpuAllocator& gpus_;
  const EngineOptions options_;

  std::atomic<bool> running_{false};
  std::atomic<bool> stopping_{false};

  std::mutex mu_;
  std::condition_variable wake_;        // dispatcher: runs queued / a worker freed
  std::condition_variable work_ready_;  // workers: claimed runs to execute
  std::condition_variable idle_;        // Stop: active runs finished
  std::condition_variable stopped_;     // the heartbeat: Stop was called (its own: the
                                        // dispatcher's wakes would wake it for nothing)
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
  DispatchWakes wakes_;  // which commits set notified_
  std::vector<Claimed> claimed_ ABSL_GUARDED_BY(mu_);
  int busy_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::shared_ptr<Active>> active_ ABSL_GUARDED_BY(mu_);

  // The dispatcher's own: each Block budget's last look (budgets.h), kept for
  // kBudgetLookEvery unless the project or a rate card changed, this dispatcher claimed a
  // deploy or start of the project, or the open intervals of the look would have spent the
  // budget since. (Another replica's claims are seen within kBudgetLookEvery.)
  struct BudgetLook {
    std::string versions;  // the project's and the rate cards' resourceVersions
    std::chrono::system_clock::time_point at;
    usage::Spend spend;
    std::optional<std::string> over;  // the message when it is spent
  };
  std::map<std::string, BudgetLook> budget_looks_;

  std::vector<std::thread> threads_;
};

}  // namespace gantry::engine
