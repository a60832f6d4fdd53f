// The usage ledger through the real Engine on a real SqliteStore, a host-bound FakeDriver
// with configured GPUs (h100:4) and a FakeClock: intervals open with the claim that assigns
// GPUs, close with the finish that releases them, and a crash or a failover closes a dead
// deploy's interval at its last heartbeat exactly once. Nothing sleeps to let time pass: the
// tests wait for a condition in the store, bounded by a deadline only a failure reaches.
#include "engine/usage_ledger.h"

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <thread>

#include "common/fake_clock.h"
#include "drivers/fake/fake_driver.h"
#include "engine/engine.h"
#include "engine/store_test_fixture.h"
#include "gtest/gtest.h"
#include "model/codec.h"
#include "store/sqlite/sqlite_store.h"

namespace gantry::engine {
namespace {

namespace json = boost::json;
using drivers::fake::FakeDriver;
using drivers::fake::Script;
using model::GetString;
using std::chrono::seconds;

constexpr auto kDeadline = std::chrono::seconds(20);

class UsageLedgerTest : public StoreFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore());
    auto box = SecretBox::Open(dir_ + "/key");
    ASSERT_TRUE(box.ok()) << box.status();
    secrets_ = std::move(*box);
    auto fake = std::make_unique<FakeDriver>(
        "fake", drivers::Capabilities{.host_bound = true, .stop_start = true});
    fake_ = fake.get();
    registry_.Register(std::move(fake));
    logs_ = std::make_unique<RunLogs>(dir_ + "/logs");
    auto inventory = ParseGpuFlag("h100:4");
    ASSERT_TRUE(inventory.ok()) << inventory.status();
    gpus_ = std::make_unique<GpuAllocator>(*inventory);
    CreateVersioned("EnvironmentTemplate", "t", json::object{{"driver", "fake"}});
    CreateVersioned(
        "ComputeProfile", "two",
        json::object{
            {"templateRef", json::object{{"name", "t"}}},
            {"resources", json::object{{"gpu", json::object{{"type", "h100"}, {"count", 2}}},
                                       {"cpu", 8},
                                       {"memoryGiB", 64}}}});
  }

  void TearDown() override {
    for (auto& e : engines_) e->Stop();
    engines_.clear();
    CloseStore();
  }

  Engine& StartEngine(bool sole_owner = true, const std::string& holder = "replica-1") {
    EngineOptions o;
    o.holder = holder;
    o.host = "host-1";
    o.sole_owner = sole_owner;
    o.state_dir = dir_ + "/state";
    o.drain = std::chrono::seconds(5);
    engines_.push_back(std::make_unique<Engine>(*store_, registry_, *secrets_, *logs_, clock_,
                                                metrics_, *gpus_, o));
    EXPECT_TRUE(engines_.back()->Start().ok());
    return *engines_.back();
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

  void CreateInstance(const std::string& name) {
    json::object o{
        {"apiVersion", "paas.gantry.dev/v1"},
        {"kind", "ComputeInstance"},
        {"metadata",
         json::object{
             {"name", name}, {"namespace", "p"}, {"uid", name + "-uid"}, {"generation", 1}}},
        {"spec", json::object{{"profileRef", json::object{{"name", "two"}}}}},
        {"status", json::object{{"phase", "NotDeployed"},
                                {"createdBy", "alice"},
                                {"profileRevision", 1},
                                {"templateRevision", 1}}}};
    Commit({store::Write::Op::kCreate, "ComputeInstance", o, 0, 0});
  }

  std::vector<usage::Interval> Intervals() {
    auto listed = usage::ListIntervals(*store_, "p");
    EXPECT_TRUE(listed.ok()) << listed.status();
    auto out = listed.ok() ? *listed : std::vector<usage::Interval>{};
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
    return out;
  }

  void WaitPhase(const std::string& name, const std::string& phase) {
    auto until = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < until) {
      auto i = store_->Get("ComputeInstance", "p", name);
      if (i.ok() && GetString(*i, "status.phase") == phase) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ADD_FAILURE() << name << " never reached " << phase;
  }

  // A deploy run of `name` left Running by a dead replica whose last heartbeat was at
  // `renewed`, with the interval its claim opened at `claimed`.
  void LeaveRunning(const std::string& name, std::chrono::system_clock::time_point claimed,
                    std::chrono::system_clock::time_point renewed) {
    CreateInstance(name);
    {
      EngineOptions o;
      Engine queuer(*store_, registry_, *secrets_, *logs_, clock_, metrics_, *gpus_, o);
      ASSERT_TRUE(queuer.Deploy("ComputeInstance", "p", name).ok());
    }
    auto stored = store_->Get("Run", "p", name + "-1");
    ASSERT_TRUE(stored.ok());
    json::object run = *stored;
    json::object& rs = run["status"].as_object();
    rs["phase"] = "Running";
    rs["attempt"] = 1;
    rs["startTime"] = FormatRfc3339(claimed);
    rs["lease"] = json::object{{"holder", "dead"},
                               {"host", "host-1"},
                               {"renewTime", FormatRfc3339(renewed)},
                               {"durationSeconds", 30}};
    int64_t rv = std::stoll(GetString(run, "metadata.resourceVersion"));
    auto decoded = model::DecodeRun(Commit({store::Write::Op::kUpdate, "Run", run, rv, 0}));
    ASSERT_TRUE(decoded.ok());
    auto instance = store_->Get("ComputeInstance", "p", name);
    ASSERT_TRUE(instance.ok());
    auto inst = model::DecodeInstance(*instance);
    ASSERT_TRUE(inst.ok());
    inst->kind = "ComputeInstance";
    auto open = usage::OpenWrite(*store_, *decoded, *inst, "h100", 2,
                                 json::object{{"cpu", 8}, {"memoryGiB", 64}}, claimed);
    ASSERT_TRUE(open.ok() && open->has_value());
    Commit(**open);
  }

  std::unique_ptr<SecretBox> secrets_;
  drivers::DriverRegistry registry_;
  FakeDriver* fake_ = nullptr;
  std::unique_ptr<RunLogs> logs_;
  FakeClock clock_;
  Metrics metrics_;
  std::unique_ptr<GpuAllocator> gpus_;
  std::vector<std::unique_ptr<Engine>> engines_;
};

