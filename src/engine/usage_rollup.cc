#include "engine/usage_rollup.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "engine/engine_internal.h"
#include "model/codec.h"

namespace gantry::engine::usage {

namespace json = boost::json;
using Time = std::chrono::system_clock::time_point;

namespace {

enum class Level { kMonth, kDays, kDay };

struct Cell {
  int64_t start_ms = 0;
  std::string user, profile, gpu_type;
  Units units;
};

struct Record {
  std::string name, user, profile, gpu_type;
  int64_t start_ms = 0, end_ms = 0;
  Rates rates;
};

struct Rollup {
  std::string project, name;
  Level level = Level::kMonth;
  Time start;
  std::vector<Cell> cells;       // kMonth, kDays
  std::vector<Record> records;   // kDay
  int64_t resource_version = 0;  // 0: not stored yet
};

const char* PhaseOf(Level l) {
  switch (l) {
    case Level::kMonth:
      return "Month";
    case Level::kDays:
      return "Days";
    case Level::kDay:
      break;
  }
  return "Day";
}

Time FromMs(int64_t ms) { return Time{} + std::chrono::milliseconds(ms); }

// "month-2026-03", "days-2026-03", "day-2026-03-04": the rollup of `level` holding `t`.
std::string NameOf(Level level, Time t) {
  const absl::Time at = absl::FromChrono(t);
  const absl::TimeZone utc = absl::UTCTimeZone();
  if (level == Level::kDay) return "day-" + absl::FormatCivilTime(absl::ToCivilDay(at, utc));
  return std::string(level == Level::kMonth ? "month-" : "days-") +
         absl::FormatCivilTime(absl::ToCivilMonth(at, utc));
}

int64_t IntAt(const json::array& a, size_t k) {
  if (k >= a.size()) return 0;
  return static_cast<int64_t>(model::AsNumber(a[k]).value_or(0));
}

std::string StringAt(const json::array& a, size_t k) {
  return k < a.size() && a[k].is_string() ? std::string(a[k].get_string()) : std::string();
}

json::object Encode(const Rollup& r) {
  json::array items;
  for (const Cell& c : r.cells)
    items.push_back(json::array{c.start_ms, json::string(c.user), json::string(c.profile),
                                json::string(c.gpu_type), c.units.gpu_ms, c.units.cpu_mcore_ms,
                                c.units.memory_mib_ms});
  for (const Record& i : r.records)
    items.push_back(json::array{json::string(i.name), json::string(i.user), json::string(i.profile),
                                json::string(i.gpu_type), i.start_ms, i.end_ms, i.rates.gpus,
                                i.rates.millicores, i.rates.mib});
  json::object meta{{"name", r.name}, {"namespace", r.project}, {"uid", r.project + "/" + r.name}};
  return json::object{
      {"apiVersion", "paas.gantry.dev/v1"},
      {"kind", kUsageRollupKind},
      {"metadata", std::move(meta)},
      {"spec", json::object{{"start", FormatMillis(r.start)}}},
      {"status", json::object{{"phase", PhaseOf(r.level)},
                              {r.level == Level::kDay ? "intervals" : "cells", std::move(items)}}}};
}

void DecodeItems(const json::array& items, Rollup* r) {
  for (const auto& v : items) {
    if (!v.is_array()) continue;
    const json::array& a = v.get_array();
    if (r->level == Level::kDay) {
      r->records.push_back(Record{StringAt(a, 0), StringAt(a, 1), StringAt(a, 2), StringAt(a, 3),
                                  IntAt(a, 4), IntAt(a, 5),
                                  Rates{IntAt(a, 6), IntAt(a, 7), IntAt(a, 8)}});
    } else {
      r->cells.push_back(Cell{IntAt(a, 0), StringAt(a, 1), StringAt(a, 2), StringAt(a, 3),
                              Units{IntAt(a, 4), IntAt(a, 5), IntAt(a, 6)}});
    }
  }
}

std::optional<Rollup> Decode(const json::object& o) {
  Rollup r;
  r.project = model::GetString(o, "metadata.namespace");
  r.name = model::GetString(o, "metadata.name");
  const std::string rv = model::GetString(o, "metadata.resourceVersion");
  r.resource_version = rv.empty() ? 0 : std::atoll(rv.c_str());
  const std::string phase = model::GetString(o, "status.phase");
  r.level = phase == "Month" ? Level::kMonth : phase == "Days" ? Level::kDays : Level::kDay;
  auto start = ParseTime(model::GetString(o, "spec.start"));
  if (!start) return std::nullopt;
  r.start = *start;
  const json::value* items =
      model::FindPath(o, r.level == Level::kDay ? "status.intervals" : "status.cells");
  if (items && items->is_array()) DecodeItems(items->get_array(), &r);
  return r;
}

void AddCell(Rollup* r, int64_t start_ms, const Interval& i, const Units& u) {
  for (Cell& c : r->cells) {
    if (c.start_ms != start_ms || c.user != i.user || c.profile != i.profile_name ||
        c.gpu_type != i.gpu_type)
      continue;
    c.units.gpu_ms += u.gpu_ms;
    c.units.cpu_mcore_ms += u.cpu_mcore_ms;
    c.units.memory_mib_ms += u.memory_mib_ms;
    return;
  }
  r->cells.push_back(Cell{start_ms, i.user, i.profile_name, i.gpu_type, u});
}

// The rollups one commit touches, each read once from the store (or new).
class Touched {
 public:
  explicit Touched(store::Store& store) : store_(store) {}

