#include "cli/table.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace gantry::cli {
namespace {

TEST(Table, AlignsWithTwoSpacesAndNoTrailingBlanks) {
  Table t({"name", "Display Name", "status"});
  t.AddRow({"gpu-1", "GPU one", "Success"});
  t.AddRow({"a-much-longer-name", "x", "Not Deployed"});
  EXPECT_EQ(t.Render(),
            "NAME                DISPLAY NAME  STATUS\n"
            "gpu-1               GPU one       Success\n"
            "a-much-longer-name  x             Not Deployed\n");
}

TEST(Table, CountsCodePointsNotBytes) {
  Table t({"a", "b"});
  t.AddRow({"héllo", "1"});
  t.AddRow({"x", "2"});
  EXPECT_EQ(t.Render(), "A      B\nhéllo  1\nx      2\n");
}

TEST(Age, ShortDurations) {
  EXPECT_EQ(ShortDuration(absl::Seconds(0)), "0s");
  EXPECT_EQ(ShortDuration(absl::Seconds(59)), "59s");
  EXPECT_EQ(ShortDuration(absl::Minutes(5) + absl::Seconds(30)), "5m");
  EXPECT_EQ(ShortDuration(absl::Hours(3) + absl::Minutes(59)), "3h");
  EXPECT_EQ(ShortDuration(absl::Hours(49)), "2d");
  EXPECT_EQ(ShortDuration(absl::Hours(24 * 400)), "1y");
  EXPECT_EQ(ShortDuration(absl::Seconds(-5)), "0s");
}

TEST(Age, FromTimestamps) {
  absl::Time now = absl::FromUnixSeconds(1'800'000'000);  // 2027-01-15T08:00:00Z
  EXPECT_EQ(FormatAge("2027-01-15T07:55:00Z", now), "5m");
  EXPECT_EQ(FormatAge("2027-01-13T08:00:00Z", now), "2d");
  EXPECT_EQ(FormatAge("2027-01-15T04:59:59.5+00:00", now), "3h");
  EXPECT_EQ(FormatAge("", now), "<unknown>");
  EXPECT_EQ(FormatAge("yesterday", now), "<unknown>");
}

TEST(Words, PhaseAndSharing) {
  EXPECT_EQ(PhaseWords("NotDeployed"), "Not Deployed");
  EXPECT_EQ(PhaseWords("InProgress"), "In Progress");
  EXPECT_EQ(PhaseWords("Waiting"), "Waiting");
  EXPECT_EQ(PhaseWords("Success"), "Success");
  EXPECT_EQ(PhaseWords("Failed"), "Failed");
  EXPECT_EQ(PhaseWords(""), "<none>");
  auto obj = [](const char* text) { return boost::json::parse(text).as_object(); };
  EXPECT_EQ(SharingSummary(obj(R"({"spec":{}})")), "None");
  EXPECT_EQ(SharingSummary(obj(R"({"spec":{"sharing":{"mode":"None"}}})")), "None");
  EXPECT_EQ(SharingSummary(obj(R"({"spec":{"sharing":{"mode":"All"}}})")), "All");
  EXPECT_EQ(SharingSummary(obj(R"({"spec":{"sharing":{"mode":"Selected","projects":["a","b"]}}})")),
            "Selected(2)");
}

TEST(Lookup, DottedPaths) {
  auto o = boost::json::parse(R"({"a":{"b":{"c":3,"s":"x","t":true}}})").as_object();
  EXPECT_EQ(FieldText(o, "a.b.c"), "3");
  EXPECT_EQ(FieldText(o, "a.b.s"), "x");
  EXPECT_EQ(FieldText(o, "a.b.t"), "true");
  EXPECT_EQ(FieldText(o, "a.b"), "");
  EXPECT_EQ(FieldText(o, "a.x.c"), "");
  EXPECT_EQ(Lookup(o, "a.b.c.d"), nullptr);
}

TEST(HumanDuration, AsKubectlPrintsIt) {
  EXPECT_EQ(HumanDuration(absl::Seconds(-3)), "0s");
  EXPECT_EQ(HumanDuration(absl::Seconds(119)), "119s");
  EXPECT_EQ(HumanDuration(absl::Seconds(150)), "2m30s");
  EXPECT_EQ(HumanDuration(absl::Minutes(9)), "9m");
  EXPECT_EQ(HumanDuration(absl::Minutes(133)), "133m");
  EXPECT_EQ(HumanDuration(absl::Minutes(253)), "4h13m");
  EXPECT_EQ(HumanDuration(absl::Hours(5)), "5h");
  EXPECT_EQ(HumanDuration(absl::Hours(30)), "30h");
  EXPECT_EQ(HumanDuration(absl::Hours(76)), "3d4h");
  EXPECT_EQ(HumanDuration(absl::Hours(24 * 400)), "400d");
  EXPECT_EQ(HumanDuration(absl::Hours(24 * (365 * 2 + 10))), "2y10d");
  EXPECT_EQ(HumanDuration(absl::Hours(24 * 365 * 9)), "9y");
}

}  // namespace
}  // namespace gantry::cli
