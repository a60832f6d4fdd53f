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
  if (s == "Stopped") return Phase::kStopped;
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
    case Phase::kStopped:
      return "Stopped";
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
    case Phase::kStopped:
      return "Stopped";
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
    case Action::kStop:
      return "stopped";
    case Action::kStart:
      return "started";
  }
  return "changed";
}

namespace {

// Nothing runs any more, but what the workload made is kept (a stop).
void ClearRunning(InstanceStatus* st) {
  st->gpus.reset();
  st->driver_state.reset();
  st->expires_at.reset();
  st->gpu_utilization.reset();
  st->idle_since.reset();
  st->admission.reset();  // holds no GPUs (model/scheduling.h)
  st->queue_position.reset();
}

// Nothing is deployed any more.
void ClearDeployed(InstanceStatus* st) {
  ClearRunning(st);
  st->outputs.reset();
  st->deployed_generation.reset();
  st->started_at.reset();
}

void ApplySuccess(const RunOutcome& o, InstanceStatus* st) {
  st->reason = "";
  if (o.action == RunAction::kDestroy) {
    st->reason = o.cause;  // "" for a person's destroy; TTLExpired for a ttl's
    st->phase = Phase::kNotDeployed;
    st->message = "destroyed by run " + o.run_name;
    ClearDeployed(st);
    st->restart_count.reset();
    st->SetCondition("Deployed", false, "Destroyed", *st->message, o.now);
    return;
  }
  if (o.action == RunAction::kStop) {
    st->phase = Phase::kStopped;
    st->reason = o.cause.empty() ? "StoppedByUser" : o.cause;
    st->message = "stopped by run " + o.run_name + " (" + *st->reason + ")";
    ClearRunning(st);
    st->restart_count.reset();
    st->SetCondition("Deployed", false, "Stopped", *st->message, o.now);
    return;
  }
  const bool start = o.action == RunAction::kStart;
  st->phase = Phase::kSuccess;
  st->message = (start ? "started by run " : "deployed by run ") + o.run_name;
  st->outputs = o.outputs;
  st->deployed_generation = o.generation;
  st->started_at = o.now;
  st->expires_at = o.expires_at;
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
  const bool starts = o.action == RunAction::kApply || o.action == RunAction::kStart;
  st->reason = o.reason;
  if (starts && o.result == RunOutcome::Result::kCanceled) {
    // Canceled while the infrastructure held it (a PENDING Slurm job): the driver removed
    // what it had started, so nothing is deployed (a deploy) or it is stopped again (a start).
    st->message = action + " run " + o.run_name + " was canceled: " + o.message;
    if (o.action == RunAction::kApply) {
      st->phase = Phase::kNotDeployed;
      ClearDeployed(st);
    } else {
      st->phase = Phase::kStopped;
      ClearRunning(st);
    }
  } else {
    st->phase = Phase::kFailed;
    st->message = action + " run " + o.run_name + " failed: " + o.message;
    if (starts) {
      st->gpus.reset();
      st->driver_state.reset();
      st->expires_at.reset();
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
      // A deploy would start the workload afresh beside what the stop kept: start it.
      if (phase == Phase::kStopped)
        return ConflictError("instance " + name +
                                 " is Stopped; start it (gantry start, POST .../start) to run "
                                 "it again, or destroy it first to deploy it afresh",
                             "InstanceStopped");
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
    case Action::kStop:
      if (phase != Phase::kSuccess && phase != Phase::kFailed)
        return ConflictError("instance " + name + " is " + std::string(PhaseWords(phase)) +
                                 (phase == Phase::kWaiting ? run_desc : "") +
                                 "; nothing is running to stop",
                             "NotRunning");
      return Effect::kQueueRun;
    case Action::kStart:
      if (phase != Phase::kStopped)
        return ConflictError("instance " + name + " is " + std::string(PhaseWords(phase)) +
                                 "; only a Stopped instance can be started",
                             "NotStopped");
      return Effect::kQueueRun;
  }
  return absl::InternalError("unknown action");
}

}  // namespace gantry::model
