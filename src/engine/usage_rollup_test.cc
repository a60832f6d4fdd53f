// Usage rollups (usage_rollup.h) against the raw intervals, on a real SqliteStore and a
// FakeClock: random intervals are opened and closed through the ledger's own writes
// (OpenWrite's form, CloseWrites), then reports of random ranges, steps, groupings and
// filters computed from the rollups (Tally) must equal, to the last digit, the report of
// every interval (BuildReport over ListIntervals).
#include "engine/usage_rollup.h"

#include <functional>
#include <random>

#include "common/fake_clock.h"
#include "engine/store_test_fixture.h"
#include "gtest/gtest.h"
#include "model/codec.h"

namespace gantry::engine::usage {
namespace {

namespace json = boost::json;
using std::chrono::milliseconds;
using Time = std::chrono::system_clock::time_point;

class UsageRollupTest : public StoreFixture {
 protected:
  // An open interval of instance `n`, as a claim writes it.
  Interval Open(int n, Time start, int gpus = -1) {
    Interval i;
    i.project = "p" + std::to_string(rng_() % 3);
    i.name = "run-" + std::to_string(n) + "-1";
    i.instance_kind = "ComputeInstance";
    i.instance_name = "nb-" + std::to_string(n);
    i.instance_uid = "uid-" + std::to_string(n);
    i.user = "u" + std::to_string(rng_() % 4);
    i.profile_name = rng_() % 2 ? "small" : "large";
    if (gpus < 0) gpus = static_cast<int>(rng_() % 5);  // 0: CPU and memory only
    i.gpu_type = gpus == 0 ? "" : rng_() % 2 ? "h100" : "a100";
    i.gpus = gpus;
    i.cpu = 0.25 * static_cast<double>(rng_() % 64);
    i.memory_gib = 0.5 * static_cast<double>(rng_() % 256);
    i.run = "run-" + std::to_string(n);
    i.start = start;
    Commit({{store::Write::Op::kCreate, kUsageIntervalKind, EncodeInterval(i), 0, 0}});
    return i;
  }

  void Commit(std::vector<store::Write> writes) {
    auto stored = store_->Commit(std::move(writes));
    ASSERT_TRUE(stored.ok()) << stored.status();
  }

  // Up to 90 days after the clock's start, to the millisecond.
  Time RandomTime() {
    return origin_ + milliseconds(static_cast<int64_t>(rng_() % (90LL * 24 * 3600 * 1000)));
  }

  // `n` intervals, most closed through CloseWrites (some at their start), the rest open;
  // the clock ends after them all.
  void Fill(int n) {
    struct Planned {
      Interval i;
      Time end;
    };
    std::vector<Planned> closes;
    for (int k = 0; k < n; ++k) {
      Time start = RandomTime();
      const int64_t kind = rng_() % 10;
      const int64_t length_ms = kind < 5   ? rng_() % (6LL * 3600 * 1000)        // hours
                                : kind < 8 ? rng_() % (20LL * 24 * 3600 * 1000)  // days
                                : kind < 9 ? 0                                   // failed at once
                                           : -1;                                 // still open
      Interval i = Open(k, start);
      if (length_ms >= 0) closes.push_back({i, start + milliseconds(length_ms)});
    }
    std::shuffle(closes.begin(), closes.end(), rng_);  // closes commit in any order
    for (const Planned& c : closes) {
      auto writes = CloseWrites(*store_, c.i.project, c.i.instance_uid, c.end);
      ASSERT_TRUE(writes.ok()) << writes.status();
      ASSERT_FALSE(writes->empty());
      Commit(*std::move(writes));
    }
    clock_.Advance(std::chrono::hours(24 * 120));
  }

  // The report of `q` both ways, as JSON text; its total GPU-seconds.
  double ExpectSame(const ReportQuery& q, const std::optional<std::string>& project,
                    const UsageFilter& sees, const std::optional<RateCard>& card) {
    const Time now = clock_.Now() - std::chrono::hours(24 * 40);  // some intervals still open
    auto tally = Tally(*store_, q, project, now, sees);
    EXPECT_TRUE(tally.ok()) << tally.status();
    auto all = ListIntervals(*store_, project);
    EXPECT_TRUE(all.ok()) << all.status();
    if (!tally.ok() || !all.ok()) return -1;
    std::vector<Interval> seen;
    for (const Interval& i : *all)
      if (sees(i.project, i.user)) seen.push_back(i);
    const std::string raw = json::serialize(BuildReport(q, seen, now, card));
    EXPECT_EQ(json::serialize(tally->Build(now, card)), raw);
    return tally->Totals(card).gpu_seconds;
  }

