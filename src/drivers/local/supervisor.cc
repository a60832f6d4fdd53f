// The local driver's supervisor thread: notices exits, applies the restart policy with
// its backoff, and probes the readiness of restarted workloads (local_driver.h).
#include <signal.h>

#include "drivers/common/proc_info.h"
#include "drivers/common/state_file.h"
#include "drivers/local/local_driver.h"
#include "drivers/local/readiness_probe.h"
#include "drivers/local/workload.h"

namespace gantry::drivers::local {
namespace {

using std::chrono::milliseconds;

// A workload that stayed up this long starts its backoff and maxRestarts count afresh.
constexpr auto kStableRun = std::chrono::minutes(10);

}  // namespace

void LocalDriver::SupervisorLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, options_.poll_interval, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    Tick();
    lock.lock();
  }
}

WorkloadEvent LocalDriver::MakeEvent(const Workload& w, WorkloadEvent::Kind kind,
                                     std::string reason, std::string message) {
  WorkloadEvent e;
  e.kind = kind;
  e.ns = w.ns;
  e.name = w.name;
  e.instance_uid = w.uid;
  e.restart_count = w.restart_count;
  e.reason = std::move(reason);
  e.message = std::move(message);
  e.driver_state = w.State();
  return e;
}

void LocalDriver::HandleExit(Workload& w, int exit_code, const std::string& how,
                             std::vector<WorkloadEvent>& events) {
  const auto now = clock_.SteadyNow();
  const std::string tail = TailText(w.launch.log_path, w.log_offset);
  const RestartPolicy policy = w.config.restart_policy;
  const bool clean = exit_code == 0;
  const bool restart =
      policy == RestartPolicy::kAlways || (policy == RestartPolicy::kOnFailure && !clean);
  if (!restart) {
    w.phase = Workload::Phase::kFailed;
    std::string why = !w.can_restart ? " (not restarted: the template no longer fits it)"
                      : policy == RestartPolicy::kNever
                          ? " (restartPolicy Never)"
                          : " (restartPolicy OnFailure restarts only failures)";
    events.push_back(MakeEvent(w, WorkloadEvent::Kind::kFailed, "WorkloadExited",
                               "the workload " + how + why + tail));
  } else {
    if (now - w.started_at >= kStableRun) w.in_a_row = 0;
    if (w.in_a_row >= w.config.max_restarts) {
      w.phase = Workload::Phase::kFailed;
      events.push_back(MakeEvent(w, WorkloadEvent::Kind::kFailed, "CrashLoopBackOff",
                                 "the workload " + how + " after " + std::to_string(w.in_a_row) +
                                     " restarts in a row (maxRestarts " +
                                     std::to_string(w.config.max_restarts) +
                                     "); not restarting it again" + tail));
    } else {
      ++w.in_a_row;
      ++w.restart_count;
      auto delay = options_.backoff_initial;
      for (int i = 1; i < w.in_a_row && delay < options_.backoff_max; ++i) delay *= 2;
      delay = std::min(delay, options_.backoff_max);
      w.restart_at = now + delay;
      w.phase = Workload::Phase::kBackoff;
      events.push_back(MakeEvent(w, WorkloadEvent::Kind::kRestarting, "WorkloadExited",
                                 "the workload " + how + "; restart " +
                                     std::to_string(w.restart_count) + " in " + Seconds(delay) +
                                     tail));
    }
  }
  WriteStateFile(w.state_dir, kStateFile, w.State());
}

