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

#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "absl/status/statusor.h"

namespace gantry::model {

enum class Phase { kNotDeployed, kWaiting, kInProgress, kSuccess, kFailed };
enum class Action { kUpdate, kDeploy, kDestroy, kCancel, kUpgrade, kDelete };

// "NotDeployed" <-> Phase; unknown strings read as kNotDeployed.
Phase ParsePhase(std::string_view s);
std::string_view PhaseName(Phase p);
// The seed's words: "Not Deployed", "In Progress", ...
std::string_view PhaseWords(Phase p);
std::string_view ActionVerb(Action a);  // "updated", "deployed", "destroyed", ...

// What an allowed action does to an instance in `phase`.
enum class Effect {
  kSaveSpec,         // update: store the spec, nothing deployed
  kQueueRun,         // deploy/destroy: a run is queued (Waiting)
  kCancelQueuedRun,  // destroy/cancel while Waiting: the queued run is dropped, NotDeployed
  kRemoveNow,        // delete of a NotDeployed instance: the record goes at once
  kTeardownThenRemove,  // delete of a deployed instance: destroy run, then the record goes
  kRepin,            // upgrade: move to the profile's latest revision
};

// Decides `action` on `instance` (its status.phase, status.action, status.lastRunRef).
// OK → the effect; else 409 with reason InstanceInProgress, InstanceWaiting,
// InstanceNotDeployed, ... and a message naming the instance, its state and the run.
absl::StatusOr<Effect> Decide(Action action, const boost::json::object& instance);

// True once the instance has ever been deployed (a run was queued for it).
bool WasEverDeployed(const boost::json::object& instance);

}  // namespace gantry::model
