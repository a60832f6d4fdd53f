// Engine unit tests: the real Engine on a real SqliteStore in a temporary directory, with a
// FakeDriver (drivers/fake) and a FakeClock. Nothing sleeps to let time pass: the tests wait
// for a condition in the store (or for the fake driver to be called), bounded by a deadline
// that only a failure reaches.
#include "engine/engine.h"

#include <atomic>
#include <memory>
#include <set>
#include <string>

#include "common/errors.h"
#include "engine/engine_internal.h"
#include "engine/engine_test_fixture.h"
#include "store/store_wrapper.h"

namespace gantry::engine {
namespace {

namespace json = boost::json;
using drivers::fake::FakeDriver;
using drivers::fake::Script;
using model::GetString;

// The shared fixture (engine_test_fixture.h) with profile "std" (no GPUs) on the fake driver.
class EngineUnitTest : public EngineFixture {
 protected:
  void SetUp() override {
    EngineFixture::SetUp();
    if (HasFatalFailure()) return;
    CreateTemplateAndProfile("std", 0, "");
  }

  // Profile `name` on a template of the fake driver (spec.fake = `config`), asking for
  // `gpus` GPUs of `type`, with spec.lifecycle = `lifecycle` when not empty.
  void CreateTemplateAndProfile(const std::string& name, int gpus, const std::string& type,
                                json::object config = {}, json::object lifecycle = {}) {
    CreateVersioned("EnvironmentTemplate", name + "-tmpl",
                    json::object{{"driver", "fake"}, {"fake", std::move(config)}});
    json::object resources;
    if (gpus > 0) resources["gpu"] = json::object{{"type", type}, {"count", gpus}};
    json::object spec{{"templateRef", json::object{{"name", name + "-tmpl"}}},
                      {"resources", resources}};
    if (!lifecycle.empty()) spec["lifecycle"] = std::move(lifecycle);
    CreateVersioned("ComputeProfile", name, std::move(spec));
  }

  // Project p with spec.quota.instances 1.
  void CreateProjectAllowingOneInstance() {
    json::object project{{"apiVersion", "paas.gantry.dev/v1"},
                         {"kind", "Project"},
                         {"metadata", json::object{{"name", "p"}, {"uid", "p"}}},
                         {"spec", json::object{{"quota", json::object{{"instances", 1}}}}}};
    Commit({store::Write::Op::kCreate, "Project", project, 0, 0});
  }

  void CreateInstance(const std::string& name, const std::string& profile = "std") {
    json::object o{
        {"apiVersion", "paas.gantry.dev/v1"},
        {"kind", "ComputeInstance"},
        {"metadata",
         json::object{
             {"name", name}, {"namespace", "p"}, {"uid", name + "-uid"}, {"generation", 1}}},
        {"spec", json::object{{"profileRef", json::object{{"name", profile}}}}},
        {"status",
         json::object{{"phase", "NotDeployed"}, {"profileRevision", 1}, {"templateRevision", 1}}}};
    Commit({store::Write::Op::kCreate, "ComputeInstance", o, 0, 0});
  }

  json::object Run(const std::string& name) {
    auto r = store_->Get("Run", "p", name);
    return r.ok() ? *r : json::object{};
  }

  json::object WaitReason(const std::string& name, const std::string& reason) {
    return WaitInstance(
        name, [&](const json::object& i) { return GetString(i, "status.reason") == reason; },
        "reason " + reason);
  }