void LocalDriver::Restart(Workload& w, std::vector<WorkloadEvent>& events) {
  auto spawned = StartWorkload(w.launch, launcher_);
  const auto now = clock_.SteadyNow();
  w.started_at = now;
  w.kill_reason.clear();
  if (!spawned.ok()) {
    HandleExit(w, 127, "could not be restarted: " + std::string(spawned.status().message()),
               events);
    return;
  }
  w.pid = spawned->pid;
  w.start_time = spawned->start_time;
  w.is_child = true;
  w.log_offset = spawned->log_offset;
  WriteStateFile(w.state_dir, kStateFile, w.State());
  if (w.config.readiness.kind == Readiness::Kind::kNone) {
    w.phase = Workload::Phase::kRunning;
    events.push_back(MakeEvent(w, WorkloadEvent::Kind::kRunning, "Running",
                               "the workload was restarted (restart " +
                                   std::to_string(w.restart_count) + ") and is running"));
  } else {
    w.phase = Workload::Phase::kStarting;
    w.ready_deadline = now + w.config.readiness.timeout;
  }
}

void LocalDriver::CheckRunning(const std::shared_ptr<Workload>& wp,
                               std::chrono::steady_clock::time_point now,
                               std::vector<WorkloadEvent>& events, std::vector<Probe>& probes) {
  Workload& w = *wp;
  bool exited = false;
  int wstatus = 0;
  bool known = false;
  if (w.is_child) {
    bool not_ours = false;
    exited = known = ChildExited(w.pid, &wstatus, &not_ours);
    if (not_ours) w.is_child = false;  // then /proc tells
  }
  if (!exited && !w.is_child && !ProcessAlive(w.pid, w.start_time)) {
    exited = true;
    // Not our child: its parent reaps it. The group may still hold its children.
    if (GroupIsOurs(w.pid, w.start_time)) ::kill(-w.pid, SIGKILL);
    known = ReapIfOurZombie(w.pid, w.start_time, &wstatus);
  }
  if (exited) {
    int code = -1;
    std::string how = known ? DescribeWait(wstatus, &code)
                            : "exited (its exit code is unknown: it was started before "
                              "gantryd restarted)";
    if (!w.kill_reason.empty()) how = w.kill_reason + " and was killed";
    HandleExit(w, code, how, events);
  } else if (w.phase == Workload::Phase::kStarting) {
    if (now >= w.ready_deadline) {
      w.kill_reason =
          "was not ready within " +
          Seconds(std::chrono::duration_cast<milliseconds>(w.config.readiness.timeout)) +
          " of its restart";
      ::kill(-w.pid, SIGKILL);
    } else if (auto it = w.ports.find(w.config.readiness.port); it != w.ports.end()) {
      probes.push_back({wp, w.pid, it->second, w.config.readiness});
    }
  }
}

void LocalDriver::Tick() {
  std::vector<WorkloadEvent> events;
  std::vector<Probe> probes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = clock_.SteadyNow();
    for (auto& [key, wp] : workloads_) {
      switch (wp->phase) {
        case Workload::Phase::kRunning:
        case Workload::Phase::kStarting:
          CheckRunning(wp, now, events, probes);
          break;
        case Workload::Phase::kBackoff:
          if (now >= wp->restart_at) Restart(*wp, events);
          break;
        case Workload::Phase::kFailed:
          break;
      }
    }
  }
  // Probes run unlocked: they may take up to a second each.
  for (auto& p : probes) {
    absl::Status s = p.readiness.kind == Readiness::Kind::kHttp
                         ? ProbeHttp(p.port, p.readiness.http_path, milliseconds(1000))
                         : ProbeTcp(p.port, milliseconds(1000));
    if (!s.ok()) continue;
    std::lock_guard<std::mutex> lock(mu_);
    Workload& w = *p.w;
    if (w.removed || w.phase != Workload::Phase::kStarting || w.pid != p.pid) continue;
    w.phase = Workload::Phase::kRunning;
    events.push_back(MakeEvent(w, WorkloadEvent::Kind::kRunning, "Running",
                               "the workload was restarted (restart " +
                                   std::to_string(w.restart_count) + ") and is ready"));
  }
  if (WorkloadObserver* o = observer_.load())
    for (const auto& e : events) o->OnWorkloadEvent(e);
}

}  // namespace gantry::drivers::local
