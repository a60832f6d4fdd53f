// Lifecycle deadlines: what falls due for one instance, and when, as pure functions of what
// is stored (the instance's status and the policy of its pinned profile revision). The
// lifecycle controller (engine/lifecycle_controller.h) fires what these say is due; nothing
// here reads the clock or the store, so restarts and replicas compute the same deadlines.
//
//   TTL             status.expiresAt                           -> the ttl action, TTLExpired
//   Idle            max(idleSince, startedAt) + idle.after     -> the idle action, Idle
//                   (only for drivers with Capabilities.gpu_metrics)
//   Schedule stop   the first schedule.stop firing after startedAt   -> Stop, Scheduled
//                   (not when spec.lifecycle.scheduleOptOut is set and the profile allows it)
//   Schedule start  a Stopped instance whose reason is Scheduled: the first schedule.start
//                   firing after it stopped -> Start, Scheduled. A schedule starts only what a
//                   schedule stopped: a person's stop, a ttl or an idle stop stays stopped.
//
// Only a running instance (phase Success) has stop deadlines; only a Stopped one a start.
//
// Warnings: ExpiresSoon, IdleSoon and StopScheduled go out at model::WarningTimes(deadline,
// since) — 1 h and 10 min before a stop deadline, or halfway through a short countdown (from
// startedAt, idleSince or the schedule's base to the deadline).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model/lifecycle_policy.h"
#include "model/objects.h"

namespace gantry::engine {

using WallTime = std::chrono::system_clock::time_point;

// What a pinned profile revision (and its template's driver) says about lifecycles, decoded
// once per revision: revisions are immutable.
struct PolicyView {
  model::LifecyclePolicy policy;
  std::string driver;        // the template's driver
  bool gpu_metrics = false;  // ... samples GPU utilisation
  int gpu_count = 0;         // the profile's spec.resources.gpu.count
  // The schedule, parsed; absent when the profile has none or it does not parse.
  std::optional<absl::TimeZone> zone;
  std::optional<model::CronSchedule> start, stop;
};

// Decodes a profile revision's spec; `gpu_metrics` from the template's driver.
PolicyView MakePolicyView(const boost::json::object& profile_spec, bool gpu_metrics);

enum class Trigger { kTtl, kIdle, kScheduleStop, kScheduleStart };
std::string TriggerName(Trigger t);  // "ttl", "idle", "schedule-stop", "schedule-start"

enum class Verb { kStop, kDestroy, kStart };
std::string VerbName(Verb v);  // "stop", "destroy", "start"

// One deadline of one instance.
struct Due {
  Trigger trigger = Trigger::kTtl;
  Verb verb = Verb::kStop;
  std::string reason;   // TTLExpired, Idle, Scheduled
  std::string warning;  // ExpiresSoon, IdleSoon, StopScheduled; "" for a start
  WallTime deadline;
  WallTime since;      // when the countdown began (for the warning leads)
  std::string policy;  // the policy in words: "ttl 8h", "GPUs idle 30m (below 5% utilisation)"
};

// The deadlines of `instance` under `view`. `stopped_at`: when a Stopped instance stopped
// (its last run's completion), needed for the schedule's start.
std::vector<Due> DeadlinesOf(const model::Instance& instance, const PolicyView& view,
                             std::optional<WallTime> stopped_at);

// The stored warning Event's name: <instance>.<reason>.<deadline unix>.<lead seconds>, the
// same on every replica and after a restart, so a second create is AlreadyExists.
std::string WarningEventName(const std::string& instance, const Due& due,
                             std::chrono::seconds lead);

// "8h", "90m": model::FormatDuration of a whole number of seconds.
std::string Words(std::chrono::seconds d);

}  // namespace gantry::engine
