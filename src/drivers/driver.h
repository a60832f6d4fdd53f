// Driver: how an instance is deployed and destroyed on real infrastructure (exec scripts,
// local processes, Slurm jobs). Drivers are extensions (STYLE.md #10): one folder and
// namespace each, registered by name in a DriverRegistry; they know no store and no HTTP.
//
// The engine calls Apply or Destroy on a worker thread with everything the driver needs in
// a DeployRequest, and a RunContext to stream log lines, observe cancellation, and persist a
// small JSON "driver state" (pid, job id) that survives a crash of gantryd so that Recover
// can re-adopt or clean up after a restart.
//
// Error contract: Apply/Destroy return the outputs on success, else a Status whose
// canonical code the engine maps to the run's reason:
//   DEADLINE_EXCEEDED -> Timeout, CANCELLED -> Canceled, UNAVAILABLE -> DriverUnavailable,
//   anything else -> DriverError. The message is shown to the user.
//
// Thread-safety: a driver is shared by all workers; Apply/Destroy/Recover may run
// concurrently for different runs.
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/errors.h"

namespace gantry::drivers {

struct DeployRequest {
  std::string action;    // "apply", "destroy", "stop" or "start"
  std::string run_name;  // e.g. gpu-1-7
  std::string run_uid;
  int attempt = 1;               // > 1 when the run is re-run after a control-plane restart
  boost::json::object instance;  // kind, name, project, uid, labels, annotations, displayName
  std::map<std::string, std::string> variables;  // resolved, plaintext
  boost::json::object resources;                 // the profile's spec.resources
  boost::json::object config;                    // the template's spec.<driver>
  boost::json::object previous_outputs;
  // ServiceInstance runs: the compute instance the service runs on {name, project, phase,
  // outputs, gpus, resources}; empty for compute instances. Drivers pass it to the workload
  // (ComputeEnvironment below).
  boost::json::object compute;
  std::string state_dir;  // a private directory per instance that persists across runs
  std::chrono::seconds timeout{3600};
  // GPUs assigned to the instance on this host by the engine (local driver): nvidia-smi
  // indices as strings, and their UUIDs when known (same order). Empty when none.
  std::vector<std::string> gpu_indices;
  std::vector<std::string> gpu_uuids;
  // stop: the time between SIGTERM and the kill when the engine sets one (a preemption's
  // preemptionGracePeriod); else the driver's own.
  std::optional<std::chrono::seconds> stop_grace;
};

// What a driver tracks a request's workload by: the instance's uid, else project/name.
std::string InstanceKey(const DeployRequest& r);
// A JSON value as text for an environment variable: a string as it is, anything else
// serialised ("8", "true", "[1,2]").
std::string Text(const boost::json::value& v);

// The environment a service's workload gets about its compute instance (request.compute):
// GANTRY_COMPUTE_NAME, GANTRY_COMPUTE_PROJECT, GANTRY_COMPUTE_GPUS (comma-separated indices)
// and GANTRY_COMPUTE_<OUTPUT> for each output (upper-cased, other characters as _), e.g.
// GANTRY_COMPUTE_ENDPOINT, GANTRY_COMPUTE_JOBID. Empty for compute instances.
std::map<std::string, std::string> ComputeEnvironment(const DeployRequest& request);

// What a long-running workload did after Apply returned (local driver): the engine records
// it in the instance's status (conditions, restart count, message with the last log lines).
struct WorkloadEvent {
  enum class Kind {
    kRunning,     // (re)started and ready
    kRestarting,  // not ready but not over: exited and restarting after a backoff (local),
                  // requeued, suspended or not observable right now (slurm)
    kFailed,      // exited and will not be restarted (policy Never, or gave up); ended (slurm)
  };
  Kind kind = Kind::kRunning;
  std::string ns, name, instance_uid;  // the instance
  int restart_count = 0;
  std::string reason;   // CamelCase: WorkloadExited, CrashLoopBackOff, WorkloadLost, ...
  std::string message;  // for a person; ends with the last log lines on exits
  boost::json::object driver_state;  // current state (new pid after a restart)
};

class WorkloadObserver {
 public:
  virtual ~WorkloadObserver() = default;
  // Called from the driver's supervision thread; must not block for long.
  virtual void OnWorkloadEvent(const WorkloadEvent& event) = 0;
};

class RunContext {
 public:
  virtual ~RunContext() = default;
  // One line of the run's log (no trailing newline). Sensitive values are scrubbed.
  virtual void Log(std::string_view line) = 0;
  // True once the run should stop (cancel, shutdown); drivers poll it.
  virtual bool Canceled() const = 0;
  // Durably records what Recover needs (e.g. {"pid": 123, "startTime": 456}).
  virtual void SaveDriverState(const boost::json::object& state) = 0;
  // The run waits on the infrastructure (e.g. Slurm holds the job PENDING): the instance
  // shows phase Waiting with `reason` (CamelCase) and `message` while the run goes on; an
  // empty reason puts it back to InProgress. Repeating the same values writes nothing.
  virtual void SetWaiting(std::string_view reason, std::string_view message) {}
};

// What a driver can do, so that the engine and the API never test a driver's name.
struct Capabilities {
  // What a deploy makes lives on the host that ran it (processes, GPUs): with several
  // replicas, only the replica on that host runs the instance's later runs and takes over
  // its interrupted ones.
  bool host_bound = false;
  // A template of this driver runs a program of its author's choice on gantryd's host (as
  // the workload user): only an org admin may save one (docs/security.md).
  bool runs_on_gantryd_host = false;
  // Apply returns while the workload keeps running and the driver reports on it through
  // WorkloadEvents; its driver state is kept on the instance for Adopt after a restart.
  bool long_running = false;
  // The workload can be stopped (GPUs released, what it made kept) and started again
  // (Driver::Stop/Start). A driver whose ability depends on the template (exec: the script
  // lists the actions) says so in CanStop.
  bool stop_start = false;
  // The engine can sample the GPU utilisation of a running workload (the GPUs it assigned
  // on this host: local); without it an idle policy is ignored and `describe` says why.
  bool gpu_metrics = false;
};

class Driver {
 public:
  virtual ~Driver() = default;
  virtual std::string_view Name() const = 0;
  virtual Capabilities Caps() const = 0;

