#include "model/lifecycle.h"

#include <boost/json.hpp>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "common/errors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/objects.h"

namespace gantry::model {
namespace {

namespace json = boost::json;

// An instance in `phase`; `run`/`action` fill status.lastRunRef.name / status.action when set.
json::object Instance(std::string_view phase, std::string_view run = "",
                      std::string_view action = "", std::string_view name = "gpu-1") {
  json::object o;
  o["metadata"] = json::object{{"name", name}, {"namespace", "ml-research"}};
  json::object status;
  if (!phase.empty()) status["phase"] = phase;
  if (!run.empty()) status["lastRunRef"] = json::object{{"name", run}};
  if (!action.empty()) status["action"] = action;
  o["status"] = std::move(status);
  return o;
}

// The effect of an allowed action; fails the test when refused.
Effect Allowed(Action action, const json::object& instance) {
  auto effect = Decide(action, instance);
  EXPECT_TRUE(effect.ok()) << effect.status();
  return effect.ok() ? *effect : Effect::kSaveSpec;
}

struct Refusal {
  std::string reason;
  std::string message;
};

// The refusal of a forbidden action; also checks it is a 409 FAILED_PRECONDITION.
Refusal Refused(Action action, const json::object& instance) {
  auto effect = Decide(action, instance);
  if (effect.ok()) return {"<allowed>", ""};
  EXPECT_EQ(effect.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(HttpCodeOf(effect.status()), 409);
  return {ReasonOf(effect.status()), std::string(effect.status().message())};
}

MATCHER_P2(IsRefusal, reason, message, "") {
  *result_listener << "reason " << arg.reason << ", message \"" << arg.message << "\"";
  return arg.reason == reason && arg.message == message;
}

// ------------------------------------------------------------------------------------------
// Names.

TEST(Phase, ParseAndNameRoundTrip) {
  for (Phase p : {Phase::kNotDeployed, Phase::kWaiting, Phase::kInProgress, Phase::kSuccess,
                  Phase::kFailed}) {
    EXPECT_EQ(ParsePhase(PhaseName(p)), p) << PhaseName(p);
  }
  EXPECT_EQ(PhaseName(Phase::kNotDeployed), "NotDeployed");
  EXPECT_EQ(PhaseName(Phase::kWaiting), "Waiting");
  EXPECT_EQ(PhaseName(Phase::kInProgress), "InProgress");
  EXPECT_EQ(PhaseName(Phase::kSuccess), "Success");
  EXPECT_EQ(PhaseName(Phase::kFailed), "Failed");
}

TEST(Phase, UnknownStringsReadAsNotDeployed) {
  EXPECT_EQ(ParsePhase(""), Phase::kNotDeployed);
  EXPECT_EQ(ParsePhase("inprogress"), Phase::kNotDeployed);
  EXPECT_EQ(ParsePhase("In Progress"), Phase::kNotDeployed);
  EXPECT_EQ(ParsePhase("Running"), Phase::kNotDeployed);
}

TEST(Phase, Words) {
  EXPECT_EQ(PhaseWords(Phase::kNotDeployed), "Not Deployed");
  EXPECT_EQ(PhaseWords(Phase::kWaiting), "Waiting");
  EXPECT_EQ(PhaseWords(Phase::kInProgress), "In Progress");
  EXPECT_EQ(PhaseWords(Phase::kSuccess), "Success");
  EXPECT_EQ(PhaseWords(Phase::kFailed), "Failed");
}

TEST(Action, Verbs) {
  EXPECT_EQ(ActionVerb(Action::kUpdate), "updated");
  EXPECT_EQ(ActionVerb(Action::kDeploy), "deployed");
  EXPECT_EQ(ActionVerb(Action::kDestroy), "destroyed");
  EXPECT_EQ(ActionVerb(Action::kCancel), "canceled");
  EXPECT_EQ(ActionVerb(Action::kUpgrade), "upgraded");
  EXPECT_EQ(ActionVerb(Action::kDelete), "deleted");
}

// ------------------------------------------------------------------------------------------
// API.md's lifecycle table, one test per phase, every action.

TEST(Decide, NotDeployed) {
  json::object i = Instance("NotDeployed");
  EXPECT_EQ(Allowed(Action::kUpdate, i), Effect::kSaveSpec);
  EXPECT_EQ(Allowed(Action::kDeploy, i), Effect::kQueueRun);
  EXPECT_THAT(Refused(Action::kDestroy, i),
              IsRefusal("InstanceNotDeployed",
                        "instance gpu-1 is Not Deployed; there is nothing to destroy"));
  EXPECT_THAT(Refused(Action::kCancel, i),
              IsRefusal("NothingToCancel",
                        "instance gpu-1 is Not Deployed; only a Waiting run can be canceled"));
  EXPECT_EQ(Allowed(Action::kUpgrade, i), Effect::kRepin);
  EXPECT_EQ(Allowed(Action::kDelete, i), Effect::kRemoveNow);
}

TEST(Decide, NoStatusIsNotDeployed) {
  json::object i = json::parse(R"({"metadata": {"name": "fresh"}})").as_object();
  EXPECT_EQ(Allowed(Action::kDeploy, i), Effect::kQueueRun);
  EXPECT_EQ(Allowed(Action::kDelete, i), Effect::kRemoveNow);
  EXPECT_THAT(Refused(Action::kDestroy, i),
              IsRefusal("InstanceNotDeployed",
                        "instance fresh is Not Deployed; there is nothing to destroy"));
}

TEST(Decide, Waiting) {
  json::object i = Instance("Waiting", "gpu-1-3", "deploy");
  EXPECT_EQ(Allowed(Action::kUpdate, i), Effect::kSaveSpec);
  EXPECT_THAT(Refused(Action::kDeploy, i),
              IsRefusal("InstanceWaiting",
                        "instance gpu-1 is Waiting (deploy run gpu-1-3); it is already queued to "
                        "deploy (cancel the queued run first)"));
  EXPECT_EQ(Allowed(Action::kDestroy, i), Effect::kCancelQueuedRun);
  EXPECT_EQ(Allowed(Action::kCancel, i), Effect::kCancelQueuedRun);
  EXPECT_THAT(Refused(Action::kUpgrade, i),
              IsRefusal("InstanceWaiting",
                        "instance gpu-1 is Waiting (deploy run gpu-1-3); it cannot be upgraded "
                        "until the run ends"));
  EXPECT_THAT(Refused(Action::kDelete, i),
              IsRefusal("InstanceWaiting",
                        "instance gpu-1 is Waiting (deploy run gpu-1-3); cancel the queued run "
                        "before deleting it"));
}

TEST(Decide, WaitingForAQueuedDestroy) {
  json::object i = Instance("Waiting", "gpu-1-4", "destroy");
  EXPECT_THAT(Refused(Action::kDeploy, i),
              IsRefusal("InstanceWaiting",
                        "instance gpu-1 is Waiting (destroy run gpu-1-4); it is already queued to "
                        "destroy (cancel the queued run first)"));
  EXPECT_EQ(Allowed(Action::kCancel, i), Effect::kCancelQueuedRun);
}

TEST(Decide, WaitingWithoutARunNamesNoRun) {
  json::object i = Instance("Waiting");
  EXPECT_THAT(Refused(Action::kDelete, i),
              IsRefusal("InstanceWaiting",
                        "instance gpu-1 is Waiting; cancel the queued run before deleting it"));
  // status.action defaults to deploy.
  EXPECT_THAT(Refused(Action::kDeploy, i),
              IsRefusal("InstanceWaiting",
                        "instance gpu-1 is Waiting; it is already queued to deploy (cancel the "
                        "queued run first)"));
}

TEST(Decide, InProgressRefusesEveryAction) {
  json::object i = Instance("InProgress", "gpu-1-7", "deploy");
  const std::tuple<Action, const char*> cases[] = {
      {Action::kUpdate, "updated"},    {Action::kDeploy, "deployed"},
      {Action::kDestroy, "destroyed"}, {Action::kCancel, "canceled"},
      {Action::kUpgrade, "upgraded"},  {Action::kDelete, "deleted"}};
  for (const auto& [action, verb] : cases) {
    EXPECT_THAT(Refused(action, i),
                IsRefusal("InstanceInProgress",
                          std::string("instance gpu-1 is In Progress (deploy run gpu-1-7); it "
                                      "cannot be ") +
                              verb + " until the run ends"))
        << verb;
  }
}

TEST(Decide, InProgressDestroyOfTheSeedExample) {
  json::object i = Instance("InProgress", "gpu-instance-prod-7", "deploy", "gpu-instance-prod");
  EXPECT_THAT(Refused(Action::kDestroy, i),
              IsRefusal("InstanceInProgress",
                        "instance gpu-instance-prod is In Progress (deploy run "
                        "gpu-instance-prod-7); it cannot be destroyed until the run ends"));
}

TEST(Decide, InProgressDestroyRunNamesTheDestroy) {
  json::object i = Instance("InProgress", "gpu-1-8", "destroy");
  EXPECT_THAT(Refused(Action::kDeploy, i),
              IsRefusal("InstanceInProgress",
                        "instance gpu-1 is In Progress (destroy run gpu-1-8); it cannot be "
                        "deployed until the run ends"));
}

TEST(Decide, InProgressWithoutARun) {
  json::object i = Instance("InProgress");
  EXPECT_THAT(Refused(Action::kDelete, i),
              IsRefusal("InstanceInProgress",
                        "instance gpu-1 is In Progress; it cannot be deleted until the run ends"));
}

TEST(Decide, Success) {
  json::object i = Instance("Success", "gpu-1-2", "deploy");
  EXPECT_EQ(Allowed(Action::kUpdate, i), Effect::kSaveSpec);
  EXPECT_EQ(Allowed(Action::kDeploy, i), Effect::kQueueRun);
  EXPECT_EQ(Allowed(Action::kDestroy, i), Effect::kQueueRun);
  EXPECT_THAT(Refused(Action::kCancel, i),
              IsRefusal("NothingToCancel",
                        "instance gpu-1 is Success; only a Waiting run can be canceled"));
  EXPECT_EQ(Allowed(Action::kUpgrade, i), Effect::kRepin);
  EXPECT_EQ(Allowed(Action::kDelete, i), Effect::kTeardownThenRemove);
}

TEST(Decide, Failed) {
  json::object i = Instance("Failed", "gpu-1-2", "deploy");
  EXPECT_EQ(Allowed(Action::kUpdate, i), Effect::kSaveSpec);
  EXPECT_EQ(Allowed(Action::kDeploy, i), Effect::kQueueRun);
  EXPECT_EQ(Allowed(Action::kDestroy, i), Effect::kQueueRun);
  EXPECT_THAT(
      Refused(Action::kCancel, i),
      IsRefusal("NothingToCancel", "instance gpu-1 is Failed; only a Waiting run can be canceled"));
  EXPECT_EQ(Allowed(Action::kUpgrade, i), Effect::kRepin);
  EXPECT_EQ(Allowed(Action::kDelete, i), Effect::kTeardownThenRemove);
}

TEST(Decide, FailedDestroyCanBeRetried) {
  // A destroy that failed leaves the instance Failed; destroying again queues another run.
  json::object i = Instance("Failed", "gpu-1-9", "destroy");
  EXPECT_EQ(Allowed(Action::kDestroy, i), Effect::kQueueRun);
  EXPECT_EQ(Allowed(Action::kDelete, i), Effect::kTeardownThenRemove);
}

// Stop and start (API.md's rows for them).

TEST(Decide, StopOfARunningInstanceQueuesARun) {
  EXPECT_EQ(Allowed(Action::kStop, Instance("Success", "gpu-1-2", "deploy")), Effect::kQueueRun);
  EXPECT_EQ(Allowed(Action::kStop, Instance("Failed", "gpu-1-2", "start")), Effect::kQueueRun);
}

TEST(Decide, StopOfWhatDoesNotRunIsRefused) {
  EXPECT_THAT(
      Refused(Action::kStop, Instance("NotDeployed", "gpu-1-4", "destroy")),
      IsRefusal("NotRunning", "instance gpu-1 is Not Deployed; nothing is running to stop"));
  EXPECT_THAT(Refused(Action::kStop, Instance("Waiting", "gpu-1-3", "deploy")),
              IsRefusal("NotRunning",
                        "instance gpu-1 is Waiting (deploy run gpu-1-3); nothing is running to "
                        "stop"));
  EXPECT_THAT(Refused(Action::kStop, Instance("Stopped", "gpu-1-5", "stop")),
              IsRefusal("NotRunning", "instance gpu-1 is Stopped; nothing is running to stop"));
  EXPECT_THAT(Refused(Action::kStop, Instance("InProgress", "gpu-1-6", "deploy")),
              IsRefusal("InstanceInProgress",
                        "instance gpu-1 is In Progress (deploy run gpu-1-6); it cannot be "
                        "stopped until the run ends"));
}

TEST(Decide, StartOfAnythingButStoppedIsRefused) {
  for (const char* phase : {"NotDeployed", "Waiting", "Success", "Failed"}) {
    Refusal r = Refused(Action::kStart, Instance(phase, "gpu-1-2", "deploy"));
    EXPECT_EQ(r.reason, "NotStopped") << phase;
    EXPECT_THAT(r.message, ::testing::HasSubstr("; only a Stopped instance can be started"));
  }
  EXPECT_THAT(
      Refused(Action::kStart, Instance("Success", "gpu-1-2", "deploy")),
      IsRefusal("NotStopped", "instance gpu-1 is Success; only a Stopped instance can be started"));
  EXPECT_THAT(Refused(Action::kStart, Instance("InProgress", "gpu-1-6", "stop")),
              IsRefusal("InstanceInProgress",
                        "instance gpu-1 is In Progress (stop run gpu-1-6); it cannot be started "
                        "until the run ends"));
}

TEST(Decide, Stopped) {
  json::object i = Instance("Stopped", "gpu-1-5", "stop");
  EXPECT_EQ(Allowed(Action::kStart, i), Effect::kQueueRun);
  EXPECT_EQ(Allowed(Action::kUpdate, i), Effect::kSaveSpec);
  EXPECT_EQ(Allowed(Action::kDestroy, i), Effect::kQueueRun);
  EXPECT_EQ(Allowed(Action::kDelete, i), Effect::kTeardownThenRemove);
  EXPECT_EQ(Allowed(Action::kUpgrade, i), Effect::kRepin);
  EXPECT_THAT(Refused(Action::kDeploy, i),
              IsRefusal("InstanceStopped",
                        "instance gpu-1 is Stopped; start it (gantry start, POST .../start) to "
                        "run it again, or destroy it first to deploy it afresh"));
  EXPECT_EQ(Refused(Action::kCancel, i).reason, "NothingToCancel");
}

TEST(Decide, AQueuedStartIsCanceledByDestroy) {
  // Waiting for capacity to start: destroy (or cancel) drops the queued start.
  json::object i = Instance("Waiting", "gpu-1-6", "start");
  EXPECT_EQ(Allowed(Action::kDestroy, i), Effect::kCancelQueuedRun);
  EXPECT_EQ(Allowed(Action::kCancel, i), Effect::kCancelQueuedRun);
}

// ------------------------------------------------------------------------------------------
// WasEverDeployed

TEST(WasEverDeployed, FreshInstanceWasNot) {
  EXPECT_FALSE(WasEverDeployed(json::object{}));
  EXPECT_FALSE(WasEverDeployed(Instance("NotDeployed")));
  EXPECT_FALSE(
      WasEverDeployed(json::parse(R"({"status": {"phase": "NotDeployed", "deployedGeneration": 0,
                                 "lastRunRef": {"name": ""}}})")
                          .as_object()));
}

TEST(WasEverDeployed, ARunOrADeployedGenerationMeansItWas) {
  EXPECT_TRUE(WasEverDeployed(Instance("Waiting", "gpu-1-1")));
  // Destroyed again: NotDeployed, but a run was made, so profileRef is frozen.
  EXPECT_TRUE(WasEverDeployed(Instance("NotDeployed", "gpu-1-2", "destroy")));
  EXPECT_TRUE(WasEverDeployed(
      json::parse(R"({"status": {"phase": "Success", "deployedGeneration": 2}})").as_object()));
}

// An instance status as a deployed one has it (outputs, GPUs, driver state, restarts).
InstanceStatus Deployed() {
  InstanceStatus st;
  st.phase = Phase::kInProgress;
  st.outputs = json::object{{"endpoint", "old"}};
  st.deployed_generation = 1;
  st.gpus = std::vector<std::string>{"0"};
  st.driver_state = json::object{{"pid", 1}};
  st.restart_count = 2;
  st.resources = json::object{{"cpu", 1}};
  return st;
}

RunOutcome Outcome(RunAction action, RunOutcome::Result result) {
  RunOutcome o;
  o.action = action;
  o.result = result;
  o.run_name = "gpu-1-3";
  o.generation = 4;
  o.now = "t1";
  if (result != RunOutcome::Result::kSucceeded) {
    o.reason = result == RunOutcome::Result::kCanceled ? "Canceled" : "DriverError";
    o.message = "boom";
  }
  return o;
}

TEST(ApplyOutcomeTest, DeploySucceeded) {
  InstanceStatus st = Deployed();
  RunOutcome o = Outcome(RunAction::kApply, RunOutcome::Result::kSucceeded);
  o.outputs = json::object{{"endpoint", "new"}};
  o.driver_state = json::object{{"pid", 9}};
  ApplyOutcome(o, &st);
  EXPECT_EQ(st.phase, Phase::kSuccess);
  EXPECT_EQ(st.reason, "");
  EXPECT_EQ(st.message, "deployed by run gpu-1-3");
  EXPECT_EQ(*st.outputs, (json::object{{"endpoint", "new"}}));
  EXPECT_EQ(st.deployed_generation, 4);
  EXPECT_FALSE(st.restart_count.has_value());
  EXPECT_EQ(*st.driver_state, (json::object{{"pid", 9}}));
  EXPECT_EQ(st.gpus, std::vector<std::string>{"0"});  // held while deployed
  ASSERT_EQ(st.conditions->size(), 1u);
  EXPECT_EQ((*st.conditions)[0].type, "Deployed");
  EXPECT_TRUE((*st.conditions)[0].ok);
  EXPECT_EQ((*st.conditions)[0].reason, "RunSucceeded");
}

TEST(ApplyOutcomeTest, ServiceDeploySucceededWithoutDriverState) {
  InstanceStatus st = Deployed();
  RunOutcome o = Outcome(RunAction::kApply, RunOutcome::Result::kSucceeded);
  o.service = true;
  o.compute_name = "gpu-1";
  ApplyOutcome(o, &st);
  EXPECT_FALSE(st.driver_state.has_value());
  ASSERT_EQ(st.conditions->size(), 2u);
  EXPECT_EQ((*st.conditions)[1].type, "ComputeReady");
  EXPECT_EQ((*st.conditions)[1].message, "compute instance gpu-1 is Success");
}

TEST(ApplyOutcomeTest, DestroySucceeded) {
  InstanceStatus st = Deployed();
  st.started_at = "2026-12-01T08:00:00Z";
  st.gpu_utilization = 3;
  st.idle_since = "2026-12-01T09:00:00Z";
  ApplyOutcome(Outcome(RunAction::kDestroy, RunOutcome::Result::kSucceeded), &st);
  EXPECT_EQ(st.phase, Phase::kNotDeployed);
  EXPECT_EQ(st.message, "destroyed by run gpu-1-3");
  EXPECT_FALSE(st.outputs || st.deployed_generation || st.gpus || st.driver_state ||
               st.restart_count);
  // Nothing runs, so no utilisation or idleness is left to show.
  EXPECT_FALSE(st.started_at || st.expires_at || st.gpu_utilization || st.idle_since);
  EXPECT_TRUE(st.resources.has_value());  // what it last ran with stays
  EXPECT_FALSE((*st.conditions)[0].ok);
  EXPECT_EQ((*st.conditions)[0].reason, "Destroyed");
}

TEST(ApplyOutcomeTest, DeployCanceledLeavesNothingDeployed) {
  InstanceStatus st = Deployed();
  ApplyOutcome(Outcome(RunAction::kApply, RunOutcome::Result::kCanceled), &st);
  EXPECT_EQ(st.phase, Phase::kNotDeployed);
  EXPECT_EQ(st.reason, "Canceled");
  EXPECT_EQ(st.message, "deploy run gpu-1-3 was canceled: boom");
  EXPECT_FALSE(st.outputs || st.deployed_generation || st.gpus || st.driver_state);
  EXPECT_EQ(st.restart_count, 2);
}

TEST(ApplyOutcomeTest, DeployFailedReleasesGpusKeepsOutputs) {
  InstanceStatus st = Deployed();
  ApplyOutcome(Outcome(RunAction::kApply, RunOutcome::Result::kFailed), &st);
  EXPECT_EQ(st.phase, Phase::kFailed);
  EXPECT_EQ(st.reason, "DriverError");
  EXPECT_EQ(st.message, "deploy run gpu-1-3 failed: boom");
  EXPECT_FALSE(st.gpus || st.driver_state);
  EXPECT_TRUE(st.outputs.has_value());
  EXPECT_EQ((*st.conditions)[0].message, "deploy run gpu-1-3 failed: boom");
}

TEST(ApplyOutcomeTest, DestroyFailedOrCanceledKeepsTheWorkload) {
  for (auto result : {RunOutcome::Result::kFailed, RunOutcome::Result::kCanceled}) {
    InstanceStatus st = Deployed();
    ApplyOutcome(Outcome(RunAction::kDestroy, result), &st);
    EXPECT_EQ(st.phase, Phase::kFailed);
    EXPECT_EQ(st.message, "destroy run gpu-1-3 failed: boom");
    EXPECT_TRUE(st.gpus && st.driver_state && st.outputs);
  }
}

TEST(ApplyOutcomeTest, DeploySucceededSetsStartedAtAndExpiresAt) {
  InstanceStatus st = Deployed();
  st.expires_at = "old";
  RunOutcome o = Outcome(RunAction::kApply, RunOutcome::Result::kSucceeded);
  o.now = "2026-12-01T19:00:00Z";
  o.expires_at = "2026-12-02T03:00:00Z";
  ApplyOutcome(o, &st);
  EXPECT_EQ(st.started_at, "2026-12-01T19:00:00Z");
  EXPECT_EQ(st.expires_at, "2026-12-02T03:00:00Z");
  o.expires_at.reset();  // no ttl applies (any more)
  ApplyOutcome(o, &st);
  EXPECT_FALSE(st.expires_at.has_value());
}

TEST(ApplyOutcomeTest, StopSucceededKeepsWhatTheWorkloadMadeAndReleasesGpus) {
  InstanceStatus st = Deployed();
  st.started_at = "t0";
  st.expires_at = "t9";
  st.gpu_utilization = 3;
  st.idle_since = "t0";
  RunOutcome o = Outcome(RunAction::kStop, RunOutcome::Result::kSucceeded);
  o.cause = "TTLExpired";
  ApplyOutcome(o, &st);
  EXPECT_EQ(st.phase, Phase::kStopped);
  EXPECT_EQ(st.reason, "TTLExpired");
  EXPECT_EQ(st.message, "stopped by run gpu-1-3 (TTLExpired)");
  EXPECT_FALSE(st.gpus || st.driver_state || st.expires_at || st.gpu_utilization || st.idle_since ||
               st.restart_count);
  EXPECT_EQ(*st.outputs, (json::object{{"endpoint", "old"}}));  // outputs kept
  EXPECT_EQ(st.deployed_generation, 1);
  EXPECT_EQ(st.started_at, "t0");  // when it last started
  EXPECT_TRUE(st.resources.has_value());
  ASSERT_EQ(st.conditions->size(), 1u);
  EXPECT_FALSE((*st.conditions)[0].ok);
  EXPECT_EQ((*st.conditions)[0].reason, "Stopped");
}

TEST(ApplyOutcomeTest, StopByAPersonSaysSo) {
  InstanceStatus st = Deployed();
  ApplyOutcome(Outcome(RunAction::kStop, RunOutcome::Result::kSucceeded), &st);
  EXPECT_EQ(st.reason, "StoppedByUser");
}

TEST(ApplyOutcomeTest, StartSucceededIsADeploy) {
  InstanceStatus st = Deployed();
  st.phase = Phase::kInProgress;
  RunOutcome o = Outcome(RunAction::kStart, RunOutcome::Result::kSucceeded);
  o.outputs = json::object{{"endpoint", "again"}};
  o.now = "t2";
  o.expires_at = "t3";
  ApplyOutcome(o, &st);
  EXPECT_EQ(st.phase, Phase::kSuccess);
  EXPECT_EQ(st.reason, "");
  EXPECT_EQ(st.message, "started by run gpu-1-3");
  EXPECT_EQ(*st.outputs, (json::object{{"endpoint", "again"}}));
  EXPECT_EQ(st.started_at, "t2");
  EXPECT_EQ(st.expires_at, "t3");
  EXPECT_EQ((*st.conditions)[0].reason, "RunSucceeded");
}

TEST(ApplyOutcomeTest, StopFailedKeepsTheGpus) {
  InstanceStatus st = Deployed();
  ApplyOutcome(Outcome(RunAction::kStop, RunOutcome::Result::kFailed), &st);
  EXPECT_EQ(st.phase, Phase::kFailed);
  EXPECT_EQ(st.message, "stop run gpu-1-3 failed: boom");
  EXPECT_TRUE(st.gpus && st.driver_state && st.outputs);
}

TEST(ApplyOutcomeTest, StartFailedOrCanceledHoldsNoGpus) {
  InstanceStatus st = Deployed();
  ApplyOutcome(Outcome(RunAction::kStart, RunOutcome::Result::kFailed), &st);
  EXPECT_EQ(st.phase, Phase::kFailed);
  EXPECT_EQ(st.message, "start run gpu-1-3 failed: boom");
  EXPECT_FALSE(st.gpus || st.driver_state);
  st = Deployed();
  ApplyOutcome(Outcome(RunAction::kStart, RunOutcome::Result::kCanceled), &st);
  EXPECT_EQ(st.phase, Phase::kStopped);  // nothing started: stopped as before
  EXPECT_EQ(st.message, "start run gpu-1-3 was canceled: boom");
  EXPECT_FALSE(st.gpus || st.driver_state);
  EXPECT_TRUE(st.outputs.has_value());
}

}  // namespace
}  // namespace gantry::model
