// The Slurm driver: places an instance on an existing Slurm cluster as one batch job, the
// way a team runs training on a large, shared GPU cluster, rather than scheduling itself.
//
// Apply submits spec.slurm (slurm_config.h) with `sbatch --parsable`: job name
// <project>.<instance>, the instance's labels as JSON in the job comment (with
// paas.gantry.dev/instance and paas.gantry.dev/uid), --gres=gpu[:TYPE]:N from the profile
// (per node), SLURM_CONF set to spec.slurm.slurmConf. The job's environment is sbatch's
// (--export=ALL), which is the allow-listed ChildEnvironment (PATH, HOME, LANG, LC_*, TZ,
// SLURM_CONF of gantryd's, never its credentials) plus spec.slurm.env plus GANTRY_INSTANCE,
// GANTRY_PROJECT, GANTRY_INSTANCE_UID, GANTRY_RUN, GANTRY_STATE_DIR and GANTRY_VAR_<NAME> for
// every resolved variable. With a sandbox user (gantryd is root) the job is submitted with
// --uid/--gid of that user, so slurmd runs it unprivileged, from its workload directory
// (sandbox.h) unless spec.slurm.workingDir says otherwise. Then it polls `squeue --json`:
//   PENDING   -> RunContext::SetWaiting(Slurm's reason, e.g. "Resources", and what it means)
//   RUNNING   -> returns the outputs {jobId, jobName, cluster, partition, nodes, nodeCount, gpus}
//   ended     -> ABORTED with the job's end state and exit code
//   canceled  -> scancel, wait until the job is gone, CANCELLED
//   too long  -> (spec.slurm.timeoutSeconds, else the run's timeout) scancel, DEADLINE_EXCEEDED
// A redeploy first cancels the instance's previous job. A deploy re-run after a gantryd crash
// resumes the job its interrupted attempt submitted instead of submitting a second one.
//
// After Apply, one supervisor thread polls every supervised job (one `squeue --json` per
// cluster per poll_interval) and reports to the observer: a job that ended outside Gantry
// (scancel, failure, time limit, completion, purge) -> kFailed with reason Job<State>
// (JobCancelled, JobFailed, JobCompleted, JobTimeout, JobNodeFail, ..., JobLost when Slurm no
// longer knows it); requeued or suspended -> kRestarting (JobRequeued / JobSuspended); the
// cluster not answering -> kRestarting with reason SlurmUnavailable (Ready False, the instance
// stays deployed), and kRunning when it answers again.
//
// Destroy runs `scancel` and waits until Slurm reports the job ended (or no longer knows it).
// Driver state (in the run and the instance, and STATE_DIR/slurm-driver.json for Destroy and
// for resuming): {jobId, slurmConf, runUid}. After a gantryd restart Adopt re-supervises the
// job by id.
//
// Errors: FAILED_PRECONDITION for a bad spec.slurm or what Slurm refuses (unknown partition,
// GRES it cannot satisfy), with Slurm's words; UNAVAILABLE when the cluster does not answer.
//
// Thread-safety: Apply/Destroy/Recover/Adopt may run concurrently for different instances (the
// engine never runs two at once for the same instance). SetObserver before any run.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "drivers/common/sandbox.h"
#include "drivers/driver.h"
#include "drivers/slurm/slurm_cli.h"
#include "drivers/slurm/slurm_config.h"

