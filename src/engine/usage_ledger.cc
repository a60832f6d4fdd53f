#include "engine/usage_ledger.h"

#include <algorithm>

#include "absl/time/time.h"
#include "common/status_macros.h"
#include "engine/engine_internal.h"
#include "engine/usage_rollup.h"
#include "model/codec.h"

namespace gantry::engine::usage {

namespace json = boost::json;
using Time = std::chrono::system_clock::time_point;

namespace {

double NumberAt(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() ? 0 : model::AsNumber(it->value()).value_or(0);
}

// The open intervals of one instance.
absl::StatusOr<std::vector<Interval>> OpenOf(store::Store& store, const std::string& project,
                                             const std::string& instance_uid) {
  // Through the label index: the few intervals of this instance, not every one of its
  // project (a claim per deploy read them all, and a year of a fleet is 100,000).
  store::ListOptions q;
  q.kind = kUsageIntervalKind;
  q.ns = project;
  q.labels.requirements = {{kInstanceUidLabel, model::SelectorOp::kEquals, {instance_uid}}};
  q.fields = {{"status.state", true, "Open"}};
  ASSIGN_OR_RETURN(auto listed, internal::ListAll(store, q));
  std::vector<Interval> out;
  for (const auto& o : listed)
    if (auto i = DecodeInterval(o); i.ok()) out.push_back(*std::move(i));
  return out;
}

}  // namespace

std::string FormatMillis(Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromChrono(t), absl::UTCTimeZone());
}

namespace {

// FormatMillis's own form, "2026-12-01T10:00:00.250Z", read without the general parser (a
// report reads two per interval); nullopt for anything else.
std::optional<Time> ParseMillis(const std::string& s) {
  if (s.size() != 24 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
      s[16] != ':' || s[19] != '.' || s[23] != 'Z')
    return std::nullopt;
  auto num = [&](size_t at, size_t len, int* out) {
    int v = 0;
    for (size_t k = at; k < at + len; ++k) {
      if (s[k] < '0' || s[k] > '9') return false;
      v = v * 10 + (s[k] - '0');
    }
    *out = v;
    return true;
  };
  int y, mo, d, h, mi, se, ms;
  if (!num(0, 4, &y) || !num(5, 2, &mo) || !num(8, 2, &d) || !num(11, 2, &h) || !num(14, 2, &mi) ||
      !num(17, 2, &se) || !num(20, 3, &ms))
    return std::nullopt;
  const std::chrono::year_month_day day{std::chrono::year{y}, std::chrono::month(mo),
                                        std::chrono::day(d)};
  if (!day.ok() || h > 23 || mi > 59 || se > 59) return std::nullopt;
  return std::chrono::sys_days{day} + std::chrono::hours(h) + std::chrono::minutes(mi) +
         std::chrono::seconds(se) + std::chrono::milliseconds(ms);
}

}  // namespace

std::optional<Time> ParseTime(const std::string& s) {
  if (auto fast = ParseMillis(s)) return fast;
  absl::Time t;
  std::string err;
  // A bare date (2026-12-01) is that day's midnight UTC.
  const char* format = s.size() == 10 ? "%Y-%m-%d" : absl::RFC3339_full;
  if (!absl::ParseTime(format, s, absl::UTCTimeZone(), &t, &err)) return std::nullopt;
  return absl::ToChronoTime(t);
}

json::object EncodeInterval(const Interval& i) {
  json::object spec{
      {"instance",
       json::object{{"kind", i.instance_kind}, {"name", i.instance_name}, {"uid", i.instance_uid}}},
      {"user", i.user},
      {"profileRef", json::object{{"name", i.profile_name}, {"namespace", i.profile_ns}}},
      {"profileRevision", i.profile_revision},
      {"gpuType", i.gpu_type},
      {"gpus", i.gpus},
      {"cpu", i.cpu},
      {"memoryGiB", i.memory_gib},
      {"run", i.run},
      {"start", FormatMillis(i.start)}};
  // status.phase (an indexed column) lets a report find the few open intervals at once.
  json::object status{{"state", i.end ? "Closed" : "Open"}, {"phase", i.end ? "Closed" : "Open"}};
  if (i.end) status["end"] = FormatMillis(*i.end);
  json::object meta{{"name", i.name},
                    {"namespace", i.project},
                    {"uid", i.project + "/" + i.name},
                    {"labels", json::object{{kInstanceUidLabel, i.instance_uid}}}};
  if (i.resource_version > 0) meta["resourceVersion"] = std::to_string(i.resource_version);
  return json::object{{"apiVersion", "paas.gantry.dev/v1"},
                      {"kind", kUsageIntervalKind},
                      {"metadata", std::move(meta)},
                      {"spec", std::move(spec)},
                      {"status", std::move(status)}};
}

