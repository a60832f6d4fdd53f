// Slurm's command-line tools as the Slurm driver uses them: sbatch, squeue --json and scancel,
// each run with SLURM_CONF set to the cluster's slurm.conf (so one gantryd serves several
// clusters), stdout and stderr kept apart (squeue's JSON must not mix with warnings), and a
// time limit (a down controller makes every command retry for about ten seconds).
//
// Errors: UNAVAILABLE when the controller cannot be reached, the tool is missing or it timed
// out ("the Slurm cluster (slurm.conf /x) does not answer: sbatch: error: ... Unable to
// contact slurm controller (connect failure)"); FAILED_PRECONDITION when Slurm refuses the
// request (bad partition, GRES, account ...), with Slurm's own words.
//
// Thread-safety: every method may be called from any thread; each call runs its own process.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "drivers/common/process.h"
#include "drivers/slurm/slurm_json.h"

namespace gantry::drivers::slurm {

struct CommandResult {
  int exit_code = -1;  // -1 when it was killed by a signal
  std::string out, err;
};

// Runs `argv` (argv[0] looked up in PATH), started by `launcher`, with the allow-listed
// ChildEnvironment (gantryd's PATH, locale, SLURM_CONF ...) plus `env`, `stdin_data` on
// stdin, from `working_dir` ("" = inherit). UNAVAILABLE when it cannot be started;
// DEADLINE_EXCEEDED (the process is killed) after `timeout`.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const std::map<std::string, std::string>& env,
                                         const std::string& stdin_data,
                                         const std::string& working_dir,
                                         std::chrono::milliseconds timeout,
                                         ProcessLauncher& launcher = DefaultProcessLauncher());

class SlurmCli {
 public:
  // `slurm_conf`: the cluster's slurm.conf, "" for the environment's default.
  // `launcher` starts sbatch, squeue and scancel; it must outlive the SlurmCli.
  explicit SlurmCli(std::string slurm_conf,
                    std::chrono::milliseconds timeout = std::chrono::seconds(60),
                    ProcessLauncher& launcher = DefaultProcessLauncher());

  // sbatch --parsable ARGS (the script on stdin when not empty) with `env` added to the
  // job's environment. Returns the job id.
  absl::StatusOr<int64_t> Submit(const std::vector<std::string>& args, const std::string& script,
                                 const std::map<std::string, std::string>& env,
                                 const std::string& working_dir) const;
  // squeue --json for `job_ids` (all jobs when empty). Jobs Slurm no longer knows are simply
  // absent from the listing.
  absl::StatusOr<JobListing> Jobs(const std::vector<int64_t>& job_ids) const;
  // scancel JOB. OK also when Slurm no longer knows the job.
  absl::Status Cancel(int64_t job_id) const;

  // "the Slurm cluster (slurm.conf /x)" or "the Slurm cluster (default slurm.conf)".
  std::string Describe() const;

 private:
  absl::StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                                    const std::map<std::string, std::string>& env,
                                    const std::string& stdin_data,
                                    const std::string& working_dir) const;
  absl::Status ErrorFrom(const std::string& what, const CommandResult& r) const;

  const std::string slurm_conf_;
  const std::chrono::milliseconds timeout_;
  ProcessLauncher& launcher_;
};

}  // namespace gantry::drivers::slurm
