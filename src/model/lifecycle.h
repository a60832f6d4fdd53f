// The lifecycle of a ComputeInstance as pure functions: API.md's table, in one place.
//
// Each Check* returns OkStatus when the action is allowed in the instance's current state,
// else a 409 (ConflictError) whose reason and message say why, in the seed's words
// ("instance gpu-1 is In Progress (deploy run gpu-1-7); it cannot be destroyed until the run
// ends"). Callers (API handlers, engine) evaluate these inside the store transaction that
// performs the action, so the check and the change cannot be separated by a race.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gantry::model {

enum class Phase { kNotDeployed, kWaiting, kInProgress, kSuccess, kFailed, kStopped };
enum class Action { kUpdate, kDeploy, kDestroy, kCancel, kUpgrade, kDelete, kStop, kStart };

// "NotDeployed" <-> Phase; unknown strings read as kNotDeployed.
Phase ParsePhase(std::string_view s);
std::string_view PhaseName(Phase p);
// The seed's words: "Not Deployed", "In Progress", ...
std::string_view PhaseWords(Phase p);
std::string_view ActionVerb(Action a);  // "updated", "deployed", "destroyed", ...

// What an allowed action does to an instance in `phase`.
enum class Effect {
  kSaveSpec,            // update: store the spec, nothing deployed
  kQueueRun,            // deploy/destroy/stop/start: a run is queued (Waiting)
  kCancelQueuedRun,     // destroy/cancel while Waiting: the queued run is dropped, NotDeployed
  kRemoveNow,           // delete of a NotDeployed instance: the record goes at once
  kTeardownThenRemove,  // delete of a deployed instance: destroy run, then the record goes
  kRepin,               // upgrade: move to the profile's latest revision
};

// Decides `action` on `instance` (its status.phase, status.action, status.lastRunRef).
// OK → the effect; else 409 with reason InstanceInProgress, InstanceWaiting,
// InstanceNotDeployed, ... and a message naming the instance, its state and the run.
absl::StatusOr<Effect> Decide(Action action, const boost::json::object& instance);

struct InstanceStatus;  // model/objects.h
enum class RunAction;   // model/objects.h

// How a run ended, as far as its instance's status is concerned.
struct RunOutcome {
  enum class Result { kSucceeded, kFailed, kCanceled };
  RunAction action;
  Result result = Result::kFailed;
  std::string run_name;
  std::string reason;           // failed or canceled: CamelCase (DriverError, Timeout, ...)
  std::string message;          // failed or canceled: the driver's words
  std::string cause;            // the run's spec.reason (a stop: StoppedByUser, TTLExpired, ...)
  boost::json::object outputs;  // a deploy or start that succeeded
  // A deploy or start that succeeded: now + the effective ttl (model/lifecycle_policy.h
  // EffectiveTtl), RFC 3339; nullopt when no ttl applies.
  std::optional<std::string> expires_at;
  int64_t generation = 1;  // the instance generation the run deployed
  // Services: the compute instance they run on (condition ComputeReady).
  bool service = false;
  std::string compute_name;
  // A long-running workload's driver state (pid, ports), kept on the instance for
  // re-adoption after a restart; nullopt when the driver keeps none.
  std::optional<boost::json::object> driver_state;
  std::string now;  // RFC 3339
};

// The status a finished run leaves its (still existing) instance in: a deploy or start that
// succeeded -> Success with outputs, deployedGeneration, startedAt = now and expiresAt; a
// destroy that succeeded -> NotDeployed; a stop that succeeded -> Stopped with reason = the
// run's cause, GPUs and driver state released, outputs and spec kept, no expiresAt; a deploy
// canceled while the infrastructure held it -> NotDeployed (nothing deployed), a start so
// canceled -> Stopped; anything else -> Failed with "<action> run NAME failed: MESSAGE" (a
// failed deploy or start holds no GPUs any more; a failed stop or destroy keeps them).
// Condition Deployed tells the same. Pure.
void ApplyOutcome(const RunOutcome& outcome, InstanceStatus* status);

// True once the instance has ever been deployed (a run was queued for it).
bool WasEverDeployed(const boost::json::object& instance);

}  // namespace gantry::model
