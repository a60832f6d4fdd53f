#include "model/lifecycle.h"

#include "absl/status/statusor.h"
#include "common/errors.h"
#include "model/codec.h"
#include "model/objects.h"

namespace gantry::model {

Phase ParsePhase(std::string_view s) {
  if (s == "Waiting") return Phase::kWaiting;
  if (s == "InProgress") return Phase::kInProgress;
  if (s == "Success") return Phase::kSuccess;
  if (s == "Failed") return Phase::kFailed;
  return Phase::kNotDeployed;
}

std::string_view PhaseName(Phase p) {
  switch (p) {
    case Phase::kNotDeployed:
      return "NotDeployed";
    case Phase::kWaiting:
      return "Waiting";
    case Phase::kInProgress:
      return "InProgress";
    case Phase::kSuccess:
      return "Success";
    case Phase::kFailed:
      return "Failed";
  }
  return "NotDeployed";
}

std::string_view PhaseWords(Phase p) {
  switch (p) {
    case Phase::kNotDeployed:
      return "Not Deployed";
    case Phase::kWaiting:
      return "Waiting";
    case Phase::kInProgress:
      return "In Progress";
    case Phase::kSuccess:
      return "Success";
    case Phase::kFailed:
      return "Failed";
  }
  return "Not Deployed";
}

std::string_view ActionVerb(Action a) {
  switch (a) {
    case Action::kUpdate:
      return "updated";
    case Action::kDeploy:
      return "deployed";
    case Action::kDestroy:
      return "destroyed";
    case Action::kCancel:
      return "canceled";
    case Action::kUpgrade:
      return "upgraded";
    case Action::kDelete:
      return "deleted";
  }
  return "changed";
}

namespace {

// Nothing is deployed any more.
void ClearDeployed(InstanceStatus* st) {
  st->outputs.reset();
  st->deployed_generation.reset();
  st->gpus.reset();
  st->driver_state.reset();
}

void ApplySuccess(const RunOutcome& o, InstanceStatus* st) {
  st->reason = "";
  if (o.action == RunAction::kDestroy) {
    st->phase = Phase::kNotDeployed;
    st->message = "destroyed by run " + o.run_name;
    ClearDeployed(st);
    st->restart_count.reset();
    st->SetCondition("Deployed", false, "Destroyed", *st->message, o.now);
    return;
  }
  st->phase = Phase::kSuccess;
  st->message = "deployed by run " + o.run_name;
  st->outputs = o.outputs;
  st->deployed_generation = o.generation;
  st->SetCondition("Deployed", true, "RunSucceeded", *st->message, o.now);
  if (o.service)
    st->SetCondition("ComputeReady", true, "ComputeSucceeded",
                     "compute instance " + o.compute_name + " is Success", o.now);
  st->restart_count.reset();
  st->driver_state = o.driver_state;
}

}  // namespace

void ApplyOutcome(const RunOutcome& o, InstanceStatus* st) {
  if (o.result == RunOutcome::Result::kSucceeded) return ApplySuccess(o, st);
  const std::string action(RunActionName(o.action));
  st->reason = o.reason;
  if (o.action == RunAction::kApply && o.result == RunOutcome::Result::kCanceled) {
    // Canceled while the infrastructure held it (a PENDING Slurm job): the driver removed
    // what it had started, so nothing is deployed.
    st->phase = Phase::kNotDeployed;
    st->message = action + " run " + o.run_name + " was canceled: " + o.message;
    ClearDeployed(st);
  } else {
    st->phase = Phase::kFailed;
    st->message = action + " run " + o.run_name + " failed: " + o.message;
    if (o.action == RunAction::kApply) {
      st->gpus.reset();
      st->driver_state.reset();
    }
  }
  st->SetCondition("Deployed", false, o.reason, *st->message, o.now);
}

bool WasEverDeployed(const boost::json::object& instance) {
  return !GetString(instance, "status.lastRunRef.name").empty() ||
         GetInt(instance, "status.deployedGeneration", 0) > 0;
}

absl::StatusOr<Effect> Decide(Action action, const boost::json::object& instance) {
  Phase phase = ParsePhase(GetString(instance, "status.phase"));
  std::string name = GetString(instance, "metadata.name");
  std::string run = GetString(instance, "status.lastRunRef.name");
  std::string run_action = GetString(instance, "status.action", "deploy");
  std::string run_desc = run.empty() ? "" : " (" + run_action + " run " + run + ")";
  std::string verb(ActionVerb(action));

  if (phase == Phase::kInProgress) {
    return ConflictError("instance " + name + " is In Progress" + run_desc + "; it cannot be " +
                             verb + " until the run ends",
                         "InstanceInProgress");
  }
  switch (action) {
    case Action::kUpdate:
      return Effect::kSaveSpec;
    case Action::kDeploy:
      if (phase == Phase::kWaiting)
        return ConflictError("instance " + name + " is Waiting" + run_desc +
                                 "; it is already queued to " + run_action +
                                 " (cancel the queued run first)",
                             "InstanceWaiting");
      return Effect::kQueueRun;
    case Action::kDestroy:
      if (phase == Phase::kWaiting) return Effect::kCancelQueuedRun;
      if (phase == Phase::kNotDeployed)
        return ConflictError("instance " + name + " is Not Deployed; there is nothing to destroy",
                             "InstanceNotDeployed");
      return Effect::kQueueRun;
    case Action::kCancel:
      if (phase != Phase::kWaiting)
        return ConflictError("instance " + name + " is " + std::string(PhaseWords(phase)) +
                                 "; only a Waiting run can be canceled",
                             "NothingToCancel");
      return Effect::kCancelQueuedRun;
    case Action::kUpgrade:
      if (phase == Phase::kWaiting)
        return ConflictError("instance " + name + " is Waiting" + run_desc +
                                 "; it cannot be upgraded until the run ends",
                             "InstanceWaiting");
      return Effect::kRepin;
    case Action::kDelete:
      if (phase == Phase::kWaiting)
        return ConflictError("instance " + name + " is Waiting" + run_desc +
                                 "; cancel the queued run before deleting it",
                             "InstanceWaiting");
      if (phase == Phase::kNotDeployed) return Effect::kRemoveNow;
      return Effect::kTeardownThenRemove;
  }
  return absl::InternalError("unknown action");
}

}  // namespace gantry::model
