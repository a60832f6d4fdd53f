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
// At most one active run per instance holds because every action changes the instance's
// phase in the same transaction that queues or claims the run, guarded by the instance's
// resourceVersion (model/lifecycle.h decides what is allowed).
//
// Thread-safety: public methods are safe from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "common/secrets.h"
#include "drivers/driver.h"
#include "engine/inventory.h"
#include "engine/run_log.h"
#include "store/store.h"

namespace gantry::engine {

struct EngineOptions {
  int workers = 4;
  std::string holder;                          // this replica's identity in leases
  std::string host;                            // the host it runs on (host-bound drivers)
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
  // refusing with 409 HasServices.
  absl::StatusOr<boost::json::object> Deploy(const std::string& kind, const std::string& ns,
                                             const std::string& name);
  absl::StatusOr<boost::json::object> Destroy(const std::string& kind, const std::string& ns,
                                              const std::string& name, bool cascade = false);
  absl::StatusOr<boost::json::object> Cancel(const std::string& kind, const std::string& ns,
                                             const std::string& name);
  // DELETE of a deployed instance: a destroy run that removes the record when it succeeds.
  absl::StatusOr<boost::json::object> DeleteDeployed(const std::string& kind,
                                                     const std::string& ns,
                                                     const std::string& name,
                                                     bool cascade = false);
  // DELETE of an instance: removes a NotDeployed one (with its runs) at once, or queues the
  // teardown of a deployed one (*accepted = true). A service that auto-created its compute
  // instance takes that instance with it.
  absl::StatusOr<boost::json::object> Delete(const std::string& kind, const std::string& ns,
                                             const std::string& name, bool cascade,
                                             bool* accepted);

  // Store commit observer hook: wakes the dispatcher when runs are queued.
  void Notify();
  // Queued runs right now (for /metrics).
  int64_t QueueDepth();

 private:
  struct Active {
    std::string ns, name, uid;
    std::atomic<bool> cancel{false};
  };
  class Context;
  // The dispatcher's decision on a queued run (see Admit).
  struct Admission {
    // kSkip: another replica's run (its instance lives on another host).
    enum class Decision { kAdmit, kWait, kFail, kSkip } decision = Decision::kAdmit;
    std::string reason, message;
    std::string owner;       // GPU owner key of the instance
    std::vector<Gpu> gpus;   // assigned (local driver)
    bool gpus_were_held = false;
    boost::json::object resources;  // the profile's spec.resources
    bool host_bound = false;        // the template's driver is host-bound
  };
  // Capacity and quota admission of a queued run, first come first served per GPU type:
  // a deploy that waits for GPUs of a type blocks later deploys of that type.
  Admission Admit(const boost::json::object& run, std::set<std::string>* blocked_types);
  void NoteWaiting(const boost::json::object& run, const Admission& a);
  absl::Status RebuildGpuAssignments();
  void AdoptWorkloads();
  void AdoptWorkloads(const std::string& kind);

  absl::StatusOr<boost::json::object> Queue(const std::string& kind, const std::string& ns,
                                            const std::string& name, const std::string& action,
                                            bool delete_instance, bool cascade);
  // Destroys (and with `remove`, deletes) `services` ahead of their compute instance.
  absl::Status CascadeToServices(const std::vector<boost::json::object>& services, bool remove);
  // Removes a NotDeployed instance and its runs.
  absl::StatusOr<boost::json::object> RemoveRecord(const std::string& kind, const std::string& ns,
                                                   const std::string& name);
  // The runs of one instance.
  absl::StatusOr<std::vector<boost::json::object>> RunsOf(const std::string& kind,
                                                          const std::string& ns,
                                                          const std::string& name);
  // After a service is removed: the compute instance it auto-created goes too (destroyed
  // first when deployed), unless other services run on it by now.
  void ReleaseCreatedCompute(const boost::json::object& service);
  // After compute instance `compute` changed: the deployed services on it get condition
  // ComputeReady (True while it is Success, else False with its phase, reason and message).
  void NoteComputeState(const boost::json::object& compute);
  void DispatchLoop();
  void WorkerLoop();
  void HeartbeatLoop();
  // Tries to claim `run`; true when this replica now owns it.
  bool Claim(const boost::json::object& run, const Admission& admission);
  void Execute(boost::json::object run);
  // Writes the end of a run and the instance's resulting status, retrying on conflicts.
  // `reason` overrides the reason derived from `result`; `driver` names the driver that ran
  // (long-running drivers' state is kept on the instance for adoption).
  void Finish(const boost::json::object& run, const absl::Status& result,
              const boost::json::object& outputs, const std::string& reason = "",
              const std::string& driver = "");
  // Runs left Running by a dead gantryd (see EngineOptions::sole_owner).
  absl::Status Recover();
  // Cleans up after `run` (through its driver when `cleanup`) and re-queues or fails it.
  absl::Status RecoverRun(const boost::json::object& run, bool cleanup);
  // The driver of a run's template revision ("" when it cannot be found).
  std::string DriverOf(const boost::json::object& run);
  // Updates a run with `mutate`, re-reading on conflict.
  absl::Status UpdateRun(const std::string& ns, const std::string& name,
                         const std::function<void(boost::json::object&)>& mutate);
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
  std::condition_variable wake_;       // dispatcher: runs queued / a worker freed
  std::condition_variable work_ready_; // workers: claimed runs to execute
  std::condition_variable idle_;       // Stop: active runs finished
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<boost::json::object> claimed_ ABSL_GUARDED_BY(mu_);
  int busy_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::shared_ptr<Active>> active_ ABSL_GUARDED_BY(mu_);

  std::vector<std::thread> threads_;
};

}  // namespace gantry::engine
