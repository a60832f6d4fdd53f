// Typed views of the stored objects the deploy engine works on (ARCHITECTURE.md "Typed
// inside, JSON at the edges"): a Run, a compute or service instance, the parts of profile
// and template revisions the engine reads, and a project's quota.
//
// Each is decoded once from the stored JSON (Decode*) and encoded once on the way back
// (Encode*). The decoded struct keeps the stored object in `raw`: encoding writes the typed
// fields into it and leaves every field the struct does not model as it was, so a stored
// object keeps its shape and key order. The rule for optional fields is one: std::nullopt
// (or an empty value where the field says so) means "absent", and encoding erases it.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/lifecycle.h"
#include "model/lifecycle_policy.h"

namespace gantry::model {

inline constexpr char kRunKind[] = "Run";

// What a run does. Stored as spec.action "deploy" / "destroy" / "stop" / "start".
enum class RunAction { kApply, kDestroy, kStop, kStart };
std::string_view RunActionName(RunAction a);  // "deploy", "destroy", "stop", "start"
// Unknown strings read as kApply.
RunAction ParseRunAction(std::string_view s);

// A run's status.phase.
enum class RunPhase { kQueued, kRunning, kSucceeded, kFailed, kCanceled };
std::string_view RunPhaseName(RunPhase p);
// Unknown strings read as kQueued.
RunPhase ParseRunPhase(std::string_view s);

// The metadata the engine reads (never writes: the store owns resourceVersion).
struct ObjectMeta {
  std::string name, ns, uid;
  int64_t resource_version = 0;
  int64_t generation = 1;
  boost::json::object labels, annotations;
  // "ns/name/uid": the owner key of an instance's GPUs (engine/inventory.h).
  std::string OwnerKey() const { return ns + "/" + name + "/" + uid; }
};

// status.lease of a Running run.
struct Lease {
  std::string holder, host;
  std::string renew_time;  // RFC 3339
  int64_t duration_seconds = 30;
};

struct Run {
  boost::json::object raw;
  ObjectMeta metadata;
  // spec
  std::string instance_kind = "ComputeInstance";  // runs made before services name none
  std::string instance_name, instance_uid;
  RunAction action = RunAction::kApply;
  int64_t generation = 1;
  int64_t profile_revision = 1, template_revision = 1;
  Phase previous_phase = Phase::kNotDeployed;
  bool delete_instance = false;
  // spec.reason: why the run was queued when the server queued it (TTLExpired, Idle,
  // Scheduled, Preempted) or a person stopped it (StoppedByUser); "" for other runs.
  std::string cause;
  // status
  RunPhase phase = RunPhase::kQueued;
  int64_t attempt = 0;
  std::optional<std::string> reason, message, start_time, completion_time;
  std::optional<Lease> lease;
  // status.reclaim, several replicas: the replica (holder, host) preempting borrowers of its
  // host for this queued deploy, until renew_time + duration_seconds (engine/preemption.cc).
  std::optional<Lease> reclaim;
  std::optional<std::vector<std::string>> gpus, gpu_uuids;  // indices held on this host
  std::optional<boost::json::object> driver_state, outputs;
};

// A new Queued run of `action` on the instance (kind, name, uid, generation) pinning the
// given revisions; `previous` is the instance's phase before the run was queued.
Run NewRun(const std::string& name, const std::string& ns, const std::string& uid,
           const std::string& created, const std::string& instance_kind,
           const std::string& instance_name, const std::string& instance_uid, RunAction action,
           int64_t generation, int64_t profile_revision, int64_t template_revision, Phase previous,
           bool delete_instance);

// The metadata of any stored object; INTERNAL when it has no metadata.name.
absl::StatusOr<ObjectMeta> DecodeObjectMeta(const boost::json::object& stored);

// A typed object T (one with `raw` and `metadata`: Profile, Template, Project, ...) holding
// `stored` and its metadata, for the T's decoder to fill in the rest (from out.raw). Taken by
// value: a caller done with its object moves it in instead of copying it.
template <typename T>
absl::StatusOr<T> DecodeObjectWithMeta(boost::json::object stored) {
  T out;
  absl::StatusOr<ObjectMeta> meta = DecodeObjectMeta(stored);
  if (!meta.ok()) return meta.status();
  out.metadata = *std::move(meta);
  out.raw = std::move(stored);
  return out;
}

absl::StatusOr<Run> DecodeRun(boost::json::object stored);  // by value, as DecodeInstance
boost::json::object EncodeRun(const Run& run);
// The same from a run the caller is done with: its raw object is moved, not copied (the
// typed fields are left as they were, raw empty).
boost::json::object EncodeRun(Run&& run);

// One entry of status.conditions.
struct Condition {
  std::string type;
  bool ok = false;  // status "True" / "False"
  std::string reason, message, last_transition_time;
  bool operator==(const Condition&) const = default;
};

// status.conditions as stored (entries that are not objects are skipped) and back.
std::vector<Condition> DecodeConditions(const boost::json::array& stored);
boost::json::array EncodeConditions(const std::vector<Condition>& conditions);
// Sets condition `type` in `conditions`, keeping its lastTransitionTime when its status is
// unchanged, else stamping `now`.
void SetCondition(std::vector<Condition>& conditions, const std::string& type, bool ok,
                  const std::string& reason, const std::string& message, const std::string& now);

struct InstanceStatus {
  std::optional<Phase> phase;       // absent: a new instance (NotDeployed)
  std::optional<RunAction> action;  // of the last run
  std::optional<std::string> reason, message;
  std::optional<int64_t> run_count;
  std::optional<std::string> last_run;  // status.lastRunRef.name
  std::optional<boost::json::object> outputs;
  std::optional<int64_t> deployed_generation;
  std::optional<std::vector<Condition>> conditions;
  std::optional<int64_t> restart_count;
  std::optional<boost::json::object> driver_state;
  std::optional<std::vector<std::string>> gpus;
  std::optional<boost::json::object> resources;
  std::optional<std::string> host;  // several replicas: the host of a host-bound deploy
  // Lifecycle (API.md "Lifecycle policies"); RFC 3339 times.
  std::optional<std::string> started_at;   // last deploy/start that reached Success
  std::optional<std::string> expires_at;   // started_at + the effective ttl
  std::optional<int64_t> gpu_utilization;  // percent, last sample
  std::optional<std::string> idle_since;   // absent while busy
  // Fair share (model/scheduling.h): Guaranteed or Borrowed while it holds GPUs; its place
  // in the queue for its GPU type while it waits for them.
  std::optional<std::string> admission;
  std::optional<int64_t> queue_position;
  // Read only (written by the API).
  int64_t profile_revision = 1, template_revision = 1;
  bool compute_created = false;  // a service's auto-created compute instance