absl::StatusOr<Interval> DecodeInterval(const json::object& stored) {
  Interval i;
  i.project = model::GetString(stored, "metadata.namespace");
  i.name = model::GetString(stored, "metadata.name");
  const std::string rv = model::GetString(stored, "metadata.resourceVersion");
  i.resource_version = rv.empty() ? 0 : std::atoll(rv.c_str());
  i.instance_kind = model::GetString(stored, "spec.instance.kind");
  i.instance_name = model::GetString(stored, "spec.instance.name");
  i.instance_uid = model::GetString(stored, "spec.instance.uid");
  i.user = model::GetString(stored, "spec.user");
  i.profile_ns = model::GetString(stored, "spec.profileRef.namespace");
  i.profile_name = model::GetString(stored, "spec.profileRef.name");
  i.profile_revision = model::GetInt(stored, "spec.profileRevision", 1);
  i.gpu_type = model::GetString(stored, "spec.gpuType");
  i.gpus = model::GetInt(stored, "spec.gpus", 0);
  const json::value* spec = model::FindPath(stored, "spec");
  if (spec && spec->is_object()) {
    i.cpu = NumberAt(spec->as_object(), "cpu");
    i.memory_gib = NumberAt(spec->as_object(), "memoryGiB");
  }
  i.run = model::GetString(stored, "spec.run");
  auto start = ParseTime(model::GetString(stored, "spec.start"));
  if (!start) return absl::InvalidArgumentError("usage interval " + i.name + " has no start");
  i.start = *start;
  i.legacy = model::GetString(stored, "status.phase").empty();
  if (model::GetString(stored, "status.state") == "Closed") {
    i.end = ParseTime(model::GetString(stored, "status.end"));
    if (!i.end) i.end = i.start;
  }
  return i;
}

absl::StatusOr<std::optional<store::Write>> OpenWrite(store::Store& store, const model::Run& run,
                                                      const model::Instance& instance,
                                                      const std::string& gpu_type, int64_t gpus,
                                                      const json::object& resources, Time now) {
  const double cpu = NumberAt(resources, "cpu"), memory = NumberAt(resources, "memoryGiB");
  if (gpus <= 0 && cpu <= 0 && memory <= 0) return std::optional<store::Write>();
  ASSIGN_OR_RETURN(auto open, OpenOf(store, instance.metadata.ns, instance.metadata.uid));
  if (!open.empty()) return std::optional<store::Write>();
  Interval i;
  i.project = instance.metadata.ns;
  i.name = run.metadata.name + "-" + std::to_string(run.attempt);
  i.instance_kind = instance.kind;
  i.instance_name = instance.metadata.name;
  i.instance_uid = instance.metadata.uid;
  i.user = model::GetString(instance.raw, "status.createdBy");
  i.profile_ns = instance.profile_ns.empty() ? instance.metadata.ns : instance.profile_ns;
  i.profile_name = instance.profile_name;
  i.profile_revision = run.profile_revision;
  i.gpu_type = gpus > 0 ? gpu_type : "";
  i.gpus = std::max<int64_t>(gpus, 0);
  i.cpu = cpu;
  i.memory_gib = memory;
  i.run = run.metadata.name;
  i.start = now;
  return std::optional<store::Write>(
      store::Write{store::Write::Op::kCreate, kUsageIntervalKind, EncodeInterval(i), 0, 0});
}

absl::StatusOr<std::vector<store::Write>> CloseWrites(store::Store& store,
                                                      const std::string& project,
                                                      const std::string& instance_uid, Time end) {
  ASSIGN_OR_RETURN(auto open, OpenOf(store, project, instance_uid));
  std::vector<store::Write> writes;
  for (Interval& i : open) {
    i.end = std::max(end, i.start);
    writes.push_back(
        {store::Write::Op::kUpdate, kUsageIntervalKind, EncodeInterval(i), i.resource_version, 0});
  }
  // The rollups count them in the same commit (usage_rollup.h).
  ASSIGN_OR_RETURN(auto rollups, RollupWrites(store, open));
  for (auto& w : rollups) writes.push_back(std::move(w));
  return writes;
}