  ReportQuery RandomQuery() {
    static const std::vector<std::vector<std::string>> groupings = {
        {},
        {"project"},
        {"project", "gpuType"},
        {"user", "profile"},
        {"project", "user", "profile", "gpuType"}};
    ReportQuery q;
    q.group_by = groupings[rng_() % groupings.size()];
    q.step = static_cast<Step>(rng_() % 4);
    Time a = RandomTime() - std::chrono::hours(24 * 10), b = RandomTime() + std::chrono::hours(24);
    if (rng_() % 3 == 0) a = BucketStart(Step::kMonth, a);  // whole months too
    if (rng_() % 3 == 0) b = BucketStart(Step::kDay, b);
    if (q.step == Step::kHour && b - a > std::chrono::hours(24 * 30))
      b = a + std::chrono::hours(24 * 30) + milliseconds(rng_() % 3600000);
    q.from = std::min(a, b);
    q.to = std::max(a, b) + milliseconds(1);
    return q;
  }

  const Time origin_ = Time{} + std::chrono::hours(24 * 20454) + milliseconds(1234);  // 2026-01-01
  FakeClock clock_{origin_};
  std::mt19937_64 rng_{19};
};

const UsageFilter kEveryone = [](const std::string&, const std::string&) { return true; };

// A Store that runs `before_list` before each List (another replica's commit between two of
// a report's reads) and forwards everything to `inner`.
class HookedStore final : public store::Store {
 public:
  explicit HookedStore(store::Store& inner) : inner_(inner) {}
  std::function<void(const store::ListOptions&)> before_list;

  absl::StatusOr<json::object> Get(const std::string& k, const std::string& ns,
                                   const std::string& n) override {
    return inner_.Get(k, ns, n);
  }
  absl::StatusOr<store::ListResult> List(const store::ListOptions& o) override {
    if (before_list) before_list(o);
    return inner_.List(o);
  }
  absl::StatusOr<std::vector<json::object>> Commit(std::vector<store::Write> w,
                                                   store::Durability d) override {
    return inner_.Commit(std::move(w), d);
  }
  absl::StatusOr<std::vector<store::Event>> EventsSince(int64_t after, size_t max) override {
    return inner_.EventsSince(after, max);
  }
  int64_t CurrentResourceVersion() override { return inner_.CurrentResourceVersion(); }
  absl::StatusOr<std::vector<store::Revision>> ListRevisions(const std::string& k,
                                                             const std::string& ns,
                                                             const std::string& n) override {
    return inner_.ListRevisions(k, ns, n);
  }
  absl::StatusOr<store::Revision> GetRevision(const std::string& k, const std::string& ns,
                                              const std::string& n, int64_t r) override {
    return inner_.GetRevision(k, ns, n, r);
  }
  absl::StatusOr<int64_t> Count(const std::string& k, std::optional<std::string> ns,
                                const std::vector<store::FieldFilter>& f) override {
    return inner_.Count(k, std::move(ns), f);
  }
  void SetCommitObserver(std::function<void(const std::vector<store::Event>&)> o) override {
    inner_.SetCommitObserver(std::move(o));
  }
  absl::Status Ping() override { return inner_.Ping(); }

 private:
  store::Store& inner_;
};

TEST_F(UsageRollupTest, ReportsFromRollupsEqualReportsFromEveryInterval) {
  ASSERT_NO_FATAL_FAILURE(Fill(250));
  const RateCard card{"default", "EUR", {{"h100", 2.5}, {"a100", 1.1}}, 0.031, 0.0047};
  int counted = 0;  // queries that found usage: the comparison is not of empty reports
  for (int k = 0; k < 30; ++k) {
    SCOPED_TRACE("query " + std::to_string(k));
    const ReportQuery q = RandomQuery();
    if (ExpectSame(q, std::nullopt, kEveryone, card) > 0) ++counted;
    ExpectSame(q, "p1", kEveryone, std::nullopt);
    ExpectSame(
        q, std::nullopt,
        [](const std::string& project, const std::string& user) {
          return project == "p2" || user == "u1";
        },
        card);
  }
  EXPECT_GE(counted, 25);
}

TEST_F(UsageRollupTest, TheWholeLedgerAndOneMonthAgree) {
  ASSERT_NO_FATAL_FAILURE(Fill(150));
  ReportQuery q;
  q.to = clock_.Now();
  q.group_by = {"project", "gpuType"};
  ExpectSame(q, std::nullopt, kEveryone, std::nullopt);  // what /metrics shows
  q.from = BucketStart(Step::kMonth, clock_.Now() - std::chrono::hours(24 * 100));
  q.to = NextBucket(Step::kMonth, q.from);
  q.step = Step::kDay;
  ExpectSame(q, std::nullopt, kEveryone, RateCard{"c", "USD", {{"h100", 3}}, 0, 0});
}

TEST_F(UsageRollupTest, AnIntervalOverMonthsIsCountedOnceInEachPiece) {
  const Time start = *ParseTime("2026-01-31T23:30:00.500Z");
  Interval i = Open(1, start, /*gpus=*/2);
  auto writes = CloseWrites(*store_, i.project, i.instance_uid, *ParseTime("2026-03-01T00:30:00Z"));
  ASSERT_TRUE(writes.ok()) << writes.status();
  // The interval, 3 months, 3 months of days and 30 days (Jan 31, Feb 1..28, Mar 1).
  EXPECT_EQ(writes->size(), 1u + 3 + 3 + 30);
  Commit(*std::move(writes));
  ReportQuery q;
  q.from = *ParseTime("2026-01-01T00:00:00Z");
  q.to = *ParseTime("2026-04-01T00:00:00Z");
  q.group_by = {"project"};
  q.step = Step::kMonth;
  ExpectSame(q, std::nullopt, kEveryone, std::nullopt);
  auto tally = Tally(*store_, q, std::nullopt, clock_.Now(), kEveryone);
  ASSERT_TRUE(tally.ok()) << tally.status();
  const auto rows = tally->Rows(std::nullopt);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].gpu_seconds, 2 * 1799.5);
  EXPECT_EQ(rows[1].gpu_seconds, 2 * 28 * 86400.0);
  EXPECT_EQ(rows[2].gpu_seconds, 2 * 1800.0);
}

