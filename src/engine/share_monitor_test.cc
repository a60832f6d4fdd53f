// ShareMonitor (engine/share_monitor.h) on a real SqliteStore: the gantry_project_gpus gauges
// from the projects and who holds this host's GPUs, and the GuaranteesOvercommitted condition
// set, left alone while unchanged, and turned False once the guarantees fit.
#include "engine/share_monitor.h"

#include "common/fake_clock.h"
#include "engine/fleet_gpus.h"
#include "engine/store_test_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/codec.h"
#include "model/scheduling.h"

namespace gantry::engine {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;

json::object ProjectObject(const std::string& name, json::object quota) {
  return json::object{{"apiVersion", "paas.gantry.dev/v1"},
                      {"kind", "Project"},
                      {"metadata", json::object{{"name", name}}},
                      {"spec", json::object{{"quota", std::move(quota)}}}};
}

TEST(GpuSharesTest, GuaranteedUsedAndBorrowedPerProjectAndType) {
  std::vector<json::object> projects{
      ProjectObject("a", {{"gpus", {{"h100", 4}}}, {"guaranteedGpus", {{"h100", 2}}}}),
      ProjectObject("b", {{"gpus", {{"a100", 1}}}}),  // a quota, nothing held: zeros
      ProjectObject("c", {})};                        // neither: only what it holds
  std::vector<HeldGpus> held{
      {"a", "h100", 2, false}, {"a", "h100", 1, true}, {"c", "h100", 1, false}};
  EXPECT_EQ(GpuShares(projects, held),
            (std::vector<GpuShare>{
                {"a", "h100", 2, 3, 1}, {"b", "a100", 0, 0, 0}, {"c", "h100", 0, 1, 0}}));
  EXPECT_TRUE(GpuShares({ProjectObject("d", {})}, {}).empty());
}

TEST(OvercommitConditionsTest, SetThenLeftAloneThenClearedWithItsTransition) {
  json::object p = ProjectObject("a", {});
  EXPECT_FALSE(OvercommitConditions(p, "", "t0"));  // never overcommitted: nothing to say
  auto set = OvercommitConditions(p, "h100 words", "t1");
  ASSERT_TRUE(set);
  ASSERT_EQ(set->size(), 1u);
  const json::object& c = set->at(0).as_object();
  EXPECT_EQ(model::GetString(c, "type"), model::kGuaranteesOvercommitted);
  EXPECT_EQ(model::GetString(c, "status"), "True");
  EXPECT_EQ(model::GetString(c, "reason"), "Overcommitted");
  EXPECT_EQ(model::GetString(c, "message"), "h100 words");
  EXPECT_EQ(model::GetString(c, "lastTransitionTime"), "t1");
  p["status"] = json::object{{"conditions", *set}};
  EXPECT_FALSE(OvercommitConditions(p, "h100 words", "t2"));  // stored as it is: no write
  auto reworded = OvercommitConditions(p, "other words", "t3");
  ASSERT_TRUE(reworded);  // same status: the transition time stays
  EXPECT_EQ(model::GetString(reworded->at(0).as_object(), "lastTransitionTime"), "t1");
  auto cleared = OvercommitConditions(p, "", "t4");
  ASSERT_TRUE(cleared);
  ASSERT_EQ(cleared->size(), 1u);
  EXPECT_EQ(model::GetString(cleared->at(0).as_object(), "status"), "False");
  EXPECT_EQ(model::GetString(cleared->at(0).as_object(), "reason"), "WithinCapacity");
  EXPECT_EQ(model::GetString(cleared->at(0).as_object(), "lastTransitionTime"), "t4");
}

class ShareMonitorTest : public StoreFixture {
 protected:
  ShareMonitorTest() : gpus_(*ParseGpuFlag("h100:4")) {}

  void Put(json::object o) {
    auto rv = store_->Commit({{store::Write::Op::kCreate, model::GetString(o, "kind"), o, 0, 0}});
    ASSERT_TRUE(rv.ok()) << rv.status();
  }
  void Guarantee(const std::string& project, int64_t gpus) {
    auto got = store_->Get("Project", "", project);
    ASSERT_TRUE(got.ok()) << got.status();
    json::object p = *got;
    p["spec"].as_object()["quota"].as_object()["guaranteedGpus"] = json::object{{"h100", gpus}};
    const int64_t rv = std::atoll(model::GetString(p, "metadata.resourceVersion").c_str());
    auto stored = store_->Commit({{store::Write::Op::kUpdate, "Project", std::move(p), rv, 0}});
    ASSERT_TRUE(stored.ok()) << stored.status();
  }
  json::object Condition(const std::string& project) {
    auto got = store_->Get("Project", "", project);
    if (!got.ok()) return {};
    const json::value* c = model::FindPath(*got, "status.conditions");
    if (!c || !c->is_array() || c->get_array().empty()) return {};
    return c->get_array().at(0).as_object();
  }

