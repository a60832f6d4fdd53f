// store_bench: the SQLite store without HTTP in front.
//
//   store_bench commit --db FILE --sync FULL|NORMAL --threads T --seconds S
//       SqliteStore::Commit from T threads at once, to show what the group commit does when
//       more callers wait than gantryd's --threads let through. Each thread commits durable
//       creates of one ComputeInstance (with labels, as loadgen's) one call at a time for S
//       seconds. Prints creates, seconds, rate, the store's transactions and calls per
//       transaction (SqliteStore::CommitStats), CPU us per create, and the p50/p99 latency
//       of a Commit in ms.
//   store_bench list --db FILE --instances N --count C --key K --value V
//       Loads N instances (labels env, team, shard as loadgen's: K=V matches 50 %, 10 % or
//       0.1 % of them) unless the file has them already, then runs C lists of one page of
//       100 in namespace default with labelSelector K=V through SqliteStore::List (the
//       label index): prints p50/p99 ms and the items of a page.
// bench/run_all.sh (section "store") compares both with sqlite_ref in the same run.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include "model/label_selector.h"
#include "store/sqlite/sqlite_store.h"

namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

double CpuUs() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

json::object Instance(const std::string& name, int i) {
  json::object labels{{"env", i % 2 == 0 ? "prod" : "dev"},
                      {"team", "t" + std::to_string(i % 10)},
                      {"shard", "s" + std::to_string(i % 1000)}};
  return json::object{
      {"apiVersion", "paas.gantry.dev/v1"},
      {"kind", "ComputeInstance"},
      {"metadata", json::object{{"name", name}, {"namespace", "default"}, {"labels", labels}}},
      {"spec", json::object{{"displayName", "Bench " + name},
                            {"profileRef", json::object{{"name", "bench"}}},
                            {"variables", json::object{}}}},
      {"status", json::object{{"phase", "NotDeployed"}}}};
}

double Pct(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p / 100 * static_cast<double>(v.size())))];
}

int List(std::map<std::string, std::string>& a) {
  gantry::store::SqliteOptions options;
  options.path = a["db"];
  options.synchronous = "NORMAL";
  auto store = gantry::store::SqliteStore::Open(options);
  if (!store.ok()) {
    std::fprintf(stderr, "store_bench: %s\n", std::string(store.status().message()).c_str());
    return 1;
  }
  const long n = std::stol(a["instances"]);
  const long count = a.count("count") ? std::stol(a["count"]) : 200;
  auto have = (*store)->Count("ComputeInstance", "default", {});
  for (long i = have.ok() ? *have : 0; i < n;) {
    std::vector<gantry::store::Write> writes;
    for (long end = std::min(n, i + 500); i < end; ++i) {
      gantry::store::Write w;
      w.kind = "ComputeInstance";
      w.object = Instance("i-" + std::to_string(i), static_cast<int>(i));
      writes.push_back(std::move(w));
    }
    if (!(*store)->Commit(std::move(writes)).ok()) return 1;
  }
  auto sel = gantry::model::ParseLabelSelector(a["key"] + "=" + a["value"]);
  if (!sel.ok()) return 1;
  std::vector<double> lat;
  size_t items = 0;
  for (long i = 0; i <= count; ++i) {
    auto start = Clock::now();
    auto r =
        (*store)->List({.kind = "ComputeInstance", .ns = "default", .labels = *sel, .limit = 100});
    if (!r.ok()) return 1;
    if (i > 0)
      lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    items = r->items.size();
  }
  std::printf("lists=%ld items=%zu p50_ms=%.3f p99_ms=%.3f\n", count, items, Pct(lat, 50),
              Pct(lat, 99));
  return 0;
}

int Commit(std::map<std::string, std::string>& a) {
  gantry::store::SqliteOptions options;
  options.path = a["db"];
  options.synchronous = a.count("sync") ? a["sync"] : "FULL";
  const int threads = a.count("threads") ? std::stoi(a["threads"]) : 16;
  const double seconds = a.count("seconds") ? std::stod(a["seconds"]) : 5;
  auto store = gantry::store::SqliteStore::Open(options);
  if (!store.ok()) {
    std::fprintf(stderr, "store_bench: %s\n", std::string(store.status().message()).c_str());
    return 1;
  }
  const auto before = (*store)->CommitStats();
  std::atomic<long> creates{0}, failures{0};
  std::mutex mu;
  std::vector<double> latencies;
  const double cpu0 = CpuUs();
  const auto t0 = Clock::now();
  const auto until = t0 + std::chrono::duration<double>(seconds);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<double> mine;
      for (int i = 0; Clock::now() < until; ++i) {
        gantry::store::Write w;
        w.kind = "ComputeInstance";
        w.object = Instance("b" + std::to_string(t) + "-" + std::to_string(i), i);
        std::vector<gantry::store::Write> writes;
        writes.push_back(std::move(w));
        auto start = Clock::now();
        auto r = (*store)->Commit(std::move(writes));
        mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        (r.ok() ? creates : failures)++;
      }
      std::lock_guard<std::mutex> lock(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : pool) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = CpuUs() - cpu0;
  const auto after = (*store)->CommitStats();
  std::sort(latencies.begin(), latencies.end());
  const long txns = after.transactions - before.transactions;
  std::printf(
      "creates=%ld failures=%ld seconds=%.2f rate=%.1f transactions=%ld per_txn=%.2f "
      "cpu_us=%.0f p50_ms=%.3f p99_ms=%.3f\n",
      creates.load(), failures.load(), elapsed, creates.load() / elapsed, txns,
      txns ? static_cast<double>(after.calls - before.calls) / txns : 0.0,
      creates.load() ? cpu / creates.load() : 0.0, Pct(latencies, 50), Pct(latencies, 99));
  return failures.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> a;
  for (int i = 2; i + 1 < argc; i += 2) a[std::string(argv[i]).substr(2)] = argv[i + 1];
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "commit") return Commit(a);
  if (mode == "list") return List(a);
  std::fprintf(stderr, "usage: store_bench commit|list ...\n");
  return 2;
}
