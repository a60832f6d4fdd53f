// Lifecycle controller unit tests: the real LifecycleController and Engine on a real
// SqliteStore, a FakeDriver and a FakeClock. Time passes only by FakeClock::Advance; after
// it a test calls Notify and waits for a pass that began at the new time (WaitForPass), then
// waits for what the pass queued to show in the store. Nothing sleeps to let time pass.
#include "engine/lifecycle_controller.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "engine/approvals.h"
#include "engine/engine_test_fixture.h"

namespace gantry::engine {
namespace {

namespace json = boost::json;
using drivers::fake::FakeDriver;
using model::GetString;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// The shared fixture (engine_test_fixture.h) on this host's 2 H100s, an audit log and the
// controllers a test starts.
class LifecycleControllerTest : public EngineFixture {
 protected:
  std::string GpuFlag() override { return "h100:2"; }
  drivers::Capabilities Caps() override {
    drivers::Capabilities c;
    c.stop_start = true;
    c.gpu_metrics = true;
    return c;
  }

  void SetUp() override {
    EngineFixture::SetUp();
    if (HasFatalFailure()) return;
    audit_ = std::make_unique<auth::AuditLog>(*store_, clock_, metrics_);
    CreateVersioned("EnvironmentTemplate", "tmpl",
                    json::object{{"driver", "fake"}, {"fake", json::object{}}});
  }

  void TearDown() override {
    if (store_) store_->SetCommitObserver(nullptr);
    controllers_.clear();
    approvals_.reset();
    if (engine_) engine_->Stop();
    engine_.reset();
    audit_.reset();
    EngineFixture::TearDown();
  }

  // A controller (several stand for replicas on one store); its first pass is at once.
  // `approvals`: the gates it fires expiries of and sends a schedule's start through.
  LifecycleController& StartController(Approvals* approvals = nullptr) {
    LifecycleControllerOptions o;
    o.min_pass_interval = std::chrono::milliseconds(0);
    controllers_.push_back(std::make_unique<LifecycleController>(*store_, *engine_, registry_,
                                                                 *audit_, clock_, metrics_, o));
    controllers_.back()->SetApprovals(approvals);
    controllers_.back()->Start();
    return *controllers_.back();
  }

  // Lets every controller look at the instances as they are now.
  void Pass() {
    auto now = clock_.Now();
    for (auto& c : controllers_) {
      c->Notify();
      ASSERT_TRUE(c->WaitForPass(now, kDeadline));
    }
  }
  void AdvanceAndPass(std::chrono::seconds d) {
    clock_.Advance(d);
    Pass();
  }

  // Profile "std" on the fake driver's template with spec.lifecycle `lifecycle`, asking for
  // `gpus` of this host's 2 H100s.
  void CreateProfile(json::object lifecycle, int gpus = 0) {
    json::object resources;
    if (gpus > 0) resources["gpu"] = json::object{{"type", "h100"}, {"count", gpus}};
    CreateVersioned("ComputeProfile", "std",
                    json::object{{"templateRef", json::object{{"name", "tmpl"}}},
                                 {"resources", std::move(resources)},
                                 {"lifecycle", std::move(lifecycle)}});
  }

  void CreateInstance(const std::string& name, json::object lifecycle = {}) {
    json::object spec{{"profileRef", json::object{{"name", "std"}}}};
    if (!lifecycle.empty()) spec["lifecycle"] = std::move(lifecycle);
    json::object o{
        {"apiVersion", "paas.gantry.dev/v1"},
        {"kind", "ComputeInstance"},
        {"metadata", json::object{{"name", name},
                                  {"namespace", "p"},
                                  {"uid", name + "-uid"},
                                  {"generation", 1},
                                  {"creationTimestamp", FormatRfc3339(clock_.Now())}}},
        {"spec", std::move(spec)},
        {"status",
         json::object{{"phase", "NotDeployed"}, {"profileRevision", 1}, {"templateRevision", 1}}}};
    Commit({store::Write::Op::kCreate, "ComputeInstance", o, 0, 0});
  }

