#include "model/objects.h"

#include <cstdlib>

#include "model/codec.h"
#include "model/schema.h"

namespace gantry::model {
namespace {

namespace json = boost::json;

const json::object& ObjectAt(const json::object& o, std::string_view key) {
  static const json::object kEmpty;
  const json::value* v = o.if_contains(key);
  return v && v->is_object() ? v->get_object() : kEmpty;
}

std::optional<std::string> OptString(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_string()) return std::nullopt;
  return std::string(v->get_string());
}

std::optional<int64_t> OptInt(const json::object& o, std::string_view key) {
  if (!o.contains(key)) return std::nullopt;
  return GetInt(o, key, 0);
}

std::optional<json::object> OptObject(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_object()) return std::nullopt;
  return v->get_object();
}

std::optional<std::vector<std::string>> OptStrings(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& e : v->get_array())
    if (e.is_string()) out.emplace_back(e.get_string());
  return out;
}

// Writes `value` at `key`, or erases the key when it is absent.
template <typename T>
void Put(json::object& o, std::string_view key, const std::optional<T>& value) {
  if (value)
    o[key] = json::value_from(*value);
  else
    o.erase(key);
}

void PutStrings(json::object& o, std::string_view key,
                const std::optional<std::vector<std::string>>& value) {
  if (!value) {
    o.erase(key);
    return;
  }
  json::array a;
  for (const auto& s : *value) a.push_back(json::string(s));
  o[key] = std::move(a);
}

void PutLease(json::object& status, const char* key, const std::optional<Lease>& lease) {
  if (!lease) {
    status.erase(key);
    return;
  }
  status[key] = json::object{{"holder", lease->holder},
                             {"host", lease->host},
                             {"renewTime", lease->renew_time},
                             {"durationSeconds", lease->duration_seconds}};
}

std::optional<Lease> DecodeLease(const json::object& status, const char* key = "lease") {
  const json::value* v = status.if_contains(key);
  if (!v || !v->is_object()) return std::nullopt;
  const json::object& l = v->get_object();
  return Lease{GetString(l, "holder"), GetString(l, "host"), GetString(l, "renewTime"),
               GetInt(l, "durationSeconds", 30)};
}

}  // namespace

std::vector<Condition> DecodeConditions(const json::array& a) {
  std::vector<Condition> out;
  for (const auto& c : a) {
    if (!c.is_object()) continue;
    const json::object& o = c.get_object();
    out.push_back({GetString(o, "type"), GetString(o, "status") == "True", GetString(o, "reason"),
                   GetString(o, "message"), GetString(o, "lastTransitionTime")});
  }
  return out;
}

json::array EncodeConditions(const std::vector<Condition>& conditions) {
  json::array out;
  for (const auto& c : conditions)
    out.push_back(json::object{{"type", c.type},
                               {"status", c.ok ? "True" : "False"},
                               {"reason", c.reason},
                               {"message", c.message},
                               {"lastTransitionTime", c.last_transition_time}});
  return out;
}

