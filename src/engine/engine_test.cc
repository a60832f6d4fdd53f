// Engine unit tests: the real Engine on a real SqliteStore in a temporary directory, with a
// FakeDriver (drivers/fake) and a FakeClock. Nothing sleeps to let time pass: the tests wait
// for a condition in the store (or for the fake driver to be called), bounded by a deadline
// that only a failure reaches.
#include "engine/engine.h"

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/fake_clock.h"
#include "drivers/fake/fake_driver.h"
#include "gtest/gtest.h"
#include "model/codec.h"
#include "store/sqlite/sqlite_store.h"

namespace gantry::engine {
namespace {

namespace json = boost::json;
using drivers::fake::FakeDriver;
using drivers::fake::Script;
using model::GetString;

constexpr auto kDeadline = std::chrono::seconds(20);

class EngineUnitTest : public ::testing::Test {
 protected:
  // GPUs of this host (--gpus form) and whether the fake driver is host-bound.
  virtual std::string GpuFlag() { return ""; }
  virtual drivers::Capabilities Caps() { return {}; }

  void SetUp() override {
    std::string tmpl = (std::filesystem::path(::testing::TempDir()) / "gantry-engine-XXXXXX");
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    ASSERT_NE(mkdtemp(buf.data()), nullptr);
    dir_ = buf.data();
    store::SqliteOptions options;
    options.path = dir_ + "/gantry.db";
    options.synchronous = "NORMAL";
    auto s = store::SqliteStore::Open(options);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    auto box = SecretBox::Open(dir_ + "/key");
    ASSERT_TRUE(box.ok()) << box.status();
    secrets_ = std::move(*box);
    auto fake = std::make_unique<FakeDriver>("fake", Caps());
    fake_ = fake.get();
    registry_.Register(std::move(fake));
    logs_ = std::make_unique<RunLogs>(dir_ + "/logs");
    Inventory inventory;
    if (!GpuFlag().empty()) {
      auto parsed = ParseGpuFlag(GpuFlag());
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      inventory = *parsed;
    }
    gpus_ = std::make_unique<GpuAllocator>(inventory);
    CreateTemplateAndProfile("std", 0, "");
  }

  void TearDown() override {
    if (engine_) engine_->Stop();
    engine_.reset();
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void StartEngine(int workers = 2) {
    EngineOptions o;
    o.workers = workers;
    o.holder = "replica-1";
    o.host = "host-1";
    o.state_dir = dir_ + "/state";
    o.drain = std::chrono::seconds(5);
    engine_ = std::make_unique<Engine>(*store_, registry_, *secrets_, *logs_, clock_, metrics_,
                                       *gpus_, o);
    ASSERT_TRUE(engine_->Start().ok());
  }

  json::object Commit(store::Write w) {
    std::vector<store::Write> writes;
    writes.push_back(std::move(w));
    auto stored = store_->Commit(std::move(writes));
    EXPECT_TRUE(stored.ok()) << stored.status();
    return stored.ok() && !stored->empty() ? stored->front() : json::object{};
  }

  void CreateVersioned(const std::string& kind, const std::string& name, json::object spec) {
    json::object o{{"apiVersion", "paas.gantry.dev/v1"},
                   {"kind", kind},
                   {"metadata", json::object{{"name", name}, {"namespace", "p"}, {"uid", name}}},
                   {"spec", spec},
                   {"status", json::object{{"revision", 1}}}};
    Commit({store::Write::Op::kCreate, kind, o, 0, 0});
    Commit({store::Write::Op::kPutRevision, kind, o, 0, 1});
  }

  // Profile `name` on a template of the fake driver, asking for `gpus` GPUs of `type`.
  void CreateTemplateAndProfile(const std::string& name, int gpus, const std::string& type) {
    CreateVersioned("EnvironmentTemplate", name + "-tmpl",
                    json::object{{"driver", "fake"}, {"fake", json::object{}}});
    json::object resources;
    if (gpus > 0) resources["gpu"] = json::object{{"type", type}, {"count", gpus}};
    CreateVersioned("ComputeProfile", name,
                    json::object{{"templateRef", json::object{{"name", name + "-tmpl"}}},
                                 {"resources", resources}});
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

  json::object Instance(const std::string& name) {
    auto i = store_->Get("ComputeInstance", "p", name);
    return i.ok() ? *i : json::object{};
  }
  json::object Run(const std::string& name) {
    auto r = store_->Get("Run", "p", name);
    return r.ok() ? *r : json::object{};
  }

  // Polls until `pred` holds for the instance; fails the test at the deadline.
  json::object WaitInstance(const std::string& name,
                            const std::function<bool(const json::object&)>& pred,
                            const std::string& what) {
    auto until = std::chrono::steady_clock::now() + kDeadline;
    json::object last;
    while (std::chrono::steady_clock::now() < until) {
      last = Instance(name);
      if (pred(last)) return last;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ADD_FAILURE() << "instance " << name << " never got " << what << "; last "
                  << json::serialize(last);
    return last;
  }
  json::object WaitPhase(const std::string& name, const std::string& phase) {
    return WaitInstance(
        name, [&](const json::object& i) { return GetString(i, "status.phase") == phase; },
        "phase " + phase);
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

  std::string dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<SecretBox> secrets_;
  drivers::DriverRegistry registry_;
  FakeDriver* fake_ = nullptr;
  std::unique_ptr<RunLogs> logs_;
  FakeClock clock_;
  Metrics metrics_;
  std::unique_ptr<GpuAllocator> gpus_;
  std::unique_ptr<Engine> engine_;
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
  drivers::Capabilities Caps() override { return {.host_bound = true}; }
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

TEST_F(EngineUnitTest, ProjectQuotaOfDeployedInstances) {
  json::object project{{"apiVersion", "paas.gantry.dev/v1"},
                       {"kind", "Project"},
                       {"metadata", json::object{{"name", "p"}, {"uid", "p"}}},
                       {"spec", json::object{{"quota", json::object{{"instances", 1}}}}}};
  Commit({store::Write::Op::kCreate, "Project", project, 0, 0});
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
  json::object project{{"apiVersion", "paas.gantry.dev/v1"},
                       {"kind", "Project"},
                       {"metadata", json::object{{"name", "p"}, {"uid", "p"}}},
                       {"spec", json::object{{"quota", json::object{{"instances", 1}}}}}};
  Commit({store::Write::Op::kCreate, "Project", project, 0, 0});
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

}  // namespace
}  // namespace gantry::engine