absl::Status AppendOpen(store::Store& store, const model::Run& run, const model::Instance& instance,
                        const Admission& a, Time now, std::vector<store::Write>* writes) {
  if (instance.kind != "ComputeInstance") return absl::OkStatus();  // services use its GPUs
  if (run.action != model::RunAction::kApply && run.action != model::RunAction::kStart)
    return absl::OkStatus();
  json::object resources = a.resources;
  if (resources.empty() && instance.status.resources) resources = *instance.status.resources;
  const model::Resources r = model::ParseResources(resources);
  std::string type = a.gpus.empty() ? r.gpu_type : a.gpus.front().type;
  int64_t count = a.gpus.empty() ? r.gpu_count : static_cast<int64_t>(a.gpus.size());
  ASSIGN_OR_RETURN(auto open, OpenWrite(store, run, instance, type, count, resources, now));
  if (open) writes->push_back(*std::move(open));
  return absl::OkStatus();
}

absl::Status AppendClose(store::Store& store, const std::string& project,
                         const std::string& instance_uid, Time end,
                         std::vector<store::Write>* writes) {
  ASSIGN_OR_RETURN(auto closes, CloseWrites(store, project, instance_uid, end));
  for (auto& w : closes) writes->push_back(std::move(w));
  return absl::OkStatus();
}

absl::Status CloseAtLastHeartbeat(store::Store& store, const model::Run& run) {
  // A dead stop or destroy leaves the GPUs held until its re-run (or its failure) says.
  if (run.action != model::RunAction::kApply && run.action != model::RunAction::kStart)
    return absl::OkStatus();
  std::optional<Time> last;
  if (run.lease) last = internal::ParseRfc3339(run.lease->renew_time);
  if (!last && run.start_time) last = internal::ParseRfc3339(*run.start_time);
  if (!last) last = Time{};  // never before an interval's start: closes it empty
  for (int attempt = 0; attempt < internal::kMaxRetries; ++attempt) {
    ASSIGN_OR_RETURN(auto writes, CloseWrites(store, run.metadata.ns, run.instance_uid, *last));
    if (writes.empty()) return absl::OkStatus();
    auto stored = store.Commit(std::move(writes));
    if (stored.ok() || !IsRollupRace(stored.status())) return stored.status();
  }
  return absl::AbortedError("the usage interval kept changing");
}

absl::Status LabelOpenIntervals(store::Store& store) {
  // Open intervals are few (one per instance holding resources) and status.phase is an
  // indexed column. An interval from before status.phase is not touched here: UpgradeLedger
  // (usage_rollup.h) rewrites it, label included, and adds it to the rollups.
  store::ListOptions q;
  q.kind = kUsageIntervalKind;
  q.labels.requirements = {{kInstanceUidLabel, model::SelectorOp::kDoesNotExist, {}}};
  q.fields = {{"status.phase", true, "Open"}};
  ASSIGN_OR_RETURN(auto listed, internal::ListAll(store, q));
  for (const auto& o : listed) {
    auto i = DecodeInterval(o);
    if (!i.ok() || i->resource_version == 0) continue;
    std::vector<store::Write> w;
    w.push_back({store::Write::Op::kUpdate, kUsageIntervalKind, EncodeInterval(*i),
                 i->resource_version, 0});
    // A conflict: it closed or was labelled meanwhile, by this or another replica.
    if (auto stored = store.Commit(std::move(w));
        !stored.ok() && !internal::IsConflict(stored.status()))
      return stored.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Interval>> ListIntervals(store::Store& store,
                                                    std::optional<std::string> project) {
  store::ListOptions q;
  q.kind = kUsageIntervalKind;
  q.ns = std::move(project);
  q.limit = 5000;
  std::vector<Interval> out;
  // A page at a time, each parsed into an arena dropped at once (a year of a large fleet is
  // 100,000 intervals: freeing their JSON one by one was most of a report's time).
  while (true) {
    boost::json::monotonic_resource arena;
    q.storage = boost::json::storage_ptr(&arena);
    ASSIGN_OR_RETURN(store::ListResult page, store.List(q));
    for (const auto& o : page.items)
      if (auto i = DecodeInterval(o); i.ok()) out.push_back(*std::move(i));
    if (page.continue_token.empty()) return out;
    q.continue_token = page.continue_token;
  }
}

}  // namespace gantry::engine::usage