namespace {

InstanceStatus DecodeInstanceStatus(const json::object& s) {
  InstanceStatus st;
  if (auto p = OptString(s, "phase")) st.phase = ParsePhase(*p);
  if (auto a = OptString(s, "action")) st.action = ParseRunAction(*a);
  st.reason = OptString(s, "reason");
  st.message = OptString(s, "message");
  st.run_count = OptInt(s, "runCount");
  if (s.contains("lastRunRef")) st.last_run = GetString(ObjectAt(s, "lastRunRef"), "name");
  st.outputs = OptObject(s, "outputs");
  st.deployed_generation = OptInt(s, "deployedGeneration");
  if (const json::value* c = s.if_contains("conditions"); c && c->is_array())
    st.conditions = DecodeConditions(c->get_array());
  st.restart_count = OptInt(s, "restartCount");
  st.driver_state = OptObject(s, "driverState");
  st.gpus = OptStrings(s, "gpus");
  st.resources = OptObject(s, "resources");
  st.host = OptString(s, "host");
  st.started_at = OptString(s, "startedAt");
  st.expires_at = OptString(s, "expiresAt");
  st.gpu_utilization = OptInt(s, "gpuUtilization");
  st.idle_since = OptString(s, "idleSince");
  st.admission = OptString(s, "admission");
  st.queue_position = OptInt(s, "queuePosition");
  st.profile_revision = GetInt(s, "profileRevision", 1);
  st.template_revision = GetInt(s, "templateRevision", 1);
  st.compute_created = GetBool(s, "computeCreated");
  return st;
}

void EncodeInstanceStatus(const InstanceStatus& st, json::object& s) {
  if (st.phase)
    s["phase"] = PhaseName(*st.phase);
  else
    s.erase("phase");
  if (st.action)
    s["action"] = RunActionName(*st.action);
  else
    s.erase("action");
  Put(s, "reason", st.reason);
  Put(s, "message", st.message);
  Put(s, "runCount", st.run_count);
  if (st.last_run)
    s["lastRunRef"] = json::object{{"name", *st.last_run}};
  else
    s.erase("lastRunRef");
  Put(s, "outputs", st.outputs);
  Put(s, "deployedGeneration", st.deployed_generation);
  if (st.conditions)
    s["conditions"] = EncodeConditions(*st.conditions);
  else
    s.erase("conditions");
  Put(s, "restartCount", st.restart_count);
  Put(s, "driverState", st.driver_state);
  PutStrings(s, "gpus", st.gpus);
  Put(s, "resources", st.resources);
  Put(s, "host", st.host);
  Put(s, "startedAt", st.started_at);
  Put(s, "expiresAt", st.expires_at);
  Put(s, "gpuUtilization", st.gpu_utilization);
  Put(s, "idleSince", st.idle_since);
  Put(s, "admission", st.admission);
  Put(s, "queuePosition", st.queue_position);
}

}  // namespace

absl::StatusOr<ObjectMeta> DecodeObjectMeta(const json::object& stored) {
  const json::object& m = ObjectAt(stored, "metadata");
  ObjectMeta meta;
  meta.name = GetString(m, "name");
  if (meta.name.empty()) return absl::InternalError("stored object without metadata.name");
  meta.ns = GetString(m, "namespace");
  meta.uid = GetString(m, "uid");
  std::string rv = GetString(m, "resourceVersion", "0");
  meta.resource_version = std::strtoll(rv.c_str(), nullptr, 10);
  meta.generation = GetInt(m, "generation", 1);
  meta.labels = ObjectAt(m, "labels");
  meta.annotations = ObjectAt(m, "annotations");
  return meta;
}

std::string_view RunActionName(RunAction a) {
  switch (a) {
    case RunAction::kApply:
      return "deploy";
    case RunAction::kDestroy:
      return "destroy";
    case RunAction::kStop:
      return "stop";
    case RunAction::kStart:
      return "start";
  }
  return "deploy";
}

RunAction ParseRunAction(std::string_view s) {
  if (s == "destroy") return RunAction::kDestroy;
  if (s == "stop") return RunAction::kStop;
  if (s == "start") return RunAction::kStart;
  return RunAction::kApply;
}

std::string_view RunPhaseName(RunPhase p) {
  switch (p) {
    case RunPhase::kQueued:
      return "Queued";
    case RunPhase::kRunning:
      return "Running";
    case RunPhase::kSucceeded:
      return "Succeeded";
    case RunPhase::kFailed:
      return "Failed";
    case RunPhase::kCanceled:
      return "Canceled";
  }
  return "Queued";
}

RunPhase ParseRunPhase(std::string_view s) {
  if (s == "Running") return RunPhase::kRunning;
  if (s == "Succeeded") return RunPhase::kSucceeded;
  if (s == "Failed") return RunPhase::kFailed;
  if (s == "Canceled") return RunPhase::kCanceled;
  return RunPhase::kQueued;
}

