// Usage rollups (docs/usage.md "Rollups"): the closed intervals of the usage ledger
// (usage_ledger.h) summed per project, so that a report over a year of a large fleet reads a
// few hundred small objects instead of every interval. Stored as objects of the internal kind
// UsageRollup in the interval's project, written in the same transaction as the close of the
// intervals they sum (CloseWrites), so a rollup counts an interval exactly when the ledger
// says it is closed:
//
//   month-2026-03     status.phase Month: one cell per (user, profile, gpuType) for the month
//   days-2026-03      status.phase Days: one cell per (day, user, profile, gpuType)
//   day-2026-03-04    status.phase Day: the closed intervals overlapping that day, compact
//
// A cell is [startMs, user, profile, gpuType, gpuMs, cpuMillicoreMs, memoryMiBMs]; a day's
// interval [name, user, profile, gpuType, startMs, endMs, gpus, millicores, mib] (times in
// milliseconds since the epoch, the units of usage_report.h Units).
//
// Tally answers a report from them: whole months (when the step is month or none) from Month
// objects, whole days from Days objects, what is left (the partial days at `from` and `to`, or
// every day for an hourly step) from Day objects cut to the range, and open intervals
// (status.phase Open, indexed) until now. It reads without a snapshot, so it checks that no
// rollup it read changed after it began and that the open intervals are the same ones after
// as before; else it reads again.
//
// Thread-safety: free functions over a thread-safe Store.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/usage_ledger.h"
#include "engine/usage_report.h"
#include "store/store.h"

namespace gantry::engine::usage {

inline constexpr char kUsageRollupKind[] = "UsageRollup";

// The writes that add the closed intervals `closed` (each with an end) to the rollups of
// their projects: one create or update (a test-and-set on its resourceVersion) per rollup
// object touched. Appended to the commit that closes them; a concurrent close of another
// interval of the same project and month makes that commit fail with ABORTED (409 Conflict)
// or ALREADY_EXISTS, and the caller retries it.
absl::StatusOr<std::vector<store::Write>> RollupWrites(store::Store& store,
                                                       const std::vector<Interval>& closed);

// Brings a ledger written before the rollups up to date: every interval without
// status.phase gets it and, when closed, is added to the rollups in the same commit, 200 at
// a time (a test-and-set on each interval, so a second replica doing the same, or a close
// meanwhile, makes one of them read again). Nothing to do is one indexed count. Engine::Start
// calls it before recovery. All replicas must run a gantryd with rollups (an older one keeps
// writing intervals without them).
absl::Status UpgradeLedger(store::Store& store);

// Whether a report may show the usage of (project, user): the caller's authorization.
using UsageFilter = std::function<bool(const std::string& project, const std::string& user)>;

// The open intervals of `project` (every project when nullopt).
absl::StatusOr<std::vector<Interval>> ListOpen(store::Store& store,
                                               const std::optional<std::string>& project);

// The report of `query` over the ledger of `project` (every project when nullopt) at `now`,
// with only the usage `sees` allows, from the rollups and the open intervals: the same
// figures as BuildReport over every interval. ABORTED when the ledger kept changing while
// it was read.
absl::StatusOr<ReportBuilder> Tally(store::Store& store, const ReportQuery& query,
                                    const std::optional<std::string>& project,
                                    std::chrono::system_clock::time_point now,
                                    const UsageFilter& sees);

// Tally, or when the ledger kept changing while it was read (ABORTED) the report from every
// interval (ListIntervals; slower, and each interval read once).
absl::StatusOr<ReportBuilder> TallyOrScan(store::Store& store, const ReportQuery& query,
                                          const std::optional<std::string>& project,
                                          std::chrono::system_clock::time_point now,
                                          const UsageFilter& sees);

}  // namespace gantry::engine::usage
