// Supervised child processes for drivers: each runs in its own process group, gets stdin
// from a string, streams stdout+stderr line by line, and is killed as a whole group
// (SIGTERM, grace, SIGKILL) on timeout or cancellation. The child also gets
// PR_SET_PDEATHSIG so it dies with gantryd; its grandchildren are reached through the
// process group, and after a crash through KillGroupIfAlive with the recorded start time.
//
// A ProcessLauncher is the one place gantry starts a program (exec, local and Slurm all get
// one injected; tests may pass their own to fail a start). The system launcher does not
// fork: copying the page tables of a large, threaded gantryd was the cost of a deploy
// (docs/performance.md). It clones with CLONE_VM|CLONE_VFORK on a stack of its own, the
// way posix_spawn does, so the parent thread waits until the child has exec'd or failed and
// the rest of gantryd runs on. Everything the child needs (argv, envp, the PATH candidates,
// the groups) is prepared before the clone; after it the child makes raw system calls only:
// own session or process group, dup2 of the fds, signal dispositions and mask reset,
// setgroups/setgid/setuid (the workload user, before chdir so it reaches only what that
// user may), PR_SET_PDEATHSIG, chdir, execve. The child gets exactly the environment it is
// given (ChildEnvironment in sandbox.h).
//
// Thread-safety: launchers and RunProcess are reentrant; each call owns its child.
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
  bool die_with_parent = true;         // only without new_session
  std::optional<WorkloadUser> run_as;  // switch to this account before chdir and exec
};

// Where a child failed before its program ran.
enum class SpawnStage { kCredentials, kWorkingDir, kExec };

struct Spawn {
  int pid = -1;        // > 0: the program runs (its pid is its process group id)
  SpawnStage stage{};  // otherwise: what failed, with errno `error`; the child was reaped
  int error = 0;
};

// Starts programs. Implementations must be safe to call from any thread.
class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  // Starts `spec`; returns once the program runs (Spawn::pid > 0) or the child failed
  // before it ran (stage and errno; the child was reaped). UNAVAILABLE when pipes or the
  // clone fail; INVALID_ARGUMENT for an empty argv. The caller owns (closes) the fds it
  // passed, and reaps a child that runs.
  virtual absl::StatusOr<Spawn> Start(const ChildSpec& spec) = 0;
};

// The launcher of the system (clone with CLONE_VM|CLONE_VFORK, see above). Stateless.
class SystemProcessLauncher final : public ProcessLauncher {
 public:
  absl::StatusOr<Spawn> Start(const ChildSpec& spec) override;
};

// A SystemProcessLauncher that lives as long as the program: the default of the drivers.
ProcessLauncher& DefaultProcessLauncher();

// "cannot switch to user nobody: Operation not permitted" and the like, for a failed Spawn.
std::string DescribeSpawnFailure(const ChildSpec& spec, const Spawn& spawn);

struct ProcessSpec {
  std::vector<std::string> argv;           // argv[0] is looked up in PATH
  std::string working_dir;                 // "" = inherit
  std::map<std::string, std::string> env;  // set on top of ChildEnvironment
  std::optional<WorkloadUser> run_as;      // run as this account (ChildSpec::run_as)
  std::string stdin_data;
  std::chrono::milliseconds timeout{std::chrono::hours(1)};
  std::chrono::milliseconds kill_grace{std::chrono::seconds(5)};
};

struct ProcessHooks {
  std::function<void(std::string_view line)> on_line;  // stdout and stderr, merged
  std::function<bool()> canceled;                      // polled; true stops the process
  std::function<void(int pid, long long start_time)> on_started;
};

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
};

// Runs to completion, in a process group of its own that dies with gantryd, with the
// environment ChildEnvironment(spec.env, run_as), started by `launcher`. DEADLINE_EXCEEDED
// after the timeout (the group is killed), CANCELLED when `canceled` became true (the group
// is killed), UNAVAILABLE when the program cannot be started ("cannot run ./deploy.sh: No
// such file or directory"). Returns as soon as the program has exited and its output is
// read (a pidfd wakes the wait; no polling interval).
absl::StatusOr<ProcessResult> RunProcess(const ProcessSpec& spec, const ProcessHooks& hooks,
                                         ProcessLauncher& launcher = DefaultProcessLauncher());

// The start time of `pid` in clock ticks since boot (field 22 of /proc/PID/stat), or -1.
long long ProcessStartTime(int pid);

// Kills process group `pgid` (SIGKILL) when its leader `pgid` is still the process that
// started at `start_time`; also kills a group whose leader already exited. Returns true
// when something was killed.
bool KillGroupIfAlive(int pgid, long long start_time);

}  // namespace gantry::drivers