  FakeClock clock_;
  Metrics metrics_;
  GpuAllocator gpus_;
};

TEST_F(ShareMonitorTest, GaugesCountWhatThisHostsGpusHoldAndAProjectDeletedLeaves) {
  Put(ProjectObject("vision", {{"gpus", {{"h100", 4}}}, {"guaranteedGpus", {{"h100", 2}}}}));
  Put(ProjectObject("speech", {{"gpus", {{"h100", 4}}}}));
  json::object borrowed{{"apiVersion", "paas.gantry.dev/v1"},
                        {"kind", "ComputeInstance"},
                        {"metadata", json::object{{"namespace", "speech"}, {"name", "big"}}},
                        {"status", json::object{{"admission", "Borrowed"}}}};
  Put(borrowed);
  ASSERT_TRUE(gpus_.Assign("vision/nb/u1", "h100", 1));
  ASSERT_TRUE(gpus_.Assign("speech/big/u2", "h100", 2));
  ShareMonitor monitor(*store_, clock_, metrics_, gpus_, "host-a");
  monitor.Pass();
  const std::string text = metrics_.Render();
  for (const char* line :
       {"gantry_project_gpus{project=\"vision\",gpu_type=\"h100\",kind=\"guaranteed\"} 2",
        "gantry_project_gpus{project=\"vision\",gpu_type=\"h100\",kind=\"used\"} 1",
        "gantry_project_gpus{project=\"vision\",gpu_type=\"h100\",kind=\"borrowed\"} 0",
        "gantry_project_gpus{project=\"speech\",gpu_type=\"h100\",kind=\"used\"} 2",
        "gantry_project_gpus{project=\"speech\",gpu_type=\"h100\",kind=\"borrowed\"} 2"})
    EXPECT_THAT(text, HasSubstr(line));
  EXPECT_TRUE(Condition("vision").empty());  // 2 guaranteed of 4: nothing to say
  gpus_.Release("speech/big/u2");
  ASSERT_TRUE(store_
                  ->Commit({{store::Write::Op::kDelete, "ComputeInstance",
                             json::object{{"metadata",
                                           json::object{{"namespace", "speech"}, {"name", "big"}}}},
                             0, 0}})
                  .ok());
  auto got = store_->Get("Project", "", "speech");
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(store_->Commit({{store::Write::Op::kDelete, "Project", *got, 0, 0}}).ok());
  monitor.Pass();
  EXPECT_THAT(metrics_.Render(), Not(HasSubstr("project=\"speech\"")));
}

TEST_F(ShareMonitorTest, OvercommittedGuaranteesGetAConditionThatClearsOnceTheyFit) {
  Put(ProjectObject("vision", {{"gpus", {{"h100", 4}}}, {"guaranteedGpus", {{"h100", 3}}}}));
  Put(ProjectObject("speech", {{"gpus", {{"h100", 4}}}, {"guaranteedGpus", {{"h100", 3}}}}));
  Put(ProjectObject("other", {}));
  ShareMonitor monitor(*store_, clock_, metrics_, gpus_, "host-a");
  monitor.Pass();
  json::object c = Condition("vision");
  EXPECT_EQ(model::GetString(c, "status"), "True");
  EXPECT_EQ(model::GetString(c, "message"),
            "guaranteedGpus of h100 sum to 6 over 2 projects (speech 3, vision 3) but the "
            "fleet has 4 h100 GPUs: not every guarantee can be kept at once");
  EXPECT_EQ(model::GetString(Condition("speech"), "status"), "True");
  EXPECT_TRUE(Condition("other").empty());
  const std::string rv =
      model::GetString(*store_->Get("Project", "", "vision"), "metadata.resourceVersion");
  monitor.Pass();  // unchanged: not written again
  EXPECT_EQ(model::GetString(*store_->Get("Project", "", "vision"), "metadata.resourceVersion"),
            rv);
  Guarantee("speech", 1);
  clock_.Advance(std::chrono::minutes(1));
  monitor.Pass();
  EXPECT_EQ(model::GetString(Condition("vision"), "status"), "False");
  EXPECT_EQ(model::GetString(Condition("vision"), "reason"), "WithinCapacity");
  EXPECT_EQ(model::GetString(Condition("speech"), "status"), "False");
}

// Several replicas: the condition compares with every host that published recently.
TEST_F(ShareMonitorTest, TheConditionSumsEveryFreshHostOfTheFleet) {
  Put(ProjectObject("vision", {{"gpus", {{"h100", 8}}}, {"guaranteedGpus", {{"h100", 8}}}}));
  // host-b, another replica's, has 4 h100 too: 8 guaranteed of 4 + 4 fit.
  ASSERT_TRUE(PublishHostGpus(*store_, "host-b", {{"h100", 4}}, clock_.Now()).ok());
  ShareMonitor monitor(*store_, clock_, metrics_, gpus_, "host-a");
  monitor.Pass();
  EXPECT_TRUE(Condition("vision").empty());
  auto fleet = FleetGpus(*store_, clock_.Now());
  ASSERT_TRUE(fleet.ok());
  EXPECT_EQ(*fleet, (GpusByType{{"h100", 8}}));
  EXPECT_THAT(metrics_.Render(),
              HasSubstr("gantry_project_gpus{project=\"vision\",gpu_type=\"h100\","
                        "kind=\"guaranteed\"} 8"));
  // host-b's replica stops renewing; this one goes on (every kFleetRenew): once host-b is
  // stale, 8 are guaranteed of 4.
  for (int k = 0; k < 4; ++k) {
    clock_.Advance(kFleetRenew);
    monitor.Pass();
  }
  fleet = FleetGpus(*store_, clock_.Now());
  ASSERT_TRUE(fleet.ok());
  EXPECT_EQ(*fleet, (GpusByType{{"h100", 4}}));
  EXPECT_EQ(model::GetString(Condition("vision"), "status"), "True");
  EXPECT_THAT(model::GetString(Condition("vision"), "message"), HasSubstr("the fleet has 4 h100"));
}

}  // namespace
}  // namespace gantry::engine
