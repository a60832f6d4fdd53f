#include "model/lifecycle_policy.h"

#include <boost/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gantry::model {
namespace {

namespace json = boost::json;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

absl::Time At(const std::string& rfc3339) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) << rfc3339 << ": " << err;
  return t;
}

std::string Utc(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

absl::TimeZone Zone(const std::string& name) {
  auto z = LoadZone(name);
  EXPECT_TRUE(z.ok()) << z.status();
  return z.ok() ? *z : absl::UTCTimeZone();
}

CronSchedule Cron(const std::string& expr) {
  auto c = CronSchedule::Parse(expr);
  EXPECT_TRUE(c.ok()) << expr << ": " << c.status();
  return c.ok() ? *c : *CronSchedule::Parse("* * * * *");
}

// Every firing in [from, to), as UTC strings.
std::vector<std::string> Firings(const std::string& expr, const std::string& zone,
                                 const std::string& from, const std::string& to) {
  CronSchedule cron = Cron(expr);
  absl::TimeZone z = Zone(zone);
  std::vector<std::string> out;
  absl::Time end = At(to);
  for (auto t = cron.Next(At(from) - absl::Seconds(1), z); t && *t < end; t = cron.Next(*t, z)) {
    out.push_back(Utc(*t));
    if (out.size() > 1000) break;
  }
  return out;
}

TEST(DurationTest, ParsesOneNumberAndOneUnit) {
  EXPECT_EQ(*ParseDuration("90s"), seconds(90));
  EXPECT_EQ(*ParseDuration("30m"), seconds(1800));
  EXPECT_EQ(*ParseDuration("8h"), seconds(8 * 3600));
  EXPECT_EQ(*ParseDuration("3d"), seconds(3 * 86400));
  for (const char* bad : {"0s", "-1h", "1h30m", "1.5h", "h", "", "90", "8H", " 8h", "100000d"}) {
    auto d = ParseDuration(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_THAT(d.status().message(), HasSubstr("90s, 30m, 8h, 3d")) << bad;
  }
  EXPECT_EQ(FormatDuration(seconds(5400)), "90m");
  EXPECT_EQ(FormatDuration(seconds(72 * 3600)), "3d");
  EXPECT_EQ(FormatDuration(seconds(90)), "90s");
}

TEST(CronParseTest, RefusesWhatIsNotFiveValidFields) {
  struct Case {
    const char* expr;
    const char* message;
  };
  const Case cases[] = {
      {"0 20 * * 1-5 2026", "has 5 fields (minute hour day-of-month month day-of-week"},
      {"0 20 * *", "not 4"},
      {"60 * * * *", "field 1 (minute): 60 is out of range 0-59"},
      {"0 24 * * *", "field 2 (hour): 24 is out of range 0-23"},
      {"0 0 32 * *", "field 3 (day-of-month): 32 is out of range 1-31"},
      {"0 0 0 * *", "field 3 (day-of-month): 0 is out of range 1-31"},
      {"0 0 * 13 *", "field 4 (month): 13 is out of range 1-12 or JAN-DEC"},
      {"0 0 * * 8", "field 5 (day-of-week): 8 is out of range 0-7 (0 and 7 are Sunday)"},
      {"*/0 * * * *", "field 1 (minute): step \"0\" is not a number from 1 to 60"},
      {"*/x * * * *", "step \"x\""},
      {"0 */ * * *", "field 2 (hour): step \"\""},
      {"0 5-1 * * *", "field 2 (hour): range \"5-1\" ends before it starts"},
      {"0 0 * FOO *", "field 4 (month): \"FOO\" is not a value"},
      {"0 0 * * MON-", "field 5 (day-of-week): \"\" is not a value"},
      {"0 0,,1 * * *", "field 2 (hour): empty item"},
      {"@daily", "has 5 fields"},
  };
  for (const Case& c : cases) {
    auto cron = CronSchedule::Parse(c.expr);
    ASSERT_FALSE(cron.ok()) << c.expr;
    EXPECT_THAT(cron.status().message(), HasSubstr(c.message)) << c.expr;
  }
  for (const char* good : {"*/15 * * * *", "0 8 * * 1-5", "0 8 * JAN-mar mon-FRI",
                           "5,35 0-6/2 1,15 * *", "0 0 * * 7", "5/20 * * * *"})
    EXPECT_TRUE(CronSchedule::Parse(good).ok()) << good;
}

TEST(CronNextTest, StepsListsAndRangesInUtc) {
  EXPECT_THAT(Firings("*/15 * * * *", "UTC", "2026-12-01T10:07:00Z", "2026-12-01T11:00:00Z"),
              ElementsAre("2026-12-01T10:15:00Z", "2026-12-01T10:30:00Z", "2026-12-01T10:45:00Z"));
  EXPECT_THAT(Firings("5/20 9 * * *", "UTC", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z"),
              ElementsAre("2026-12-01T09:05:00Z", "2026-12-01T09:25:00Z", "2026-12-01T09:45:00Z"));
  // Strictly after: a firing at `after` itself is not the next one.
  CronSchedule hourly = Cron("0 * * * *");
  EXPECT_EQ(Utc(*hourly.Next(At("2026-12-01T10:00:00Z"), absl::UTCTimeZone())),
            "2026-12-01T11:00:00Z");
  EXPECT_EQ(Utc(*hourly.Next(At("2026-12-01T09:59:59Z"), absl::UTCTimeZone())),
            "2026-12-01T10:00:00Z");
  // Friday 2026-12-04 20:00 -> Monday 20:00.
  EXPECT_EQ(Utc(*Cron("0 20 * * 1-5").Next(At("2026-12-04T20:00:00Z"), absl::UTCTimeZone())),
            "2026-12-07T20:00:00Z");
  // New Year.
  EXPECT_EQ(Utc(*Cron("0 0 1 JAN *").Next(At("2026-06-15T00:00:00Z"), absl::UTCTimeZone())),
            "2027-01-01T00:00:00Z");
}

TEST(CronNextTest, WeekdayRangesNamesAndBothSundays) {
  // 2026-01-05 is a Monday.
  const char* from = "2026-01-05T00:00:00Z";
  const char* to = "2026-01-19T00:00:00Z";
  auto workdays = Firings("0 8 * * 1-5", "UTC", from, to);
  EXPECT_EQ(workdays.size(), 10u);
  EXPECT_EQ(Firings("0 8 * * MON-FRI", "UTC", from, to), workdays);
  for (const std::string& t : workdays) {
    absl::CivilDay d = absl::ToCivilDay(At(t), absl::UTCTimeZone());
    EXPECT_NE(absl::GetWeekday(d), absl::Weekday::saturday) << t;
    EXPECT_NE(absl::GetWeekday(d), absl::Weekday::sunday) << t;
  }
  EXPECT_THAT(Firings("0 8 * * 0", "UTC", from, to),
              ElementsAre("2026-01-11T08:00:00Z", "2026-01-18T08:00:00Z"));
  EXPECT_EQ(Firings("0 8 * * 7", "UTC", from, to), Firings("0 8 * * 0", "UTC", from, to));
  EXPECT_EQ(Firings("0 8 * * SUN", "UTC", from, to), Firings("0 8 * * 0", "UTC", from, to));
  EXPECT_THAT(Firings("0 8 * * 5-7", "UTC", from, "2026-01-12T00:00:00Z"),
              ElementsAre("2026-01-09T08:00:00Z", "2026-01-10T08:00:00Z", "2026-01-11T08:00:00Z"));
}

TEST(CronNextTest, BothDayFieldsRestrictedMatchEither) {
  // Vixie cron: the 1st of the month or any Monday (2026-01-01 is a Thursday).
  EXPECT_THAT(Firings("0 0 1 * 1", "UTC", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"),
              ElementsAre("2026-01-01T00:00:00Z", "2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z",
                          "2026-01-19T00:00:00Z", "2026-01-26T00:00:00Z"));
  // A day field written with * is unrestricted: both must match (odd days that are Mondays).
  EXPECT_THAT(Firings("0 0 */2 * 1", "UTC", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"),
              ElementsAre("2026-01-05T00:00:00Z", "2026-01-19T00:00:00Z"));
}

TEST(CronNextTest, RareAndImpossibleDays) {
  EXPECT_EQ(Utc(*Cron("0 0 29 2 *").Next(At("2026-01-01T00:00:00Z"), absl::UTCTimeZone())),
            "2028-02-29T00:00:00Z");
  EXPECT_FALSE(Cron("0 0 30 2 *").Next(At("2026-01-01T00:00:00Z"), absl::UTCTimeZone()));
  EXPECT_FALSE(Cron("0 0 31 4,6,9,11 *").Next(At("2026-01-01T00:00:00Z"), absl::UTCTimeZone()));
}

TEST(CronNextTest, BerlinSpringForwardFiresOnceAtTheTransition) {
  // 2026-03-29: 02:00 CET -> 03:00 CEST; 02:30 does not exist and fires at 03:00 local.
  EXPECT_THAT(
      Firings("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", "2026-03-31T00:00:00Z"),
      ElementsAre("2026-03-29T01:00:00Z",    // 03:00 CEST
                  "2026-03-30T00:30:00Z"));  // 02:30 CEST
  // Every half hour: 02:00 and 02:30 collapse into 03:00, which fires once; no day skipped.
  EXPECT_THAT(
      Firings("*/30 * * * *", "Europe/Berlin", "2026-03-28T23:00:00Z", "2026-03-29T02:00:00Z"),
      ElementsAre("2026-03-28T23:00:00Z", "2026-03-28T23:30:00Z", "2026-03-29T00:00:00Z",
                  "2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z"));
}

TEST(CronNextTest, BerlinFallBackFiresOnceAtTheFirstOccurrence) {
  // 2026-10-25: 03:00 CEST -> 02:00 CET; 02:30 happens twice and fires at the first.
  EXPECT_THAT(
      Firings("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", "2026-10-27T00:00:00Z"),
      ElementsAre("2026-10-25T00:30:00Z",    // 02:30 CEST, the first 02:30
                  "2026-10-26T01:30:00Z"));  // 02:30 CET
  // Every half hour from 00:00 to 04:00 local: 8 civil times, 8 firings, over 5 real hours.
  auto night =
      Firings("*/30 * * * *", "Europe/Berlin", "2026-10-24T22:00:00Z", "2026-10-25T03:00:00Z");
  EXPECT_THAT(night,
              ElementsAre("2026-10-24T22:00:00Z", "2026-10-24T22:30:00Z", "2026-10-24T23:00:00Z",
                          "2026-10-24T23:30:00Z", "2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z",
                          "2026-10-25T02:00:00Z", "2026-10-25T02:30:00Z"));
  // Asked from inside the second 02:xx, the repeated 02:30 does not fire again.
  EXPECT_EQ(Utc(*Cron("30 2 * * *").Next(At("2026-10-25T01:10:00Z"), Zone("Europe/Berlin"))),
            "2026-10-26T01:30:00Z");
}

TEST(CronNextTest, NewYorkTransitions) {
  // 2026-03-08: 02:00 EST -> 03:00 EDT.
  EXPECT_THAT(
      Firings("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", "2026-03-10T00:00:00Z"),
      ElementsAre("2026-03-08T07:00:00Z",    // 03:00 EDT
                  "2026-03-09T06:30:00Z"));  // 02:30 EDT
  // 2026-11-01: 02:00 EDT -> 01:00 EST; 01:30 fires once, at 01:30 EDT.
  EXPECT_THAT(
      Firings("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", "2026-11-03T00:00:00Z"),
      ElementsAre("2026-11-01T05:30:00Z",    // 01:30 EDT
                  "2026-11-02T06:30:00Z"));  // 01:30 EST
}

TEST(CronNextTest, DailyStopOverAYearFiresOncePerDay) {
  auto stops = Firings("0 20 * * *", "Europe/Berlin", "2025-12-31T23:00:00Z",
                       "2026-12-31T23:00:00Z");  // the local year 2026
  EXPECT_EQ(stops.size(), 365u);
  std::set<absl::CivilDay> days;
  for (const auto& t : stops) {
    absl::CivilSecond local = absl::ToCivilSecond(At(t), Zone("Europe/Berlin"));
    EXPECT_EQ(local.hour(), 20) << t;
    EXPECT_EQ(local.minute(), 0) << t;
    days.insert(absl::CivilDay(local));
  }
  EXPECT_EQ(days.size(), 365u);
  EXPECT_EQ(
      Firings("0 20 * * *", "America/New_York", "2024-01-01T05:00:00Z", "2025-01-01T05:00:00Z")
          .size(),
      366u);  // a leap year
}

TEST(DeadlineTest, ExpiresAtAndItsStatusField) {
  EXPECT_EQ(Utc(ExpiresAt(At("2026-12-01T19:00:00Z"), seconds(8 * 3600))), "2026-12-02T03:00:00Z");
  LifecyclePolicy profile;
  profile.ttl = TtlPolicy{seconds(8 * 3600), seconds(72 * 3600), PolicyAction::kStop};
  InstanceLifecycle instance;
  EXPECT_EQ(ExpiresAtFor("2026-12-01T19:00:00Z", profile, instance), "2026-12-02T03:00:00Z");
  instance.ttl = seconds(24 * 3600);
  EXPECT_EQ(ExpiresAtFor("2026-12-01T19:00:00Z", profile, instance), "2026-12-02T19:00:00Z");
  EXPECT_EQ(ExpiresAtFor("yesterday", profile, instance), std::nullopt);
  EXPECT_EQ(ExpiresAtFor("2026-12-01T19:00:00Z", LifecyclePolicy{}, InstanceLifecycle{}),
            std::nullopt);
}

TEST(DeadlineTest, WarningTimes) {
  absl::Time start = At("2026-12-01T00:00:00Z");
  EXPECT_THAT(WarningTimes(start + absl::Hours(8), start),
              ElementsAre(start + absl::Hours(7), start + absl::Hours(8) - absl::Minutes(10)));
  EXPECT_THAT(WarningTimes(start + absl::Hours(2), start),
              ElementsAre(start + absl::Hours(1), start + absl::Minutes(110)));
  // A lead is used only when it is at most half of the countdown.
  EXPECT_THAT(WarningTimes(start + absl::Minutes(90), start),
              ElementsAre(start + absl::Minutes(80)));
  EXPECT_THAT(WarningTimes(start + absl::Minutes(20), start),
              ElementsAre(start + absl::Minutes(10)));
  // Shorter: one warning halfway, in whole seconds, at least 1 s before.
  EXPECT_THAT(WarningTimes(start + absl::Minutes(15), start),
              ElementsAre(start + absl::Seconds(450)));
  EXPECT_THAT(WarningTimes(start + absl::Seconds(3), start), ElementsAre(start + absl::Seconds(2)));
  EXPECT_THAT(WarningTimes(start + absl::Seconds(2), start), ElementsAre(start + absl::Seconds(1)));
  EXPECT_THAT(WarningTimes(start + absl::Seconds(1), start), IsEmpty());
  EXPECT_THAT(WarningTimes(start, start), IsEmpty());
  EXPECT_THAT(WarningTimes(start - absl::Hours(1), start), IsEmpty());
}

TEST(DeadlineTest, NextScheduledStartOrStop) {
  SchedulePolicy s{"Europe/Berlin", "0 8 * * 1-5", "0 20 * * 1-5", false};
  // Friday 2026-12-04, 19:00 Berlin (18:00 UTC): the stop at 20:00.
  auto next = NextScheduled(s, At("2026-12-04T18:00:00Z"));
  ASSERT_TRUE(next);
  EXPECT_EQ(Utc(next->time), "2026-12-04T19:00:00Z");
  EXPECT_EQ(next->action, ScheduledAction::kStop);
  // After it: Monday's start at 08:00 Berlin.
  next = NextScheduled(s, next->time);
  ASSERT_TRUE(next);
  EXPECT_EQ(Utc(next->time), "2026-12-07T07:00:00Z");
  EXPECT_EQ(next->action, ScheduledAction::kStart);
  // A schedule that only stops; a tie goes to the stop; nothing to schedule.
  next = NextScheduled({"UTC", "", "0 20 * * *", false}, At("2026-12-04T18:00:00Z"));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->action, ScheduledAction::kStop);
  next = NextScheduled({"UTC", "0 20 * * *", "0 20 * * 5", false}, At("2026-12-04T18:00:00Z"));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->action, ScheduledAction::kStop);
  EXPECT_FALSE(NextScheduled({"UTC", "", "", false}, At("2026-12-04T18:00:00Z")));
}

std::vector<FieldCause> PolicyCauses(const std::string& lifecycle_json) {
  json::object spec{{"lifecycle", json::parse(lifecycle_json)}};
  std::vector<FieldCause> causes;
  ValidateLifecyclePolicy(spec, &causes);
  return causes;
}

// "field: message" of each cause, for matching.
std::vector<std::string> Texts(const std::vector<FieldCause>& causes) {
  std::vector<std::string> out;
  for (const auto& c : causes) out.push_back(c.field + ": " + c.message);
  return out;
}

TEST(ValidateLifecyclePolicyTest, AcceptsTheContractsExample) {
  EXPECT_THAT(Texts(PolicyCauses(R"({"ttl": {"default": "8h", "max": "72h", "action": "Stop"},
      "idle": {"gpuUtilizationBelow": 5, "after": "30m", "action": "Stop"},
      "schedule": {"timezone": "Europe/Berlin", "start": "0 8 * * 1-5",
                   "stop": "0 20 * * 1-5", "allowOptOut": false}})")),
              IsEmpty());
  EXPECT_THAT(
      Texts(PolicyCauses(R"({"ttl": {"action": "Destroy"}, "schedule": {"stop": "0 20 * * *"}})")),
      IsEmpty());
  std::vector<FieldCause> none;
  ValidateLifecyclePolicy(json::object{{"displayName", "no lifecycle"}}, &none);
  EXPECT_THAT(none, IsEmpty());
}

TEST(ValidateLifecyclePolicyTest, CausesNameTheField) {
  using ::testing::AllOf;
  using ::testing::Contains;
  using ::testing::StartsWith;
  auto texts = Texts(PolicyCauses(R"({"ttl": {"default": "0s", "max": "-1h"},
      "idle": {"gpuUtilizationBelow": 150, "after": "1h30m"},
      "schedule": {"timezone": "Mars/Olympus", "start": "0 8 * * 1-5 2026",
                   "stop": "0 24 * * *"}})"));
  EXPECT_THAT(texts, Contains(AllOf(StartsWith("spec.lifecycle.ttl.default: \"0s\""),
                                    HasSubstr("is not a duration"))));
  EXPECT_THAT(texts, Contains(StartsWith("spec.lifecycle.ttl.max: \"-1h\" is not a duration")));
  EXPECT_THAT(texts, Contains(StartsWith("spec.lifecycle.idle.gpuUtilizationBelow: must be a "
                                         "percentage from 0 to 100")));
  EXPECT_THAT(texts, Contains(StartsWith("spec.lifecycle.idle.after: \"1h30m\" is not")));
  EXPECT_THAT(texts,
              Contains(AllOf(StartsWith("spec.lifecycle.schedule.timezone: \"Mars/Olympus\""),
                             HasSubstr("Europe/Berlin or UTC"))));
  EXPECT_THAT(texts,
              Contains(AllOf(StartsWith("spec.lifecycle.schedule.start: \"0 8 * * 1-5 2026\""),
                             HasSubstr("has 5 fields"))));
  EXPECT_THAT(texts, Contains("spec.lifecycle.schedule.stop: \"0 24 * * *\": field 2 (hour): 24 "
                              "is out of range 0-23"));
  EXPECT_EQ(texts.size(), 7u);
}

TEST(ValidateLifecyclePolicyTest, RefusesInconsistentPolicies) {
  EXPECT_THAT(Texts(PolicyCauses(R"({"ttl": {"default": "96h", "max": "72h"}})")),
              ElementsAre("spec.lifecycle.ttl.default: the default 96h is over the maximum 72h "
                          "(spec.lifecycle.ttl.max)"));
  EXPECT_THAT(Texts(PolicyCauses(R"({"schedule": {"timezone": "UTC"}})")),
              ElementsAre(HasSubstr("spec.lifecycle.schedule: set start, stop or both")));
  EXPECT_THAT(Texts(PolicyCauses(R"({"schedule": {"timezone": "", "stop": "0 20 * * *"}})")),
              ElementsAre(HasSubstr("spec.lifecycle.schedule.timezone: \"\" is not a time zone")));
  EXPECT_THAT(Texts(PolicyCauses(R"({"schedule": {"start": "0 8 * * *", "stop": "0 8 * * *"}})")),
              ElementsAre(HasSubstr("spec.lifecycle.schedule.stop: is the same expression")));
  EXPECT_THAT(Texts(PolicyCauses(R"({"schedule": {"stop": "0 0 30 2 *"}})")),
              ElementsAre("spec.lifecycle.schedule.stop: \"0 0 30 2 *\" never fires: no month it "
                          "names has the day it names"));
  EXPECT_THAT(Texts(PolicyCauses(R"({"idle": {"gpuUtilizationBelow": -1}})")),
              ElementsAre(HasSubstr("not -1")));
  EXPECT_THAT(Texts(PolicyCauses(R"({"idle": {"gpuUtilizationBelow": 150.0}})")),
              ElementsAre(HasSubstr("), not 150")));
  // Wrong types are the schema's to report; this check skips them without crashing.
  EXPECT_THAT(Texts(PolicyCauses(R"({"ttl": {"max": 72}, "idle": "x", "schedule": {"stop": 5}})")),
              ElementsAre(HasSubstr("spec.lifecycle.schedule: set start, stop or both")));
}

std::vector<std::string> InstanceCauses(const std::string& lifecycle_json,
                                        const LifecyclePolicy& profile) {
  json::object spec{{"lifecycle", json::parse(lifecycle_json)}};
  std::vector<FieldCause> causes;
  ValidateInstanceLifecycle(spec, profile, &causes);
  return Texts(causes);
}

TEST(ValidateInstanceLifecycleTest, WithinTheProfilesBounds) {
  json::object profile_spec{{"lifecycle", json::parse(R"({"ttl": {"default": "8h", "max": "72h"},
          "schedule": {"timezone": "Europe/Berlin", "stop": "0 20 * * *"}})")}};
  LifecyclePolicy profile = DecodeLifecyclePolicy(profile_spec);
  EXPECT_THAT(InstanceCauses(R"({"ttl": "24h", "scheduleOptOut": false})", profile), IsEmpty());
  EXPECT_THAT(InstanceCauses(R"({"ttl": "72h"})", profile), IsEmpty());
  EXPECT_THAT(
      InstanceCauses(R"({"ttl": "96h"})", profile),
      ElementsAre(HasSubstr("spec.lifecycle.ttl: ttl 96h is over the profile's maximum 72h")));
  EXPECT_THAT(InstanceCauses(R"({"ttl": "0s"})", profile),
              ElementsAre(HasSubstr("spec.lifecycle.ttl: \"0s\" is not a duration")));
  EXPECT_THAT(InstanceCauses(R"({"ttl": "-1h"})", profile),
              ElementsAre(HasSubstr("spec.lifecycle.ttl: \"-1h\" is not a duration")));
  EXPECT_THAT(InstanceCauses(R"({"scheduleOptOut": true})", profile),
              ElementsAre(HasSubstr("spec.lifecycle.scheduleOptOut: Forbidden: the profile's "
                                    "schedule does not allow opting out")));
  profile.schedule->allow_opt_out = true;
  EXPECT_THAT(InstanceCauses(R"({"scheduleOptOut": true})", profile), IsEmpty());
  // Without a maximum any ttl is the instance's to choose.
  EXPECT_THAT(InstanceCauses(R"({"ttl": "30d"})", LifecyclePolicy{}), IsEmpty());
}

}  // namespace
}  // namespace gantry::model
