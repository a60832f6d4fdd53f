// Supervised child processes for drivers: each runs in its own process group, gets stdin
// from a string, streams stdout+stderr line by line, and is killed as a whole group
// (SIGTERM, grace, SIGKILL) on timeout or cancellation. The child also gets
// PR_SET_PDEATHSIG so it dies with gantryd; its grandchildren are reached through the
// process group, and after a crash through KillGroupIfAlive with the recorded start time.
//
// Thread-safety: RunProcess is reentrant; each call owns its child.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gantry::drivers {

struct ProcessSpec {
  std::vector<std::string> argv;             // argv[0] is looked up in PATH
  std::string working_dir;                   // "" = inherit
  std::map<std::string, std::string> env;    // added to (and overriding) the environment
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

// Runs to completion. DEADLINE_EXCEEDED after the timeout (the group is killed),
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
