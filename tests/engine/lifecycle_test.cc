// API.md's lifecycle table, row by row, against a real gantryd running real exec scripts:
// every allowed transition with the status it leaves (phase, action, reason, message,
// outputs, deployedGeneration, lastRunRef, conditions) and every refusal with its exact 409
// reason and message. Also: profileRef changes, upgrade, and labels reaching the script.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;

class LifecycleTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    CreateStandardProfile();
  }

  void Create(const std::string& name, json::object labels = {}) {
    api().CreateInstance("default", name, "std", std::move(labels));
  }

  // Deploys without blocking and waits for Success.
  json::object DeployToSuccess(const std::string& name) {
    Resp r = Action(name, "deploy");
    EXPECT_EQ(r.status, 202) << r.raw;
    return WaitPhase(name, "Success");
  }

  Resp Patch(const std::string& name, const json::object& patch) {
    return api().Patch(NsPath("default", "computeinstances", name), patch);
  }
};

TEST_F(LifecycleTest, CreateIsNotDeployedWithNoRuns) {
  Create("web");
  json::object o = Get("web");
  EXPECT_EQ(Str(o, "status.phase"), "NotDeployed");
  EXPECT_EQ(Int(o, "metadata.generation"), 1);
  EXPECT_EQ(Int(o, "status.profileRevision"), 1);
  EXPECT_TRUE(At(o, "status.lastRunRef").is_null());
  EXPECT_TRUE(RunsOf("web").empty());
}

TEST_F(LifecycleTest, DeployGoesWaitingInProgressSuccessWithOutputsAndConditions) {
  Create("web");
  Touch("block-web");
  Resp r = Action("web", "deploy");
  ASSERT_EQ(r.status, 202) << r.raw;
  EXPECT_EQ(Str(r.obj(), "kind"), "ComputeInstance");
  EXPECT_EQ(Str(r.obj(), "status.phase"), "Waiting");
  EXPECT_EQ(Str(r.obj(), "status.action"), "deploy");
  EXPECT_EQ(Str(r.obj(), "status.reason"), "Queued");
  EXPECT_EQ(Str(r.obj(), "status.message"), "deploy run web-1 is queued");
  EXPECT_EQ(Str(r.obj(), "status.lastRunRef.name"), "web-1");

  ASSERT_TRUE(WaitFile("started-web-1"));
  json::object running = WaitPhase("web", "InProgress");
  EXPECT_EQ(Str(running, "status.action"), "deploy");
  EXPECT_EQ(Str(running, "status.reason"), "");
  EXPECT_EQ(Str(running, "status.message"), "deploy run web-1 is running");
  json::object run = GetRun("web-1");
  EXPECT_EQ(Str(run, "kind"), "Run");
  EXPECT_EQ(Str(run, "status.phase"), "Running");
  EXPECT_EQ(Str(run, "spec.action"), "deploy");
  EXPECT_EQ(Str(run, "spec.instanceRef.name"), "web");
  EXPECT_EQ(Int(run, "status.attempt"), 1);

  Touch("release-web-1");
  json::object done = WaitPhase("web", "Success");
  EXPECT_EQ(Str(done, "status.action"), "deploy");
  EXPECT_EQ(Str(done, "status.reason"), "");
  EXPECT_EQ(Str(done, "status.message"), "deployed by run web-1");
  EXPECT_EQ(Str(done, "status.lastRunRef.name"), "web-1");
  EXPECT_EQ(Int(done, "status.deployedGeneration"), 1);
  EXPECT_EQ(Int(done, "status.deployedGeneration"), Int(done, "metadata.generation"));
  EXPECT_EQ(
      At(done, "status.outputs"),
      json::value(json::object{{"endpoint", "http://web.example:8080"}, {"action", "apply"}}));
  json::object cond = Condition(done, "Deployed");
  EXPECT_EQ(Str(cond, "status"), "True") << json::serialize(done);
  EXPECT_EQ(Str(cond, "reason"), "RunSucceeded");
  EXPECT_EQ(Str(cond, "message"), "deployed by run web-1");
  EXPECT_FALSE(Str(cond, "lastTransitionTime").empty());

  run = GetRun("web-1");
  EXPECT_EQ(Str(run, "status.phase"), "Succeeded");
  EXPECT_EQ(At(run, "status.outputs"), At(done, "status.outputs"));
  EXPECT_FALSE(Str(run, "status.completionTime").empty());
  EXPECT_EQ(RunsOf("web").size(), 1u);
}