  absl::StatusOr<Rollup*> At(const std::string& project, Level level, Time t) {
    const std::string name = NameOf(level, t);
    auto it = rollups_.find({project, name});
    if (it != rollups_.end()) return &it->second;
    Rollup r;
    auto stored = store_.Get(kUsageRollupKind, project, name);
    if (stored.ok()) {
      auto decoded = Decode(*stored);
      if (!decoded) return absl::DataLossError("usage rollup " + name + " has no start");
      r = *std::move(decoded);
    } else if (!absl::IsNotFound(stored.status())) {
      return stored.status();
    }
    r.project = project;
    r.name = name;
    r.level = level;
    r.start = level == Level::kDay ? BucketStart(Step::kDay, t) : BucketStart(Step::kMonth, t);
    return &rollups_.emplace(std::make_pair(project, name), std::move(r)).first->second;
  }

  std::vector<store::Write> Writes() const {
    std::vector<store::Write> out;
    for (const auto& [key, r] : rollups_)
      out.push_back({r.resource_version ? store::Write::Op::kUpdate : store::Write::Op::kCreate,
                     kUsageRollupKind, Encode(r), r.resource_version, 0});
    return out;
  }

 private:
  store::Store& store_;
  std::map<std::pair<std::string, std::string>, Rollup> rollups_;
};

// Adds the part [s, e) of `i` (inside one month) to the month's rollups.
absl::Status AddMonthPart(Touched& touched, const Interval& i, Time s, Time e) {
  const Rates rates = RatesOf(i);
  ASSIGN_OR_RETURN(Rollup * month, touched.At(i.project, Level::kMonth, s));
  AddCell(month, EpochMs(month->start), i, UnitsOf(rates, EpochMs(e) - EpochMs(s)));
  ASSIGN_OR_RETURN(Rollup * days, touched.At(i.project, Level::kDays, s));
  for (Time d = BucketStart(Step::kDay, s); d < e; d = NextBucket(Step::kDay, d)) {
    const Time ds = std::max(s, d), de = std::min(e, NextBucket(Step::kDay, d));
    AddCell(days, EpochMs(d), i, UnitsOf(rates, EpochMs(de) - EpochMs(ds)));
    ASSIGN_OR_RETURN(Rollup * day, touched.At(i.project, Level::kDay, d));
    day->records.push_back(Record{i.name, i.user, i.profile_name, i.gpu_type, EpochMs(i.start),
                                  EpochMs(*i.end), rates});
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<store::Write>> RollupWrites(store::Store& store,
                                                       const std::vector<Interval>& closed) {
  Touched touched(store);
  for (const Interval& i : closed) {
    if (!i.end || *i.end <= i.start) continue;
    for (Time m = BucketStart(Step::kMonth, i.start); m < *i.end; m = NextBucket(Step::kMonth, m))
      RETURN_IF_ERROR(AddMonthPart(touched, i, std::max(i.start, m),
                                   std::min(*i.end, NextBucket(Step::kMonth, m))));
  }
  return touched.Writes();
}

namespace {

// One commit of up to 200 legacy intervals: OK, ABORTED/ALREADY_EXISTS (read again) or the
// store's error.
absl::Status UpgradeSome(store::Store& store, const std::vector<Interval>& legacy) {
  std::vector<store::Write> writes;
  std::vector<Interval> closed;
  for (const Interval& i : legacy) {
    writes.push_back(
        {store::Write::Op::kUpdate, kUsageIntervalKind, EncodeInterval(i), i.resource_version, 0});
    if (i.end) closed.push_back(i);
  }
  ASSIGN_OR_RETURN(auto rollups, RollupWrites(store, closed));
  for (auto& w : rollups) writes.push_back(std::move(w));
  return store.Commit(std::move(writes)).status();
}

}  // namespace

absl::Status UpgradeLedger(store::Store& store) {
  // status.phase is an indexed column: finding none is one index look-up at each start.
  const std::vector<store::FieldFilter> unphased = {{"status.phase", true, ""}};
  for (int attempt = 0; attempt < internal::kMaxRetries; ++attempt) {
    ASSIGN_OR_RETURN(int64_t count, store.Count(kUsageIntervalKind, std::nullopt, unphased));
    if (count == 0) return absl::OkStatus();
    store::ListOptions q;
    q.kind = kUsageIntervalKind;
    q.fields = unphased;
    q.limit = 200;
    ASSIGN_OR_RETURN(store::ListResult page, store.List(q));
    std::vector<Interval> legacy;
    for (const auto& o : page.items)
      if (auto i = DecodeInterval(o); i.ok()) legacy.push_back(*std::move(i));
    if (legacy.empty()) return absl::OkStatus();  // none readable: reports skip them too
    absl::Status s = UpgradeSome(store, legacy);
    if (s.ok())
      attempt = -1;  // progress: the next page
    else if (!IsRollupRace(s))
      return s;
  }
  return absl::AbortedError("the usage ledger kept changing while it was upgraded");
}

absl::StatusOr<std::vector<Interval>> ListOpen(store::Store& store,
                                               const std::optional<std::string>& project) {
  store::ListOptions q;
  q.kind = kUsageIntervalKind;
  q.ns = project;
  q.fields = {{"status.phase", true, "Open"}};
  ASSIGN_OR_RETURN(auto listed, internal::ListAll(store, q));
  std::vector<Interval> out;
  for (const auto& o : listed)
    if (auto i = DecodeInterval(o); i.ok() && !i->end) out.push_back(*std::move(i));
  std::sort(out.begin(), out.end(), [](const Interval& a, const Interval& b) {
    return std::tie(a.project, a.name) < std::tie(b.project, b.name);
  });
  return out;
}

namespace {

// What a report reads: whole months, whole days and the rest, day by day.
struct Plan {
  std::set<int64_t> months, days;  // their starts, in epoch milliseconds
  struct Span {
    Time day, s, e;
  };
  std::vector<Span> spans;
};

Plan PlanOf(const ReportQuery& q) {
  Plan plan;
  const bool by_month = q.step == Step::kNone || q.step == Step::kMonth;
  for (Time t = q.from; t < q.to;) {
    const Time month = BucketStart(Step::kMonth, t), next_month = NextBucket(Step::kMonth, month);
    const Time day = BucketStart(Step::kDay, t), next_day = NextBucket(Step::kDay, day);
    if (by_month && t == month && next_month <= q.to) {
      plan.months.insert(EpochMs(month));
      t = next_month;
    } else if (q.step != Step::kHour && t == day && next_day <= q.to) {
      plan.days.insert(EpochMs(day));
      t = next_day;
    } else {
      const Time e = std::min(next_day, q.to);
      plan.spans.push_back({day, t, e});
      t = e;
    }
  }
  return plan;
}

class TallyPass {
 public:
  TallyPass(store::Store& store, const ReportQuery& q, const std::optional<std::string>& project,
            const UsageFilter& sees, int64_t since)
      : store_(store), project_(project), sees_(sees), since_(since), builder_(q) {}

  // False when a rollup it used changed after `since`.
  absl::StatusOr<bool> Rollups(const Plan& plan) {
    if (!plan.months.empty()) {
      ASSIGN_OR_RETURN(auto months, Read({"status.phase", true, "Month"}));
      for (const Rollup& r : months)
        if (plan.months.count(EpochMs(r.start))) AddCells(r, plan.months);
    }
    std::set<std::string> months_of_days;
    for (int64_t d : plan.days) months_of_days.insert(NameOf(Level::kDays, FromMs(d)));
    for (const std::string& name : months_of_days) {
      ASSIGN_OR_RETURN(auto days, Read({"metadata.name", true, name}));
      for (const Rollup& r : days) AddCells(r, plan.days);
    }
    for (const Plan::Span& span : plan.spans) {
      ASSIGN_OR_RETURN(auto day, Read({"metadata.name", true, NameOf(Level::kDay, span.day)}));
      for (const Rollup& r : day) AddRecords(r, span);
    }
    return !changed_;
  }

  ReportBuilder& builder() { return builder_; }

 private:
  absl::StatusOr<std::vector<Rollup>> Read(store::FieldFilter f) {
    store::ListOptions q;
    q.kind = kUsageRollupKind;
    q.ns = project_;
    q.fields = {std::move(f)};
    ASSIGN_OR_RETURN(auto listed, internal::ListAll(store_, q));
    std::vector<Rollup> out;
    for (const auto& o : listed)
      if (auto r = Decode(o)) out.push_back(*std::move(r));
    return out;
  }

  void AddCells(const Rollup& r, const std::set<int64_t>& starts) {
    if (r.resource_version > since_) changed_ = true;
    for (const Cell& c : r.cells)
      if (starts.count(c.start_ms) && sees_(r.project, c.user))
        builder_.AddUnits(Meter{r.project, c.user, c.profile, c.gpu_type}, FromMs(c.start_ms),
                          c.units);
  }

  void AddRecords(const Rollup& r, const Plan::Span& span) {
    if (r.resource_version > since_) changed_ = true;
    for (const Record& i : r.records) {
      const Time s = std::max(FromMs(i.start_ms), span.s), e = std::min(FromMs(i.end_ms), span.e);
      if (e > s && sees_(r.project, i.user))
        builder_.AddSpan(Meter{r.project, i.user, i.profile, i.gpu_type}, i.rates, s, e);
    }
  }

  store::Store& store_;
  const std::optional<std::string>& project_;
  const UsageFilter& sees_;
  const int64_t since_;
  ReportBuilder builder_;
  bool changed_ = false;
};

bool SameOpen(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k].project != b[k].project || a[k].name != b[k].name ||
        a[k].resource_version != b[k].resource_version)
      return false;
  return true;
}

}  // namespace

absl::StatusOr<ReportBuilder> Tally(store::Store& store, const ReportQuery& query,
                                    const std::optional<std::string>& project, Time now,
                                    const UsageFilter& sees) {
  const Plan plan = PlanOf(query);
  for (int attempt = 0; attempt < internal::kMaxRetries; ++attempt) {
    const int64_t since = store.CurrentResourceVersion();
    ASSIGN_OR_RETURN(auto open, ListOpen(store, project));
    TallyPass pass(store, query, project, sees, since);
    ASSIGN_OR_RETURN(bool unchanged, pass.Rollups(plan));
    ASSIGN_OR_RETURN(auto open_after, ListOpen(store, project));
    if (!unchanged || !SameOpen(open, open_after)) continue;  // an interval closed meanwhile
    for (const Interval& i : open)
      if (sees(i.project, i.user)) pass.builder().AddInterval(i, now);
    return std::move(pass.builder());
  }
  return absl::AbortedError("the usage ledger kept changing while it was read");
}

absl::StatusOr<ReportBuilder> TallyOrScan(store::Store& store, const ReportQuery& query,
                                          const std::optional<std::string>& project, Time now,
                                          const UsageFilter& sees) {
  auto tally = Tally(store, query, project, now, sees);
  if (tally.ok() || !absl::IsAborted(tally.status())) return tally;
  ASSIGN_OR_RETURN(auto intervals, ListIntervals(store, project));
  ReportBuilder builder(query);
  for (const Interval& i : intervals)
    if (sees(i.project, i.user)) builder.AddInterval(i, now);
  return builder;
}

}  // namespace gantry::engine::usage
