// Supervised child processes for drivers: each runs in its own process group, gets stdin
// from a string, streams stdout+stderr line by line, and is killed as a whole group
// (SIGTERM, grace, SIGKILL) on timeout or cancellation. The child also gets
// PR_SET_PDEATHSIG so it dies with gantryd; its grandchildren are reached through the
// process group, and after a crash through KillGroupIfAlive with the recorded start time.
//
// SpawnChild is the one place gantry forks a program (exec, local and Slurm all go through
// it): the child gets exactly the environment it is given (ChildEnvironment in sandbox.h),
// switches to the workload user when one is given (setgroups, setgid, setuid, before chdir,
// so it reaches only what that user may) and resets signal dispositions and mask.
//
// Thread-safety: SpawnChild and RunProcess are reentrant; each call owns its child.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "drivers/common/sandbox.h"

namespace gantry::drivers {

// How to start one child.
struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in the child's PATH
  std::vector<std::string> env;   // complete, KEY=VALUE (EnvStrings(ChildEnvironment(...)))
  std::string working_dir;        // "" = inherit
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;  // dup2'ed to 0, 1, 2; -1 = /dev/null
  // true: a session of its own (setsid), so it outlives gantryd (local workloads); false: a
  // process group of its own that dies with gantryd (PR_SET_PDEATHSIG).
  bool new_session = false;
  bool die_with_parent = true;  // only without new_session
  std::optional<WorkloadUser> run_as;  // switch to this account before chdir and exec
};

// Where a child failed before its program ran.
enum class SpawnStage { kCredentials, kWorkingDir, kExec };

struct Spawn {
  int pid = -1;       // > 0: the program runs (its pid is its process group id)
  SpawnStage stage{};  // otherwise: what failed, with errno `error`; the child was reaped
  int error = 0;
};

// Forks and execs `spec`; returns once the program runs or the child failed (see Spawn).
// UNAVAILABLE when pipes or fork fail. The caller owns (closes) the fds it passed.
absl::StatusOr<Spawn> SpawnChild(const ChildSpec& spec);

// "cannot switch to user nobody: Operation not permitted" and the like, for a failed Spawn.
std::string DescribeSpawnFailure(const ChildSpec& spec, const Spawn& spawn);

struct ProcessSpec {
  std::vector<std::string> argv;             // argv[0] is looked up in PATH
  std::string working_dir;                   // "" = inherit
  std::map<std::string, std::string> env;    // set on top of ChildEnvironment
  std::optional<WorkloadUser> run_as;        // run as this account (ChildSpec::run_as)
  std::string stdin_data;
  std::chrono::milliseconds timeout{std::chrono::hours(1)};
  std::chrono::milliseconds kill_grace{std::chrono::seconds(5)};
};

struct ProcessHooks {
  std::function<void(std::string_view line)> on_line;   // stdout and stderr, merged
  std::function<bool()> canceled;                       // polled; true stops the process
  std::function<void(int pid, long long start_time)> on_started;
};

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
};

// Runs to completion, in a process group of its own that dies with gantryd, with the
// environment ChildEnvironment(spec.env, run_as). DEADLINE_EXCEEDED after the timeout (the group is killed),
// CANCELLED when `canceled` became true (the group is killed), UNAVAILABLE when the program
// cannot be started ("cannot run ./deploy.sh: No such file or directory").
absl::StatusOr<ProcessResult> RunProcess(const ProcessSpec& spec, const ProcessHooks& hooks);

// The start time of `pid` in clock ticks since boot (field 22 of /proc/PID/stat), or -1.
long long ProcessStartTime(int pid);

// Kills process group `pgid` (SIGKILL) when its leader `pgid` is still the process that
// started at `start_time`; also kills a group whose leader already exited. Returns true
// when something was killed.
bool KillGroupIfAlive(int pgid, long long start_time);

}  // namespace gantry::drivers
