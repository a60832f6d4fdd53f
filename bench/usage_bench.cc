// usage_bench: a usage report over a year of a 50-GPU fleet's ledger (issue 19: "a report over
// 100,000 intervals answers in under 200 ms"), against the same aggregation as one SQL
// statement run by the sqlite3 program on the same database file, in the same run.
//
//   usage_bench [--intervals N] [--dir DIR] [--sqlite3 PATH] [--repeat R] [--reuse 1]
//
// --reuse 1 keeps a database DIR holds already (from an earlier run with the same N).
// It writes N closed UsageIntervals (default 100,000) into a real SqliteStore through
// Store::Commit, in transactions of 1,000, as the engine stores them (usage_ledger.h
// EncodeInterval) with the rollups a close writes (usage_rollup.h RollupWrites): 50 GPUs of
// two types across 5 projects and 40 users, back to back over 2026. Then, R times (default 5),
// the report gantryd answers for GET usagereports?from=2026-01-01&to=2027-01-01&
// groupBy=project,gpuType&step=month (Tally: rollups + open intervals); the same report from
// every interval (ListIntervals + BuildReport: what gantryd did before the rollups; the two
// must be identical, else the bench fails); and the reference:
// `sqlite3 DB "SELECT namespace, gpuType, month, sum(GPU-seconds) ... GROUP BY"` as a process
// (its start-up included, as a person at a shell would run it). Prints the medians and one
// last line of key=value figures for bench/run_all.sh.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/usage_ledger.h"
#include "engine/usage_report.h"
#include "engine/usage_rollup.h"
#include "model/codec.h"
#include "store/sqlite/sqlite_store.h"