  // Checks a template's driver configuration (its spec.<driver> object) when the template
  // is saved, so a broken one is a 422 instead of a failed first deploy. Appends one cause
  // per problem with `field` relative to the config ("command", "ports[0].name"); the API
  // prefixes "spec.<driver>.". Pure: no I/O beyond what the check needs, thread-safe.
  virtual void ValidateConfig(const boost::json::object& config,
                              std::vector<FieldCause>* causes) const {}
  // The OpenAPI v3 schema of that configuration (served under the template's
  // spec.<driver>); an empty object when the driver publishes none.
  virtual boost::json::object ConfigSchema() const { return {}; }

  // Whether an instance of a template with this config can be stopped: OK, else
  // FAILED_PRECONDITION whose message says why (the API answers 409 with it and an
  // automatic stop leaves the instance where it was with it). Default: Caps().stop_start.
  virtual absl::Status CanStop(const boost::json::object& config) const;

  // Deploys; returns the outputs (string values).
  virtual absl::StatusOr<boost::json::object> Apply(const DeployRequest& request,
                                                    RunContext& context) = 0;
  // Tears down what Apply made; idempotent.
  virtual absl::Status Destroy(const DeployRequest& request, RunContext& context) = 0;

  // Lifecycle (CanStop): Stop ends the workload and releases its GPUs but keeps what it made
  // (working directory, data); Start runs it again, on the GPUs in `request` (which may
  // differ from before), and returns the outputs as Apply does. Both idempotent. Defaults:
  // FAILED_PRECONDITION.
  virtual absl::Status Stop(const DeployRequest& request, RunContext& context);
  virtual absl::StatusOr<boost::json::object> Start(const DeployRequest& request,
                                                    RunContext& context);

  // After a crash of gantryd: `state` is what the interrupted run saved. Cleans up what is
  // left of it (e.g. kills the orphaned process group). Returns true when re-running the
  // action from the start is safe (the exec contract: apply and destroy are idempotent).
  virtual bool Recover(const boost::json::object& state) = 0;

  // Long-running drivers: the engine registers itself once, before any run.
  virtual void SetObserver(WorkloadObserver* observer) {}
  // After a gantryd restart, for each deployed instance of this driver (`request` as for a
  // deploy, with `instance` naming it): resume supervising the workload `state` describes
  // when it is still the same process (pid and start time). Returns false when it is gone.
  virtual bool Adopt(const DeployRequest& request, const boost::json::object& state) {
    return true;
  }
  // Stops supervision threads (shutdown); workloads keep running for the next start.
  virtual void Shutdown() {}
};

// Drivers by name. Filled at start-up, read-only afterwards.
class DriverRegistry {
 public:
  void Register(std::unique_ptr<Driver> driver);
  // nullptr when no driver has that name.
  Driver* Find(std::string_view name) const;
  // Registers `observer` with every driver (before any run).
  void SetObserver(WorkloadObserver* observer);
  // Stops every driver's supervision (shutdown); workloads keep running.
  void Shutdown();

 private:
  std::map<std::string, std::unique_ptr<Driver>, std::less<>> drivers_;
};

}  // namespace gantry::drivers