  // Sets status fields of the stored instance (as the engine, the sampler or the API would).
  void SetStatus(const std::string& name, const json::object& fields) {
    json::object i = Instance(name);
    for (const auto& [k, v] : fields) model::EnsureObject(i, "status")[k] = v;
    Commit({store::Write::Op::kUpdate, "ComputeInstance", i, 0, 0});
  }

  // Deploys `name` and waits for Success; status.startedAt is now.
  void DeployRunning(const std::string& name) {
    auto r = engine_->Deploy("ComputeInstance", "p", name);
    ASSERT_TRUE(r.ok()) << r.status();
    WaitPhase(name, "Success");
    SetStatus(name, {{"startedAt", FormatRfc3339(clock_.Now())}});
  }

  // Runs of `name` with spec.action `action`.
  int RunsOf(const std::string& name, const std::string& action) {
    store::ListOptions q;
    q.kind = "Run";
    q.ns = "p";
    auto runs = store_->List(q);
    EXPECT_TRUE(runs.ok());
    int n = 0;
    for (const auto& r : runs->items)
      if (GetString(r, "spec.instanceRef.name") == name && GetString(r, "spec.action") == action)
        ++n;
    return n;
  }

  std::vector<json::object> Audit() {
    store::ListOptions q;
    q.kind = auth::kAuditEvent;
    auto list = store_->List(q);
    EXPECT_TRUE(list.ok());
    std::vector<json::object> out;
    for (const auto& e : list->items)
      if (GetString(e, "user") == kLifecycleUser) out.push_back(e);
    return out;
  }

  // gantry_lifecycle_instances_examined_total{pass=`pass`} ("all" or "touched"); 0 before any.
  double Examined(const std::string& pass) {
    std::string text = metrics_.Render();
    std::string key = "gantry_lifecycle_instances_examined_total{pass=\"" + pass + "\"} ";
    size_t at = text.find(key);
    return at == std::string::npos ? 0 : std::strtod(text.c_str() + at + key.size(), nullptr);
  }

