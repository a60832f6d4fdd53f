// Stop and start (API.md "Lifecycle of an instance", issue 17 item 1) against a real gantryd
// running real exec scripts: the rows for stop and start with the status they leave, every
// refusal with its 409 reason, the exec driver with and without spec.exec.actions, services
// on a compute instance that stops (Waiting, ComputeNotReady) and starts again, and a restart
// of gantryd while an instance is Stopped. The local driver's stop/start is in
// tests/local/stop_start_test.cc, Slurm's in tests/slurm.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "engine_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;

class StopStartTest : public EngineTest {
 protected:
  // One worker: a blocked run keeps the next one Waiting.
  int Workers() override { return 1; }

  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    // "nb": the standard script, which knows stop and start; "plain": it lists none.
    CreateExecTemplate("nb-tmpl", json::array{StandardScript()},
                       json::object{{"actions", json::array{"apply", "destroy", "stop", "start"}}});
    api().CreateProfile("default", "nb", "nb-tmpl");
    CreateStandardProfile("plain", "plain-tmpl");
  }

  json::object DeployToSuccess(const std::string& name, const std::string& profile = "nb") {
    api().CreateInstance("default", name, profile);
    Resp r = Action(name, "deploy");
    EXPECT_EQ(r.status, 202) << r.raw;
    return WaitPhase(name, "Success");
  }
};

TEST_F(StopStartTest, StopKeepsTheRecordAndStartRunsItAgain) {
  json::object deployed = DeployToSuccess("web");
  Resp r = Action("web", "stop");
  ASSERT_EQ(r.status, 202) << r.raw;
  EXPECT_EQ(Str(r.obj(), "status.phase"), "Waiting");
  EXPECT_EQ(Str(r.obj(), "status.action"), "stop");
  EXPECT_EQ(Str(r.obj(), "status.message"), "stop run web-2 is queued");
  json::object stopped = WaitPhase("web", "Stopped");
  EXPECT_EQ(Str(stopped, "status.reason"), "StoppedByUser");
  EXPECT_EQ(Str(stopped, "status.message"), "stopped by run web-2 (StoppedByUser)");
  EXPECT_EQ(Str(stopped, "status.outputs.action"), "apply");  // the deploy's outputs stay
  EXPECT_EQ(Str(stopped, "status.startedAt"), Str(deployed, "status.startedAt"));
  EXPECT_EQ(Str(Condition(stopped, "Deployed"), "reason"), "Stopped");
  EXPECT_EQ(Str(Condition(stopped, "Deployed"), "status"), "False");
  EXPECT_EQ(Str(GetRun("web-2"), "spec.reason"), "StoppedByUser");
  EXPECT_NE(ReadFile(Path("env-web-2")).find("GANTRY_ACTION=stop\n"), std::string::npos);

  r = Action("web", "start");
  ASSERT_EQ(r.status, 202) << r.raw;
  EXPECT_EQ(Str(r.obj(), "status.action"), "start");
  json::object started = WaitPhase("web", "Success");
  EXPECT_EQ(Str(started, "status.message"), "started by run web-3");
  EXPECT_EQ(Str(started, "status.outputs.action"), "start");
  EXPECT_FALSE(Str(started, "status.startedAt").empty());
  EXPECT_NE(ReadFile(Path("env-web-3")).find("GANTRY_ACTION=start\n"), std::string::npos);
}