TEST_F(LifecycleTest, FailingScriptLeavesFailedWithItsLastLogLines) {
  Create("bad");
  Touch("fail-bad");
  ASSERT_EQ(Action("bad", "deploy").status, 202);
  json::object failed = WaitPhase("bad", "Failed");
  const std::string why = script_ +
                          " apply exited with code 3: fail line 2\nfail line 3\nfail line 4\n"
                          "fail line 5\nfail line 6";
  EXPECT_EQ(Str(failed, "status.reason"), "DriverError");
  EXPECT_EQ(Str(failed, "status.action"), "deploy");
  EXPECT_EQ(Str(failed, "status.message"), "deploy run bad-1 failed: " + why);
  EXPECT_EQ(Str(failed, "status.lastRunRef.name"), "bad-1");
  EXPECT_TRUE(At(failed, "status.deployedGeneration").is_null());
  EXPECT_TRUE(At(failed, "status.outputs").is_null());
  json::object cond = Condition(failed, "Deployed");
  EXPECT_EQ(Str(cond, "status"), "False");
  EXPECT_EQ(Str(cond, "reason"), "DriverError");
  json::object run = GetRun("bad-1");
  EXPECT_EQ(Str(run, "status.phase"), "Failed");
  EXPECT_EQ(Str(run, "status.reason"), "DriverError");
  EXPECT_EQ(Str(run, "status.message"), why);

  // Failed → deploy is allowed, and a fixed script succeeds.
  std::filesystem::remove(Path("fail-bad"));
  json::object ok = DeployToSuccess("bad");
  EXPECT_EQ(Str(ok, "status.lastRunRef.name"), "bad-2");
  EXPECT_EQ(Str(ok, "status.reason"), "");
  EXPECT_EQ(Str(Condition(ok, "Deployed"), "status"), "True");
}

TEST_F(LifecycleTest, EveryActionIsRefusedWhileADeployIsInProgress) {
  Create("web");
  std::string run = DeployBlocked("web");
  ASSERT_EQ(run, "web-1");
  json::object before = Get("web");
  const std::string path = NsPath("default", "computeinstances", "web");
  auto msg = [](const std::string& verb) {
    return "instance web is In Progress (deploy run web-1); it cannot be " + verb +
           " until the run ends";
  };
  ExpectRefused(Action("web", "deploy"), 409, "InstanceInProgress", msg("deployed"));
  ExpectRefused(Action("web", "destroy"), 409, "InstanceInProgress", msg("destroyed"));
  ExpectRefused(Action("web", "cancel"), 409, "InstanceInProgress", msg("canceled"));
  ExpectRefused(Action("web", "upgrade"), 409, "InstanceInProgress", msg("upgraded"));
  ExpectRefused(api().Delete(path), 409, "InstanceInProgress", msg("deleted"));
  ExpectRefused(Patch("web", {{"spec", {{"description", "changed"}}}}), 409, "InstanceInProgress",
                msg("updated"));
  // Nothing changed.
  json::object after = Get("web");
  EXPECT_EQ(Str(after, "metadata.resourceVersion"), Str(before, "metadata.resourceVersion"));
  EXPECT_EQ(RunsOf("web").size(), 1u);

  Touch("release-web-1");
  WaitPhase("web", "Success");
}