TEST_F(UsageLedgerTest, OpensWithTheClaimAndClosesWithTheStop) {
  CreateInstance("a");
  Engine& engine = StartEngine();
  const auto deployed = clock_.Now();
  ASSERT_TRUE(engine.Deploy("ComputeInstance", "p", "a").ok());
  WaitPhase("a", "Success");
  auto open = Intervals();
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].name, "a-1-1");
  EXPECT_EQ(open[0].instance_uid, "a-uid");
  EXPECT_EQ(open[0].user, "alice");
  EXPECT_EQ(open[0].profile_name, "two");
  EXPECT_EQ(open[0].gpu_type, "h100");
  EXPECT_EQ(open[0].gpus, 2);
  EXPECT_EQ(open[0].cpu, 8);
  EXPECT_EQ(open[0].memory_gib, 64);
  EXPECT_EQ(open[0].start, deployed);
  EXPECT_FALSE(open[0].end);
  clock_.Advance(seconds(100));
  ASSERT_TRUE(engine.Stop("ComputeInstance", "p", "a").ok());
  WaitPhase("a", "Stopped");
  auto closed = Intervals();
  ASSERT_EQ(closed.size(), 1u);
  ASSERT_TRUE(closed[0].end);
  EXPECT_EQ(*closed[0].end - closed[0].start, seconds(100));
  // A start opens the next interval; a destroy closes it.
  ASSERT_TRUE(engine.Start("ComputeInstance", "p", "a").ok());
  WaitPhase("a", "Success");
  clock_.Advance(seconds(30));
  ASSERT_TRUE(engine.Destroy("ComputeInstance", "p", "a").ok());
  WaitPhase("a", "NotDeployed");
  auto both = Intervals();
  ASSERT_EQ(both.size(), 2u);
  ASSERT_TRUE(both[1].end);
  EXPECT_EQ(*both[1].end - both[1].start, seconds(30));
}

