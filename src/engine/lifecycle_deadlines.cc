#include "engine/lifecycle_deadlines.h"

#include <algorithm>

#include "engine/engine_internal.h"
#include "model/codec.h"

namespace gantry::engine {

namespace {

using std::chrono::seconds;

std::optional<WallTime> TimeOf(const std::optional<std::string>& rfc3339) {
  if (!rfc3339) return std::nullopt;
  return internal::ParseRfc3339(*rfc3339);
}

std::optional<WallTime> NextFiring(const model::CronSchedule& cron, const absl::TimeZone& zone,
                                   WallTime after) {
  auto next = cron.Next(absl::FromChrono(after), zone);
  if (!next) return std::nullopt;
  return std::chrono::time_point_cast<WallTime::duration>(absl::ToChronoTime(*next));
}

Verb VerbOf(model::PolicyAction a) {
  return a == model::PolicyAction::kDestroy ? Verb::kDestroy : Verb::kStop;
}

std::optional<Due> TtlDue(const model::Instance& instance, const PolicyView& view) {
  auto expires = TimeOf(instance.status.expires_at);
  if (!expires) return std::nullopt;
  Due d{Trigger::kTtl, Verb::kStop, "TTLExpired", "ExpiresSoon", *expires, *expires, "ttl"};
  if (view.policy.ttl) d.verb = VerbOf(view.policy.ttl->action);
  auto started = TimeOf(instance.status.started_at);
  d.since = started && *started < *expires ? *started : *expires;
  auto ttl = model::EffectiveTtl(view.policy, instance.lifecycle);
  if (ttl) d.policy = "ttl " + Words(*ttl);
  return d;
}

std::optional<Due> IdleDue(const model::Instance& instance, const PolicyView& view) {
  auto idle_since = TimeOf(instance.status.idle_since);
  if (!view.policy.idle || !view.gpu_metrics || !idle_since) return std::nullopt;
  // A stale idleSince from before the last start does not count: the countdown restarts.
  WallTime since = *idle_since;
  if (auto started = TimeOf(instance.status.started_at)) since = std::max(since, *started);
  const model::IdlePolicy& idle = *view.policy.idle;
  return Due{Trigger::kIdle,
             VerbOf(idle.action),
             "Idle",
             "IdleSoon",
             since + idle.after,
             since,
             "GPUs idle " + Words(idle.after) + " (below " +
                 std::to_string(idle.gpu_utilization_below) + "% utilisation)"};
}

std::string SchedulePolicy(const model::SchedulePolicy& s, const std::string& which) {
  return "schedule " + which + " \"" + (which == "stop" ? s.stop : s.start) + "\" (" + s.timezone +
         ")";
}

std::optional<Due> ScheduleStopDue(const model::Instance& instance, const PolicyView& view) {
  const auto& schedule = view.policy.schedule;
  if (!schedule || !view.stop || !view.zone) return std::nullopt;
  if (instance.lifecycle.schedule_opt_out && schedule->allow_opt_out) return std::nullopt;
  auto base = TimeOf(instance.status.started_at);
  if (!base)
    base = internal::ParseRfc3339(model::GetString(instance.raw, "metadata.creationTimestamp"));
  if (!base) return std::nullopt;
  auto at = NextFiring(*view.stop, *view.zone, *base);
  if (!at) return std::nullopt;
  return Due{
      Trigger::kScheduleStop,           Verb::kStop, "Scheduled", "StopScheduled", *at, *base,
      SchedulePolicy(*schedule, "stop")};
}

std::optional<Due> ScheduleStartDue(const model::Instance& instance, const PolicyView& view,
                                    std::optional<WallTime> stopped_at) {
  const auto& schedule = view.policy.schedule;
  if (!schedule || !view.start || !view.zone || !stopped_at) return std::nullopt;
  if (instance.status.reason.value_or("") != "Scheduled") return std::nullopt;
  auto at = NextFiring(*view.start, *view.zone, *stopped_at);
  if (!at) return std::nullopt;
  return Due{Trigger::kScheduleStart,           Verb::kStart, "Scheduled", "", *at, *stopped_at,
             SchedulePolicy(*schedule, "start")};
}

}  // namespace

PolicyView MakePolicyView(const boost::json::object& profile_spec, bool gpu_metrics) {
  PolicyView v;
  v.policy = model::DecodeLifecyclePolicy(profile_spec);
  v.gpu_metrics = gpu_metrics;
  v.gpu_count = model::DecodeResources(profile_spec).gpu_count;
  if (const auto& s = v.policy.schedule) {
    if (auto zone = model::LoadZone(s->timezone); zone.ok()) v.zone = *zone;
    if (auto start = model::CronSchedule::Parse(s->start); !s->start.empty() && start.ok())
      v.start = *std::move(start);
    if (auto stop = model::CronSchedule::Parse(s->stop); !s->stop.empty() && stop.ok())
      v.stop = *std::move(stop);
  }
  return v;
}

std::string TriggerName(Trigger t) {
  switch (t) {
    case Trigger::kTtl:
      return "ttl";
    case Trigger::kIdle:
      return "idle";
    case Trigger::kScheduleStop:
      return "schedule-stop";
    case Trigger::kScheduleStart:
      return "schedule-start";
  }
  return "ttl";
}

std::string VerbName(Verb v) {
  switch (v) {
    case Verb::kStop:
      return "stop";
    case Verb::kDestroy:
      return "destroy";
    case Verb::kStart:
      return "start";
  }
  return "stop";
}

std::vector<Due> DeadlinesOf(const model::Instance& instance, const PolicyView& view,
                             std::optional<WallTime> stopped_at) {
  std::vector<Due> out;
  model::Phase phase = instance.status.PhaseOr();
  if (phase == model::Phase::kSuccess) {
    for (auto due :
         {TtlDue(instance, view), IdleDue(instance, view), ScheduleStopDue(instance, view)})
      if (due) out.push_back(*std::move(due));
  } else if (phase == model::Phase::kStopped) {
    if (auto due = ScheduleStartDue(instance, view, stopped_at)) out.push_back(*std::move(due));
  }
  return out;
}

std::string WarningEventName(const std::string& instance, const Due& due, seconds lead) {
  auto epoch = std::chrono::duration_cast<seconds>(due.deadline.time_since_epoch()).count();
  return instance + "." + due.warning + "." + std::to_string(epoch) + "." +
         std::to_string(lead.count());
}

std::string Words(seconds d) { return model::FormatDuration(d); }

}  // namespace gantry::engine
