// The parts of the local driver around one workload process, shared by the driver
// (local_driver.cc: Apply, Destroy, Adopt) and its supervisor (supervisor.cc: exits,
// restarts, readiness after a restart). Internal to the local driver.
//
//   Launch        what (re)starts a workload: argv, env, working directory, log, user
//   StartWorkload starts a Launch through the ProcessLauncher, in a session of its own
//   StopGroup     SIGTERM, grace, SIGKILL, and waits until the process group is gone
//   LogFollower   streams the workload's log into the run log while Apply waits
//   Workload      the supervisor's record of one instance's workload
//
// Thread-safety: the functions are reentrant; a Workload is guarded by LocalDriver::mu_.
#pragma once

#include <sys/types.h>

#include <boost/json.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "drivers/common/process.h"
#include "drivers/common/sandbox.h"
#include "drivers/driver.h"
#include "drivers/local/local_config.h"
#include "drivers/local/local_driver.h"

namespace gantry::drivers::local {

inline constexpr int kTailLines = 5;
// After SIGKILL, how long Destroy waits for the group to vanish before giving up.
inline constexpr auto kKillWait = std::chrono::seconds(10);
inline constexpr const char* kStateFile = "local-driver.json";
inline constexpr const char* kLogFile = "workload.log";

// o[key] as an integer (`fallback` when absent or not a number).
long long Int(const boost::json::object& o, std::string_view key, long long fallback);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
// "2s", "1.5s".
std::string Seconds(std::chrono::milliseconds d);
// "exited with code 3" / "was killed by signal 9 (SIGKILL)"; exit code -1 for signals.
std::string DescribeWait(int wstatus, int* exit_code);

// Everything needed to (re)start a workload, prepared from the config once.
struct Launch {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // KEY=VALUE, complete
  std::string working_dir;
  std::string log_path;
  std::optional<WorkloadUser> run_as;
};

// `workload_dir`: WorkloadDir(sandbox, r.state_dir), the workload's GANTRY_STATE_DIR.
// FAILED_PRECONDITION when a ${VAR} cannot be expanded.
absl::StatusOr<Launch> BuildLaunch(const LocalConfig& c, const DeployRequest& r,
                                   const Sandbox& sandbox, const std::string& workload_dir,
                                   const std::map<std::string, int>& ports,
                                   const std::vector<std::string>& gpus);

struct Spawned {
  int pid = 0;
  long long start_time = -1;
  off_t log_offset = 0;
};

// Starts `l` in a new session (it survives gantryd), output appended to the log file.
// FAILED_PRECONDITION when the program or working directory is missing; UNAVAILABLE for
// other system failures.
absl::StatusOr<Spawned> StartWorkload(const Launch& l, ProcessLauncher& launcher);

// "; last log lines:\n..." with the last lines written since `offset`, or "".
std::string TailText(const std::string& path, off_t offset);

// Streams what the workload writes to its log into the run log while Apply waits.
class LogFollower {
 public:
  LogFollower(std::string path, off_t pos) : path_(std::move(path)), pos_(pos) {}
  // Logs the complete lines written since the last call (and the partial one on `flush`).
  void Poll(RunContext& context, bool flush);

 private:
  void Emit(RunContext& context, std::string_view line);
  std::string path_;
  off_t pos_;
  std::string partial_;
  int lines_ = 0;
};

// The driver state: {pid, startTime, ports, gpus, restartCount}.
boost::json::object StateJson(int pid, long long start_time,
                              const std::map<std::string, int>& ports,
                              const std::vector<std::string>& gpus, int restart_count);

// Reaps `pid` when it is our own zombie child that started at `start_time`: checking the
// start time first keeps us from reaping an unrelated child that reused the pid.
bool ReapIfOurZombie(int pid, long long start_time, int* wstatus);
// For our own child `pid`: when it has exited, kills what it left in its process group
// (before reaping it, so the group id cannot have been reused yet), reaps it and returns
// true with its wait status. ECHILD sets *not_ours.
bool ChildExited(int pid, int* wstatus, bool* not_ours);
// True when the group led by `pid` may still hold our workload: its leader is that process
// (alive or a zombie), or the leader is gone but members remain (a pid is not reused while
// it names a live process group).
bool GroupIsOurs(int pid, long long start_time);
// SIGTERM to the group, `grace` (cut short when `hurry` says so), SIGKILL, then waits until
// no live process of the group is left (real time: these are real processes).
absl::Status StopGroup(int pid, long long start_time, std::chrono::milliseconds grace,
                       std::chrono::milliseconds poll, const std::function<bool()>& hurry);

struct LocalDriver::Workload {
  // Constant after registration.
  std::string key, ns, name, uid, state_dir;
  LocalConfig config;
  Launch launch;
  bool can_restart = true;  // false when an adopted workload's launch could not be rebuilt
  std::map<std::string, int> ports;
  std::vector<std::string> gpus;

  // Changed by the supervisor, under LocalDriver::mu_. Times are the driver's Clock's
  // SteadyNow().
  enum class Phase { kStarting, kRunning, kBackoff, kFailed };
  Phase phase = Phase::kRunning;
  int pid = 0;
  long long start_time = -1;
  bool is_child = false;  // waitpid works; otherwise exits are seen through /proc
  off_t log_offset = 0;
  int restart_count = 0;  // all restarts, reported
  int in_a_row = 0;       // restarts since the workload last stayed up kStableRun
  std::chrono::steady_clock::time_point started_at, ready_deadline, restart_at;
  std::string kill_reason;  // set when the supervisor killed it (not ready in time)
  bool removed = false;     // taken out of supervision by Destroy/Apply

  boost::json::object State() const {
    return StateJson(pid, start_time, ports, gpus, restart_count);
  }
};

}  // namespace gantry::drivers::local
