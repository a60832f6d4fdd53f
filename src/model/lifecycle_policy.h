// Lifecycle policies (API.md "Lifecycle policies"): when Gantry gives an instance's GPUs
// back by itself. A ComputeProfile's spec.lifecycle sets the policy (ttl, idle, schedule);
// an instance's spec.lifecycle may tighten it or loosen it within the profile's bounds.
//
//   Duration      "90s", "30m", "8h", "3d" (one number and one unit; > 0)
//   Cron          a standard 5-field expression (minute hour day-of-month month day-of-week;
//                 *, lists, ranges, steps, JAN-DEC, SUN-SAT, 0 and 7 both Sunday; when both
//                 day fields are restricted a day matching either fires, and a day field
//                 starting with * counts as unrestricted, as in Vixie cron) evaluated in an
//                 IANA time zone (cron.cc); daylight-saving changes neither skip nor double a
//                 firing (a time in a skipped hour fires at the transition, a time in a
//                 repeated hour fires once, at its first occurrence; civil times that fall on
//                 one instant fire once)
//   Deadlines     when each policy falls due for an instance, from its status (startedAt,
//                 idleSince) and the effective policy: the lifecycle controller stores them
//                 and fires what fell due (engine/lifecycle_controller.h)
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/errors.h"

namespace gantry::model {

// "90s" -> 90 s. INVALID_ARGUMENT (message names the accepted forms) for anything else,
// including 0, negative values, fractions and several units ("1h30m").
absl::StatusOr<std::chrono::seconds> ParseDuration(std::string_view text);
// ParseDuration, and also "0" or "0s" -> 0 s (flags where 0 means "every time").
absl::StatusOr<std::chrono::seconds> ParseDurationOrZero(std::string_view text);
// The shortest exact form: 5400 s -> "90m", 7200 s -> "2h", 90 s -> "90s".
std::string FormatDuration(std::chrono::seconds d);

// What a policy does when it falls due.
enum class PolicyAction { kStop, kDestroy };
std::string_view PolicyActionName(PolicyAction a);  // "Stop", "Destroy"

struct TtlPolicy {
  std::optional<std::chrono::seconds> default_ttl;  // spec.lifecycle.ttl.default
  std::optional<std::chrono::seconds> max;          // spec.lifecycle.ttl.max
  PolicyAction action = PolicyAction::kStop;
};

struct IdlePolicy {
  int gpu_utilization_below = 5;  // percent, mean of the instance's GPUs
  std::chrono::seconds after{1800};
  PolicyAction action = PolicyAction::kStop;
};

struct SchedulePolicy {
  std::string timezone;     // IANA name, e.g. Europe/Berlin
  std::string start, stop;  // 5-field cron; either may be empty (no automatic start/stop)
  bool allow_opt_out = false;
};

// A ComputeProfile's spec.lifecycle.
struct LifecyclePolicy {
  std::optional<TtlPolicy> ttl;
  std::optional<IdlePolicy> idle;
  std::optional<SchedulePolicy> schedule;
  bool Empty() const { return !ttl && !idle && !schedule; }
};

// An instance's spec.lifecycle.
struct InstanceLifecycle {
  std::optional<std::chrono::seconds> ttl;
  bool schedule_opt_out = false;
};

// Decoding assumes a validated object (values that do not parse are treated as absent).
LifecyclePolicy DecodeLifecyclePolicy(const boost::json::object& profile_spec);
InstanceLifecycle DecodeInstanceLifecycle(const boost::json::object& instance_spec);

// 422 causes for a profile's spec.lifecycle (fields "spec.lifecycle.ttl.max", ...): bad
// durations, default > max, utilisation outside 0..100, an unknown or empty time zone, a
// cron expression that is not 5 valid fields or never fires, a schedule without start and
// stop or with both the same. Unknown keys, types and the action's values (Stop, Destroy)
// are the schema's (model/schema.cc, checked before this); values of the wrong type are
// skipped here, never trusted.
void ValidateLifecyclePolicy(const boost::json::object& profile_spec,
                             std::vector<FieldCause>* causes);
// 422 causes for an instance's spec.lifecycle against its profile's policy: a ttl that is
// not a duration, a ttl over the max (the message names the max), scheduleOptOut where the
// profile's schedule does not allow it. Nobody, member or admin, loosens the profile's
// bounds through an instance.
void ValidateInstanceLifecycle(const boost::json::object& instance_spec,
                               const LifecyclePolicy& profile, std::vector<FieldCause>* causes);

// The ttl that applies: the instance's, else the profile's default; nullopt = none.
std::optional<std::chrono::seconds> EffectiveTtl(const LifecyclePolicy& profile,
                                                 const InstanceLifecycle& instance);

// A parsed 5-field cron expression.
class CronSchedule {
 public:
  // INVALID_ARGUMENT naming the bad field ("field 2 (hour): 24 is out of range 0-23").
  static absl::StatusOr<CronSchedule> Parse(std::string_view expression);
  // The first firing strictly after `after`, in `zone`; nullopt when none within 5 years.
  std::optional<absl::Time> Next(absl::Time after, const absl::TimeZone& zone) const;

 private:
  std::vector<bool> minute_, hour_, dom_, month_, dow_;
  bool dom_any_ = true, dow_any_ = true;
};

// INVALID_ARGUMENT for a name the tz database does not know.
absl::StatusOr<absl::TimeZone> LoadZone(const std::string& name);

// Deadlines: pure functions of the policy and the instance's status; the lifecycle
// controller stores what they return and fires it.

// When a ttl counted from `started_at` runs out.
absl::Time ExpiresAt(absl::Time started_at, std::chrono::seconds ttl);
// status.expiresAt for an instance whose status.startedAt is `started_at` (RFC 3339): the
// start plus the effective ttl (EffectiveTtl), RFC 3339 in UTC; nullopt without a ttl or
// with a startedAt that does not parse.
std::optional<std::string> ExpiresAtFor(std::string_view started_at, const LifecyclePolicy& profile,
                                        const InstanceLifecycle& instance);
// When to warn (Events ExpiresSoon, IdleSoon, StopScheduled) of an automatic action at
// `deadline` whose countdown began at `start`, earliest first: 1 h and 10 min before, each
// only when it is at most half of the countdown (a warning never comes right after the
// start). When neither is, one warning halfway, at least 1 s before, in whole seconds: a
// 15m ttl warns 7m30s before, a 3s ttl 1 s before; a countdown under 2 s has none.
std::vector<absl::Time> WarningTimes(absl::Time deadline, absl::Time start);

enum class ScheduledAction { kStart, kStop };
struct ScheduledEvent {
  absl::Time time;
  ScheduledAction action;
};
// The schedule's first start or stop strictly after `after`, in its time zone; a stop
// when both fall on the same instant (the GPUs go back). nullopt when the schedule has
// neither, or an expression or zone that does not load (validated policies always do).
std::optional<ScheduledEvent> NextScheduled(const SchedulePolicy& schedule, absl::Time after);

}  // namespace gantry::model