  // Polls until at least `n` instances were read by passes over the touched.
  void WaitExaminedTouched(double n) {
    auto until = std::chrono::steady_clock::now() + kDeadline;
    while (Examined("touched") < n && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_GE(Examined("touched"), n) << metrics_.Render();
  }

  std::vector<json::object> Events(const std::string& name) {
    auto e = controllers_.front()->StoredEvents("p", "ComputeInstance", name);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *e : std::vector<json::object>{};
  }

  std::unique_ptr<auth::AuditLog> audit_;
  std::unique_ptr<Approvals> approvals_;  // outlives the controllers that use it
  std::vector<std::unique_ptr<LifecycleController>> controllers_;
};

json::object Ttl8h() {
  return json::object{{"ttl", json::object{{"default", "8h"}, {"max", "72h"}, {"action", "Stop"}}}};
}

std::string IsoIn(const FakeClock& clock, std::chrono::seconds d) {
  return FormatRfc3339(clock.Now() + d);
}

TEST_F(LifecycleControllerTest, TtlFiresOnceAtExpiryAndNotBefore) {
  CreateProfile(Ttl8h());
  CreateInstance("nb");
  StartEngine();
  DeployRunning("nb");
  SetStatus("nb", {{"expiresAt", IsoIn(clock_, hours(8))}});
  StartController();
  AdvanceAndPass(hours(8) - seconds(1));
  EXPECT_EQ(GetString(Instance("nb"), "status.phase"), "Success");
  EXPECT_EQ(RunsOf("nb", "stop"), 0);

  AdvanceAndPass(seconds(1));
  json::object i = WaitPhase("nb", "Stopped");
  EXPECT_EQ(GetString(i, "status.reason"), "TTLExpired");
  AdvanceAndPass(minutes(5));
  EXPECT_EQ(RunsOf("nb", "stop"), 1);
  auto audit = Audit();
  ASSERT_EQ(audit.size(), 1u);
  EXPECT_EQ(GetString(audit[0], "verb"), "stop");
  EXPECT_EQ(GetString(audit[0], "objectRef.name"), "nb");
  EXPECT_EQ(GetString(audit[0], "message"), "TTLExpired: ttl 8h expired");
  EXPECT_NE(metrics_.Render().find(
                R"(gantry_lifecycle_actions_total{action="stop",reason="TTLExpired"} 1)"),
            std::string::npos)
      << metrics_.Render();
}

// A commit that touches one instance costs a pass over that one, not over every running
// instance; the deadline that pass saw still fires on time, without another commit, by the
// pass over all it brought forward (docs/lifecycle-controller.md "The loop").
TEST_F(LifecycleControllerTest, ACommitIsLookedAtAloneAndTheDeadlineItSetStillFires) {
  CreateProfile(Ttl8h());
  for (const char* name : {"a", "b", "c"}) CreateInstance(name);
  StartEngine();
  for (const char* name : {"a", "b", "c"}) {
    DeployRunning(name);
    SetStatus(name, {{"expiresAt", IsoIn(clock_, hours(8))}});
  }
  LifecycleController& controller = StartController();
  Pass();
  const double over_all = Examined("all");
  EXPECT_GE(over_all, 3);
  EXPECT_EQ(Examined("touched"), 0);
  store_->SetCommitObserver(
      [&controller](const std::vector<store::Event>& e) { controller.OnCommit(e); });

  // b's ttl cut to 30 s, sooner than the pass over all the last one planned (kRescan).
  SetStatus("b", {{"expiresAt", IsoIn(clock_, seconds(30))}});
  WaitExaminedTouched(1);
  EXPECT_EQ(Examined("touched"), 1);
  EXPECT_EQ(Examined("all"), over_all);

  clock_.Advance(seconds(30));  // no Notify: the loop wakes for b's deadline by itself
  EXPECT_EQ(GetString(WaitPhase("b", "Stopped"), "status.reason"), "TTLExpired");
  ASSERT_TRUE(controller.WaitForPass(clock_.Now(), kDeadline));  // the pass that fired it
  EXPECT_GT(Examined("all"), over_all);
  EXPECT_EQ(GetString(Instance("a"), "status.phase"), "Success");
  EXPECT_EQ(GetString(Instance("c"), "status.phase"), "Success");
  auto events = Events("b");
  ASSERT_EQ(events.size(), 1u);  // its warning
  EXPECT_EQ(GetString(events[0], "reason"), "ExpiresSoon");
}

TEST_F(LifecycleControllerTest, ReclaimedGpuSecondsAccrueWhileStoppedByAPolicy) {
  CreateProfile(Ttl8h(), /*gpus=*/2);
  CreateInstance("nb");
  StartEngine();
  DeployRunning("nb");
  SetStatus("nb", {{"expiresAt", IsoIn(clock_, hours(8))}});
  StartController();
  AdvanceAndPass(hours(8));
  WaitPhase("nb", "Stopped");
  Pass();  // the stop's end counts from here
  AdvanceAndPass(hours(1));
  EXPECT_NE(metrics_.Render().find("gantry_gpu_seconds_reclaimed_total 7200"), std::string::npos)
      << metrics_.Render();
  // Started again by a person: no more accrues.
  ASSERT_TRUE(engine_->Start("ComputeInstance", "p", "nb").ok());
  WaitPhase("nb", "Success");
  AdvanceAndPass(hours(1));
  EXPECT_NE(metrics_.Render().find("gantry_gpu_seconds_reclaimed_total 7200"), std::string::npos)
      << metrics_.Render();
}

TEST_F(LifecycleControllerTest, RaisingExpiresAtPostponesTheStop) {
  CreateProfile(Ttl8h());
  CreateInstance("nb");
  StartEngine();
  DeployRunning("nb");
  SetStatus("nb", {{"expiresAt", IsoIn(clock_, hours(8))}});
  StartController();
  AdvanceAndPass(hours(7));
  SetStatus("nb", {{"expiresAt", IsoIn(clock_, hours(3))}});  // extended by 2h
  AdvanceAndPass(hours(2));
  EXPECT_EQ(GetString(Instance("nb"), "status.phase"), "Success");
  EXPECT_EQ(RunsOf("nb", "stop"), 0);
  AdvanceAndPass(hours(1));
  EXPECT_EQ(GetString(WaitPhase("nb", "Stopped"), "status.reason"), "TTLExpired");
}

TEST_F(LifecycleControllerTest, TtlDestroyDestroys) {
  CreateProfile(json::object{{"ttl", json::object{{"default", "1h"}, {"action", "Destroy"}}}});
  CreateInstance("nb");
  StartEngine();
  DeployRunning("nb");
  SetStatus("nb", {{"expiresAt", IsoIn(clock_, hours(1))}});
  StartController();
  AdvanceAndPass(hours(1));
  EXPECT_EQ(GetString(WaitPhase("nb", "NotDeployed"), "status.reason"), "TTLExpired");
  EXPECT_EQ(RunsOf("nb", "destroy"), 1);
  ASSERT_EQ(Audit().size(), 1u);
  EXPECT_EQ(GetString(Audit()[0], "verb"), "destroy");
}

TEST_F(LifecycleControllerTest, IdleFiresAfterIdleSincePlusAfter) {
  CreateProfile(json::object{
      {"idle", json::object{{"gpuUtilizationBelow", 5}, {"after", "30m"}, {"action", "Stop"}}}});
  CreateInstance("nb");
  StartEngine();
  DeployRunning("nb");
  StartController();
  AdvanceAndPass(minutes(10));
  SetStatus("nb", {{"gpuUtilization", 0}, {"idleSince", FormatRfc3339(clock_.Now())}});
  AdvanceAndPass(minutes(29));
  EXPECT_EQ(GetString(Instance("nb"), "status.phase"), "Success");
  AdvanceAndPass(minutes(1));
  json::object i = WaitPhase("nb", "Stopped");
  EXPECT_EQ(GetString(i, "status.reason"), "Idle");
  // The IdleSoon warnings went out 10 min before (a 30m countdown has no 1 h warning).
  auto events = Events("nb");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(GetString(events[0], "reason"), "IdleSoon");
}

TEST_F(LifecycleControllerTest, WarningsGoOutOnceEachAcrossReplicas) {
  CreateProfile(Ttl8h());
  CreateInstance("nb");
  StartEngine();
  DeployRunning("nb");
  auto deadline = clock_.Now() + hours(8);
  SetStatus("nb", {{"expiresAt", FormatRfc3339(deadline)}});
  StartController();
  StartController();  // a second replica
  AdvanceAndPass(hours(7));
  AdvanceAndPass(seconds(30));
  auto events = Events("nb");
  ASSERT_EQ(events.size(), 1u);
  auto epoch = std::chrono::duration_cast<seconds>(deadline.time_since_epoch()).count();
  EXPECT_EQ(GetString(events[0], "metadata.name"),
            "nb.ExpiresSoon." + std::to_string(epoch) + ".3600");
  EXPECT_EQ(GetString(events[0], "type"), "Warning");
  EXPECT_EQ(GetString(events[0], "involvedObject.uid"), "nb-uid");
  EXPECT_EQ(GetString(events[0], "message"),
            "the instance will be stopped at " + FormatRfc3339(deadline) + " (in 1h): ttl 8h");
  AdvanceAndPass(minutes(50));
  EXPECT_EQ(Events("nb").size(), 2u);
  AdvanceAndPass(minutes(1));
  EXPECT_EQ(Events("nb").size(), 2u);
}

TEST_F(LifecycleControllerTest, ADeadlinePassedUnwarnedIsWarnedBeforeTheStop) {
  CreateProfile(Ttl8h());
  CreateInstance("nb");
  StartEngine();
  DeployRunning("nb");
  auto deadline = clock_.Now() + hours(8);
  SetStatus("nb", {{"expiresAt", FormatRfc3339(deadline)}});
  StartController();
  AdvanceAndPass(hours(9));  // no pass at either warning moment
  WaitPhase("nb", "Stopped");
  auto events = Events("nb");
  ASSERT_EQ(events.size(), 1u);
  auto epoch = std::chrono::duration_cast<seconds>(deadline.time_since_epoch()).count();
  EXPECT_EQ(GetString(events[0], "metadata.name"),
            "nb.ExpiresSoon." + std::to_string(epoch) + ".600");
  EXPECT_EQ(GetString(events[0], "message"), "the instance will be stopped at " +
                                                 FormatRfc3339(deadline) +
                                                 " (now: the earlier notice was missed): ttl 8h");
  AdvanceAndPass(minutes(1));
  EXPECT_EQ(Events("nb").size(), 1u);
}

TEST_F(LifecycleControllerTest, OldLifecycleEventsArePruned) {
  CreateProfile(Ttl8h());
  CreateInstance("nb");
  StartEngine();
  DeployRunning("nb");
  SetStatus("nb", {{"expiresAt", IsoIn(clock_, hours(8))}});
  StartController();
  AdvanceAndPass(hours(7));
  ASSERT_EQ(Events("nb").size(), 1u);
  AdvanceAndPass(hours(1));
  WaitPhase("nb", "Stopped");
  AdvanceAndPass(hours(24 * 7));  // 7 days and 1 hour after the warning
  EXPECT_TRUE(Events("nb").empty());
}

TEST_F(LifecycleControllerTest, TwoReplicasFireOnce) {
  CreateProfile(Ttl8h());
  CreateInstance("nb");
  StartEngine();
  DeployRunning("nb");
  SetStatus("nb", {{"expiresAt", IsoIn(clock_, hours(8))}});
  StartController();
  StartController();
  AdvanceAndPass(hours(9));
  WaitPhase("nb", "Stopped");
  AdvanceAndPass(minutes(1));
  EXPECT_EQ(RunsOf("nb", "stop"), 1);
  EXPECT_EQ(Audit().size(), 1u);
}

TEST_F(LifecycleControllerTest, RestartAfterAMissedDeadlineFiresOnce) {
  CreateProfile(Ttl8h());
  CreateInstance("nb");
  StartEngine();
  DeployRunning("nb");
  SetStatus("nb", {{"expiresAt", IsoIn(clock_, hours(8))}});
  StartController();
  AdvanceAndPass(hours(1));
  controllers_.clear();  // gantryd is down...
  clock_.Advance(hours(10));
  StartController();  // ... and back after the deadline
  Pass();
  EXPECT_EQ(GetString(WaitPhase("nb", "Stopped"), "status.reason"), "TTLExpired");
  controllers_.clear();
  StartController();  // another restart: nothing left to fire
  AdvanceAndPass(minutes(1));
  EXPECT_EQ(RunsOf("nb", "stop"), 1);
  EXPECT_EQ(Audit().size(), 1u);
}

TEST_F(LifecycleControllerTest, ScheduleStopsAndStartsAcrossADay) {
  // The fake clock starts at 2026-01-01T00:00:00Z.
  CreateProfile(json::object{
      {"schedule",
       json::object{{"timezone", "UTC"}, {"start", "0 8 * * *"}, {"stop", "0 20 * * *"}}}});
  CreateInstance("nb");
  StartEngine();
  DeployRunning("nb");
  StartController();
  AdvanceAndPass(hours(19) + minutes(55));
  EXPECT_EQ(GetString(Instance("nb"), "status.phase"), "Success");
  auto events = Events("nb");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(GetString(events[0], "reason"), "StopScheduled");
  AdvanceAndPass(minutes(5));  // 20:00
  EXPECT_EQ(GetString(WaitPhase("nb", "Stopped"), "status.reason"), "Scheduled");
  AdvanceAndPass(hours(11) + minutes(59));  // 07:59 the next day
  EXPECT_EQ(GetString(Instance("nb"), "status.phase"), "Stopped");
  AdvanceAndPass(minutes(1));  // 08:00
  WaitPhase("nb", "Success");
  EXPECT_EQ(RunsOf("nb", "start"), 1);
  AdvanceAndPass(hours(11));  // 19:00: started at 08:00, so the stop is at 20:00
  EXPECT_EQ(GetString(Instance("nb"), "status.phase"), "Success");
  AdvanceAndPass(hours(1));
  WaitPhase("nb", "Stopped");
  EXPECT_EQ(RunsOf("nb", "stop"), 2);
  EXPECT_EQ(Audit().size(), 3u);
}

TEST_F(LifecycleControllerTest, ScheduleStartsOnlyWhatAScheduleStopped) {
  CreateProfile(json::object{
      {"schedule",
       json::object{{"timezone", "UTC"}, {"start", "0 8 * * *"}, {"stop", "0 20 * * *"}}}});
  CreateInstance("nb");
  StartEngine();
  DeployRunning("nb");
  StartController();
  auto stopped = engine_->Stop("ComputeInstance", "p", "nb");  // a person's stop
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(GetString(WaitPhase("nb", "Stopped"), "status.reason"), "StoppedByUser");
  AdvanceAndPass(hours(9));  // 09:00, after the start time
  AdvanceAndPass(hours(24));
  EXPECT_EQ(GetString(Instance("nb"), "status.phase"), "Stopped");
  EXPECT_EQ(RunsOf("nb", "start"), 0);
}

// Issue 20: a schedule's start of an instance whose profile needs approval asks for it
// (requested by system:lifecycle) instead of starting; an approval starts it. A rejection
// leaves it Stopped with reason Rejected, and since a schedule starts only what a schedule
// stopped, the next morning asks nothing.
TEST_F(LifecycleControllerTest, AScheduledStartOfAGatedProfileWaitsForApproval) {
  CreateVersioned("ComputeProfile", "std",
                  json::object{{"templateRef", json::object{{"name", "tmpl"}}},
                               {"approval", json::object{{"required", true}}},
                               {"lifecycle",
                                json::object{{"schedule", json::object{{"timezone", "UTC"},
                                                                       {"start", "0 8 * * *"},
                                                                       {"stop", "0 20 * * *"}}}}}});
  CreateInstance("nb");
  StartEngine();
  approvals_ = std::make_unique<Approvals>(*store_, *engine_, *audit_, clock_, metrics_);
  Approvals& approvals = *approvals_;
  DeployRunning("nb");  // the engine's own deploy: not gated (the API gates a person's)
  StartController(&approvals);
  AdvanceAndPass(hours(20));  // 20:00
  EXPECT_EQ(GetString(WaitPhase("nb", "Stopped"), "status.reason"), "Scheduled");
  AdvanceAndPass(hours(12));  // 08:00 the next day: the start asks
  json::object waiting = Instance("nb");
  EXPECT_EQ(GetString(waiting, "status.phase"), "Waiting");
  EXPECT_EQ(GetString(waiting, "status.reason"), "PendingApproval");
  EXPECT_EQ(GetString(waiting, "status.approval.action"), "start");
  EXPECT_EQ(GetString(waiting, "status.approval.requestedBy"), kLifecycleUser);
  EXPECT_EQ(RunsOf("nb", "start"), 0);
  const std::string asked =
      "Scheduled: schedule start \"0 8 * * *\" (UTC) fell due; the start waits for approval";
  auto audit = Audit();
  EXPECT_TRUE(std::any_of(audit.begin(), audit.end(),
                          [&](const json::object& e) { return GetString(e, "message") == asked; }));
  AdvanceAndPass(minutes(10));  // nothing asks twice
  EXPECT_EQ(GetString(Instance("nb"), "status.approval.requestedAt"),
            GetString(waiting, "status.approval.requestedAt"));

  auth::Subject olga{"olga", auth::Role::kOrgAdmin, {}};
  auto approved = approvals.Approve(olga, "p", "nb", "");
  ASSERT_TRUE(approved.ok()) << approved.status();
  EXPECT_EQ(GetString(WaitPhase("nb", "Success"), "status.approval.decidedBy"), "olga");
  EXPECT_EQ(RunsOf("nb", "start"), 1);

  AdvanceAndPass(hours(12));  // 20:10: stopped again, and at 08:00 asks again
  WaitPhase("nb", "Stopped");
  AdvanceAndPass(hours(12));
  EXPECT_EQ(GetString(Instance("nb"), "status.reason"), "PendingApproval");
  auto rejected = approvals.Reject(olga, "p", "nb", "not today");
  ASSERT_TRUE(rejected.ok()) << rejected.status();
  EXPECT_EQ(GetString(Instance("nb"), "status.phase"), "Stopped");
  EXPECT_EQ(GetString(Instance("nb"), "status.reason"), "Rejected");
  AdvanceAndPass(hours(24));
  EXPECT_EQ(GetString(Instance("nb"), "status.phase"), "Stopped");
  EXPECT_EQ(GetString(Instance("nb"), "status.approval.state"), "Rejected");
  EXPECT_EQ(RunsOf("nb", "start"), 1);
}

TEST_F(LifecycleControllerTest, ScheduleOptOutIsRespectedWhereAllowed) {
  CreateProfile(json::object{
      {"schedule",
       json::object{{"timezone", "UTC"}, {"stop", "0 20 * * *"}, {"allowOptOut", true}}}});
  CreateInstance("nb", json::object{{"scheduleOptOut", true}});
  CreateInstance("other");
  StartEngine();
  DeployRunning("nb");
  DeployRunning("other");
  StartController();
  AdvanceAndPass(hours(21));
  WaitPhase("other", "Stopped");
  EXPECT_EQ(GetString(Instance("nb"), "status.phase"), "Success");
  EXPECT_EQ(RunsOf("nb", "stop"), 0);
}

class CannotStopTest : public LifecycleControllerTest {
 protected:
  drivers::Capabilities Caps() override { return {}; }  // no stop, no GPU metrics
};

json::object ConditionOf(const json::object& instance, const std::string& type) {
  const json::value* conds = model::FindPath(instance, "status.conditions");
  if (conds && conds->is_array())
    for (const auto& c : conds->as_array())
      if (c.is_object() && GetString(c.as_object(), "type") == type) return c.as_object();
  return {};
}

TEST_F(CannotStopTest, TheInstanceStaysWithTheReasonAndRetriesBackOff) {
  CreateProfile(Ttl8h());
  CreateInstance("nb");
  StartEngine();
  DeployRunning("nb");
  SetStatus("nb", {{"expiresAt", IsoIn(clock_, hours(8))}});
  StartController();
  AdvanceAndPass(hours(8));
  json::object i = WaitInstance(
      "nb", [](const json::object& o) { return !ConditionOf(o, "LifecyclePolicy").empty(); },
      "condition LifecyclePolicy");
  EXPECT_EQ(GetString(i, "status.phase"), "Success");
  json::object c = ConditionOf(i, "LifecyclePolicy");
  EXPECT_EQ(GetString(c, "status"), "False");
  EXPECT_EQ(GetString(c, "reason"), "ActionRefused");
  EXPECT_NE(GetString(c, "message").find("ttl 8h expired, but the instance cannot be stopped: "),
            std::string::npos)
      << GetString(c, "message");
  std::string rv = GetString(i, "metadata.resourceVersion");
  // Passes within the backoff try nothing and write nothing.
  for (int k = 0; k < 5; ++k) AdvanceAndPass(seconds(5));
  EXPECT_EQ(GetString(Instance("nb"), "metadata.resourceVersion"), rv);
  EXPECT_EQ(RunsOf("nb", "stop"), 0);
  EXPECT_TRUE(Audit().empty());
}

TEST_F(CannotStopTest, AnIdlePolicyWithoutGpuMetricsSaysSo) {
  CreateProfile(json::object{{"idle", json::object{{"after", "30m"}}}});
  CreateInstance("nb");
  StartEngine();
  DeployRunning("nb");
  SetStatus("nb", {{"idleSince", FormatRfc3339(clock_.Now())}});
  StartController();
  json::object i = WaitInstance(
      "nb", [](const json::object& o) { return !ConditionOf(o, "IdleReclaim").empty(); },
      "condition IdleReclaim");
  json::object c = ConditionOf(i, "IdleReclaim");
  EXPECT_EQ(GetString(c, "status"), "False");
  EXPECT_EQ(GetString(c, "reason"), "NoGpuMetrics");
  EXPECT_EQ(GetString(c, "message"),
            "the fake driver reports no GPU utilisation; the profile's idle policy is ignored");
  AdvanceAndPass(hours(1));
  EXPECT_EQ(GetString(Instance("nb"), "status.phase"), "Success");
  EXPECT_TRUE(Audit().empty());
}

TEST(LifecycleDeadlinesTest, WarningEventNamesAreDeterministic) {
  Due due;
  due.warning = "ExpiresSoon";
  due.deadline = WallTime(seconds(1'800'000'000));
  EXPECT_EQ(WarningEventName("nb", due, seconds(600)), "nb.ExpiresSoon.1800000000.600");
}

}  // namespace
}  // namespace gantry::engine