Run NewRun(const std::string& name, const std::string& ns, const std::string& uid,
           const std::string& created, const std::string& instance_kind,
           const std::string& instance_name, const std::string& instance_uid, RunAction action,
           int64_t generation, int64_t profile_revision, int64_t template_revision, Phase previous,
           bool delete_instance) {
  json::object raw{
      {"apiVersion", kApiVersion},
      {"kind", kRunKind},
      {"metadata",
       json::object{{"name", name},
                    {"namespace", ns},
                    {"uid", uid},
                    {"generation", 1},
                    {"creationTimestamp", created},
                    {"labels", json::object{{"paas.gantry.dev/instance", instance_name}}}}},
      {"spec", json::object{{"instanceRef", json::object{{"kind", instance_kind},
                                                         {"name", instance_name},
                                                         {"uid", instance_uid}}},
                            {"action", RunActionName(action)},
                            {"generation", generation},
                            {"profileRevision", profile_revision},
                            {"templateRevision", template_revision},
                            {"previousPhase", PhaseName(previous)},
                            {"deleteInstance", delete_instance}}},
      {"status", json::object{{"phase", "Queued"}, {"attempt", 0}}}};
  return *DecodeRun(raw);
}

absl::StatusOr<Run> DecodeRun(json::object stored) {
  absl::StatusOr<Run> decoded = DecodeObjectWithMeta<Run>(std::move(stored));
  if (!decoded.ok()) return decoded.status();
  Run& r = *decoded;
  const json::object& spec = ObjectAt(r.raw, "spec");
  const json::object& ref = ObjectAt(spec, "instanceRef");
  r.instance_kind = GetString(ref, "kind", "ComputeInstance");
  r.instance_name = GetString(ref, "name");
  r.instance_uid = GetString(ref, "uid");
  r.action = ParseRunAction(GetString(spec, "action"));
  r.cause = GetString(spec, "reason");
  r.generation = GetInt(spec, "generation", 1);
  r.profile_revision = GetInt(spec, "profileRevision", 1);
  r.template_revision = GetInt(spec, "templateRevision", 1);
  r.previous_phase = ParsePhase(GetString(spec, "previousPhase", "NotDeployed"));
  r.delete_instance = GetBool(spec, "deleteInstance");
  const json::object& s = ObjectAt(r.raw, "status");
  r.phase = ParseRunPhase(GetString(s, "phase"));
  r.attempt = GetInt(s, "attempt", 0);
  r.reason = OptString(s, "reason");
  r.message = OptString(s, "message");
  r.start_time = OptString(s, "startTime");
  r.completion_time = OptString(s, "completionTime");
  r.lease = DecodeLease(s);
  r.reclaim = DecodeLease(s, "reclaim");
  r.gpus = OptStrings(s, "gpus");
  r.gpu_uuids = OptStrings(s, "gpuUuids");
  r.driver_state = OptObject(s, "driverState");
  r.outputs = OptObject(s, "outputs");
  return decoded;
}

namespace {

// `out` (a run's raw object) with the run's typed fields written over it.
json::object WithRunFields(json::object out, const Run& run) {
  // The spec is fixed when the run is queued: only the status is the engine's to change
  // (and spec.reason, set once by whoever queues the run).
  if (!run.cause.empty()) EnsureObject(out, "spec")["reason"] = run.cause;
  json::object& s = EnsureObject(out, "status");
  s["phase"] = RunPhaseName(run.phase);
  s["attempt"] = run.attempt;
  Put(s, "reason", run.reason);
  Put(s, "message", run.message);
  Put(s, "startTime", run.start_time);
  Put(s, "completionTime", run.completion_time);
  PutLease(s, "lease", run.lease);
  PutLease(s, "reclaim", run.reclaim);
  PutStrings(s, "gpus", run.gpus);
  PutStrings(s, "gpuUuids", run.gpu_uuids);
  Put(s, "driverState", run.driver_state);
  Put(s, "outputs", run.outputs);
  return out;
}

}  // namespace

json::object EncodeRun(const Run& run) { return WithRunFields(run.raw, run); }

json::object EncodeRun(Run&& run) { return WithRunFields(std::move(run.raw), run); }