TEST_F(LifecycleTest, DestroyFromSuccessTearsDownToNotDeployed) {
  Create("web");
  DeployToSuccess("web");
  Touch("block-web");
  Resp r = Action("web", "destroy");
  ASSERT_EQ(r.status, 202) << r.raw;
  EXPECT_EQ(Str(r.obj(), "status.phase"), "Waiting");
  EXPECT_EQ(Str(r.obj(), "status.action"), "destroy");
  EXPECT_EQ(Str(r.obj(), "status.message"), "destroy run web-2 is queued");
  ASSERT_TRUE(WaitFile("started-web-2"));
  json::object running = WaitPhase("web", "InProgress");
  EXPECT_EQ(Str(running, "status.action"), "destroy");
  EXPECT_EQ(Str(running, "status.message"), "destroy run web-2 is running");
  ExpectRefused(Action("web", "deploy"), 409, "InstanceInProgress",
                "instance web is In Progress (destroy run web-2); it cannot be deployed until "
                "the run ends");
  ExpectRefused(Action("web", "destroy"), 409, "InstanceInProgress",
                "instance web is In Progress (destroy run web-2); it cannot be destroyed until "
                "the run ends");
  Touch("release-web-2");
  json::object done = WaitPhase("web", "NotDeployed");
  EXPECT_EQ(Str(done, "status.action"), "destroy");
  EXPECT_EQ(Str(done, "status.reason"), "");
  EXPECT_EQ(Str(done, "status.message"), "destroyed by run web-2");
  EXPECT_EQ(Str(done, "status.lastRunRef.name"), "web-2");
  EXPECT_TRUE(At(done, "status.outputs").is_null()) << json::serialize(done);
  EXPECT_TRUE(At(done, "status.deployedGeneration").is_null()) << json::serialize(done);
  json::object cond = Condition(done, "Deployed");
  EXPECT_EQ(Str(cond, "status"), "False");
  EXPECT_EQ(Str(cond, "reason"), "Destroyed");

  // The script was called with `destroy` and the previous outputs.
  json::value in = json::parse(ReadFile(Path("stdin-web-2.json")));
  EXPECT_EQ(Str(in.as_object(), "action"), "destroy");
  EXPECT_EQ(Str(in.as_object(), "previousOutputs.endpoint"), "http://web.example:8080");
  EXPECT_EQ(Str(GetRun("web-2"), "spec.action"), "destroy");
  EXPECT_EQ(Str(GetRun("web-2"), "status.phase"), "Succeeded");
  EXPECT_EQ(RunsOf("web").size(), 2u);
}

TEST_F(LifecycleTest, DestroyFromFailedAndAFailingDestroy) {
  Create("f");
  Touch("fail-f");
  ASSERT_EQ(Action("f", "deploy").status, 202);
  WaitPhase("f", "Failed");
  // Failed → destroy; the script still fails: Failed, action destroy.
  ASSERT_EQ(Action("f", "destroy").status, 202);
  json::object failed = WaitInstance(
      "f",
      [](const json::object& o) {
        return Str(o, "status.phase") == "Failed" && Str(o, "status.action") == "destroy";
      },
      "Failed (destroy)");
  EXPECT_EQ(Str(failed, "status.reason"), "DriverError");
  EXPECT_EQ(Str(failed, "status.message"),
            "destroy run f-2 failed: " + script_ +
                " destroy exited with code 3: fail line 2\nfail line 3\nfail line 4\n"
                "fail line 5\nfail line 6");
  // Failed → destroy again with a working script: NotDeployed.
  std::filesystem::remove(Path("fail-f"));
  ASSERT_EQ(Action("f", "destroy").status, 202);
  json::object done = WaitPhase("f", "NotDeployed");
  EXPECT_EQ(Str(done, "status.message"), "destroyed by run f-3");
  EXPECT_EQ(RunsOf("f").size(), 3u);
}

