#include "model/lifecycle_policy.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "model/codec.h"

namespace gantry::model {

namespace json = boost::json;
using std::chrono::seconds;

absl::StatusOr<seconds> ParseDuration(std::string_view text) {
  const std::string bad = "\"" + std::string(text.substr(0, 40)) +
                          "\" is not a duration: use a whole number > 0 and one unit, "
                          "s, m, h or d (90s, 30m, 8h, 3d)";
  if (text.size() < 2 || text.size() > 12) return absl::InvalidArgumentError(bad);
  int64_t n = 0;
  for (char c : text.substr(0, text.size() - 1)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return absl::InvalidArgumentError(bad);
    n = n * 10 + (c - '0');
  }
  int64_t unit = 0;
  switch (text.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    default:
      return absl::InvalidArgumentError(bad);
  }
  // At most 100 years: no overflow anywhere a deadline is computed.
  if (n <= 0 || n > 36500LL * 86400 / unit) return absl::InvalidArgumentError(bad);
  return seconds(n * unit);
}

absl::StatusOr<seconds> ParseDurationOrZero(std::string_view text) {
  if (text == "0" || text == "0s") return seconds(0);
  return ParseDuration(text);
}

std::string FormatDuration(seconds d) {
  int64_t s = d.count();
  if (s > 0 && s % 86400 == 0) return std::to_string(s / 86400) + "d";
  if (s > 0 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s > 0 && s % 60 == 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

std::string_view PolicyActionName(PolicyAction a) {
  return a == PolicyAction::kDestroy ? "Destroy" : "Stop";
}

namespace {

std::optional<seconds> OptDuration(const json::object& obj, std::string_view key) {
  const json::value* v = obj.if_contains(key);
  if (!v || !v->is_string()) return std::nullopt;
  auto d = ParseDuration(v->get_string());
  if (!d.ok()) return std::nullopt;
  return *d;
}

PolicyAction ActionOf(const json::object& obj) {
  return GetString(obj, "action", "Stop") == "Destroy" ? PolicyAction::kDestroy
                                                       : PolicyAction::kStop;
}

const json::object* ObjectIn(const json::object& obj, std::string_view key) {
  const json::value* v = obj.if_contains(key);
  return v && v->is_object() ? &v->get_object() : nullptr;
}

}  // namespace

LifecyclePolicy DecodeLifecyclePolicy(const json::object& profile_spec) {
  LifecyclePolicy p;
  const json::object* lc = ObjectIn(profile_spec, "lifecycle");
  if (!lc) return p;
  if (const json::object* t = ObjectIn(*lc, "ttl")) {
    p.ttl = TtlPolicy{OptDuration(*t, "default"), OptDuration(*t, "max"), ActionOf(*t)};
  }
  if (const json::object* i = ObjectIn(*lc, "idle")) {
    IdlePolicy idle;
    idle.gpu_utilization_below =
        static_cast<int>(GetInt(*i, "gpuUtilizationBelow", idle.gpu_utilization_below));
    idle.after = OptDuration(*i, "after").value_or(idle.after);
    idle.action = ActionOf(*i);
    p.idle = idle;
  }
  if (const json::object* s = ObjectIn(*lc, "schedule")) {
    p.schedule = SchedulePolicy{GetString(*s, "timezone", "UTC"), GetString(*s, "start"),
                                GetString(*s, "stop"), GetBool(*s, "allowOptOut")};
  }
  return p;
}

InstanceLifecycle DecodeInstanceLifecycle(const json::object& instance_spec) {
  InstanceLifecycle l;
  const json::object* lc = ObjectIn(instance_spec, "lifecycle");
  if (!lc) return l;
  l.ttl = OptDuration(*lc, "ttl");
  l.schedule_opt_out = GetBool(*lc, "scheduleOptOut");
  return l;
}

std::optional<seconds> EffectiveTtl(const LifecyclePolicy& profile,
                                    const InstanceLifecycle& instance) {
  if (instance.ttl) return instance.ttl;
  if (profile.ttl && profile.ttl->default_ttl) return profile.ttl->default_ttl;
  return std::nullopt;
}

absl::StatusOr<absl::TimeZone> LoadZone(const std::string& name) {
  absl::TimeZone zone;
  if (name.empty() || name.size() > 64 || !absl::LoadTimeZone(name, &zone))
    return absl::InvalidArgumentError("\"" + name.substr(0, 64) +
                                      "\" is not a time zone of the tz database "
                                      "(use an IANA name such as Europe/Berlin or UTC)");
  return zone;
}

namespace {

// The causes of one policy section are named under this prefix.
constexpr std::string_view kPolicyPath = "spec.lifecycle.";

// A duration as messages show it: whole hours in hours ("72h", not "3d", as the contract
// writes ttls), else the shortest form.
std::string Shown(seconds d) {
  if (d.count() % 3600 == 0) return std::to_string(d.count() / 3600) + "h";
  return FormatDuration(d);
}

const json::string* StringIn(const json::object& obj, std::string_view key) {
  const json::value* v = obj.if_contains(key);
  return v && v->is_string() ? &v->get_string() : nullptr;
}

// The duration at obj[key] when it is one; a cause at path.key when it is a string that
// is not (other types are the schema's).
std::optional<seconds> CheckedDuration(const json::object& obj, std::string_view key,
                                       const std::string& path, std::vector<FieldCause>* causes) {
  const json::string* text = StringIn(obj, key);
  if (!text) return std::nullopt;
  auto d = ParseDuration(*text);
  if (d.ok()) return *d;
  causes->push_back({path + "." + std::string(key), std::string(d.status().message())});
  return std::nullopt;
}

void CheckTtl(const json::object& ttl, std::vector<FieldCause>* causes) {
  const std::string path = std::string(kPolicyPath) + "ttl";
  auto def = CheckedDuration(ttl, "default", path, causes);
  auto max = CheckedDuration(ttl, "max", path, causes);
  if (def && max && *def > *max)
    causes->push_back({path + ".default", "the default " + Shown(*def) + " is over the maximum " +
                                              Shown(*max) + " (spec.lifecycle.ttl.max)"});
}

void CheckIdle(const json::object& idle, std::vector<FieldCause>* causes) {
  const std::string path = std::string(kPolicyPath) + "idle";
  CheckedDuration(idle, "after", path, causes);
  const json::value* below = idle.if_contains("gpuUtilizationBelow");
  if (!below || !below->is_number()) return;
  double v = below->to_number<double>();
  if (v < 0 || v > 100)
    causes->push_back({path + ".gpuUtilizationBelow",
                       "must be a percentage from 0 to 100 (the mean utilisation of the "
                       "instance's GPUs), not " +
                           absl::StrCat(v)});
}

// A cause when schedule[key] is not a cron expression that fires.
void CheckCron(const json::object& schedule, std::string_view key, std::vector<FieldCause>* c) {
  const json::string* text = StringIn(schedule, key);
  if (!text || text->empty()) return;
  const std::string field = std::string(kPolicyPath) + "schedule." + std::string(key);
  const std::string quoted = "\"" + std::string(text->subview().substr(0, 60)) + "\"";
  auto cron = CronSchedule::Parse(*text);
  if (!cron.ok()) {
    c->push_back({field, quoted + ": " + std::string(cron.status().message())});
    return;
  }
  // Every (month, day, weekday) there is occurs in a leap year: one that does not fire in
  // 2024 never fires.
  absl::Time leap_year =
      absl::FromCivil(absl::CivilSecond(2024, 1, 1, 0, 0, 0), absl::UTCTimeZone());
  if (!cron->Next(leap_year - absl::Seconds(1), absl::UTCTimeZone()))
    c->push_back({field, quoted + " never fires: no month it names has the day it names"});
}

void CheckSchedule(const json::object& schedule, std::vector<FieldCause>* causes) {
  const std::string path = std::string(kPolicyPath) + "schedule";
  if (const json::string* tz = StringIn(schedule, "timezone")) {
    if (auto zone = LoadZone(std::string(*tz)); !zone.ok())
      causes->push_back({path + ".timezone", std::string(zone.status().message())});
  }
  CheckCron(schedule, "start", causes);
  CheckCron(schedule, "stop", causes);
  const json::string* start = StringIn(schedule, "start");
  const json::string* stop = StringIn(schedule, "stop");
  bool has_start = start && !start->empty(), has_stop = stop && !stop->empty();
  if (!has_start && !has_stop)
    causes->push_back({path,
                       "set start, stop or both: 5-field cron expressions such as "
                       "start: \"0 8 * * 1-5\", stop: \"0 20 * * 1-5\"",
                       "FieldValueRequired"});
  else if (has_start && has_stop && *start == *stop)
    causes->push_back({path + ".stop",
                       "is the same expression as start: the instance would be "
                       "started and stopped at the same moment"});
}

}  // namespace

void ValidateLifecyclePolicy(const json::object& profile_spec, std::vector<FieldCause>* causes) {
  const json::object* lc = ObjectIn(profile_spec, "lifecycle");
  if (!lc) return;
  if (const json::object* t = ObjectIn(*lc, "ttl")) CheckTtl(*t, causes);
  if (const json::object* i = ObjectIn(*lc, "idle")) CheckIdle(*i, causes);
  if (const json::object* s = ObjectIn(*lc, "schedule")) CheckSchedule(*s, causes);
}

void ValidateInstanceLifecycle(const json::object& instance_spec, const LifecyclePolicy& profile,
                               std::vector<FieldCause>* causes) {
  const json::object* lc = ObjectIn(instance_spec, "lifecycle");
  if (!lc) return;
  const std::string path(kPolicyPath.substr(0, kPolicyPath.size() - 1));
  auto ttl = CheckedDuration(*lc, "ttl", path, causes);
  if (ttl && profile.ttl && profile.ttl->max && *ttl > *profile.ttl->max)
    causes->push_back({path + ".ttl",
                       "ttl " + Shown(*ttl) + " is over the profile's maximum " +
                           Shown(*profile.ttl->max) +
                           "; ask for at most that (an admin sets the maximum in "
                           "the profile's spec.lifecycle.ttl.max)",
                       "FieldValueForbidden"});
  const json::value* opt_out = lc->if_contains("scheduleOptOut");
  if (opt_out && opt_out->is_bool() && opt_out->get_bool() && profile.schedule &&
      !profile.schedule->allow_opt_out)
    causes->push_back({path + ".scheduleOptOut",
                       "Forbidden: the profile's schedule does not allow opting out "
                       "(spec.lifecycle.schedule.allowOptOut is false)",
                       "FieldValueForbidden"});
}

absl::Time ExpiresAt(absl::Time started_at, seconds ttl) {
  return started_at + absl::Seconds(ttl.count());
}

std::optional<std::string> ExpiresAtFor(std::string_view started_at, const LifecyclePolicy& profile,
                                        const InstanceLifecycle& instance) {
  std::optional<seconds> ttl = EffectiveTtl(profile, instance);
  absl::Time start;
  std::string err;
  if (!ttl ||
      !absl::ParseTime(absl::RFC3339_full, absl::string_view(started_at.data(), started_at.size()),
                       &start, &err))
    return std::nullopt;
  return FormatRfc3339(absl::ToChronoTime(ExpiresAt(start, *ttl)));
}

std::vector<absl::Time> WarningTimes(absl::Time deadline, absl::Time start) {
  const seconds countdown(absl::ToInt64Seconds(deadline - start));
  std::vector<absl::Time> out;
  for (seconds lead : {seconds(3600), seconds(600)})
    if (lead * 2 <= countdown) out.push_back(deadline - absl::Seconds(lead.count()));
  if (out.empty() && countdown >= seconds(2))
    out.push_back(deadline - absl::Seconds(std::max<int64_t>(1, countdown.count() / 2)));
  return out;
}

std::optional<ScheduledEvent> NextScheduled(const SchedulePolicy& schedule, absl::Time after) {
  auto zone = LoadZone(schedule.timezone.empty() ? "UTC" : schedule.timezone);
  if (!zone.ok()) return std::nullopt;
  std::optional<ScheduledEvent> best;
  // The stop second: on a tie it replaces the start.
  for (auto [expr, action] : {std::pair{&schedule.start, ScheduledAction::kStart},
                              std::pair{&schedule.stop, ScheduledAction::kStop}}) {
    if (expr->empty()) continue;
    auto cron = CronSchedule::Parse(*expr);
    if (!cron.ok()) continue;
    std::optional<absl::Time> t = cron->Next(after, *zone);
    if (t && (!best || *t <= best->time)) best = ScheduledEvent{*t, action};
  }
  return best;
}

}  // namespace gantry::model