void SetCondition(std::vector<Condition>& conditions, const std::string& type, bool ok,
                  const std::string& reason, const std::string& message, const std::string& now) {
  Condition next{type, ok, reason, message, now};
  bool replaced = false;
  for (auto& c : conditions) {
    if (c.type != type) continue;
    if (c.ok == ok) next.last_transition_time = c.last_transition_time;
    c = next;
    replaced = true;
  }
  if (!replaced) conditions.push_back(std::move(next));
}

void InstanceStatus::SetCondition(const std::string& type, bool ok, const std::string& reason,
                                  const std::string& message, const std::string& now) {
  if (!conditions) conditions.emplace();
  model::SetCondition(*conditions, type, ok, reason, message, now);
}

absl::StatusOr<Instance> DecodeInstance(json::object stored) {
  absl::StatusOr<Instance> decoded = DecodeObjectWithMeta<Instance>(std::move(stored));
  if (!decoded.ok()) return decoded.status();
  Instance& i = *decoded;
  i.kind = GetString(i.raw, "kind");
  const json::object& spec = ObjectAt(i.raw, "spec");
  i.display_name = GetString(spec, "displayName");
  i.description = GetString(spec, "description");
  i.variables = ObjectAt(spec, "variables");
  const json::object& profile = ObjectAt(spec, "profileRef");
  i.profile_ns = GetString(profile, "namespace", i.metadata.ns);
  i.profile_name = GetString(profile, "name");
  const json::object& ref = ObjectAt(spec, "computeRef");
  i.compute_ns = GetString(ref, "namespace", i.metadata.ns);
  i.compute_name = GetString(ref, "name");
  i.lifecycle = DecodeInstanceLifecycle(spec);
  i.status = DecodeInstanceStatus(ObjectAt(i.raw, "status"));
  return decoded;
}

namespace {

// `out` (an instance's raw object) with the typed status written over its status.
json::object WithInstanceStatus(json::object out, const InstanceStatus& status) {
  EncodeInstanceStatus(status, EnsureObject(out, "status"));
  return out;
}

}  // namespace

json::object EncodeInstance(const Instance& instance) {
  return WithInstanceStatus(instance.raw, instance.status);
}

json::object EncodeInstance(Instance&& instance) {
  return WithInstanceStatus(std::move(instance.raw), instance.status);
}

Resources DecodeResources(const json::object& profile_spec) {
  return ParseResources(ObjectAt(profile_spec, "resources"));
}

Resources ParseResources(const json::object& resources) {
  Resources r;
  r.raw = resources;
  r.gpu_type = GetString(r.raw, "gpu.type");
  r.gpu_count = static_cast<int>(GetInt(r.raw, "gpu.count", 0));
  return r;
}

TemplateSpec DecodeTemplate(const json::object& template_spec) {
  TemplateSpec t;
  t.raw = template_spec;
  t.driver = GetString(template_spec, "driver");
  t.config = ObjectAt(template_spec, t.driver);
  t.timeout_seconds = GetInt(t.config, "timeoutSeconds", 0);
  return t;
}

int64_t Quota::GpusOf(const std::string& type) const {
  auto it = gpus.find(type);
  return it == gpus.end() ? -1 : it->second;
}

Quota DecodeQuota(const json::object& project) {
  Quota q;
  const json::object& quota = ObjectAt(ObjectAt(project, "spec"), "quota");
  q.instances = GetInt(quota, "instances", -1);
  if (const json::value* v = quota.if_contains("instancesPerUser"); v && v->is_int64())
    q.instances_per_user = v->get_int64();
  for (const auto& [type, v] : ObjectAt(quota, "gpus")) {
    boost::system::error_code ec;
    if (v.is_number()) {
      int64_t n = v.to_number<int64_t>(ec);
      if (!ec) q.gpus[type] = n;  // a fraction is no limit the engine understands
    } else if (v.is_string()) {
      q.gpus[type] = std::atoll(std::string(v.get_string()).c_str());
    }
  }
  return q;
}

}  // namespace gantry::model