  void MustDeploy(const std::string& name) {
    auto r = engine_->Deploy("ComputeInstance", "p", name);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  void MustDestroy(const std::string& name) {
    auto r = engine_->Destroy("ComputeInstance", "p", name);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  void MustStop(const std::string& name) {
    auto r = engine_->Stop("ComputeInstance", "p", name);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  void MustStart(const std::string& name) {
    auto r = engine_->Start("ComputeInstance", "p", name);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  // The 409 reason of a refused action.
  static std::string ConflictReason(const absl::StatusOr<json::object>& r) {
    EXPECT_FALSE(r.ok());
    if (r.ok()) return "<allowed>";
    EXPECT_EQ(HttpCodeOf(r.status()), 409) << r.status();
    return ReasonOf(r.status());
  }
};

TEST_F(EngineUnitTest, DeploySucceedsWithTheDriversOutputs) {
  CreateInstance("gpu-1");
  fake_->SetScript("gpu-1", "apply", Script::Succeed({{"endpoint", "http://gpu-1:8080"}}));
  StartEngine();
  MustDeploy("gpu-1");
  json::object i = WaitPhase("gpu-1", "Success");
  EXPECT_EQ(GetString(i, "status.outputs.endpoint"), "http://gpu-1:8080");
  EXPECT_EQ(GetString(i, "status.message"), "deployed by run gpu-1-1");
  EXPECT_EQ(model::GetInt(i, "status.deployedGeneration"), 1);
  const json::value* conds = model::FindPath(i, "status.conditions");
  ASSERT_TRUE(conds && conds->is_array());
  EXPECT_EQ(GetString(conds->as_array()[0].as_object(), "reason"), "RunSucceeded");
  json::object run = Run("gpu-1-1");
  EXPECT_EQ(GetString(run, "status.phase"), "Succeeded");
  EXPECT_EQ(GetString(run, "status.message"), "deploy succeeded");
  EXPECT_FALSE(model::FindPath(run, "status.lease"));
  auto calls = fake_->Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].action, "apply");
  EXPECT_EQ(calls[0].run_name, "gpu-1-1");
  EXPECT_EQ(calls[0].attempt, 1);
  EXPECT_EQ(calls[0].request.state_dir, dir_ + "/state/gpu-1-uid");
}

TEST_F(EngineUnitTest, DriverFailureFailsTheInstanceWithItsReason) {
  CreateInstance("gpu-1");
  fake_->SetScript("gpu-1", "apply", Script::Fail(absl::UnavailableError("cluster down")));
  StartEngine();
  MustDeploy("gpu-1");
  json::object i = WaitPhase("gpu-1", "Failed");
  EXPECT_EQ(GetString(i, "status.reason"), "DriverUnavailable");
  EXPECT_EQ(GetString(i, "status.message"), "deploy run gpu-1-1 failed: cluster down");
  json::object run = Run("gpu-1-1");
  EXPECT_EQ(GetString(run, "status.phase"), "Failed");
  EXPECT_EQ(GetString(run, "status.reason"), "DriverUnavailable");
}

TEST_F(EngineUnitTest, CancelOfARunTheInfrastructureHolds) {
  CreateInstance("gpu-1");
  Script pending = Script::Block();
  pending.waiting_reason = "Pending";
  fake_->SetScript("gpu-1", "apply", pending);
  StartEngine();
  MustDeploy("gpu-1");
  ASSERT_TRUE(fake_->WaitBlocked("gpu-1", kDeadline));
  WaitReason("gpu-1", "Pending");
  auto canceled = engine_->Cancel("ComputeInstance", "p", "gpu-1");
  ASSERT_TRUE(canceled.ok()) << canceled.status();
  json::object i = WaitPhase("gpu-1", "NotDeployed");
  EXPECT_EQ(GetString(i, "status.reason"), "Canceled");
  EXPECT_EQ(GetString(i, "status.message"), "deploy run gpu-1-1 was canceled: canceled");
  EXPECT_EQ(GetString(Run("gpu-1-1"), "status.phase"), "Canceled");
}

TEST_F(EngineUnitTest, CancelOfAQueuedRunBehindABlockedOne) {
  CreateInstance("a");
  CreateInstance("b");
  fake_->SetScript("a", "apply", Script::Block());
  StartEngine(/*workers=*/1);
  MustDeploy("a");
  ASSERT_TRUE(fake_->WaitBlocked("a", kDeadline));
  MustDeploy("b");  // no free worker: it stays queued
  auto canceled = engine_->Cancel("ComputeInstance", "p", "b");
  ASSERT_TRUE(canceled.ok()) << canceled.status();
  json::object b = Instance("b");
  EXPECT_EQ(GetString(b, "status.phase"), "NotDeployed");
  EXPECT_EQ(GetString(b, "status.message"), "deploy run b-1 was canceled before it started");
  EXPECT_EQ(GetString(Run("b-1"), "status.message"), "canceled before it started; nothing ran");
  fake_->Release("a");
  WaitPhase("a", "Success");
  EXPECT_EQ(fake_->Calls().size(), 1u);  // b never ran
}

TEST_F(EngineUnitTest, DestroyThenDeleteDeployed) {
  CreateInstance("gpu-1");
  fake_->SetScript("gpu-1", "apply", Script::Succeed({{"endpoint", "e"}}));
  StartEngine();
  MustDeploy("gpu-1");
  WaitPhase("gpu-1", "Success");
  MustDestroy("gpu-1");
  json::object i = WaitPhase("gpu-1", "NotDeployed");
  EXPECT_EQ(GetString(i, "status.message"), "destroyed by run gpu-1-2");
  EXPECT_FALSE(model::FindPath(i, "status.outputs"));
  EXPECT_EQ(fake_->Calls().back().action, "destroy");
  MustDeploy("gpu-1");
  WaitPhase("gpu-1", "Success");
  bool accepted = false;
  auto deleted = engine_->Delete("ComputeInstance", "p", "gpu-1", false, &accepted);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_TRUE(accepted);
  WaitInstance(
      "gpu-1", [](const json::object& i) { return i.empty(); }, "deleted");
  EXPECT_TRUE(Run("gpu-1-1").empty());  // its runs go with it
}

// A run left Running by a dead gantryd (its lease held by another holder).
class EngineRecoveryTest : public EngineUnitTest {
 protected:
  void LeaveRunning(const std::string& name, int attempt) {
    CreateInstance(name);
    EngineOptions o;
    Engine queuer(*store_, registry_, *secrets_, *logs_, clock_, metrics_, *gpus_, o);
    ASSERT_TRUE(queuer.Deploy("ComputeInstance", "p", name).ok());
    json::object run = Run(name + "-1");
    json::object& rs = run["status"].as_object();
    rs["phase"] = "Running";
    rs["attempt"] = attempt;
    rs["lease"] = json::object{{"holder", "dead"}, {"host", "host-1"}};
    rs["driverState"] = json::object{{"pid", 42}};
    int64_t rv = std::stoll(GetString(run, "metadata.resourceVersion"));
    Commit({store::Write::Op::kUpdate, "Run", run, rv, 0});
  }
};

TEST_F(EngineRecoveryTest, RequeuedWhenTheDriverSaysItIsSafe) {
  LeaveRunning("gpu-1", 1);
  fake_->SetScript("gpu-1", "apply", Script::Succeed({{"endpoint", "again"}}));
  StartEngine();
  json::object i = WaitPhase("gpu-1", "Success");
  EXPECT_EQ(GetString(i, "status.outputs.endpoint"), "again");
  ASSERT_EQ(fake_->RecoverCalls().size(), 1u);
  EXPECT_EQ(fake_->RecoverCalls()[0], (json::object{{"pid", 42}}));
  ASSERT_EQ(fake_->Calls().size(), 1u);
  EXPECT_EQ(fake_->Calls()[0].attempt, 2);
}

TEST_F(EngineRecoveryTest, FailedAfterTheLastAttempt) {
  LeaveRunning("gpu-1", kMaxAttempts);
  StartEngine();
  json::object i = WaitPhase("gpu-1", "Failed");
  EXPECT_EQ(GetString(i, "status.reason"), "ControlPlaneRestarted");
  EXPECT_EQ(GetString(Run("gpu-1-1"), "status.reason"), "ControlPlaneRestarted");
  EXPECT_TRUE(fake_->Calls().empty());
}

TEST_F(EngineRecoveryTest, FailedWhenReRunningIsNotSafe) {
  LeaveRunning("gpu-1", 1);
  fake_->SetRecoverSafe(false);
  StartEngine();
  json::object i = WaitPhase("gpu-1", "Failed");
  EXPECT_EQ(GetString(i, "status.reason"), "ControlPlaneRestarted");
  EXPECT_TRUE(fake_->Calls().empty());
}

// Two h100 and one a100 on this host; the fake driver is host-bound (GPUs are assigned).
class EngineCapacityTest : public EngineUnitTest {
 protected:
  std::string GpuFlag() override { return "h100:2,a100:1"; }
  drivers::Capabilities Caps() override { return {.host_bound = true, .stop_start = true}; }
};

TEST_F(EngineCapacityTest, WaitsForGpusFirstComeFirstServedPerType) {
  CreateTemplateAndProfile("two", 2, "h100");
  CreateTemplateAndProfile("one", 1, "h100");
  CreateTemplateAndProfile("a100", 1, "a100");
  CreateInstance("a", "two");
  CreateInstance("b", "two");
  CreateInstance("c", "one");
  CreateInstance("d", "a100");
  StartEngine(/*workers=*/4);
  MustDeploy("a");
  json::object a = WaitPhase("a", "Success");
  EXPECT_EQ(json::serialize(a.at("status").at("gpus")), R"(["0","1"])");
  MustDeploy("b");
  EXPECT_EQ(GetString(WaitReason("b", "InsufficientCapacity"), "status.message"),
            "needs 2 h100 GPUs; 0 of 2 are free");
  MustDeploy("c");
  json::object c = WaitReason("c", "InsufficientCapacity");
  EXPECT_EQ(GetString(c, "status.message"),
            "needs 1 h100 GPU; queued behind earlier deploys waiting for h100 GPUs");
  MustDeploy("d");  // another type is not held up
  WaitPhase("d", "Success");
  MustDestroy("a");
  json::object b = WaitPhase("b", "Success");
  EXPECT_EQ(json::serialize(b.at("status").at("gpus")), R"(["0","1"])");
  c = WaitInstance(
      "c",
      [](const json::object& i) {
        return GetString(i, "status.message") == "needs 1 h100 GPU; 0 of 2 are free";
      },
      "the capacity message");
  EXPECT_EQ(GetString(c, "status.phase"), "Waiting");
}

// A claim lost to a concurrent change (a 409 of the store; PostgreSQL reports a row another
// transaction holds that way) keeps its place: a later deploy of the same GPU type does not
// take the GPUs in the same pass, and the first one gets them in the next.
TEST_F(EngineCapacityTest, ALostClaimKeepsItsPlaceInTheQueue) {
  CreateTemplateAndProfile("two", 2, "h100");
  CreateInstance("first", "two");
  CreateInstance("second", "two");
  EngineOptions queue_only;
  Engine queuer(*store_, registry_, *secrets_, *logs_, clock_, metrics_, *gpus_, queue_only);
  ASSERT_TRUE(queuer.Deploy("ComputeInstance", "p", "first").ok());
  ASSERT_TRUE(queuer.Deploy("ComputeInstance", "p", "second").ok());
  // The first claim (the commit that opens a usage interval) fails as a conflict.
  store::StoreWrapper wrapped(*store_);
  wrapped.Inject({.call = store::StoreCall::kCommit,
                  .status = absl::AbortedError("the object has been modified"),
                  .kind = "UsageInterval"});
  StartEngine(/*workers=*/2, &wrapped);
  json::object first = WaitPhase("first", "Success");
  EXPECT_EQ(json::serialize(first.at("status").at("gpus")), R"(["0","1"])");
  EXPECT_EQ(GetString(WaitReason("second", "InsufficientCapacity"), "status.phase"), "Waiting");
  auto calls = fake_->Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].run_name, "first-1");
  engine_->Stop();
  engine_.reset();  // before `wrapped` goes
}

// A pass reads the queue a page at a time (8, then 16, 32, 64 runs) and reads on while it
// has claimed less than the workers can take: a destroy queued behind 70 deploys waiting for
// the quota is run, and frees the quota for the first of them.
TEST_F(EngineUnitTest, APassReadsPastAFullPageOfWaitingRuns) {
  CreateProjectAllowingOneInstance();
  CreateInstance("holder");
  StartEngine(/*workers=*/2);
  MustDeploy("holder");
  WaitPhase("holder", "Success");
  for (int k = 0; k < 70; ++k) {
    CreateInstance("w" + std::to_string(k));
    MustDeploy("w" + std::to_string(k));
  }
  WaitReason("w69", "QuotaExceeded");
  MustDestroy("holder");
  WaitPhase("holder", "NotDeployed");
  WaitPhase("w0", "Success");
  EXPECT_EQ(GetString(Instance("w1"), "status.phase"), "Waiting");
}

// A pass's claims go in one commit. When that commit fails, each claim is made again alone:
// a claim whose instance changed since the pass read it still goes (the instance is read
// again), and a run that another replica claimed meanwhile is lost alone.
TEST_F(EngineUnitTest, APassClaimsItsRunsInOneCommitAndALostClaimIsLostAlone) {
  const std::vector<std::string> names = {"a", "b", "c", "d", "e"};
  EngineOptions queue_only;
  Engine queuer(*store_, registry_, *secrets_, *logs_, clock_, metrics_, *gpus_, queue_only);
  for (const auto& name : names) {
    CreateInstance(name);
    ASSERT_TRUE(queuer.Deploy("ComputeInstance", "p", name).ok());
  }
  store::StoreWrapper wrapped(*store_);
  std::atomic<int> batched = 0;  // runs claimed by the first commit that claims several
  wrapped.SetBeforeCommit([&](const std::vector<store::Write>& writes) {
    int runs = 0;
    for (const auto& w : writes)
      runs += w.kind == "Run" && GetString(w.object, "status.phase") == "Running";
    if (runs < 2 || batched.exchange(runs) != 0) return;
    // Between the pass's reads and its commit: a label on c, and another replica claims d.
    json::object c = Instance("c");
    const int64_t rv = std::stoll(GetString(c, "metadata.resourceVersion"));
    c["metadata"].as_object()["labels"] = json::object{{"team", "ml"}};
    Commit({store::Write::Op::kUpdate, "ComputeInstance", std::move(c), rv, 0});
    auto d = model::DecodeRun(Run("d-1"));
    ASSERT_TRUE(d.ok());
    d->phase = model::RunPhase::kRunning;
    d->lease = model::Lease{"replica-2", "host-2", "2026-01-01T00:00:00Z", 30};
    Commit(internal::UpdateOf(*d));
  });
  StartEngine(/*workers=*/5, &wrapped);
  for (const char* name : {"a", "b", "c", "e"}) WaitPhase(name, "Success");
  EXPECT_EQ(batched.load(), 5);
  EXPECT_EQ(GetString(Instance("c"), "metadata.labels.team"), "ml");
  EXPECT_EQ(GetString(Run("d-1"), "status.lease.holder"), "replica-2");
  EXPECT_EQ(GetString(Instance("d"), "status.phase"), "Waiting");
  std::set<std::string> ran;
  for (const auto& call : fake_->Calls()) ran.insert(call.run_name);
  EXPECT_EQ(ran, (std::set<std::string>{"a-1", "b-1", "c-1", "e-1"}));
  engine_->Stop();
  engine_.reset();  // before `wrapped` goes
}

// What a caller adds to an action (the request's audit record, store::AlsoCommit) goes in
// the commit that queues the run; an action refused commits none of it.
TEST_F(EngineUnitTest, AnActionsAlsoWriteIsCommittedWithItsQueuedRun) {
  CreateInstance("a");
  store::StoreWrapper wrapped(*store_);
  std::mutex mu;
  std::vector<std::vector<std::string>> commits;  // the kinds each commit writes
  wrapped.SetBeforeCommit([&](const std::vector<store::Write>& writes) {
    std::vector<std::string> kinds;
    for (const auto& w : writes) kinds.push_back(w.kind);
    std::lock_guard<std::mutex> lock(mu);
    commits.push_back(std::move(kinds));
  });
  EngineOptions queue_only;
  Engine queuer(wrapped, registry_, *secrets_, *logs_, clock_, metrics_, *gpus_, queue_only);
  auto record = [](std::string verb) {
    return store::AlsoCommit{[verb](const json::object& written) {
      json::object meta{{"name", verb + "-" + GetString(written, "metadata.name")},
                        {"namespace", ""}};
      return store::Write{store::Write::Op::kCreate, "AuditEvent",
                          json::object{{"metadata", std::move(meta)}}, 0, 0};
    }};
  };
  store::AlsoCommit deploy = record("deploy");
  ASSERT_TRUE(queuer.Deploy("ComputeInstance", "p", "a", &deploy).ok());
  EXPECT_TRUE(deploy.committed);
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(commits,
              (std::vector<std::vector<std::string>>{{"ComputeInstance", "Run", "AuditEvent"}}));
  }
  EXPECT_TRUE(store_->Get("AuditEvent", "", "deploy-a").ok());
  store::AlsoCommit stop = record("stop");  // refused: a is not deployed yet
  EXPECT_FALSE(queuer.Stop("ComputeInstance", "p", "a", "StoppedByUser", &stop).ok());
  EXPECT_FALSE(stop.committed);
  EXPECT_EQ(store_->Get("AuditEvent", "", "stop-a").status().code(), absl::StatusCode::kNotFound);
}

// A deploy handed the instance as its caller read it (the approval gate) queues from it; one
// changed since is read again, and the change is kept.
TEST_F(EngineUnitTest, ADeployQueuesFromTheInstanceItsCallerReadOrReadsAgainWhenItChanged) {
  CreateInstance("a");
  CreateInstance("b");
  store::StoreWrapper wrapped(*store_);
  std::atomic<int> commits{0};
  wrapped.SetBeforeCommit([&](const std::vector<store::Write>&) { ++commits; });
  EngineOptions queue_only;
  Engine queuer(wrapped, registry_, *secrets_, *logs_, clock_, metrics_, *gpus_, queue_only);

  auto fresh = internal::LoadInstance(*store_, "ComputeInstance", "p", "a");
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  auto queued = queuer.Deploy("ComputeInstance", "p", "a", nullptr, *std::move(fresh));
  ASSERT_TRUE(queued.ok()) << queued.status();
  EXPECT_EQ(GetString(*queued, "status.phase"), "Waiting");
  EXPECT_EQ(commits.load(), 1);

  auto stale = internal::LoadInstance(*store_, "ComputeInstance", "p", "b");
  ASSERT_TRUE(stale.ok()) << stale.status();
  json::object changed = *store_->Get("ComputeInstance", "p", "b");
  model::EnsureObject(model::EnsureObject(changed, "metadata"), "labels")["team"] = "vision";
  ASSERT_TRUE(store_
                  ->Commit({{store::Write::Op::kUpdate, "ComputeInstance", changed,
                             stale->metadata.resource_version, 0}})
                  .ok());
  queued = queuer.Deploy("ComputeInstance", "p", "b", nullptr, *std::move(stale));
  ASSERT_TRUE(queued.ok()) << queued.status();
  EXPECT_EQ(commits.load(), 3);  // the stale try lost, the second won
  EXPECT_EQ(GetString(*queued, "status.phase"), "Waiting");
  EXPECT_EQ(GetString(*queued, "metadata.labels.team"), "vision");
}

TEST_F(EngineUnitTest, ProjectQuotaOfDeployedInstances) {
  CreateProjectAllowingOneInstance();
  CreateInstance("a");
  CreateInstance("b");
  StartEngine();
  MustDeploy("a");
  WaitPhase("a", "Success");
  MustDeploy("b");
  json::object b = WaitReason("b", "QuotaExceeded");
  EXPECT_EQ(GetString(b, "status.message"),
            "project p allows 1 deployed instance and has 1; b waits until one is destroyed");
  MustDestroy("a");
  WaitPhase("b", "Success");
}

TEST_F(EngineUnitTest, QuotaHoldsForDeploysAdmittedInOnePass) {
  CreateProjectAllowingOneInstance();
  CreateInstance("a");
  CreateInstance("b");
  fake_->SetScript("a", "apply", Script::Block());
  EngineOptions o;
  Engine queuer(*store_, registry_, *secrets_, *logs_, clock_, metrics_, *gpus_, o);
  ASSERT_TRUE(queuer.Deploy("ComputeInstance", "p", "a").ok());
  ASSERT_TRUE(queuer.Deploy("ComputeInstance", "p", "b").ok());
  StartEngine();  // the first pass sees both queued
  ASSERT_TRUE(fake_->WaitBlocked("a", kDeadline));
  json::object b = WaitReason("b", "QuotaExceeded");
  EXPECT_EQ(GetString(b, "status.phase"), "Waiting");
  fake_->Release("a");
  WaitPhase("a", "Success");
  EXPECT_EQ(fake_->Calls().size(), 1u);
}

// ------------------------------------------------------------------------------------------
// Stop and start (API.md's rows for them).

TEST_F(EngineUnitTest, StopKeepsOutputsAndStartRunsItAgain) {
  CreateInstance("gpu-1");
  fake_->SetScript("gpu-1", "apply", Script::Succeed({{"endpoint", "e1"}}));
  fake_->SetScript("gpu-1", "start", Script::Succeed({{"endpoint", "e2"}}));
  StartEngine();
  MustDeploy("gpu-1");
  WaitPhase("gpu-1", "Success");
  MustStop("gpu-1");
  json::object i = WaitPhase("gpu-1", "Stopped");
  EXPECT_EQ(GetString(i, "status.reason"), "StoppedByUser");
  EXPECT_EQ(GetString(i, "status.action"), "stop");
  EXPECT_EQ(GetString(i, "status.message"), "stopped by run gpu-1-2 (StoppedByUser)");
  EXPECT_EQ(GetString(i, "status.outputs.endpoint"), "e1");  // kept
  EXPECT_EQ(GetString(Run("gpu-1-2"), "spec.reason"), "StoppedByUser");
  EXPECT_EQ(GetString(Run("gpu-1-2"), "spec.action"), "stop");
  EXPECT_EQ(fake_->Calls().back().action, "stop");
  EXPECT_EQ(fake_->Calls().back().request.state_dir, dir_ + "/state/gpu-1-uid");
  // Stopping again, or deploying a stopped instance: 409, nothing changes.
  EXPECT_EQ(ConflictReason(engine_->Stop("ComputeInstance", "p", "gpu-1")), "NotRunning");
  EXPECT_EQ(ConflictReason(engine_->Deploy("ComputeInstance", "p", "gpu-1")), "InstanceStopped");
  MustStart("gpu-1");
  i = WaitPhase("gpu-1", "Success");
  EXPECT_EQ(GetString(i, "status.message"), "started by run gpu-1-3");
  EXPECT_EQ(GetString(i, "status.outputs.endpoint"), "e2");
  EXPECT_EQ(GetString(i, "status.startedAt"), FormatRfc3339(clock_.Now()));
  EXPECT_EQ(fake_->Calls().back().action, "start");
  EXPECT_EQ(ConflictReason(engine_->Start("ComputeInstance", "p", "gpu-1")), "NotStopped");
}

TEST_F(EngineUnitTest, StopOfWhatDoesNotRunIsRefused) {
  CreateInstance("gpu-1");
  fake_->SetScript("gpu-1", "apply", Script::Block());
  StartEngine();
  EXPECT_EQ(ConflictReason(engine_->Stop("ComputeInstance", "p", "gpu-1")), "NotRunning");
  EXPECT_EQ(ConflictReason(engine_->Start("ComputeInstance", "p", "gpu-1")), "NotStopped");
  MustDeploy("gpu-1");
  ASSERT_TRUE(fake_->WaitBlocked("gpu-1", kDeadline));
  WaitPhase("gpu-1", "InProgress");
  EXPECT_EQ(ConflictReason(engine_->Stop("ComputeInstance", "p", "gpu-1")), "InstanceInProgress");
  fake_->Release("gpu-1");
  WaitPhase("gpu-1", "Success");
}

TEST_F(EngineUnitTest, ADriverThatCannotStopLeavesTheInstanceUnchanged) {
  CreateTemplateAndProfile("nostop", 0, "", json::object{{"canStop", false}});
  CreateInstance("gpu-1", "nostop");
  StartEngine();
  MustDeploy("gpu-1");
  json::object before = WaitPhase("gpu-1", "Success");
  auto r = engine_->Stop("ComputeInstance", "p", "gpu-1");
  EXPECT_EQ(ConflictReason(r), "StopNotSupported");
  EXPECT_EQ(r.status().message(),
            "compute instance gpu-1 cannot be stopped: the fake template says it cannot stop");
  EXPECT_EQ(Instance("gpu-1"), before);  // not even its resourceVersion moved
  EXPECT_TRUE(Run("gpu-1-2").empty());
}

TEST_F(EngineUnitTest, StopFailedIsFailedWithTheDriversMessage) {
  CreateInstance("gpu-1");
  fake_->SetScript("gpu-1", "stop", Script::Fail(absl::InternalError("kill failed")));
  StartEngine();
  MustDeploy("gpu-1");
  WaitPhase("gpu-1", "Success");
  MustStop("gpu-1");
  json::object i = WaitPhase("gpu-1", "Failed");
  EXPECT_EQ(GetString(i, "status.message"), "stop run gpu-1-2 failed: kill failed");
  fake_->SetScript("gpu-1", "stop", Script::Succeed());
  MustStop("gpu-1");  // a failed instance may be stopped again
  WaitPhase("gpu-1", "Stopped");
}

TEST_F(EngineUnitTest, TtlSetsExpiresAtAndAStopErasesIt) {
  CreateTemplateAndProfile("ttl", 0, "", {},
                           json::object{{"ttl", json::object{{"default", "8h"}, {"max", "72h"}}}});
  CreateInstance("gpu-1", "ttl");
  StartEngine();
  MustDeploy("gpu-1");
  json::object i = WaitPhase("gpu-1", "Success");
  EXPECT_EQ(GetString(i, "status.startedAt"), FormatRfc3339(clock_.Now()));
  EXPECT_EQ(GetString(i, "status.expiresAt"), FormatRfc3339(clock_.Now() + std::chrono::hours(8)));
  MustStop("gpu-1");
  i = WaitPhase("gpu-1", "Stopped");
  EXPECT_FALSE(model::FindPath(i, "status.expiresAt"));
  clock_.Advance(std::chrono::hours(1));
  MustStart("gpu-1");
  i = WaitPhase("gpu-1", "Success");
  EXPECT_EQ(GetString(i, "status.expiresAt"), FormatRfc3339(clock_.Now() + std::chrono::hours(8)));
}

TEST_F(EngineUnitTest, StartWaitsOnTheProjectQuota) {
  CreateProjectAllowingOneInstance();
  CreateInstance("a");
  CreateInstance("b");
  StartEngine();
  MustDeploy("a");
  WaitPhase("a", "Success");
  MustStop("a");
  WaitPhase("a", "Stopped");
  MustDeploy("b");  // a stopped instance holds no share of the quota
  WaitPhase("b", "Success");
  MustStart("a");
  json::object a = WaitReason("a", "QuotaExceeded");
  EXPECT_EQ(GetString(a, "status.phase"), "Waiting");
  EXPECT_EQ(GetString(a, "status.action"), "start");
  MustDestroy("b");
  WaitPhase("a", "Success");
}

// A deploy of a higher priority queued behind a full page of deploys waiting for GPUs goes
// first when GPUs free: before a pass decides runs that need GPUs, it reads the rest of the
// queue and puts it in priority order.
TEST_F(EngineCapacityTest, AHigherPriorityDeployAfterTheFirstPageGoesFirst) {
  CreateTemplateAndProfile("two", 2, "h100");
  CreateTemplateAndProfile("one", 1, "h100");
  CreateVersioned(
      "ComputeProfile", "vip",
      json::object{
          {"templateRef", json::object{{"name", "one-tmpl"}}},
          {"resources", json::object{{"gpu", json::object{{"type", "h100"}, {"count", 1}}}}},
          {"scheduling", json::object{{"priority", 10}}}});
  CreateInstance("holder", "two");
  StartEngine(/*workers=*/2);
  MustDeploy("holder");
  WaitPhase("holder", "Success");
  for (int k = 0; k < 70; ++k) {
    CreateInstance("w" + std::to_string(k), "one");
    MustDeploy("w" + std::to_string(k));
  }
  CreateInstance("vip", "vip");
  MustDeploy("vip");
  WaitReason("vip", "InsufficientCapacity");
  MustDestroy("holder");
  WaitPhase("vip", "Success");
  WaitPhase("w0", "Success");  // the second GPU: the oldest of the others
  EXPECT_EQ(GetString(Instance("w1"), "status.phase"), "Waiting");
}

TEST_F(EngineCapacityTest, StopFreesTheGpusAndStartWaitsForCapacity) {
  CreateTemplateAndProfile("two", 2, "h100");
  CreateInstance("a", "two");
  CreateInstance("b", "two");
  StartEngine();
  MustDeploy("a");
  WaitPhase("a", "Success");
  MustStop("a");
  // The allocator lets go of the GPUs just after the commit that says Stopped (executor.cc).
  json::object a = WaitInstance(
      "a",
      [&](const json::object& i) {
        return GetString(i, "status.phase") == "Stopped" && gpus_->Assignments().empty();
      },
      "phase Stopped with its GPUs released");
  EXPECT_FALSE(model::FindPath(a, "status.gpus"));
  MustDeploy("b");  // gets a's GPUs
  json::object b = WaitPhase("b", "Success");
  EXPECT_EQ(json::serialize(b.at("status").at("gpus")), R"(["0","1"])");
  MustStart("a");
  a = WaitReason("a", "InsufficientCapacity");
  EXPECT_EQ(GetString(a, "status.message"), "needs 2 h100 GPUs; 0 of 2 are free");
  MustDestroy("b");
  a = WaitPhase("a", "Success");
  EXPECT_EQ(json::serialize(a.at("status").at("gpus")), R"(["0","1"])");
  EXPECT_EQ(fake_->Calls().back().action, "start");
  EXPECT_EQ(fake_->Calls().back().request.gpu_indices, (std::vector<std::string>{"0", "1"}));
}

TEST_F(EngineRecoveryTest, AStoppedInstanceStaysStoppedAcrossARestartAndStartsAfter) {
  CreateInstance("gpu-1");
  StartEngine();
  MustDeploy("gpu-1");
  WaitPhase("gpu-1", "Success");
  MustStop("gpu-1");
  WaitPhase("gpu-1", "Stopped");
  engine_->Stop();
  engine_.reset();
  StartEngine();
  EXPECT_EQ(GetString(Instance("gpu-1"), "status.phase"), "Stopped");
  MustStart("gpu-1");
  WaitPhase("gpu-1", "Success");
}

TEST_F(EngineRecoveryTest, AStartInterruptedByACrashIsRunAgain) {
  CreateInstance("gpu-1");
  {
    EngineOptions o;
    Engine queuer(*store_, registry_, *secrets_, *logs_, clock_, metrics_, *gpus_, o);
    json::object i = Instance("gpu-1");
    i["status"].as_object()["phase"] = "Stopped";
    int64_t rv = std::stoll(GetString(i, "metadata.resourceVersion"));
    Commit({store::Write::Op::kUpdate, "ComputeInstance", i, rv, 0});
    ASSERT_TRUE(queuer.Start("ComputeInstance", "p", "gpu-1").ok());
  }
  json::object run = Run("gpu-1-1");
  EXPECT_EQ(GetString(run, "spec.action"), "start");
  json::object& rs = run["status"].as_object();
  rs["phase"] = "Running";
  rs["attempt"] = 1;
  rs["lease"] = json::object{{"holder", "dead"}, {"host", "host-1"}};
  int64_t rv = std::stoll(GetString(run, "metadata.resourceVersion"));
  Commit({store::Write::Op::kUpdate, "Run", run, rv, 0});
  StartEngine();
  json::object i = WaitPhase("gpu-1", "Success");
  EXPECT_EQ(GetString(i, "status.message"), "started by run gpu-1-1");
  ASSERT_EQ(fake_->Calls().size(), 1u);
  EXPECT_EQ(fake_->Calls()[0].action, "start");
  EXPECT_EQ(fake_->Calls()[0].attempt, 2);
}

}  // namespace
}  // namespace gantry::engine