TEST_F(UsageRollupTest, ACloseWhileAReportReadsIsCountedOnce) {
  ASSERT_NO_FATAL_FAILURE(Fill(60));
  // Two intervals still open, from ten days before `now`.
  const Time now = clock_.Now();
  Interval a = Open(1000, now - std::chrono::hours(240), 2);
  Interval b = Open(1001, now - std::chrono::hours(240), 3);
  ReportQuery q;
  q.from = now - std::chrono::hours(24 * 60);
  q.to = now;
  q.group_by = {"project", "user"};
  HookedStore hooked(*store_);
  int closes = 0;
  Interval* closing[] = {&a, &b};
  // Closes one interval between two of the report's reads, twice: after its first read of
  // the open intervals, and in the middle of its rollups (another replica's finish).
  hooked.before_list = [&](const store::ListOptions& o) {
    if (o.kind != kUsageRollupKind || closes >= 2) return;
    const bool by_name = !o.fields.empty() && o.fields[0].field == "metadata.name";
    if (closes == 1 && !by_name) return;  // the second: a read of days after the months
    const Interval& i = *closing[closes++];
    auto writes = CloseWrites(*store_, i.project, i.instance_uid, now - std::chrono::hours(1));
    ASSERT_TRUE(writes.ok()) << writes.status();
    Commit(*std::move(writes));
  };
  auto tally = Tally(hooked, q, std::nullopt, now, kEveryone);
  ASSERT_TRUE(tally.ok()) << tally.status();
  EXPECT_EQ(closes, 2);
  auto all = ListIntervals(*store_, std::nullopt);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(json::serialize(tally->Build(now, std::nullopt)),
            json::serialize(BuildReport(q, *all, now, std::nullopt)));
}

TEST_F(UsageRollupTest, ALedgerFromBeforeTheRollupsIsUpgradedOnce) {
  // Intervals as a gantryd without rollups stored them: no status.phase, no rollups.
  std::vector<store::Write> legacy;
  for (int k = 0; k < 450; ++k) {
    Interval i;
    i.project = "p" + std::to_string(k % 3);
    i.name = "old-" + std::to_string(k);
    i.instance_uid = "old-uid-" + std::to_string(k);
    i.user = "u" + std::to_string(k % 4);
    i.gpu_type = "h100";
    i.gpus = 1 + k % 4;
    i.cpu = 2;
    i.start = RandomTime();
    if (k % 10) i.end = i.start + std::chrono::minutes(1 + 7 * k);
    json::object o = EncodeInterval(i);
    o["status"].as_object().erase("phase");
    legacy.push_back({store::Write::Op::kCreate, kUsageIntervalKind, std::move(o), 0, 0});
  }
  Commit(std::move(legacy));
  ASSERT_TRUE(UpgradeLedger(*store_).ok());
  const int64_t rv = store_->CurrentResourceVersion();
  ASSERT_TRUE(UpgradeLedger(*store_).ok());  // nothing left to do: nothing written
  EXPECT_EQ(store_->CurrentResourceVersion(), rv);
  auto open = ListOpen(*store_, std::nullopt);
  ASSERT_TRUE(open.ok()) << open.status();
  EXPECT_EQ(open->size(), 45u);
  ReportQuery q;
  q.from = origin_;
  q.to = origin_ + std::chrono::hours(24 * 200);
  q.group_by = {"project", "user"};
  q.step = Step::kMonth;
  clock_.Advance(std::chrono::hours(24 * 150));
  EXPECT_GT(ExpectSame(q, std::nullopt, kEveryone, std::nullopt), 0);
}

}  // namespace
}  // namespace gantry::engine::usage