TEST_F(StopStartTest, EveryRefusedRowIs409AndChangesNothing) {
  api().CreateInstance("default", "web", "nb");
  ExpectRefused(Action("web", "stop"), 409, "NotRunning",
                "instance web is Not Deployed; nothing is running to stop");
  ExpectRefused(Action("web", "start"), 409, "NotStopped",
                "instance web is Not Deployed; only a Stopped instance can be started");
  // In Progress (a deploy held by its script), and Waiting behind it (one worker).
  std::string run = DeployBlocked("web");
  ExpectRefused(Action("web", "stop"), 409, "InstanceInProgress",
                "instance web is In Progress (deploy run web-1); it cannot be stopped until the "
                "run ends");
  api().CreateInstance("default", "queued", "nb");
  ASSERT_EQ(Action("queued", "deploy").status, 202);
  ExpectRefused(Action("queued", "stop"), 409, "NotRunning",
                "instance queued is Waiting (deploy run queued-1); nothing is running to stop");
  std::filesystem::remove(Path("block-web"));  // the stop below runs straight through
  Touch("release-" + run);
  WaitPhase("web", "Success");
  WaitPhase("queued", "Success");
  ExpectRefused(Action("web", "start"), 409, "NotStopped",
                "instance web is Success; only a Stopped instance can be started");
  ASSERT_EQ(Action("web", "stop").status, 202);
  json::object stopped = WaitPhase("web", "Stopped");
  ExpectRefused(Action("web", "stop"), 409, "NotRunning",
                "instance web is Stopped; nothing is running to stop");
  ExpectRefused(Action("web", "deploy"), 409, "InstanceStopped",
                "instance web is Stopped; start it (gantry start, POST .../start) to run it "
                "again, or destroy it first to deploy it afresh");
  EXPECT_EQ(Str(Get("web"), "metadata.resourceVersion"), Str(stopped, "metadata.resourceVersion"));
  // A stopped instance may be destroyed.
  ASSERT_EQ(Action("web", "destroy").status, 202);
  WaitPhase("web", "NotDeployed");
}

TEST_F(StopStartTest, ExecWithoutStopAndStartInActionsRefusesTheStop) {
  json::object deployed = DeployToSuccess("web", "plain");
  ExpectRefused(Action("web", "stop"), 409, "StopNotSupported",
                "compute instance web cannot be stopped: its template's spec.exec.actions does "
                "not list both stop and start (the program is called only with the actions it "
                "lists)");
  json::object after = Get("web");
  EXPECT_EQ(Str(after, "status.phase"), "Success");
  EXPECT_EQ(Str(after, "metadata.resourceVersion"), Str(deployed, "metadata.resourceVersion"));
  EXPECT_EQ(RunsOf("web").size(), 1u);
}

TEST_F(StopStartTest, ExecActionsOutsideTheFourAre422) {
  Resp r = api().Post(
      NsPath("default", "environmenttemplates"),
      json::object{
          {"metadata", json::object{{"name", "bad"}}},
          {"spec",
           json::object{{"displayName", "Bad"},
                        {"driver", "exec"},
                        {"exec", json::object{{"command", json::array{"/bin/true"}},
                                              {"actions", json::array{"apply", "pause"}}}}}}});
  EXPECT_TRUE(r.IsStatus(422, "Invalid")) << r.raw;
  EXPECT_EQ(r.cause_fields(), std::vector<std::string>{"spec.exec.actions[1]"}) << r.raw;
  EXPECT_EQ(r.cause_message("spec.exec.actions[1]"),
            "Unsupported value: \"pause\": supported values: \"apply\", \"destroy\", \"stop\", "
            "\"start\"");
}

TEST_F(StopStartTest, AStoppedInstanceStaysStoppedAcrossARestartAndStartsAfter) {
  DeployToSuccess("web");
  ASSERT_EQ(Action("web", "stop").status, 202);
  WaitPhase("web", "Stopped");
  ASSERT_TRUE(gantryd_->Restart().ok());
  Reconnect();
  json::object after = Get("web");
  EXPECT_EQ(Str(after, "status.phase"), "Stopped");
  EXPECT_EQ(Str(after, "status.reason"), "StoppedByUser");
  ASSERT_EQ(Action("web", "start").status, 202);
  WaitPhase("web", "Success");
}

