// Budgets on a real SqliteStore and a FakeClock: the month-to-date spend of a project priced by
// the RateCard (budgets.h), and the BudgetMonitor's 80 % and 100 % Events, each once per month
// across passes and monitors (a restart, a second replica).
#include "engine/budget_monitor.h"

#include <unistd.h>

#include <filesystem>
#include <set>

#include "common/fake_clock.h"
#include "engine/budgets.h"
#include "engine/engine_internal.h"
#include "engine/store_test_fixture.h"
#include "engine/stored_events.h"
#include "engine/usage_ledger.h"
#include "engine/usage_report.h"
#include "engine/usage_rollup.h"
#include "gtest/gtest.h"
#include "model/budget.h"
#include "model/codec.h"
#include "store/sqlite/sqlite_store.h"

namespace gantry::engine {
namespace {

namespace json = boost::json;
using model::GetString;
using std::chrono::hours;

class BudgetMonitorTest : public StoreFixture {
 protected:
  // 2026-12-10T00:00:00Z.
  BudgetMonitorTest() : clock_(std::chrono::sys_days{std::chrono::year{2026} / 12 / 10}) {}

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore());
    // 1 USD per h100 GPU-hour.
    Create("RateCard",
           json::object{{"metadata", json::object{{"name", "default"}}},
                        {"spec", json::object{{"currency", "USD"},
                                              {"gpuHourly", json::object{{"h100", 1}}}}}});
  }

  void Create(const std::string& kind, json::object o) {
    o["apiVersion"] = "paas.gantry.dev/v1";
    o["kind"] = kind;
    auto stored = store_->Commit({{store::Write::Op::kCreate, kind, std::move(o), 0, 0}});
    ASSERT_TRUE(stored.ok()) << stored.status();
  }

  void Project(const std::string& name, double monthly, const std::string& action) {
    Create("Project",
           json::object{{"metadata", json::object{{"name", name}, {"uid", name + "-uid"}}},
                        {"spec", json::object{{"budget", json::object{{"monthly", monthly},
                                                                      {"action", action}}}}}});
  }

  // `gpus` h100 GPUs held by project `ns` from `start` for `held` (open when zero).
  void Interval(const std::string& ns, const std::string& name, int gpus,
                std::chrono::system_clock::time_point start, hours held) {
    usage::Interval i;
    i.project = ns;
    i.name = name;
    i.instance_kind = "ComputeInstance";
    i.instance_name = name;
    i.instance_uid = name + "-uid";
    i.gpu_type = "h100";
    i.gpus = gpus;
    i.run = name + "-1";
    i.start = start;
    if (held.count() > 0) i.end = start + held;
    // As the ledger writes a closed interval: with its rollups (usage_rollup.h).
    auto writes = usage::RollupWrites(*store_, {i});
    ASSERT_TRUE(writes.ok()) << writes.status();
    writes->push_back(
        {store::Write::Op::kCreate, usage::kUsageIntervalKind, usage::EncodeInterval(i), 0, 0});
    auto stored = store_->Commit(*std::move(writes));
    ASSERT_TRUE(stored.ok()) << stored.status();
  }

  std::vector<json::object> Events() {
    store::ListOptions q;
    q.kind = kStoredEventKind;
    auto list = internal::ListAll(*store_, q);
    EXPECT_TRUE(list.ok());
    return list.ok() ? *list : std::vector<json::object>{};
  }

  FakeClock clock_;
  Metrics metrics_;
};

TEST_F(BudgetMonitorTest, MonthToDateCountsOnlyThisMonthAndOpenIntervalsUntilNow) {
  const auto now = clock_.Now();
  Interval("vision", "last-month", 4, now - hours(24 * 15), hours(24));  // November: not counted
  Interval("vision", "closed", 2, now - hours(48), hours(10));           // 20 GPU-hours
  Interval("vision", "open", 1, now - hours(5), hours(0));               // 5 so far
  Interval("nlp", "other", 8, now - hours(10), hours(0));                // another project
  store::ListOptions q;
  q.kind = usage::kRateCardKind;
  auto cards = internal::ListAll(*store_, q);
  ASSERT_TRUE(cards.ok());
  auto spend = usage::MonthToDate(*store_, "vision", *cards, now);
  ASSERT_TRUE(spend.ok()) << spend.status();
  EXPECT_DOUBLE_EQ(spend->cost, 25);
  EXPECT_EQ(spend->currency, "USD");
  EXPECT_EQ(spend->month, "2026-12");
  EXPECT_EQ(usage::SpendWords("vision", *spend, model::Budget{30, model::Budget::Action::kBlock}),
            "project vision has spent 25 USD of its monthly budget of 30 USD (2026-12)");
}

