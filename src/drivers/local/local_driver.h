// The local driver: runs an instance's workload as a supervised process group on this
// host, with the GPUs the engine assigned to it, the way a team shares one GPU server.
//
// Apply stops whatever this instance ran before, allocates its named ports, starts
// spec.local.command + args in a session of its own (setsid: it outlives gantryd, which
// re-adopts it after a restart), appends its stdout+stderr to STATE_DIR/workload.log, waits
// for readiness and returns the outputs {endpoint, pid, gpus, ports}. The workload runs as
// options.sandbox's user (when gantryd is root) in its workload directory (sandbox.h), and
// its environment is the allow-listed ChildEnvironment (PATH, HOME, LANG, LC_*, TZ ... of
// gantryd's, never its credentials), then spec.local.env, then what gantry sets (it wins):
//   CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES  the assigned GPU indices joined by ','
//                                                 ("" and "void" when none: no GPU visible)
//   CUDA_DEVICE_ORDER=PCI_BUS_ID                  so CUDA numbers GPUs as nvidia-smi does
//   GANTRY_GPUS, GANTRY_GPU_UUIDS (when known), GANTRY_INSTANCE, GANTRY_PROJECT,
//   GANTRY_STATE_DIR (the workload directory), GANTRY_PORT_<NAME> for each port, PORT for
//   the first.
//
// After Apply, one supervisor thread watches every workload: when one exits it is
// restarted per spec.local.restartPolicy after a backoff (1s, 2s, 4s ... 30s), reported
// to the observer as kRestarting then kRunning once ready again; Never, a clean exit under
// OnFailure, or more than maxRestarts restarts in a row end in kFailed (reason
// WorkloadExited or CrashLoopBackOff). A workload that stayed up 10 minutes starts its
// backoff and its maxRestarts count afresh; the reported restart count keeps growing.
// Those times (backoff, stable run, readiness deadlines) are read from the injected Clock's
// SteadyNow(), so a test with a FakeClock moves them without waiting; how often the
// supervisor looks (poll_interval) and the waits for processes to die are real time.
// Workloads are started by the injected ProcessLauncher.
//
// Files: local_driver.cc (Apply, Destroy, Stop, Start, Recover, Adopt), supervisor.cc (the
// supervisor thread), workload.h (one workload's process, log and state).
//
// Driver state (saved through the RunContext, in events, and in STATE_DIR/local-driver.json
// for Destroy): {pid, startTime, ports: {name: port}, gpus: [...], restartCount}. The pid is
// also the workload's process group and session id.
//
// Thread-safety: Apply/Destroy/Recover/Adopt may run concurrently for different instances
// (the engine never runs two at once for the same instance). SetObserver before any run.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/clock.h"
#include "drivers/common/process.h"
#include "drivers/common/sandbox.h"
#include "drivers/driver.h"
#include "drivers/local/local_config.h"
#include "drivers/local/port_allocator.h"

namespace gantry::drivers::local {

struct Launch;  // workload.h
struct Spawned;
class LogFollower;

struct LocalDriverOptions {
  int port_min = 20000;
  int port_max = 29999;
  // The host name or address endpoints are advertised with (http://HOST:PORT/...).
  std::string advertise_host = "127.0.0.1";
  // Destroy: time between SIGTERM and SIGKILL.
  std::chrono::seconds stop_grace{10};
  // How often the supervisor and Apply look at processes and readiness.
  std::chrono::milliseconds poll_interval{100};
  // Restart backoff: backoff_initial, doubled per restart in a row, at most backoff_max.
  std::chrono::milliseconds backoff_initial{1000};
  std::chrono::milliseconds backoff_max{30000};
  // Who workloads run as and where they keep their files (default: as gantryd, in the state
  // directory).
  Sandbox sandbox;
};

class LocalDriver final : public Driver {
 public:
  // Starts the supervisor thread. Options out of range (ports outside 1..65535, min > max)
  // are clamped. `clock` times restarts and readiness, `launcher` starts workloads; both
  // must outlive the driver. The first form uses the system's clock and launcher.
  explicit LocalDriver(LocalDriverOptions options = {});
  LocalDriver(LocalDriverOptions options, const Clock& clock, ProcessLauncher& launcher);
  // Shutdown(); workloads keep running.
  ~LocalDriver() override;
  LocalDriver(const LocalDriver&) = delete;
  LocalDriver& operator=(const LocalDriver&) = delete;