TEST_F(LifecycleTest, RefusalsOutsideInProgress) {
  Create("web");
  ExpectRefused(Action("web", "destroy"), 409, "InstanceNotDeployed",
                "instance web is Not Deployed; there is nothing to destroy");
  ExpectRefused(Action("web", "cancel"), 409, "NothingToCancel",
                "instance web is Not Deployed; only a Waiting run can be canceled");
  DeployToSuccess("web");
  ExpectRefused(Action("web", "cancel"), 409, "NothingToCancel",
                "instance web is Success; only a Waiting run can be canceled");
  Create("bad");
  Touch("fail-bad");
  ASSERT_EQ(Action("bad", "deploy").status, 202);
  WaitPhase("bad", "Failed");
  ExpectRefused(Action("bad", "cancel"), 409, "NothingToCancel",
                "instance bad is Failed; only a Waiting run can be canceled");
  // None of these made a run.
  EXPECT_EQ(RunsOf("web").size(), 1u);
  EXPECT_EQ(RunsOf("bad").size(), 1u);
  // Unknown instance: 404.
  Resp r = Action("nope", "deploy");
  EXPECT_TRUE(r.IsStatus(404, "NotFound")) << r.raw;
}

TEST_F(LifecycleTest, SuccessRedeploysAsANewRun) {
  Create("web");
  DeployToSuccess("web");
  json::object again = DeployToSuccess("web");
  EXPECT_EQ(Str(again, "status.lastRunRef.name"), "web-2");
  EXPECT_EQ(Str(again, "status.message"), "deployed by run web-2");
  EXPECT_EQ(RunsOf("web").size(), 2u);
}