TEST_F(BudgetMonitorTest, WarnsAt80AndAt100PercentOncePerMonth) {
  Project("vision", 10, "Block");
  Project("calm", 100, "Warn");
  Interval("vision", "a", 1, clock_.Now() - hours(8), hours(0));  // 8 USD of 10 so far
  Interval("calm", "b", 1, clock_.Now() - hours(1), hours(0));    // 1 of 100
  BudgetMonitor monitor(*store_, clock_, metrics_);
  monitor.Pass();
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(GetString(events[0], "metadata.name"), "vision.budget.2026-12.80");
  EXPECT_EQ(GetString(events[0], "reason"), "BudgetWarning");
  EXPECT_EQ(GetString(events[0], "type"), "Warning");
  EXPECT_EQ(GetString(events[0], "involvedObject.kind"), "Project");
  EXPECT_EQ(GetString(events[0], "involvedObject.name"), "vision");
  EXPECT_EQ(GetString(events[0], "message"),
            "project vision has spent 8 USD of its monthly budget of 10 USD (2026-12): 80 %");

  clock_.Advance(hours(3));  // 11 USD
  monitor.Pass();
  BudgetMonitor second(*store_, clock_, metrics_);  // a restart or another replica
  second.Pass();
  events = Events();
  ASSERT_EQ(events.size(), 2u);
  const json::object& exceeded =
      GetString(events[0], "reason") == "BudgetExceeded" ? events[0] : events[1];
  EXPECT_EQ(GetString(exceeded, "metadata.name"), "vision.budget.2026-12.100");
  EXPECT_EQ(GetString(exceeded, "message"),
            "project vision has spent 11 USD of its monthly budget of 10 USD (2026-12): 110 %: "
            "its deploys and starts wait until the budget is raised or the month ends; running "
            "instances keep running");
  EXPECT_NE(metrics_.Render().find(R"(gantry_project_budget_spent_ratio{project="vision"} 1.1)"),
            std::string::npos)
      << metrics_.Render();
}

TEST_F(BudgetMonitorTest, ANewMonthStartsAgain) {
  Project("vision", 10, "Warn");
  Interval("vision", "a", 1, clock_.Now() - hours(9), hours(0));
  BudgetMonitor monitor(*store_, clock_, metrics_);
  monitor.Pass();
  ASSERT_EQ(Events().size(), 1u);
  // 2027-01-01T00:00Z: the interval is still open, but nothing of it is January's yet.
  clock_.Advance(hours(24 * 22));
  monitor.Pass();
  EXPECT_EQ(Events().size(), 1u);
  clock_.Advance(hours(9));  // 9 USD in January
  monitor.Pass();
  auto events = Events();
  ASSERT_EQ(events.size(), 2u);
  std::set<std::string> names;
  for (const auto& e : events) names.insert(GetString(e, "metadata.name"));
  EXPECT_TRUE(names.count("vision.budget.2027-01.80")) << *names.begin();
}

TEST_F(BudgetMonitorTest, KeepsTheProjectsSpendForTheBudgetColumn) {
  Project("vision", 10, "Block");
  Project("free", 0, "Warn");
  Interval("vision", "a", 1, clock_.Now() - hours(4), hours(0));  // 4 USD of 10 so far
  BudgetMonitor monitor(*store_, clock_, metrics_);
  monitor.Pass();
  auto project = [&](const std::string& name) {
    auto p = store_->Get("Project", "", name);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : json::object{};
  };
  json::object vision = project("vision");
  EXPECT_EQ(json::serialize(vision.at("status").at("spend")),
            R"({"month":"2026-12","cost":4E0,"currency":"USD","monthly":1E1,"percent":40})");
  EXPECT_EQ(model::BudgetText(vision), "4/10 USD (40%)");
  const std::string rv = GetString(vision, "metadata.resourceVersion");
  monitor.Pass();  // nothing changed: nothing written
  EXPECT_EQ(GetString(project("vision"), "metadata.resourceVersion"), rv);
  clock_.Advance(std::chrono::minutes(90));
  monitor.Pass();
  EXPECT_EQ(model::BudgetText(project("vision")), "5.50/10 USD (55%)");
  EXPECT_EQ(model::BudgetText(project("free")), "0/0 USD (100%)");  // a budget of 0 is spent
  // Without a budget, no spend is shown.
  json::object free = project("free");
  free["spec"].as_object().erase("budget");
  auto stored = store_->Commit({{store::Write::Op::kUpdate, "Project", free, 0, 0}});
  ASSERT_TRUE(stored.ok()) << stored.status();
  monitor.Pass();
  EXPECT_EQ(model::BudgetText(project("free")), "");
  EXPECT_FALSE(project("free").at("status").as_object().contains("spend"));
}

}  // namespace
}  // namespace gantry::engine