  std::string_view Name() const override { return "local"; }
  Capabilities Caps() const override {
    return {.host_bound = true,
            .runs_on_gantryd_host = true,
            .long_running = true,
            .stop_start = true,
            .gpu_metrics = true};
  }
  // Every problem ParseLocalConfig would refuse a deploy with (CheckLocalConfig), and an
  // unclosed "${" that BuildLaunch would refuse (CheckVariableSyntax).
  void ValidateConfig(const boost::json::object& config,
                      std::vector<FieldCause>* causes) const override;
  boost::json::object ConfigSchema() const override { return LocalConfigSchema(); }

  // FAILED_PRECONDITION for a bad spec.local (the message names the field) or a program
  // that cannot be run; RESOURCE_EXHAUSTED when no port is free; ABORTED when the workload
  // exits before it is ready (with its last log lines); DEADLINE_EXCEEDED when it is not
  // ready within readiness.timeoutSeconds (or the run's timeout); CANCELLED when the run is
  // canceled meanwhile. On every error the workload is stopped and its ports freed.
  absl::StatusOr<boost::json::object> Apply(const DeployRequest& request,
                                            RunContext& context) override;
  // SIGTERM to the group, stop_grace, SIGKILL, then waits until /proc shows no process of
  // the group. OK when there is nothing to stop. UNAVAILABLE if processes survive SIGKILL.
  absl::Status Destroy(const DeployRequest& request, RunContext& context) override;
  // Stop is Destroy: the process group ends, its ports are freed, and the workload
  // directory (GANTRY_STATE_DIR, what the workload wrote) and its log are kept, as a destroy
  // keeps them. Start is Apply on the GPUs of the start run's request (which may differ
  // from the ones it had), in the same workload directory.
  absl::Status Stop(const DeployRequest& request, RunContext& context) override;
  absl::StatusOr<boost::json::object> Start(const DeployRequest& request,
                                            RunContext& context) override;
  // Kills the group in `state` when its leader is still the same process; always true.
  bool Recover(const boost::json::object& state) override;
  void SetObserver(WorkloadObserver* observer) override;
  // Supervises the workload in `state` when pid and startTime still match a live process.
  bool Adopt(const DeployRequest& request, const boost::json::object& state) override;
  // Stops the supervisor thread; idempotent. Workloads keep running.
  void Shutdown() override;

  // The pid of the workload supervised for the instance with `uid`, or 0.
  int SupervisedPidForTest(const std::string& uid);

 private:
  struct Workload;
  // A readiness probe the supervisor runs unlocked.
  struct Probe {
    std::shared_ptr<Workload> w;
    int pid, port;
    Readiness readiness;
  };

  // Apply's parts: waits until the started workload is ready (OK at once without a check);
  // sets *exited when it exited meanwhile (it is then already reaped).
  absl::Status AwaitReady(const LocalConfig& config, const DeployRequest& request, int port,
                          const Spawned& spawned, const Launch& launch, LogFollower& follower,
                          RunContext& context, bool* exited);
  // Hands the ready workload to the supervisor.
  void Supervise(const DeployRequest& request, const LocalConfig& config, const Launch& launch,
                 const std::map<std::string, int>& ports, const Spawned& spawned,
                 std::chrono::steady_clock::time_point started_at);

  void SupervisorLoop();
  void Tick();
  // Tick's look at one running or starting workload: reports an exit, or kills one not ready
  // in time, or queues its readiness probe.
  void CheckRunning(const std::shared_ptr<Workload>& wp, std::chrono::steady_clock::time_point now,
                    std::vector<WorkloadEvent>& events, std::vector<Probe>& probes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies the restart policy to `w`, which just exited (`how` says how, for messages).
  void HandleExit(Workload& w, int exit_code, const std::string& how,
                  std::vector<WorkloadEvent>& events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Restart(Workload& w, std::vector<WorkloadEvent>& events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  WorkloadEvent MakeEvent(const Workload& w, WorkloadEvent::Kind kind, std::string reason,
                          std::string message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the instance's workload out of supervision and stops it (the supervised one, else
  // the one STATE_DIR records); frees its ports. `grace`: instead of options' stop_grace.
  absl::Status StopPrevious(const std::string& key, const std::string& state_dir,
                            RunContext* context,
                            std::optional<std::chrono::seconds> grace = std::nullopt);

  // Constant after construction.
  const LocalDriverOptions options_;
  const Clock& clock_;
  ProcessLauncher& launcher_;

  PortAllocator ports_;  // thread-safe itself
  std::atomic<WorkloadObserver*> observer_{nullptr};

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // By instance key (uid, else project/name).
  std::map<std::string, std::shared_ptr<Workload>> workloads_ ABSL_GUARDED_BY(mu_);

  std::thread supervisor_;  // joined by Shutdown
  std::once_flag shutdown_once_;
};

}  // namespace gantry::drivers::local