namespace gantry::bench {
namespace {

using Steady = std::chrono::steady_clock;
using Time = std::chrono::system_clock::time_point;

double Ms(Steady::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// CPU milliseconds (user + system) of this process (RUSAGE_SELF) or its waited-for children.
double CpuMs(int who) {
  rusage u{};
  getrusage(who, &u);
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return ms(u.ru_utime) + ms(u.ru_stime);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Time Year2026() { return std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}; }

// N intervals of the fleet: GPU g (0..49) runs one instance after another, each 1..8 GPUs
// wide in steps so that the year is about full.
absl::Status Fill(store::Store& store, int n) {
  const int fleet = 50;
  const auto slot = std::chrono::seconds(365LL * 24 * 3600 * fleet / n);
  std::vector<store::Write> batch;
  std::vector<engine::usage::Interval> closed;
  for (int k = 0; k < n; ++k) {
    engine::usage::Interval i;
    i.project = "team-" + std::to_string(k % 5);
    i.name = "run-" + std::to_string(k) + "-1";
    i.instance_kind = "ComputeInstance";
    i.instance_name = "nb-" + std::to_string(k);
    i.instance_uid = "uid-" + std::to_string(k);
    i.user = "user-" + std::to_string(k % 40);
    i.profile_ns = i.project;
    i.profile_name = k % 3 ? "notebook-1gpu" : "train-8gpu";
    i.gpu_type = k % 4 ? "h100" : "a100";
    i.gpus = k % 3 ? 1 : 8;
    i.cpu = 8;
    i.memory_gib = 64;
    i.run = "run-" + std::to_string(k);
    i.start = Year2026() + slot * (k / fleet);
    i.end = i.start + slot - std::chrono::seconds(60);
    batch.push_back({store::Write::Op::kCreate, engine::usage::kUsageIntervalKind,
                     engine::usage::EncodeInterval(i), 0, 0});
    closed.push_back(std::move(i));
    if (closed.size() == 1000 || k == n - 1) {
      // The rollups a close writes (usage_rollup.h), for the batch at once.
      auto rollups = engine::usage::RollupWrites(store, closed);
      if (!rollups.ok()) return rollups.status();
      for (auto& w : *rollups) batch.push_back(std::move(w));
      auto s = store.Commit(std::move(batch), store::Durability::kRelaxed);
      if (!s.ok()) return s.status();
      batch.clear();
      closed.clear();
    }
  }
  return absl::OkStatus();
}

engine::usage::ReportQuery YearByMonth() {
  engine::usage::ReportQuery q;
  q.from = Year2026();
  q.to = std::chrono::sys_days{std::chrono::year{2027} / 1 / 1};
  q.group_by = {"project", "gpuType"};
  q.step = engine::usage::Step::kMonth;
  return q;
}

size_t RowsOf(const boost::json::object& report) {
  const boost::json::value* rows = model::FindPath(report, "status.rows");
  return rows && rows->is_array() ? rows->get_array().size() : 0;
}

const engine::usage::RateCard kCard{"default", "USD", {{"h100", 2.5}}, 0, 0};

// The report gantryd computes (Tally: the rollups and the open intervals); its row count and
// the report as JSON text in `out`.
size_t Report(store::Store& store, double* ms, double* cpu_ms, std::string* out) {
  const auto t0 = Steady::now();
  const double c0 = CpuMs(RUSAGE_SELF);
  const auto q = YearByMonth();
  auto tally = engine::usage::Tally(store, q, std::nullopt, q.to,
                                    [](const std::string&, const std::string&) { return true; });
  boost::json::object report =
      tally.ok() ? tally->Build(q.to, kCard) : boost::json::object{{"error", "tally failed"}};
  *ms = Ms(Steady::now() - t0);
  *cpu_ms = CpuMs(RUSAGE_SELF) - c0;
  *out = boost::json::serialize(report);
  return RowsOf(report);
}

// The same report from every interval (ListIntervals + BuildReport: gantryd before the
// rollups, and the reference the rollups must equal).
size_t RawReport(store::Store& store, double* ms, double* cpu_ms, std::string* out) {
  const auto t0 = Steady::now();
  const double c0 = CpuMs(RUSAGE_SELF);
  const auto q = YearByMonth();
  auto intervals = engine::usage::ListIntervals(store, std::nullopt);
  boost::json::object report = engine::usage::BuildReport(
      q, intervals.ok() ? *intervals : std::vector<engine::usage::Interval>{}, q.to, kCard);
  *ms = Ms(Steady::now() - t0);
  *cpu_ms = CpuMs(RUSAGE_SELF) - c0;
  *out = boost::json::serialize(report);
  return RowsOf(report);
}

// The same sums by one SQL statement in the sqlite3 program; its output line count.
constexpr char kSql[] =
    "SELECT namespace, json_extract(body,'$.spec.gpuType') AS t, "
    "substr(json_extract(body,'$.spec.start'),1,7) AS m, "
    "sum((julianday(json_extract(body,'$.status.end')) - "
    "julianday(json_extract(body,'$.spec.start'))) * 86400 * json_extract(body,'$.spec.gpus')) "
    "FROM objects WHERE kind='UsageInterval' GROUP BY 1,2,3;";

int Sqlite3(const std::string& sqlite3, const std::string& db, double* ms, double* cpu_ms) {
  const std::string cmd = sqlite3 + " " + db + " \"" + kSql + "\" | wc -l";
  const auto t0 = Steady::now();
  const double c0 = CpuMs(RUSAGE_CHILDREN);
  FILE* p = popen(cmd.c_str(), "r");
  int lines = 0;
  if (p) {
    if (std::fscanf(p, "%d", &lines) != 1) lines = 0;
    pclose(p);
  }
  *ms = Ms(Steady::now() - t0);
  *cpu_ms = CpuMs(RUSAGE_CHILDREN) - c0;
  return lines;
}

int Main(int argc, char** argv) {
  int n = 100000, repeat = 5;
  bool reuse = false;
  std::string dir = "/tmp/gantry-usage-bench", sqlite3 = "sqlite3";
  for (int a = 1; a + 1 < argc; a += 2) {
    std::string k = argv[a], v = argv[a + 1];
    if (k == "--intervals") n = std::stoi(v);
    if (k == "--dir") dir = v;
    if (k == "--sqlite3") sqlite3 = v;
    if (k == "--repeat") repeat = std::max(1, std::stoi(v));
    if (k == "--reuse") reuse = v == "1";
  }
  reuse = reuse && std::filesystem::exists(dir + "/gantry.db");
  if (!reuse) std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  store::SqliteOptions options;
  options.path = dir + "/gantry.db";
  auto store = store::SqliteStore::Open(options);
  if (!store.ok()) {
    std::fprintf(stderr, "cannot open the store: %s\n",
                 std::string(store.status().message()).c_str());
    return 1;
  }
  const auto t0 = Steady::now();
  if (auto s = reuse ? absl::OkStatus() : Fill(**store, n); !s.ok()) {
    std::fprintf(stderr, "cannot fill the ledger: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::printf("wrote %d intervals in %.0f ms\n", n, Ms(Steady::now() - t0));
  std::vector<double> gantry, raw, ref, gantry_cpu, raw_cpu, ref_cpu;
  size_t rows = 0, raw_rows = 0;
  int lines = 0;
  bool same = true;
  for (int r = 0; r < repeat; ++r) {
    double ms, cpu;
    std::string report, raw_report;
    rows = Report(**store, &ms, &cpu, &report);
    gantry.push_back(ms);
    gantry_cpu.push_back(cpu);
    raw_rows = RawReport(**store, &ms, &cpu, &raw_report);
    raw.push_back(ms);
    raw_cpu.push_back(cpu);
    same = same && report == raw_report;
    lines = Sqlite3(sqlite3, options.path, &ms, &cpu);
    ref.push_back(ms);
    ref_cpu.push_back(cpu);
  }
  const double g = Median(gantry), w = Median(raw), s = Median(ref);
  const double gc = Median(gantry_cpu), wc = Median(raw_cpu), sc = Median(ref_cpu);
  std::printf(
      "report (Tally: rollups + open):        %.1f ms (CPU %.1f ms), median of %d, %zu rows\n", g,
      gc, repeat, rows);
  std::printf(
      "report (every interval: BuildReport):  %.1f ms (CPU %.1f ms), median of %d, %zu rows\n", w,
      wc, repeat, raw_rows);
  std::printf(
      "sqlite3 program, one GROUP BY:         %.1f ms (CPU %.1f ms), median of %d, %d rows\n", s,
      sc, repeat, lines);
  std::printf("the two reports are %s\n", same ? "identical" : "DIFFERENT");
  std::printf(
      "intervals=%d report_ms=%.1f raw_ms=%.1f sqlite3_ms=%.1f ratio=%.3f raw_ratio=%.2f "
      "report_cpu_ms=%.1f raw_cpu_ms=%.1f sqlite3_cpu_ms=%.1f rows=%zu sqlite3_rows=%d "
      "identical=%d\n",
      n, g, w, s, g / s, w / s, gc, wc, sc, rows, lines, same ? 1 : 0);
  if (!same) return 1;
  return 0;
}

}  // namespace
}  // namespace gantry::bench

int main(int argc, char** argv) { return gantry::bench::Main(argc, argv); }