// Authorised as deploy is: a project member may stop and start, a viewer may not; both are
// in the audit log with their verb. An accepted action's record is committed with the
// instance and the run it queues (docs/performance.md): the record's resourceVersion is the
// answered instance's plus two.
TEST_F(StopStartTest, MembersMayStopAndStartViewersMayNot) {
  DeployToSuccess("web");
  std::map<std::string, std::unique_ptr<Api>> as;
  for (const char* role : {"member", "viewer"}) {
    api().MustCreate(ClusterPath("users"),
                     json::object{{"metadata", json::object{{"name", role}}},
                                  {"spec", json::object{{"displayName", role},
                                                        {"password", "password-of-a-user"}}}});
    api().MustCreate(NsPath("default", "rolebindings"),
                     json::object{{"metadata", json::object{{"name", role}}},
                                  {"spec", json::object{{"user", role}, {"role", role}}}});
    Resp t = api().Post(ClusterPath("users", role) + "/tokens", json::object{});
    ASSERT_EQ(t.status, 201) << t.raw;
    as[role] =
        std::make_unique<Api>(gantryd_->base_url(), std::string(t.obj().at("token").as_string()));
  }
  const std::string path = NsPath("default", "computeinstances", "web");
  Resp r = as["viewer"]->Post(path + "/stop", json::object{});
  EXPECT_TRUE(r.IsStatus(403, "Forbidden")) << r.raw;
  std::set<std::string> want;  // verb, code, name and resourceVersion of each record
  auto expect_record = [&](const Resp& answer, const std::string& verb) {
    const int64_t rv = std::stoll(Str(answer.obj(), "metadata.resourceVersion"));
    want.insert(verb + " 202 Allowed web " + std::to_string(rv + 2));
  };
  r = as["member"]->Post(path + "/stop", json::object{});
  ASSERT_EQ(r.status, 202) << r.raw;
  expect_record(r, "stop");
  WaitPhase("web", "Stopped");
  r = as["viewer"]->Post(path + "/start", json::object{});
  EXPECT_TRUE(r.IsStatus(403, "Forbidden")) << r.raw;
  r = as["member"]->Post(path + "/start", json::object{});
  ASSERT_EQ(r.status, 202) << r.raw;
  expect_record(r, "start");
  WaitPhase("web", "Success");
  Resp audit = api().Get(ClusterPath("auditevents"));
  ASSERT_EQ(audit.status, 200) << audit.raw;
  std::set<std::string> records;
  for (const auto& e : audit.obj().at("items").as_array()) {
    const json::object& o = e.as_object();
    if (Str(o, "user") != "member") continue;
    records.insert(Str(o, "verb") + " " + std::to_string(Int(o, "code")) + " " + Str(o, "result") +
                   " " + Str(o, "objectRef.name") + " " + Str(o, "metadata.resourceVersion"));
  }
  EXPECT_EQ(records, want);
}

// Services on a compute instance that stops: a service whose driver can stop is stopped
// first, then waits (ComputeNotReady) and starts again with the compute instance; one whose
// driver cannot is redeployed once the compute instance is back.
class StopStartServicesTest : public StopStartTest {
 protected:
  int Workers() override { return 4; }
  void SetUp() override {
    StopStartTest::SetUp();
    if (HasFatalFailure()) return;
    for (auto [profile, tmpl] : {std::pair{"stoppable", "nb-tmpl"}, {"fixed", "plain-tmpl"}})
      api().MustCreate(
          NsPath("default", "serviceprofiles"),
          json::object{{"metadata", json::object{{"name", profile}}},
                       {"spec", json::object{{"displayName", profile},
                                             {"serviceType", "notebook"},
                                             {"templateRef", json::object{{"name", tmpl}}}}}});
  }
  void DeployService(const std::string& name, const std::string& profile) {
    api().MustCreate(NsPath("default", "serviceinstances"),
                     json::object{{"metadata", json::object{{"name", name}}},
                                  {"spec", json::object{{"profileRef", {{"name", profile}}},
                                                        {"computeRef", {{"name", "gpu"}}}}}});
    ASSERT_EQ(
        api().Post(NsPath("default", "serviceinstances", name) + "/deploy", json::object{}).status,
        202);
    WaitService(name, "Success");
  }
  // Polls service `name` until it is in `phase` (with `message_part` in its message).
  json::object WaitService(const std::string& name, const std::string& phase,
                           const std::string& reason = "", const std::string& message_part = "") {
    json::object last;
    bool ok = PollUntil([&] {
      Resp r = api().Get(NsPath("default", "serviceinstances", name));
      last = r.status == 200 ? r.obj() : json::object{};
      return Str(last, "status.phase") == phase &&
             (reason.empty() || Str(last, "status.reason") == reason) &&
             Str(last, "status.message").find(message_part) != std::string::npos;
    });
    EXPECT_TRUE(ok) << name << " never got " << phase << " " << reason << " " << message_part
                    << "; last " << json::serialize(last);
    return last;
  }
};

