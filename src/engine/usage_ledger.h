// The usage ledger (API.md "Usage and cost", docs/usage.md): one stored UsageInterval per
// stretch of time an instance holds its resources. An interval opens in the same store
// transaction as the dispatcher's claim that assigns an instance's GPUs (a deploy or start
// run) and closes in the same transaction as the executor's Finish that releases them (a
// stop, a destroy, a failed deploy or start; preemption is a stop). Because the writes ride on
// those commits, the ledger is exactly as durable as the GPU assignment itself, and a claim
// or finish that loses its commit leaves the ledger untouched.
//
// After a crash (sole owner) or a takeover (replicas), RecoverRun closes the open interval of
// a dead deploy's (start's) instance at the run's last heartbeat (its lease renewTime) before
// the run is queued again or failed; the re-run's claim opens a new one. The close is a
// test-and-set on the interval's resourceVersion, and only the replica that won the run's lease
// recovers it, so an interval is never closed (or counted) twice.
//
// UsageInterval is internal: the API serves it only through usagereports (api/usage_*.cc).
// Stored as {metadata: {namespace: project, name: <run>-<attempt>}, spec: {instance: {kind,
// name, uid}, user, profileRef: {name, namespace}, profileRevision, gpuType, gpus, cpu,
// memoryGiB, run, start}, status: {state: Open|Closed, phase: (the same), end}}; times are
// RFC 3339 in UTC with milliseconds.
//
// Thread-safety: free functions over a thread-safe Store; no state of their own.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/admission.h"
#include "model/objects.h"
#include "store/store.h"

namespace gantry::engine::usage {

inline constexpr char kUsageIntervalKind[] = "UsageInterval";

struct Interval {
  std::string project, name;  // metadata.namespace, metadata.name
  std::string instance_kind, instance_name, instance_uid;
  std::string user;  // who deployed: the instance's status.createdBy
  std::string profile_ns, profile_name;
  int64_t profile_revision = 1;
  std::string gpu_type;  // "" when no GPUs
  int64_t gpus = 0;
  double cpu = 0, memory_gib = 0;
  std::string run;  // the run whose claim opened it
  std::chrono::system_clock::time_point start;
  std::optional<std::chrono::system_clock::time_point> end;  // absent while open
  int64_t resource_version = 0;
  bool legacy = false;  // stored without status.phase (and rollups): see UpgradeLedger
};

boost::json::object EncodeInterval(const Interval& interval);
absl::StatusOr<Interval> DecodeInterval(const boost::json::object& stored);

// "2026-12-01T10:00:00.250Z".
std::string FormatMillis(std::chrono::system_clock::time_point t);
// RFC 3339 with or without fractional seconds, any offset, or a date (midnight UTC);
// nullopt for anything else.
std::optional<std::chrono::system_clock::time_point> ParseTime(const std::string& s);

// The write that opens an interval for `run` (a deploy or start being claimed) on `instance`
// with the GPUs it is assigned (`gpu_type`, `gpus`) and its profile's `resources`; nullopt
// when the instance already has an open interval (a redeploy keeps its GPUs) or holds
// nothing to meter.
absl::StatusOr<std::optional<store::Write>> OpenWrite(store::Store& store, const model::Run& run,
                                                      const model::Instance& instance,
                                                      const std::string& gpu_type, int64_t gpus,
                                                      const boost::json::object& resources,
                                                      std::chrono::system_clock::time_point now);
// The dispatcher's one line: appends OpenWrite for a compute instance's deploy or start that
// `a` admitted (its assigned GPUs, else the profile's count) to the claim's `writes`.
absl::Status AppendOpen(store::Store& store, const model::Run& run, const model::Instance& instance,
                        const Admission& a, std::chrono::system_clock::time_point now,
                        std::vector<store::Write>* writes);

// The label every interval carries: its instance's uid. An instance's open intervals are
// found through the stores' label index, not by reading every interval of its project.
inline constexpr char kInstanceUidLabel[] = "paas.gantry.dev/instance-uid";

// Labels the open intervals stored without kInstanceUidLabel (written by a gantryd before the
// label), which OpenWrite and CloseWrites would otherwise not find. Engine::Recover calls it:
// at start, and with several replicas on each of its passes, so that during a rolling
// upgrade an older replica's intervals are labelled within one pass.
absl::Status LabelOpenIntervals(store::Store& store);

// The writes that close every open interval of the instance with uid `instance_uid` in
// `project` at `end` (never before an interval's start), and add them to the project's
// rollups (usage_rollup.h). Appended to the commit that releases the instance's GPUs; that
// commit fails with ABORTED or ALREADY_EXISTS when another close changed the same interval
// or rollup first (IsRollupRace): the caller computes the writes again and retries.
absl::StatusOr<std::vector<store::Write>> CloseWrites(store::Store& store,
                                                      const std::string& project,
                                                      const std::string& instance_uid,
                                                      std::chrono::system_clock::time_point end);

// Whether a commit with CloseWrites lost a race it should retry: a test-and-set failed
// (ABORTED) or a rollup was created by a concurrent close (ALREADY_EXISTS).
inline bool IsRollupRace(const absl::Status& s) {
  return absl::IsAborted(s) || absl::IsAlreadyExists(s);
}

// The executor's one line: appends CloseWrites to the commit that releases the GPUs.
absl::Status AppendClose(store::Store& store, const std::string& project,
                         const std::string& instance_uid, std::chrono::system_clock::time_point end,
                         std::vector<store::Write>* writes);

// Closes the open interval of a deploy or start left Running by a dead gantryd at the run's
// last heartbeat (lease renewTime; its start time when it has none): the re-run's claim
// opens the next one. A dead stop or destroy keeps it open: its re-run closes it. Its own
// commit.
absl::Status CloseAtLastHeartbeat(store::Store& store, const model::Run& run);

// Every interval of `project` (every project when nullopt).
absl::StatusOr<std::vector<Interval>> ListIntervals(store::Store& store,
                                                    std::optional<std::string> project);

}  // namespace gantry::engine::usage
