// UsageReport (API.md "Usage and cost", docs/usage.md): what the usage ledger's intervals
// (usage_ledger.h) add up to over [from, to), grouped by project, user, profile and gpuType
// and optionally cut into hour, day or month buckets (UTC), priced by a RateCard.
//
// An interval counts for the part of it inside [from, to) (an open one until `now`), times
// its GPUs for gpuSeconds, its CPU cores for cpuCoreSeconds and its memory for
// memoryGiBSeconds; cost = (gpuSeconds x gpuHourly[gpuType] + cpuCoreSeconds x cpuHourly +
// memoryGiBSeconds x memoryGiBHourly) / 3600, priced per GPU type from the row's sums.
// Sums are kept in integer units (Units: milliseconds, millicores, MiB), so a report from
// raw intervals and one from rollups (usage_rollup.h) give the same figures to the last
// digit.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/usage_ledger.h"

namespace gantry::engine::usage {

inline constexpr char kRateCardKind[] = "RateCard";
// A report cut into more buckets than this is refused (422).
inline constexpr int64_t kMaxBuckets = 10000;

enum class Step { kNone, kHour, kDay, kMonth };

struct ReportQuery {
  std::chrono::system_clock::time_point from, to;  // whole milliseconds
  std::vector<std::string> group_by;  // a subset of project, user, profile, gpuType, in order
  Step step = Step::kNone;
};

// The query of ?from=&to=&groupBy=&step= (absent: from the first of this month UTC, to
// `now`, every key, no buckets; times floored to the millisecond); 422 Invalid naming each
// bad parameter.
absl::StatusOr<ReportQuery> ParseReportQuery(const std::map<std::string, std::string>& params,
                                             std::chrono::system_clock::time_point now);

struct RateCard {
  std::string name;
  std::string currency;
  std::map<std::string, double> gpu_hourly;  // per GPU type
  double cpu_hourly = 0, memory_gib_hourly = 0;
};
RateCard DecodeRateCard(const boost::json::object& stored);
// The rate card that prices reports: the one named "default", else the first by name;
// nullopt when there is none (costs are 0, currency "").
std::optional<RateCard> ChooseRateCard(const std::vector<boost::json::object>& cards);

// What a report groups by, of an interval or a rollup cell.
struct Meter {
  std::string_view project, user, profile, gpu_type;
};
Meter MeterOf(const Interval& i);

// Usage in exact integer units, so that the same usage added in any order and cut at any
// boundaries (raw intervals, day and month rollups: usage_rollup.h) sums to the same figures:
// GPU-milliseconds, millicore-milliseconds (CPU in thousandths of a core) and
// MiB-milliseconds (memory in MiB). Intervals are stored to the millisecond.
struct Units {
  int64_t gpu_ms = 0, cpu_mcore_ms = 0, memory_mib_ms = 0;
};
// What holding `rates` (gpus, millicores, MiB per millisecond) for `ms` milliseconds is.
struct Rates {
  int64_t gpus = 0, millicores = 0, mib = 0;
};
Rates RatesOf(const Interval& i);  // cpu and memoryGiB rounded to millicores and MiB
Units UnitsOf(const Rates& r, int64_t ms);
// Milliseconds since the epoch, floored.
int64_t EpochMs(std::chrono::system_clock::time_point t);

// One row of a report: its bucket's start (the epoch when the report has no step), its
// values of the query's groupBy keys, and its sums, priced.
struct ReportRow {
  std::chrono::system_clock::time_point bucket;
  std::vector<std::string> keys;
  double gpu_seconds = 0, cpu_core_seconds = 0, memory_gib_seconds = 0, cost = 0;
};

// Adds up usage into the rows of a report. Not thread-safe.
class ReportBuilder {
 public:
  explicit ReportBuilder(ReportQuery query);

  // Adds holding `rates` over [s, e) (already inside the query's range), cut into buckets.
  void AddSpan(const Meter& m, const Rates& rates, std::chrono::system_clock::time_point s,
               std::chrono::system_clock::time_point e);
  // Adds `units` used inside the one bucket of the query's step that holds `at`.
  void AddUnits(const Meter& m, std::chrono::system_clock::time_point at, const Units& units);
  // Adds the part of `i` inside the range (an open interval until `now`).
  void AddInterval(const Interval& i, std::chrono::system_clock::time_point now);

  const ReportQuery& query() const { return query_; }
  // The rows sorted by bucket, then keys, priced by `card`; and the totals.
  std::vector<ReportRow> Rows(const std::optional<RateCard>& card) const;
  ReportRow Totals(const std::optional<RateCard>& card) const;
  // The UsageReport object (BuildReport's).
  boost::json::object Build(std::chrono::system_clock::time_point now,
                            const std::optional<RateCard>& card) const;

 private:
  struct Sum {  // wide: a year of a large fleet overflows 64 bits of MiB-milliseconds
    __int128 gpu = 0, cpu = 0, memory = 0;
  };
  using ByType = std::map<std::string, Sum, std::less<>>;  // per GPU type: prices differ
  struct Key {
    int64_t bucket_ms;
    std::vector<std::string> keys;
    bool operator<(const Key& o) const {
      return bucket_ms != o.bucket_ms ? bucket_ms < o.bucket_ms : keys < o.keys;
    }
  };
  static void AddTo(ByType* sums, std::string_view gpu_type, const Units& u);
  static ReportRow Priced(const ByType& sums, const std::optional<RateCard>& card);

  ReportQuery query_;
  std::map<Key, ByType> rows_;
  ByType totals_;
};

// The UsageReport object: {apiVersion, kind, metadata, spec: {from, to, groupBy, step},
// status: {rows: [{<keys>, (bucket), gpuSeconds, cpuCoreSeconds, memoryGiBSeconds, cost}],
// totals: {gpuSeconds, cpuCoreSeconds, memoryGiBSeconds, cost}, currency, rateCard}}.
// Rows are sorted by bucket, then keys. From the raw intervals: the reference that the
// ledger's rollups (usage_rollup.h Tally) must equal.
boost::json::object BuildReport(const ReportQuery& query, const std::vector<Interval>& intervals,
                                std::chrono::system_clock::time_point now,
                                const std::optional<RateCard>& card);

// The start of the bucket of `step` holding `t`, and the start of the next one (UTC).
std::chrono::system_clock::time_point BucketStart(Step step,
                                                  std::chrono::system_clock::time_point t);
std::chrono::system_clock::time_point NextBucket(Step step,
                                                 std::chrono::system_clock::time_point start);

// The rows as CSV (RFC 4180): a header line, then one line per row.
std::string ReportCsv(const boost::json::object& report);

}  // namespace gantry::engine::usage