TEST_F(LifecycleTest, UpdateSavesSpecInEveryPhaseButInProgressAndDeploysNothing) {
  Create("web");
  // NotDeployed.
  Resp r = Patch("web", {{"spec", {{"description", "one"}}}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(Int(r.obj(), "metadata.generation"), 2);
  EXPECT_EQ(Str(r.obj(), "status.phase"), "NotDeployed");
  EXPECT_TRUE(RunsOf("web").empty());
  // Success: generation moves ahead of deployedGeneration.
  json::object ok = DeployToSuccess("web");
  EXPECT_EQ(Int(ok, "status.deployedGeneration"), 2);
  r = Patch("web", {{"spec", {{"description", "two"}}}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(Int(r.obj(), "metadata.generation"), 3);
  EXPECT_EQ(Str(r.obj(), "status.phase"), "Success");
  EXPECT_EQ(Int(r.obj(), "status.deployedGeneration"), 2);
  EXPECT_EQ(RunsOf("web").size(), 1u);
  // Deploying publishes it.
  ok = DeployToSuccess("web");
  EXPECT_EQ(Int(ok, "status.deployedGeneration"), 3);
  // Failed.
  Touch("fail-web");
  ASSERT_EQ(Action("web", "deploy").status, 202);
  WaitPhase("web", "Failed");
  r = Patch("web", {{"spec", {{"description", "three"}}}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(Str(r.obj(), "status.phase"), "Failed");
  EXPECT_EQ(Int(r.obj(), "metadata.generation"), 4);
}

TEST_F(LifecycleTest, DeleteOfNotDeployedRemovesTheRecordAndItsRuns) {
  Create("web");
  DeployToSuccess("web");
  ASSERT_EQ(Action("web", "destroy").status, 202);
  WaitPhase("web", "NotDeployed");
  ASSERT_EQ(RunsOf("web").size(), 2u);
  Resp r = api().Delete(NsPath("default", "computeinstances", "web"));
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(api().Get(NsPath("default", "computeinstances", "web")).status, 404);
  EXPECT_TRUE(RunsOf("web").empty());
  EXPECT_EQ(api().Get(NsPath("default", "runs", "web-1") + "/log").status, 404);
}

TEST_F(LifecycleTest, DeleteOfDeployedTearsDownThenRemovesRecordAndRuns) {
  Create("web");
  DeployToSuccess("web");
  Touch("block-web");
  Resp r = api().Delete(NsPath("default", "computeinstances", "web"));
  ASSERT_EQ(r.status, 202) << r.raw;
  EXPECT_EQ(Str(r.obj(), "status.phase"), "Waiting");
  EXPECT_EQ(Str(r.obj(), "status.action"), "destroy");
  EXPECT_EQ(Str(r.obj(), "status.lastRunRef.name"), "web-2");
  ASSERT_TRUE(WaitFile("started-web-2"));
  json::object running = WaitPhase("web", "InProgress");
  EXPECT_EQ(Str(running, "status.action"), "destroy");
  EXPECT_EQ(RunsOf("web").size(), 2u);  // still there while the teardown runs
  Touch("release-web-2");
  ASSERT_TRUE(WaitGone("web"));
  EXPECT_TRUE(RunsOf("web").empty());
  EXPECT_EQ(api().Get(NsPath("default", "runs", "web-2")).status, 404);
  json::value in = json::parse(ReadFile(Path("stdin-web-2.json")));
  EXPECT_EQ(Str(in.as_object(), "action"), "destroy");
}

TEST_F(LifecycleTest, DeleteOfFailedTearsDownAndAFailedTeardownKeepsTheRecord) {
  Create("f");
  Touch("fail-f");
  ASSERT_EQ(Action("f", "deploy").status, 202);
  WaitPhase("f", "Failed");
  Resp r = api().Delete(NsPath("default", "computeinstances", "f"));
  ASSERT_EQ(r.status, 202) << r.raw;
  // The teardown fails: the record stays, Failed, so nothing is orphaned silently.
  json::object failed = WaitInstance(
      "f",
      [](const json::object& o) {
        return Str(o, "status.phase") == "Failed" && Str(o, "status.action") == "destroy";
      },
      "Failed (destroy)");
  EXPECT_EQ(Str(failed, "status.reason"), "DriverError");
  std::filesystem::remove(Path("fail-f"));
  r = api().Delete(NsPath("default", "computeinstances", "f"));
  ASSERT_EQ(r.status, 202) << r.raw;
  ASSERT_TRUE(WaitGone("f"));
  EXPECT_TRUE(RunsOf("f").empty());
}

TEST_F(LifecycleTest, ProfileRefChangesOnlyBeforeTheFirstDeploy) {
  api().CreateProfile("default", "other", "std-tmpl");
  Create("web");
  Resp r = Patch("web", {{"spec", {{"profileRef", {{"name", "other"}}}}}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(Str(r.obj(), "spec.profileRef.name"), "other");
  DeployToSuccess("web");
  const std::string forbidden =
      "Forbidden: the compute profile can only be changed before the instance is first deployed";
  r = Patch("web", {{"spec", {{"profileRef", {{"name", "std"}}}}}});
  EXPECT_TRUE(r.IsStatus(422, "Invalid")) << r.raw;
  EXPECT_EQ(r.cause_fields(), std::vector<std::string>{"spec.profileRef"});
  EXPECT_EQ(r.cause_message("spec.profileRef"), forbidden);
  // Still refused once destroyed: it was deployed before.
  ASSERT_EQ(Action("web", "destroy").status, 202);
  WaitPhase("web", "NotDeployed");
  r = Patch("web", {{"spec", {{"profileRef", {{"name", "std"}}}}}});
  EXPECT_TRUE(r.IsStatus(422, "Invalid")) << r.raw;
  EXPECT_EQ(r.cause_message("spec.profileRef"), forbidden);
  EXPECT_EQ(Str(Get("web"), "spec.profileRef.name"), "other");
}

TEST_F(LifecycleTest, UpgradeMovesToTheLatestProfileRevisionAndBumpsGeneration) {
  Create("web");
  DeployToSuccess("web");
  // Edit the profile: revision 2. The instance stays pinned to 1.
  Resp p = api().Patch(NsPath("default", "computeprofiles", "std"),
                       json::object{{"spec", {{"displayName", "8x H100 (v2)"}}}});
  ASSERT_EQ(p.status, 200) << p.raw;
  ASSERT_EQ(Int(p.obj(), "status.revision"), 2);
  json::object before = Get("web");
  EXPECT_EQ(Int(before, "status.profileRevision"), 1);

  Resp r = Action("web", "upgrade");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(Int(r.obj(), "status.profileRevision"), 2);
  EXPECT_EQ(Int(r.obj(), "metadata.generation"), Int(before, "metadata.generation") + 1);
  EXPECT_EQ(Str(r.obj(), "status.phase"), "Success");
  EXPECT_EQ(Int(r.obj(), "status.deployedGeneration"), Int(before, "metadata.generation"));
  EXPECT_EQ(RunsOf("web").size(), 1u);  // upgrading deploys nothing
  // Again: already on the latest revision, nothing changes.
  Resp again = Action("web", "upgrade");
  ASSERT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(Int(again.obj(), "metadata.generation"), Int(r.obj(), "metadata.generation"));
  EXPECT_EQ(again.meta("resourceVersion"), r.meta("resourceVersion"));
  // The next deploy runs revision 2 and publishes the new generation.
  json::object ok = DeployToSuccess("web");
  EXPECT_EQ(Int(GetRun("web-2"), "spec.profileRevision"), 2);
  EXPECT_EQ(Int(ok, "status.deployedGeneration"), Int(ok, "metadata.generation"));
}

TEST_F(LifecycleTest, LabelsReachTheScriptInItsEnvironmentAndStdin) {
  Create("web", json::object{{"env", "prod"}, {"team.example.com/tier", "gold"}});
  DeployToSuccess("web");
  std::string env = ReadFile(Path("env-web-1"));
  EXPECT_NE(env.find("GANTRY_LABEL_ENV=prod\n"), std::string::npos) << env;
  EXPECT_NE(env.find("GANTRY_LABEL_TEAM_EXAMPLE_COM_TIER=gold\n"), std::string::npos) << env;
  EXPECT_NE(env.find("GANTRY_ACTION=apply\n"), std::string::npos) << env;
  EXPECT_NE(env.find("GANTRY_INSTANCE=web\n"), std::string::npos) << env;
  EXPECT_NE(env.find("GANTRY_PROJECT=default\n"), std::string::npos) << env;
  EXPECT_NE(env.find("GANTRY_RUN=web-1\n"), std::string::npos) << env;
  json::value in = json::parse(ReadFile(Path("stdin-web-1.json")));
  ASSERT_TRUE(in.is_object());
  const json::object& o = in.get_object();
  EXPECT_EQ(Str(o, "action"), "apply");
  EXPECT_EQ(Str(o, "instance.name"), "web");
  EXPECT_EQ(Str(o, "instance.project"), "default");
  EXPECT_EQ(At(o, "instance.labels"),
            json::value(json::object{{"env", "prod"}, {"team.example.com/tier", "gold"}}));
  EXPECT_EQ(Int(o, "resources.gpu.count"), 8);
  EXPECT_EQ(Str(o, "run.name"), "web-1");
}

// The rows of the table that need a queue: one worker, held by a blocked deploy of `hold`,
// so that other deploys stay Waiting for as long as the test wants.
class QueuedLifecycleTest : public LifecycleTest {
 protected:
  int Workers() override { return 1; }
  void SetUp() override {
    LifecycleTest::SetUp();
    if (HasFatalFailure()) return;
    Create("hold");
    hold_run_ = DeployBlocked("hold");
  }
  void Unhold() {
    Touch("release-" + hold_run_);
    WaitPhase("hold", "Success");
  }
  std::string hold_run_;
};

TEST_F(QueuedLifecycleTest, CancelOfAWaitingRunLeavesNotDeployedAndNothingRan) {
  Create("b");
  Resp r = Action("b", "deploy");
  ASSERT_EQ(r.status, 202) << r.raw;
  EXPECT_EQ(Str(r.obj(), "status.phase"), "Waiting");
  EXPECT_EQ(Str(Get("b"), "status.phase"), "Waiting");
  EXPECT_EQ(Str(GetRun("b-1"), "status.phase"), "Queued");

  Resp c = Action("b", "cancel");
  ASSERT_EQ(c.status, 202) << c.raw;
  EXPECT_EQ(Str(c.obj(), "status.phase"), "NotDeployed");
  EXPECT_EQ(Str(c.obj(), "status.reason"), "Canceled");
  EXPECT_EQ(Str(c.obj(), "status.message"), "deploy run b-1 was canceled before it started");
  EXPECT_EQ(Str(Get("b"), "status.phase"), "NotDeployed");
  json::object run = GetRun("b-1");
  EXPECT_EQ(Str(run, "status.phase"), "Canceled");
  EXPECT_EQ(Str(run, "status.reason"), "Canceled");
  EXPECT_EQ(Str(run, "status.message"), "canceled before it started; nothing ran");

  // Free the worker; a later deploy of b runs (runs are claimed oldest first, so had b-1
  // been left in the queue it would have run before b-2).
  Unhold();
  ASSERT_EQ(Action("b", "deploy").status, 202);
  json::object ok = WaitPhase("b", "Success");
  EXPECT_EQ(Str(ok, "status.lastRunRef.name"), "b-2");
  EXPECT_FALSE(Exists("started-b-1"));
  EXPECT_TRUE(Exists("started-b-2"));
  EXPECT_EQ(Str(GetRun("b-1"), "status.phase"), "Canceled");
}

TEST_F(QueuedLifecycleTest, DestroyOfAWaitingRunCancelsIt) {
  Create("b");
  ASSERT_EQ(Action("b", "deploy").status, 202);
  Resp d = Action("b", "destroy");
  ASSERT_EQ(d.status, 202) << d.raw;
  EXPECT_EQ(Str(d.obj(), "status.phase"), "NotDeployed");
  EXPECT_EQ(Str(d.obj(), "status.reason"), "Canceled");
  EXPECT_EQ(Str(GetRun("b-1"), "status.phase"), "Canceled");
  EXPECT_EQ(RunsOf("b").size(), 1u);  // no destroy run: nothing was deployed
  Unhold();
  ASSERT_EQ(Action("b", "deploy").status, 202);
  WaitPhase("b", "Success");
  EXPECT_FALSE(Exists("started-b-1"));
}

TEST_F(QueuedLifecycleTest, WaitingRefusesDeployUpgradeDeleteButAllowsUpdate) {
  Create("b");
  ASSERT_EQ(Action("b", "deploy").status, 202);
  ExpectRefused(Action("b", "deploy"), 409, "InstanceWaiting",
                "instance b is Waiting (deploy run b-1); it is already queued to deploy "
                "(cancel the queued run first)");
  ExpectRefused(Action("b", "upgrade"), 409, "InstanceWaiting",
                "instance b is Waiting (deploy run b-1); it cannot be upgraded until the run "
                "ends");
  ExpectRefused(api().Delete(NsPath("default", "computeinstances", "b")), 409, "InstanceWaiting",
                "instance b is Waiting (deploy run b-1); cancel the queued run before deleting "
                "it");
  EXPECT_EQ(RunsOf("b").size(), 1u);
  // Update is allowed in any phase but InProgress.
  Resp u = Patch("b", {{"spec", {{"description", "while waiting"}}}});
  ASSERT_EQ(u.status, 200) << u.raw;
  EXPECT_EQ(Str(u.obj(), "status.phase"), "Waiting");
  EXPECT_EQ(Int(u.obj(), "metadata.generation"), 2);
  Unhold();
  json::object ok = WaitPhase("b", "Success");
  EXPECT_EQ(Str(ok, "status.lastRunRef.name"), "b-1");
}

}  // namespace
}  // namespace gantry::testing
