// Usage metering (issue 19) on a real gantryd with configured GPUs (h100:4) and the local
// driver: a 2-GPU instance runs for a few seconds and is stopped; the usage report says as
// many GPU-seconds as the test itself measured between the answers (2 x the time from the
// deploy's Success to the stop, at least; 2 x the time from the deploy request to the
// Stopped, at most), priced by the rate card; /metrics says the same figure; the CSV parses;
// a member sees only their own rows. Bad queries and negative prices are 422.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "local_fixture.h"
#include "webhooks/receiver.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using Steady = std::chrono::steady_clock;

double Seconds(Steady::duration d) { return std::chrono::duration<double>(d).count(); }

double Num(const json::value& v) {
  if (v.is_double()) return v.as_double();
  if (v.is_int64()) return static_cast<double>(v.as_int64());
  return -1;
}

// The value of `series` (name{labels} exactly as rendered) in a Prometheus text page.
double MetricValue(const std::string& page, const std::string& series) {
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return -1;
}

std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += c;
      }
    }
    cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

class LocalUsageTest : public LocalTest {
 protected:
  std::string Gpus() override { return "h100:4"; }

  // A member of project default with a token of their own.
  Api& Member() {
    if (member_) return *member_;
    api().MustCreate(ClusterPath("users"),
                     json::object{{"metadata", json::object{{"name", "mia"}}},
                                  {"spec", json::object{{"password", "password-of-mia"}}}});
    api().MustCreate(NsPath("default", "rolebindings"),
                     json::object{{"metadata", json::object{{"name", "mia-member"}}},
                                  {"spec", json::object{{"user", "mia"}, {"role", "member"}}}});
    Resp t = api().Post(ClusterPath("users", "mia") + "/tokens", json::object{});
    EXPECT_EQ(t.status, 201) << t.raw;
    member_ =
        std::make_unique<Api>(gantryd_->base_url(), std::string(t.obj().at("token").as_string()));
    return *member_;
  }

  std::vector<std::string> Args() override {
    std::vector<std::string> args = LocalTest::Args();
    args.insert(args.end(), {"--budget-check-interval", "1s", "--webhook-allow-private",
                             "--webhook-backoff-ms", "50"});
    return args;
  }

  static std::string Report(const std::string& query) {
    return ClusterPath("usagereports") + "?" + query;
  }

  std::unique_ptr<Api> member_;
};