  Phase PhaseOr() const { return phase.value_or(Phase::kNotDeployed); }
  // Sets condition `type` (keeping its lastTransitionTime when its status is unchanged).
  void SetCondition(const std::string& type, bool ok, const std::string& reason,
                    const std::string& message, const std::string& now);
};

// A ComputeInstance or ServiceInstance.
struct Instance {
  boost::json::object raw;
  std::string kind;
  ObjectMeta metadata;
  // spec
  std::string display_name, description;
  std::string profile_ns, profile_name;  // spec.profileRef (ns defaults to own)
  boost::json::object variables;         // as stored (sealed values sealed)
  std::string compute_ns, compute_name;  // services: spec.computeRef (ns defaults to own)
  InstanceLifecycle lifecycle;           // spec.lifecycle
  InstanceStatus status;
};

// Taken by value, as DecodeObjectWithMeta: a caller done with the stored object moves it in.
absl::StatusOr<Instance> DecodeInstance(boost::json::object stored);
boost::json::object EncodeInstance(const Instance& instance);
// As EncodeRun(Run&&): moves the instance's raw object.
boost::json::object EncodeInstance(Instance&& instance);

// The profile revision's spec.resources as the engine reads it.
struct Resources {
  boost::json::object raw;  // handed to drivers as is
  std::string gpu_type;     // "" = any type
  int gpu_count = 0;
};
Resources DecodeResources(const boost::json::object& profile_spec);
// The same from a resources object itself (an instance's status.resources).
Resources ParseResources(const boost::json::object& resources);

// The template revision's parts the engine reads.
struct TemplateSpec {
  boost::json::object raw;  // the spec as stored (variables, sharing, ...)
  std::string driver;
  boost::json::object config;   // spec.<driver>
  int64_t timeout_seconds = 0;  // config.timeoutSeconds; 0 = the engine's default
};
TemplateSpec DecodeTemplate(const boost::json::object& template_spec);

// A project's spec.quota; -1 = no limit.
struct Quota {
  int64_t instances = -1;
  std::map<std::string, int64_t> gpus;  // per GPU type
  // The GPU limit of `type`, -1 when none.
  int64_t GpusOf(const std::string& type) const;
  // instancesPerUser: compute instances one user may create (counted by the API); absent
  // (or not an integer) = no limit.
  std::optional<int64_t> instances_per_user;
};
Quota DecodeQuota(const boost::json::object& project);

}  // namespace gantry::model