TEST_F(StopStartServicesTest, ServicesWaitWhileTheComputeIsStoppedAndComeBack) {
  DeployToSuccess("gpu");
  DeployService("jup", "stoppable");
  DeployService("tb", "fixed");
  ASSERT_EQ(Action("gpu", "stop").status, 202);
  WaitPhase("gpu", "Stopped");
  // jup was stopped (before the compute instance) and now waits to start again.
  json::object jup = WaitService("jup", "Waiting", "ComputeNotReady", "it is Stopped");
  EXPECT_EQ(Str(jup, "status.action"), "start");
  EXPECT_EQ(Str(GetRun("jup-s2"), "spec.action"), "stop");
  EXPECT_EQ(Str(GetRun("jup-s2"), "spec.reason"), "ComputeStopped");
  EXPECT_EQ(Str(GetRun("jup-s2"), "status.phase"), "Succeeded");
  EXPECT_NE(ReadFile(Path("env-jup-s2")).find("GANTRY_ACTION=stop\n"), std::string::npos);
  EXPECT_EQ(Str(jup, "status.message"),
            "waiting for compute instance gpu to be Success (it is Stopped: StoppedByUser); the "
            "service deploys as soon as it is");
  EXPECT_EQ(Str(Condition(jup, "ComputeReady"), "status"), "False");
  // tb's driver cannot stop: a deploy waits for the compute instance.
  json::object tb = WaitService("tb", "Waiting", "ComputeNotReady", "it is Stopped");
  EXPECT_EQ(Str(tb, "status.action"), "deploy");

  ASSERT_EQ(Action("gpu", "start").status, 202);
  WaitPhase("gpu", "Success");
  jup = WaitService("jup", "Success");
  EXPECT_EQ(Str(jup, "status.message"), "started by run jup-s3");
  EXPECT_EQ(Str(Condition(jup, "ComputeReady"), "status"), "True");
  EXPECT_NE(ReadFile(Path("env-jup-s3")).find("GANTRY_ACTION=start\n"), std::string::npos);
  tb = WaitService("tb", "Success");
  EXPECT_EQ(Str(tb, "status.message"), "deployed by run tb-s2");
}

TEST_F(StopStartServicesTest, AServiceStopsAndStartsByItself) {
  DeployToSuccess("gpu");
  DeployService("jup", "stoppable");
  Resp r = api().Post(NsPath("default", "serviceinstances", "jup") + "/stop", json::object{});
  ASSERT_EQ(r.status, 202) << r.raw;
  WaitService("jup", "Stopped", "StoppedByUser");
  EXPECT_EQ(Str(Get("gpu"), "status.phase"), "Success");  // its compute instance runs on
  r = api().Post(NsPath("default", "serviceinstances", "tb") + "/stop", json::object{});
  EXPECT_EQ(r.status, 404) << r.raw;
  r = api().Post(NsPath("default", "serviceinstances", "jup") + "/start", json::object{});
  ASSERT_EQ(r.status, 202) << r.raw;
  WaitService("jup", "Success");
}

}  // namespace
}  // namespace gantry::testing