TEST_F(LocalUsageTest, ReportMetricsAndCsvSayWhatTheTestMeasured) {
  Resp card = api().Post(
      ClusterPath("ratecards"),
      json::object{{"metadata", json::object{{"name", "default"}}},
                   {"spec", json::object{{"currency", "USD"}, {"gpuHourly", {{"h100", 3.6}}}}}});
  ASSERT_EQ(card.status, 201) << card.raw;
  CreateLocalTemplate("plain", false);
  CreateLocalProfile("two", "plain", Gpu(2));
  CreateLocalProfile("one", "plain", Gpu(1));
  api().CreateInstance("default", "nb", "two");
  const auto asked = Steady::now();
  Deploy("nb");
  WaitPhase("nb", "Success");
  const auto running = Steady::now();
  std::this_thread::sleep_for(std::chrono::seconds(3));  // usage to measure, not a limit
  const auto stopping = Steady::now();
  ASSERT_EQ(Action("nb", "stop").status, 202);
  WaitPhase("nb", "Stopped");
  const auto stopped = Steady::now();
  // The member's own instance, deployed and stopped by them.
  Api& mia = Member();
  Resp created = mia.Post(NsPath("default", "computeinstances"),
                          json::object{{"metadata", json::object{{"name", "mine"}}},
                                       {"spec", json::object{{"profileRef", {{"name", "one"}}}}}});
  ASSERT_EQ(created.status, 201) << created.raw;
  ASSERT_EQ(
      mia.Post(NsPath("default", "computeinstances", "mine") + "/deploy", json::object{}).status,
      202);
  WaitPhase("mine", "Success");
  ASSERT_EQ(Action("mine", "stop").status, 202);
  WaitPhase("mine", "Stopped");

  Resp r = api().Get(Report("from=2020-01-01T00:00:00Z&groupBy=project,user,gpuType"));
  ASSERT_EQ(r.status, 200) << r.raw;
  const json::value rows_value = At(r.obj(), "status.rows");
  ASSERT_TRUE(rows_value.is_array()) << r.raw;
  const json::array& rows = rows_value.as_array();
  ASSERT_EQ(rows.size(), 2u) << r.raw;
  double nb = -1, mine = -1;
  for (const auto& row : rows) {
    EXPECT_EQ(Str(row.as_object(), "project"), "default");
    EXPECT_EQ(Str(row.as_object(), "gpuType"), "h100");
    (Str(row.as_object(), "user") == "mia" ? mine : nb) = Num(row.as_object().at("gpuSeconds"));
  }
  EXPECT_GE(nb, 2 * Seconds(stopping - running) - 0.01) << r.raw;
  EXPECT_LE(nb, 2 * Seconds(stopped - asked) + 0.01) << r.raw;
  EXPECT_GT(mine, 0) << r.raw;
  const double total = Num(At(r.obj(), "status.totals.gpuSeconds"));
  EXPECT_NEAR(total, nb + mine, 0.01);
  EXPECT_NEAR(Num(At(r.obj(), "status.totals.cost")), total * 3.6 / 3600, 1e-4);
  EXPECT_EQ(Str(r.obj(), "status.currency"), "USD");

  // The same figure in /metrics.
  Resp metrics = api().Get("/metrics");
  EXPECT_NEAR(
      MetricValue(metrics.raw, R"(gantry_gpu_seconds_total{project="default",gpu_type="h100"})"),
      total, 0.01)
      << metrics.raw;

  // CSV: a header and one line per row.
  auto csv = api().http().SendWithHeaders(
      "GET", Report("from=2020-01-01T00:00:00Z&groupBy=project,user,gpuType"),
      {{"Accept", "text/csv"}});
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(csv->status, 200);
  auto table = ParseCsv(csv->body);
  ASSERT_EQ(table.size(), 3u) << csv->body;
  EXPECT_EQ(table[0],
            (std::vector<std::string>{"project", "user", "gpuType", "gpuSeconds", "cpuCoreSeconds",
                                      "memoryGiBSeconds", "cost", "currency"}));
  EXPECT_NEAR(std::stod(table[1][3]) + std::stod(table[2][3]), total, 0.01);

  // A member sees their own usage only, in the project and across projects.
  for (const std::string& path : {NsPath("default", "usagereports") + "?from=2020-01-01T00:00:00Z",
                                  Report("from=2020-01-01T00:00:00Z")}) {
    Resp own = mia.Get(path);
    ASSERT_EQ(own.status, 200) << own.raw;
    const json::value their_value = At(own.obj(), "status.rows");
    ASSERT_TRUE(their_value.is_array()) << own.raw;
    const json::array& their = their_value.as_array();
    ASSERT_EQ(their.size(), 1u) << own.raw;
    EXPECT_EQ(Str(their[0].as_object(), "user"), "mia");
    EXPECT_NEAR(Num(At(own.obj(), "status.totals.gpuSeconds")), mine, 0.01);
  }

  // Monthly buckets add up to the same total.
  Resp hourly = api().Get(Report("from=2020-01-01T00:00:00Z&to=2030-01-01T00:00:00Z&step=month"));
  ASSERT_EQ(hourly.status, 200) << hourly.raw;
  EXPECT_NEAR(Num(At(hourly.obj(), "status.totals.gpuSeconds")), total, 0.01);
}

TEST_F(LocalUsageTest, BadQueriesAndNegativePricesAre422) {
  struct Case {
    std::string query, field, says;
  };
  for (const Case& c : std::vector<Case>{
           {"from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z", "from", "must be before to"},
           {"from=yesterday", "from", "RFC 3339"},
           {"to=2026-13-45", "to", "RFC 3339"},
           {"groupBy=project,team", "groupBy", "unknown key \"team\""},
           {"step=week", "step", "hour, day or month"},
           {"from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&step=hour", "step",
            "more than 10000"}}) {
    Resp r = api().Get(ClusterPath("usagereports") + "?" + c.query);
    EXPECT_TRUE(r.IsStatus(422, "Invalid")) << c.query << ": " << r.raw;
    EXPECT_NE(r.cause_message(c.field).find(c.says), std::string::npos) << c.query << ": " << r.raw;
  }
  auto card = [&](const std::string& name, json::object spec) {
    spec["currency"] = "USD";
    return api().Post(ClusterPath("ratecards"),
                      json::object{{"metadata", json::object{{"name", name}}}, {"spec", spec}});
  };
  Resp neg = card("bad", json::object{{"gpuHourly", {{"h100", -1}}}, {"cpuHourly", -0.5}});
  EXPECT_TRUE(neg.IsStatus(422, "Invalid")) << neg.raw;
  EXPECT_NE(neg.cause_message("spec.gpuHourly.h100").find("zero or more"), std::string::npos)
      << neg.raw;
  EXPECT_NE(neg.cause_message("spec.cpuHourly").find("zero or more"), std::string::npos) << neg.raw;
  Resp word = card("word", json::object{{"gpuHourly", {{"h100", "cheap"}}}});
  EXPECT_TRUE(word.IsStatus(422, "Invalid")) << word.raw;
  EXPECT_NE(word.cause_message("spec.gpuHourly.h100").find("a number"), std::string::npos)
      << word.raw;
  // Reports are computed: no writes.
  Resp post = api().Post(ClusterPath("usagereports"), json::object{});
  EXPECT_EQ(post.status, 405) << post.raw;
}