namespace gantry::drivers::slurm {

struct SlurmDriverOptions {
  // How often the supervisor looks at deployed jobs.
  std::chrono::milliseconds poll_interval{2000};
  // How often a deploy looks at its job while it waits for RUNNING, and Destroy for the end.
  std::chrono::milliseconds wait_poll{500};
  // Destroy: how long to wait for the job to end after scancel (Slurm's KillWait is 30 s).
  std::chrono::seconds cancel_wait{180};
  // Limit for one Slurm command (a down controller makes each retry about ten seconds).
  std::chrono::seconds command_timeout{60};
  // Who jobs run as and where their workload directory is (default: the submitting user,
  // gantryd's, in the state directory).
  Sandbox sandbox;
};

class SlurmDriver final : public Driver {
 public:
  // Starts the supervisor thread. `launcher` starts Slurm's commands; it must outlive the
  // driver.
  explicit SlurmDriver(SlurmDriverOptions options = {},
                       ProcessLauncher& launcher = DefaultProcessLauncher());
  // Shutdown(); jobs keep running.
  ~SlurmDriver() override;
  SlurmDriver(const SlurmDriver&) = delete;
  SlurmDriver& operator=(const SlurmDriver&) = delete;

  std::string_view Name() const override { return "slurm"; }
  Capabilities Caps() const override { return {.long_running = true, .stop_start = true}; }
  // Every problem ParseSlurmConfig would refuse a deploy with (CheckSlurmConfig).
  void ValidateConfig(const boost::json::object& config,
                      std::vector<FieldCause>* causes) const override;
  boost::json::object ConfigSchema() const override { return SlurmConfigSchema(); }

  absl::StatusOr<boost::json::object> Apply(const DeployRequest& request,
                                            RunContext& context) override;
  // scancel and wait until the job has ended. OK when there is no job. UNAVAILABLE when the
  // cluster does not answer; DEADLINE_EXCEEDED when the job outlives cancel_wait.
  absl::Status Destroy(const DeployRequest& request, RunContext& context) override;
  // Stop cancels the job as Destroy does (the workload directory and its files stay); Start
  // submits it again as Apply does and waits for RUNNING.
  absl::Status Stop(const DeployRequest& request, RunContext& context) override;
  absl::StatusOr<boost::json::object> Start(const DeployRequest& request,
                                            RunContext& context) override;
  // Nothing to clean up: a re-run apply resumes the job, a re-run destroy cancels it. True.
  bool Recover(const boost::json::object& state) override;
  void SetObserver(WorkloadObserver* observer) override;
  // Supervises the job in `state` again (false when it names none). A job that ended while
  // gantryd was down is reported by the next poll.
  bool Adopt(const DeployRequest& request, const boost::json::object& state) override;
  // Stops the supervisor thread; idempotent. Jobs keep running.
  void Shutdown() override;

 private:
  struct Tracked;

  // Apply's parts (slurm_driver.cc says what each does).
  absl::StatusOr<int64_t> ResumeOrReplace(const DeployRequest& request, const SlurmConfig& config,
                                          RunContext& context);
  absl::StatusOr<int64_t> Submit(const DeployRequest& request, const SlurmConfig& config,
                                 const std::string& gres, const SlurmCli& cli, RunContext& context);
  absl::StatusOr<boost::json::object> AwaitRunning(const DeployRequest& request,
                                                   const SlurmConfig& config, const SlurmCli& cli,
                                                   int64_t job_id, RunContext& context);
  // Supervises the running job from now on.
  void Track(const DeployRequest& request, const SlurmConfig& config, int64_t job_id);

  void SupervisorLoop();
  void Tick();
  SlurmCli Cli(const std::string& slurm_conf) const;
  // scancel `job_id` and wait until it has ended. Logs to `context` when given.
  absl::Status CancelAndWait(const SlurmCli& cli, int64_t job_id, RunContext* context);
  void Untrack(const std::string& key);

  // Constant after construction.
  const SlurmDriverOptions options_;
  ProcessLauncher& launcher_;

  std::atomic<WorkloadObserver*> observer_{nullptr};

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Deployed jobs by instance key (uid, else project/name).
  std::map<std::string, std::shared_ptr<Tracked>> jobs_ ABSL_GUARDED_BY(mu_);

  std::thread supervisor_;  // joined by Shutdown
  std::once_flag shutdown_once_;
};

}  // namespace gantry::drivers::slurm
