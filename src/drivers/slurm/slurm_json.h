// Parsing of Slurm's JSON job listings: `squeue --json` and `scontrol show job --json` (both
// print {"meta": ..., "errors": [...], "jobs": [...]}). The Slurm driver prefers them over
// scraping text.
//
// Two shapes are accepted, as Slurm changed its data parser over releases:
//   - OpenAPI v0.0.38 (Slurm 22.05, Debian 12's slurm-wlm): "job_state": "PENDING",
//     numbers as plain JSON numbers (null when unset), "exit_code" as a wait status.
//   - v0.0.39+ (Slurm 23.02 and later): "job_state": ["PENDING", "REQUEUED", ...] (the base
//     state first, then flags), numbers as {"set": true, "infinite": false, "number": 10},
//     "exit_code": {"status": [...], "return_code": {...}, "signal": {...}}.
// Unknown fields are ignored; a malformed document is INVALID_ARGUMENT (it is outside input:
// never asserted on).
//
// Note that 22.05's squeue ignores --jobs with --json: callers filter by job id themselves.
//
// Thread-safety: plain functions over values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gantry::drivers::slurm {

struct SlurmJob {
  int64_t job_id = 0;
  std::string name;
  std::string state;        // base state: PENDING, RUNNING, COMPLETED, CANCELLED, ...
  std::string reason;       // state_reason: Resources, Priority, None, NonZeroExitCode, ...
  std::string description;  // state_description (often empty)
  std::string cluster, partition, account, qos, user, comment;
  std::string nodes;  // the node list, e.g. "gnode[1-2]"; "" while pending
  int64_t node_count = 0;
  std::vector<std::string> gres_detail;  // per allocated node, e.g. "gpu:h100:2(IDX:0-1)"
  std::string tres_per_node;             // what was asked, e.g. "gres:gpu:h100:2"
  int64_t start_time = 0, end_time = 0, submit_time = 0;  // seconds since the epoch; 0 = unset
  int exit_code = 0;    // the batch script's exit code (0..255), when it exited
  int exit_signal = 0;  // the signal that ended it, when one did
  int restart_count = 0;
};

struct JobListing {
  std::vector<SlurmJob> jobs;
  // The "errors" Slurm reported ("slurm_load_jobs: Failed while looking for jobs" when the
  // controller cannot be reached: squeue --json then exits 0 with no jobs).
  std::vector<std::string> errors;
};

// Parses squeue --json / scontrol show job --json output.
absl::StatusOr<JobListing> ParseJobListing(std::string_view text);

// The job with `job_id` in `listing`, or nullptr.
const SlurmJob* FindJob(const JobListing& listing, int64_t job_id);

// PENDING, REQUEUED, REQUEUE_HOLD, REQUEUE_FED, CONFIGURING, RESV_DEL_HOLD: not started yet.
bool IsPendingState(std::string_view state);
// RUNNING, COMPLETING (still holding its nodes), SIGNALING, STAGE_OUT, RESIZING. (SUSPENDED
// is none of these three: started, holding its nodes, not running.)
bool IsRunningState(std::string_view state);
// COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL, PREEMPTED, BOOT_FAIL, DEADLINE,
// OUT_OF_MEMORY: the job is over and holds nothing.
bool IsTerminalState(std::string_view state);

// "CANCELLED" -> "JobCancelled", "NODE_FAIL" -> "JobNodeFail": a CamelCase reason.
std::string EndReason(std::string_view state);

// What Slurm's pending reason means, for a person ("" when not known):
// "Resources" -> "the resources the job asks for are in use".
std::string ExplainPendingReason(std::string_view reason);

// Parses `sbatch --parsable` output: "42" or "42;cluster". INVALID_ARGUMENT otherwise.
absl::StatusOr<int64_t> ParseSubmittedJobId(std::string_view text);

}  // namespace gantry::drivers::slurm