// A Block budget holds new deploys once the month's cost reaches it, never the running
// instance; raising it lets the held deploy run. The project gets the 100 % Event, and a
// webhook subscribed to it a delivery.
TEST_F(LocalUsageTest, BlockBudgetHoldsADeployWithBudgetExceededUntilRaised) {
  Receiver receiver;
  receiver.Start();
  Resp hook =
      api().Post(NsPath("default", "webhooks"),
                 json::object{{"metadata", json::object{{"name", "finance"}}},
                              {"spec", json::object{{"url", receiver.url()},
                                                    {"events", json::array{"BudgetExceeded"}},
                                                    {"secret", "a-long-random-secret"}}}});
  ASSERT_EQ(hook.status, 201) << hook.raw;
  // 1 USD per GPU-second.
  Resp card = api().Post(
      ClusterPath("ratecards"),
      json::object{{"metadata", json::object{{"name", "default"}}},
                   {"spec", json::object{{"currency", "USD"}, {"gpuHourly", {{"h100", 3600}}}}}});
  ASSERT_EQ(card.status, 201) << card.raw;
  Resp budget =
      api().Patch(ClusterPath("projects", "default"),
                  json::object{{"spec", {{"budget", {{"monthly", 2}, {"action", "Block"}}}}}});
  ASSERT_EQ(budget.status, 200) << budget.raw;
  CreateLocalTemplate("plain", false);
  CreateLocalProfile("one", "plain", Gpu(1));
  api().CreateInstance("default", "first", "one");
  Deploy("first");
  WaitPhase("first", "Success");
  // Spent once the report says so (2 GPU-seconds: about 2 s after the start).
  ASSERT_TRUE(PollUntil([&] {
    Resp r = api().Get(Report("groupBy=project"));
    return r.status == 200 && Num(At(r.obj(), "status.totals.cost")) >= 2;
  }));
  api().CreateInstance("default", "second", "one");
  Deploy("second");
  json::object held = WaitInstance(
      "second", [](const json::object& o) { return Str(o, "status.reason") == "BudgetExceeded"; },
      "reason BudgetExceeded");
  EXPECT_EQ(Str(held, "status.phase"), "Waiting");
  EXPECT_NE(Str(held, "status.message").find("of its monthly budget of 2 USD"), std::string::npos)
      << Str(held, "status.message");
  EXPECT_NE(Str(held, "status.message").find("second waits until the budget is raised"),
            std::string::npos)
      << Str(held, "status.message");
  // The running instance keeps running.
  EXPECT_EQ(Str(api().Get(NsPath("default", "computeinstances", "first")).obj(), "status.phase"),
            "Success");
  // The project's Event.
  ASSERT_TRUE(PollUntil([&] {
    Resp e = api().Get("/api/v1/namespaces/default/events");
    return e.status == 200 && e.raw.find("\"BudgetExceeded\"") != std::string::npos &&
           e.raw.find("default.budget.") != std::string::npos;
  }));

  ASSERT_TRUE(receiver.WaitFor([](const std::vector<Received>& got) {
    return !got.empty() && got.front().event == "BudgetExceeded";
  }));
  EXPECT_NE(receiver.received().front().body.find("of its monthly budget of 2 USD"),
            std::string::npos)
      << receiver.received().front().body;

  Resp raised = api().Patch(ClusterPath("projects", "default"),
                            json::object{{"spec", {{"budget", {{"monthly", 1000000}}}}}});
  ASSERT_EQ(raised.status, 200) << raised.raw;
  WaitPhase("second", "Success");
}

TEST_F(LocalUsageTest, BadBudgetsAre422NamingTheField) {
  struct Case {
    json::object budget;
    std::string field, says;
  };
  for (const Case& c : std::vector<Case>{
           {{{"monthly", -1}, {"action", "Block"}}, "spec.budget.monthly", "0 or more"},
           {{{"monthly", "lots"}}, "spec.budget.monthly", "must be of type number"},
           {{{"action", "Block"}}, "spec.budget.monthly", "is required"},
           {{{"monthly", 10}, {"action", "Stop"}},
            "spec.budget.action",
            "supported values: \"Warn\", \"Block\""}}) {
    Resp r = api().Patch(ClusterPath("projects", "default"),
                         json::object{{"spec", {{"budget", c.budget}}}});
    EXPECT_TRUE(r.IsStatus(422, "Invalid")) << json::serialize(c.budget) << ": " << r.raw;
    EXPECT_NE(r.cause_message(c.field).find(c.says), std::string::npos)
        << json::serialize(c.budget) << ": " << r.raw;
  }
}

}  // namespace
}  // namespace gantry::testing
