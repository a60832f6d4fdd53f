// UsageReport arithmetic (usage_report.h): clipping to [from, to), open intervals until now,
// buckets across boundaries, grouping, pricing and the refusals of bad queries.
#include "engine/usage_report.h"

#include "common/errors.h"
#include "gtest/gtest.h"
#include "model/codec.h"

namespace gantry::engine::usage {
namespace {

namespace json = boost::json;
using std::chrono::hours;
using std::chrono::seconds;

std::chrono::system_clock::time_point T(const std::string& s) { return *ParseTime(s); }

Interval Make(const std::string& project, const std::string& user, int64_t gpus,
              const std::string& start, std::optional<std::string> end) {
  Interval i;
  i.project = project;
  i.user = user;
  i.profile_name = "prof";
  i.gpu_type = "h100";
  i.gpus = gpus;
  i.cpu = 4;
  i.start = T(start);
  if (end) i.end = T(*end);
  return i;
}

double Num(const json::object& o, std::string_view path) {
  const json::value* v = model::FindPath(o, path);
  if (!v) return -1;
  return v->is_double() ? v->as_double() : static_cast<double>(v->as_int64());
}

TEST(UsageReportTest, ClipsToTheRangeAndCountsOpenIntervalsUntilNow) {
  auto q = ParseReportQuery(
      {{"from", "2026-12-01T10:00:00Z"}, {"to", "2026-12-01T12:00:00Z"}, {"groupBy", "project"}},
      T("2026-12-01T11:00:00Z"));
  ASSERT_TRUE(q.ok()) << q.status();
  std::vector<Interval> in = {
      Make("a", "u", 2, "2026-12-01T09:30:00Z", "2026-12-01T10:30:00Z"),  // 30 min inside
      Make("a", "v", 1, "2026-12-01T10:50:00Z", std::nullopt),            // open: until 11:00
      Make("b", "u", 4, "2026-12-01T12:00:00Z", std::nullopt)};           // after the range
  RateCard card{"default", "USD", {{"h100", 3.6}}, 0.36, 0};
  json::object r = BuildReport(*q, in, T("2026-12-01T11:00:00Z"), card);
  const json::array& rows = r.at("status").at("rows").as_array();
  ASSERT_EQ(rows.size(), 1u) << json::serialize(r);
  EXPECT_EQ(model::GetString(rows[0].as_object(), "project"), "a");
  EXPECT_EQ(Num(rows[0].as_object(), "gpuSeconds"), 2 * 1800 + 600);
  EXPECT_EQ(Num(r, "status.totals.cpuCoreSeconds"), 4 * (1800 + 600));
  // 4200 GPU-s at 3.6/h = 4.2; 9600 core-s at 0.36/h = 0.96.
  EXPECT_NEAR(Num(r, "status.totals.cost"), 4.2 + 0.96, 1e-9);
  EXPECT_EQ(model::GetString(r, "status.currency"), "USD");
}

TEST(UsageReportTest, BucketsSplitAnIntervalAtTheirBoundaries) {
  auto q = ParseReportQuery({{"from", "2026-12-01T00:00:00Z"},
                             {"to", "2026-12-02T00:00:00Z"},
                             {"groupBy", "user"},
                             {"step", "hour"}},
                            T("2026-12-03T00:00:00Z"));
  ASSERT_TRUE(q.ok()) << q.status();
  json::object r =
      BuildReport(*q, {Make("a", "u", 1, "2026-12-01T10:45:00Z", "2026-12-01T12:15:00Z")},
                  T("2026-12-03T00:00:00Z"), std::nullopt);
  const json::array& rows = r.at("status").at("rows").as_array();
  ASSERT_EQ(rows.size(), 3u) << json::serialize(r);
  EXPECT_EQ(model::GetString(rows[0].as_object(), "bucket"), "2026-12-01T10:00:00.000Z");
  EXPECT_EQ(Num(rows[0].as_object(), "gpuSeconds"), 900);
  EXPECT_EQ(Num(rows[1].as_object(), "gpuSeconds"), 3600);
  EXPECT_EQ(Num(rows[2].as_object(), "gpuSeconds"), 900);
  EXPECT_EQ(Num(r, "status.totals.cost"), 0);
  std::string csv = ReportCsv(r);
  EXPECT_EQ(csv.substr(0, csv.find("\r\n")),
            "bucket,user,gpuSeconds,cpuCoreSeconds,memoryGiBSeconds,cost,currency");
}

TEST(UsageReportTest, BadQueriesNameTheParameter) {
  const auto now = T("2026-12-15T00:00:00Z");
  auto field_of = [&](std::map<std::string, std::string> p) {
    auto q = ParseReportQuery(p, now);
    EXPECT_FALSE(q.ok());
    auto causes = CausesOf(q.status());
    return causes.empty() ? std::string("<none>") : causes[0].field;
  };
  EXPECT_EQ(field_of({{"from", "2026-12-02T00:00:00Z"}, {"to", "2026-12-01T00:00:00Z"}}), "from");
  EXPECT_EQ(field_of({{"to", "soon"}}), "to");
  EXPECT_EQ(field_of({{"groupBy", "project,,user"}}), "groupBy");
  EXPECT_EQ(field_of({{"step", "minute"}}), "step");
  EXPECT_EQ(field_of({{"from", "2025-01-01T00:00:00Z"}, {"step", "hour"}}), "step");
  auto ok = ParseReportQuery({{"from", "2025-01-01T00:00:00Z"}, {"step", "day"}}, now);
  EXPECT_TRUE(ok.ok()) << ok.status();
  auto date = ParseReportQuery({{"from", "2026-12-01"}}, now);  // gantry usage --from DATE
  ASSERT_TRUE(date.ok()) << date.status();
  EXPECT_EQ(date->from, T("2026-12-01T00:00:00Z"));
}

}  // namespace
}  // namespace gantry::engine::usage