// An open interval written by a gantryd before the instance-uid label (which an instance's
// open intervals are found by): the engine's start labels it, so the next claim keeps it
// rather than opening a second one, and the stop closes it.
TEST_F(UsageLedgerTest, AnOpenIntervalWrittenWithoutTheLabelIsLabelledAtStartAndStillCloses) {
  CreateInstance("a");
  usage::Interval old;
  old.project = "p";
  old.name = "old-1";
  old.instance_kind = "ComputeInstance";
  old.instance_name = "a";
  old.instance_uid = "a-uid";
  old.user = "alice";
  old.profile_ns = "p";
  old.profile_name = "two";
  old.gpu_type = "h100";
  old.gpus = 2;
  old.run = "old";
  old.start = clock_.Now();
  json::object unlabelled = usage::EncodeInterval(old);
  unlabelled["metadata"].as_object().erase("labels");
  Commit({store::Write::Op::kCreate, usage::kUsageIntervalKind, unlabelled, 0, 0});

  Engine& engine = StartEngine();
  auto stored = store_->Get(usage::kUsageIntervalKind, "p", "old-1");
  ASSERT_TRUE(stored.ok()) << stored.status();
  const json::value* labels = model::FindPath(*stored, "metadata.labels");
  ASSERT_TRUE(labels && labels->is_object());
  const json::value* uid = labels->as_object().if_contains(usage::kInstanceUidLabel);
  ASSERT_TRUE(uid && uid->is_string()) << "not labelled at start";
  EXPECT_EQ(uid->as_string(), "a-uid");

  ASSERT_TRUE(engine.Deploy("ComputeInstance", "p", "a").ok());
  WaitPhase("a", "Success");
  auto open = Intervals();
  ASSERT_EQ(open.size(), 1u) << "the claim opened a second interval";
  EXPECT_EQ(open[0].name, "old-1");
  EXPECT_FALSE(open[0].end);
  clock_.Advance(seconds(60));
  ASSERT_TRUE(engine.Stop("ComputeInstance", "p", "a").ok());
  WaitPhase("a", "Stopped");
  auto closed = Intervals();
  ASSERT_EQ(closed.size(), 1u);
  ASSERT_TRUE(closed[0].end);
  EXPECT_EQ(*closed[0].end - closed[0].start, seconds(60));
}

TEST_F(UsageLedgerTest, AFailedDeployClosesItsInterval) {
  CreateInstance("a");
  fake_->SetScript("a", "apply", Script::Fail(absl::UnavailableError("down")));
  Engine& engine = StartEngine();
  ASSERT_TRUE(engine.Deploy("ComputeInstance", "p", "a").ok());
  WaitPhase("a", "Failed");
  auto got = Intervals();
  ASSERT_EQ(got.size(), 1u);
  ASSERT_TRUE(got[0].end);
  EXPECT_EQ(*got[0].end, got[0].start);
}

TEST_F(UsageLedgerTest, ACrashClosesAtTheLastHeartbeatAndTheReRunOpensAgain) {
  const auto claimed = clock_.Now();
  LeaveRunning("a", claimed, claimed + seconds(20));
  clock_.Advance(seconds(3600));  // gantryd was down for an hour: not counted
  StartEngine();
  WaitPhase("a", "Success");
  auto got = Intervals();
  ASSERT_EQ(got.size(), 2u);
  ASSERT_TRUE(got[0].end);
  EXPECT_EQ(*got[0].end - got[0].start, seconds(20));
  EXPECT_EQ(got[1].name, "a-1-2");
  EXPECT_EQ(got[1].start, clock_.Now());
  EXPECT_FALSE(got[1].end);
}

TEST_F(UsageLedgerTest, AFailoverClosesTheDeadReplicasIntervalOnce) {
  const auto claimed = clock_.Now();
  LeaveRunning("a", claimed, claimed + seconds(10));
  clock_.Advance(seconds(300));  // the lease expired long ago
  StartEngine(/*sole_owner=*/false, "replica-2");
  StartEngine(/*sole_owner=*/false, "replica-3");
  WaitPhase("a", "Success");
  auto got = Intervals();
  ASSERT_EQ(got.size(), 2u);
  ASSERT_TRUE(got[0].end);
  EXPECT_EQ(*got[0].end - got[0].start, seconds(10));
  EXPECT_FALSE(got[1].end);
  EXPECT_EQ(got[1].start, clock_.Now());
}

}  // namespace
}  // namespace gantry::engine
