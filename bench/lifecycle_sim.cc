// bench/lifecycle_sim.cc: how many GPU-hours the lifecycle policies give back (issue 17,
// "Measure"; docs/performance.md). A recorded-style trace of 200 notebooks over one week is
// run twice through the real Engine, the real LifecycleController and the real GpuSampler on
// a FakeClock, with the FakeDriver (stop/start, GPU metrics) and a real SQLite store in a
// temporary directory: once on a profile without a policy, once with idle 30m (below 5 %) +
// ttl 12h + a night schedule (stop 20:00, start 08:00 on weekdays, Europe/Berlin). Both runs
// see the same people doing the same things; the headline is the fraction of GPU-hours held
// that the policies reclaim.
//
// The trace (a seeded RNG; written to OUT/lifecycle-trace.csv so it can be inspected): each
// notebook asks for 1 (80 %), 2 (15 %) or 4 GPUs, arrives on a weekday between 08:00 and
// 16:00 (Monday 40 %), and is worked on in sessions (the arrival day, then each later
// weekday with p 0.75; start 08:00-10:30, 3-9 h). A session alternates busy phases (20-120
// min, 40-95 % GPU) with idle gaps (5-75 min, 0-2 %); with p 0.15 a session ends with an
// overnight job (2-10 h busy at 85-99 %). Half of the notebooks are destroyed by their owner
// at the end of their last session (1-5 weekdays after arrival); the rest are left on.
//
// What people do in both runs: create and deploy at arrival; at the start of every busy
// phase, start their notebook again when it is Stopped (counted: user_starts); destroy it
// at the end. Nothing else: without a policy a notebook holds its GPUs until destroyed or
// the week ends.
//
// One step of `--step` (default 60 s) of simulated time: advance the FakeClock; let the
// controller make a pass that starts after the advance and wait for the runs it queued;
// apply the trace's user actions of the step and wait for their runs; record one GPU sample
// (the trace's utilisation of every GPU, through GpuSampler::Record, as nvidia-smi's would
// be); count the GPUs held for the next step. Runs are waited for by polling the store (no
// wall-clock limit: the simulation is deterministic in what it does, only its wall time
// varies).
//
//   lifecycle_sim [--out DIR] [--seed N] [--notebooks N] [--step SECONDS]
// prints one `key=value ...` line per run and a summary line (reclaimed_fraction, wall_s).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "auth/audit.h"
#include "common/fake_clock.h"
#include "common/metrics.h"
#include "common/secrets.h"
#include "common/status_macros.h"
#include "drivers/common/fake_process_launcher.h"
#include "drivers/fake/fake_driver.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/gpu_sampler.h"
#include "engine/lifecycle_controller.h"
#include "model/codec.h"
#include "model/lifecycle_policy.h"
#include "store/sqlite/sqlite_store.h"

namespace gantry::bench {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using Time = std::chrono::system_clock::time_point;
using std::chrono::seconds;

constexpr char kNs[] = "sim";
constexpr char kZone[] = "Europe/Berlin";

// ---- The trace -------------------------------------------------------------------------

struct Busy {
  Time start, end;
  int util = 0;
  bool overnight = false;
};

struct Notebook {
  std::string name;
  int gpus = 1;
  int idle_util = 0;  // outside busy phases
  Time arrive;
  std::optional<Time> destroy;
  std::vector<Busy> busy;  // in time order, not overlapping

  int UtilAt(Time t) const {
    for (const Busy& b : busy)
      if (b.start <= t && t < b.end) return b.util;
    return idle_util;
  }
  bool BusyAt(Time t) const { return UtilAt(t) != idle_util; }
  bool Exists(Time t) const { return arrive <= t && (!destroy || t < *destroy); }
};

// A small deterministic RNG (the same trace from the same seed on every standard library).
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  int Int(int lo, int hi) { return lo + static_cast<int>(gen_() % uint64_t(hi - lo + 1)); }
  bool Chance(double p) { return static_cast<double>(gen_() % 1000000) < p * 1e6; }

 private:
  std::mt19937_64 gen_;
};

Time At(const absl::TimeZone& zone, absl::CivilDay day, int minute_of_day) {
  absl::CivilMinute m(day.year(), day.month(), day.day(), minute_of_day / 60, minute_of_day % 60);
  return absl::ToChronoTime(absl::FromCivil(m, zone));
}

// One working session from `start` for `minutes`: busy phases and gaps, maybe an overnight job.
void AddSession(Rng& rng, Time start, int minutes, Notebook* nb) {
  const Time end = start + std::chrono::minutes(minutes);
  Time t = start;
  while (t < end) {
    Time busy_end = std::min(end, t + std::chrono::minutes(rng.Int(20, 120)));
    nb->busy.push_back({t, busy_end, rng.Int(40, 95), false});
    t = busy_end + std::chrono::minutes(rng.Int(5, 75));
  }
  if (rng.Chance(0.15)) {
    const Time job = std::max(end, nb->busy.back().end);
    nb->busy.push_back({job, job + std::chrono::minutes(rng.Int(120, 600)), rng.Int(85, 99), true});
  }
}

Notebook MakeNotebook(Rng& rng, int i, const absl::TimeZone& zone, absl::CivilDay monday) {
  Notebook nb;
  nb.name = "nb-" + std::to_string(i);
  const int g = rng.Int(1, 100);
  nb.gpus = g <= 80 ? 1 : g <= 95 ? 2 : 4;
  nb.idle_util = rng.Int(0, 2);
  const int d = rng.Int(1, 100);
  const int arrival_day = d <= 40 ? 0 : 1 + (d - 41) / 15;  // Monday 40 %, then 15 % each
  const int arrival_minute = rng.Int(8 * 60, 16 * 60);
  nb.arrive = At(zone, monday + arrival_day, arrival_minute);
  const bool destroyed = rng.Chance(0.5);
  const int last_day = std::min(4, arrival_day + rng.Int(1, 5) - 1);
  for (int day = arrival_day; day <= (destroyed ? last_day : 4); ++day) {
    if (day != arrival_day && !rng.Chance(0.75)) continue;
    const int start = day == arrival_day ? arrival_minute : rng.Int(8 * 60, 10 * 60 + 30);
    AddSession(rng, At(zone, monday + day, start), rng.Int(180, 540), &nb);
  }
  if (destroyed) nb.destroy = nb.busy.back().end;
  return nb;
}

void WriteTrace(const std::vector<Notebook>& trace, const std::string& path) {
  std::ofstream out(path);
  out << "notebook,gpus,event,start,end,utilization\n";
  for (const Notebook& nb : trace) {
    out << nb.name << "," << nb.gpus << ",arrive," << FormatRfc3339(nb.arrive) << ",,"
        << nb.idle_util << "\n";
    for (const Busy& b : nb.busy)
      out << nb.name << "," << nb.gpus << "," << (b.overnight ? "overnight" : "busy") << ","
          << FormatRfc3339(b.start) << "," << FormatRfc3339(b.end) << "," << b.util << "\n";
    if (nb.destroy)
      out << nb.name << "," << nb.gpus << ",destroy," << FormatRfc3339(*nb.destroy) << ",,\n";
  }
}

// ---- One run ---------------------------------------------------------------------------

struct Result {
  double held_gpu_h = 0;       // GPU-hours held by the notebooks
  double busy_gpu_h = 0;       // GPU-hours the trace was busy (demand)
  double busy_lost_gpu_h = 0;  // ... while the notebook was not running
  int user_starts = 0;
  std::map<std::string, int> actions;  // "stop/Idle" -> runs
  double wall_s = 0;
};

// The profile spec.lifecycle of the policy run.
json::object PolicyLifecycle() {
  return json::object{
      {"ttl", json::object{{"default", "12h"}, {"max", "72h"}, {"action", "Stop"}}},
      {"idle", json::object{{"gpuUtilizationBelow", 5}, {"after", "30m"}, {"action", "Stop"}}},
      {"schedule", json::object{{"timezone", kZone},
                                {"start", "0 8 * * 1-5"},
                                {"stop", "0 20 * * 1-5"},
                                {"allowOptOut", false}}}};
}

class Simulation {
 public:
  Simulation(std::string dir, const std::vector<Notebook>& trace, bool policy, Time start,
             seconds step)
      : dir_(std::move(dir)), trace_(trace), policy_(policy), clock_(start), step_(step) {}

  absl::StatusOr<Result> Run(Time end);

 private:
  absl::Status SetUp();
  absl::Status Commit(store::Write w);
  absl::Status CreateVersioned(const std::string& kind, const std::string& name, json::object spec);
  absl::Status CreateInstance(const Notebook& nb);
  // Polls the store until no run is Queued or Running.
  void Settle();
  // A controller pass that started after everything before this call, and its runs.
  void ControllerPass();
  void UserActions(Time from, Time to, Result* r);
  engine::GpuReadings Readings(Time t);
  void Account(Time t, Result* r);
  void CountActions(Result* r);
  std::string PhaseOf(const std::string& name);

  const std::string dir_;
  const std::vector<Notebook>& trace_;
  const bool policy_;
  FakeClock clock_;
  const seconds step_;
  Metrics metrics_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<SecretBox> secrets_;
  drivers::DriverRegistry drivers_;
  std::unique_ptr<engine::RunLogs> logs_;
  std::unique_ptr<engine::GpuAllocator> gpus_;
  drivers::FakeProcessLauncher launcher_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<auth::AuditLog> audit_;
  std::unique_ptr<engine::LifecycleController> controller_;
  std::unique_ptr<engine::GpuSampler> sampler_;
  std::map<std::string, const Notebook*> by_owner_;  // allocator owner key -> notebook
};

absl::Status Simulation::Commit(store::Write w) {
  std::vector<store::Write> writes;
  writes.push_back(std::move(w));
  return store_->Commit(std::move(writes)).status();
}

absl::Status Simulation::CreateVersioned(const std::string& kind, const std::string& name,
                                         json::object spec) {
  json::object o{{"apiVersion", "paas.gantry.dev/v1"},
                 {"kind", kind},
                 {"metadata", json::object{{"name", name}, {"namespace", kNs}, {"uid", name}}},
                 {"spec", spec},
                 {"status", json::object{{"revision", 1}}}};
  if (auto s = Commit({store::Write::Op::kCreate, kind, o, 0, 0}); !s.ok()) return s;
  return Commit({store::Write::Op::kPutRevision, kind, o, 0, 1});
}

absl::Status Simulation::CreateInstance(const Notebook& nb) {
  const std::string profile = "gpu-" + std::to_string(nb.gpus);
  json::object o{
      {"apiVersion", "paas.gantry.dev/v1"},
      {"kind", "ComputeInstance"},
      {"metadata", json::object{{"name", nb.name},
                                {"namespace", kNs},
                                {"uid", nb.name + "-uid"},
                                {"generation", 1},
                                {"creationTimestamp", FormatRfc3339(clock_.Now())}}},
      {"spec", json::object{{"profileRef", json::object{{"name", profile}}}}},
      {"status",
       json::object{{"phase", "NotDeployed"}, {"profileRevision", 1}, {"templateRevision", 1}}}};
  by_owner_[std::string(kNs) + "/" + nb.name + "/" + nb.name + "-uid"] = &nb;
  return Commit({store::Write::Op::kCreate, "ComputeInstance", o, 0, 0});
}

absl::Status Simulation::SetUp() {
  store::SqliteOptions so;
  so.path = dir_ + "/gantry.db";
  so.synchronous = "NORMAL";
  ASSIGN_OR_RETURN(store_, store::SqliteStore::Open(so));
  ASSIGN_OR_RETURN(secrets_, SecretBox::Open(dir_ + "/secret.key"));
  drivers_.Register(std::make_unique<drivers::fake::FakeDriver>(
      "fake", drivers::Capabilities{.host_bound = true, .stop_start = true, .gpu_metrics = true}));
  logs_ = std::make_unique<engine::RunLogs>(dir_ + "/runs");
  // As many GPUs as the notebooks ask for together: nobody ever waits for capacity, so both
  // runs see the same arrivals at the same times.
  int total = 0;
  for (const Notebook& nb : trace_) total += nb.gpus;
  ASSIGN_OR_RETURN(engine::Inventory inventory,
                   engine::ParseGpuFlag("h100:" + std::to_string(std::max(total, 1))));
  gpus_ = std::make_unique<engine::GpuAllocator>(inventory);
  RETURN_IF_ERROR(CreateVersioned("EnvironmentTemplate", "notebook",
                                  json::object{{"driver", "fake"}, {"fake", json::object{}}}));
  for (int g : {1, 2, 4}) {
    json::object spec{{"templateRef", json::object{{"name", "notebook"}}},
                      {"resources", json::object{{"gpu", json::object{{"count", g}}}}}};
    if (policy_) spec["lifecycle"] = PolicyLifecycle();
    std::vector<FieldCause> causes;
    model::ValidateLifecyclePolicy(spec, &causes);
    if (!causes.empty()) return absl::InvalidArgumentError(causes[0].message);
    RETURN_IF_ERROR(CreateVersioned("ComputeProfile", "gpu-" + std::to_string(g), spec));
  }
  engine::EngineOptions eo;
  eo.workers = 8;
  eo.holder = "sim";
  eo.host = "sim-host";
  eo.state_dir = dir_ + "/state";
  engine_ = std::make_unique<engine::Engine>(*store_, drivers_, *secrets_, *logs_, clock_, metrics_,
                                             *gpus_, eo);
  RETURN_IF_ERROR(engine_->Start());
  audit_ = std::make_unique<auth::AuditLog>(*store_, clock_, metrics_);
  engine::LifecycleControllerOptions co;
  co.min_pass_interval = 0ms;
  controller_ = std::make_unique<engine::LifecycleController>(*store_, *engine_, drivers_, *audit_,
                                                              clock_, metrics_, co);
  controller_->Start();
  sampler_ = std::make_unique<engine::GpuSampler>(*store_, drivers_, *gpus_, clock_, metrics_,
                                                  launcher_, engine::GpuSamplerOptions{});
  return absl::OkStatus();
}

void Simulation::Settle() {
  for (;;) {
    bool busy = false;
    for (const char* phase : {"Queued", "Running"}) {
      store::ListOptions q;
      q.kind = model::kRunKind;
      q.fields = {{"status.phase", true, phase}};
      q.limit = 1;
      auto page = store_->List(q);
      busy = busy || !page.ok() || !page->items.empty();
    }
    if (!busy) return;
    std::this_thread::sleep_for(200us);
  }
}

void Simulation::ControllerPass() {
  // Passes begin only when the clock advanced or Notify was called: once one that began at
  // this step's time has finished, the controller has fired what fell due by now.
  controller_->Notify();
  if (!controller_->WaitForPass(clock_.Now(), std::chrono::minutes(10)))
    spdlog::error("the lifecycle controller made no pass within 10 minutes");
  Settle();
}

std::string Simulation::PhaseOf(const std::string& name) {
  auto o = store_->Get("ComputeInstance", kNs, name);
  return o.ok() ? model::GetString(*o, "status.phase") : "";
}

void Simulation::UserActions(Time from, Time to, Result* r) {
  const auto in = [&](Time t) { return from < t && t <= to; };
  for (const Notebook& nb : trace_) {
    if (in(nb.arrive)) {
      if (CreateInstance(nb).ok()) (void)engine_->Deploy("ComputeInstance", kNs, nb.name);
    }
    for (const Busy& b : nb.busy)
      if (in(b.start) && nb.Exists(b.start) && PhaseOf(nb.name) == "Stopped") {
        ++r->user_starts;
        (void)engine_->Start("ComputeInstance", kNs, nb.name);
      }
    if (nb.destroy && in(*nb.destroy)) (void)engine_->Destroy("ComputeInstance", kNs, nb.name);
  }
  Settle();
}

engine::GpuReadings Simulation::Readings(Time t) {
  engine::GpuReadings readings;
  for (const engine::Gpu& g : gpus_->inventory().gpus) readings[g.index] = 0;
  for (const auto& [index, owner] : gpus_->Assignments())
    if (auto it = by_owner_.find(owner); it != by_owner_.end())
      readings[index] = it->second->UtilAt(t);
  return readings;
}

void Simulation::Account(Time t, Result* r) {
  const double hours = std::chrono::duration<double>(step_).count() / 3600.0;
  std::map<const Notebook*, int> held;
  for (const auto& [index, owner] : gpus_->Assignments())
    if (auto it = by_owner_.find(owner); it != by_owner_.end()) ++held[it->second];
  for (const auto& [nb, n] : held) r->held_gpu_h += n * hours;
  for (const Notebook& nb : trace_)
    if (nb.Exists(t) && nb.BusyAt(t)) {
      r->busy_gpu_h += nb.gpus * hours;
      if (!held.count(&nb)) r->busy_lost_gpu_h += nb.gpus * hours;
    }
}

void Simulation::CountActions(Result* r) {
  store::ListOptions q;
  q.kind = model::kRunKind;
  q.ns = kNs;
  auto runs = engine::internal::ListAll(*store_, q);
  if (!runs.ok()) return;
  for (const json::object& o : *runs) {
    auto run = model::DecodeRun(o);
    if (!run.ok()) continue;
    std::string key(model::RunActionName(run->action));
    if (!run->cause.empty()) key += "/" + run->cause;
    ++r->actions[key];
  }
}

absl::StatusOr<Result> Simulation::Run(Time end) {
  const auto wall = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(SetUp());
  Result r;
  for (Time t = clock_.Now(); t < end; t += step_) {
    if (t > clock_.Now()) clock_.Advance(t - clock_.Now());
    ControllerPass();
    UserActions(t - step_, t, &r);
    sampler_->Record(Readings(t));
    Account(t, &r);
  }
  controller_->Stop();
  engine_->Stop();
  CountActions(&r);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  return r;
}

std::string Describe(const char* name, const Result& r) {
  std::string line = std::string("run=") + name;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                " held_gpu_hours=%.1f busy_gpu_hours=%.1f busy_lost_gpu_hours=%.1f "
                "user_starts=%d wall_s=%.1f",
                r.held_gpu_h, r.busy_gpu_h, r.busy_lost_gpu_h, r.user_starts, r.wall_s);
  line += buf;
  for (const auto& [action, n] : r.actions) line += " runs[" + action + "]=" + std::to_string(n);
  return line;
}

struct Flags {
  std::string out = ".";
  uint64_t seed = 17;
  int notebooks = 200;
  int step = 60;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--out") f.out = v;
    if (k == "--seed") f.seed = std::stoull(v);
    if (k == "--notebooks") f.notebooks = std::stoi(v);
    if (k == "--step") f.step = std::stoi(v);
  }
  return f;
}

int Main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  const Flags flags = ParseFlags(argc, argv);
  auto zone = model::LoadZone(kZone);
  if (!zone.ok()) return std::fprintf(stderr, "%s\n", zone.status().ToString().c_str()), 1;
  const absl::CivilDay monday(2026, 11, 30);
  const Time start = At(*zone, monday, 0), end = At(*zone, monday + 7, 0);
  Rng rng(flags.seed);
  std::vector<Notebook> trace;
  for (int i = 0; i < flags.notebooks; ++i) trace.push_back(MakeNotebook(rng, i, *zone, monday));
  std::filesystem::create_directories(flags.out);
  WriteTrace(trace, flags.out + "/lifecycle-trace.csv");
  std::map<std::string, Result> results;
  for (const char* name : {"none", "policy"}) {
    const std::string dir = (std::filesystem::temp_directory_path() /
                             ("gantry-lifecycle-sim-" + std::to_string(::getpid()) + "-" + name))
                                .string();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    auto r =
        Simulation(dir, trace, std::string(name) == "policy", start, seconds(flags.step)).Run(end);
    std::filesystem::remove_all(dir);
    if (!r.ok()) return std::fprintf(stderr, "%s: %s\n", name, r.status().ToString().c_str()), 1;
    std::printf("%s\n", Describe(name, *r).c_str());
    results[name] = *r;
  }
  const Result &none = results["none"], &policy = results["policy"];
  std::printf(
      "notebooks=%d seed=%llu step_s=%d held_none_gpu_hours=%.1f held_policy_gpu_hours=%.1f "
      "reclaimed_fraction=%.3f busy_lost_fraction=%.3f wall_s=%.1f\n",
      flags.notebooks, static_cast<unsigned long long>(flags.seed), flags.step, none.held_gpu_h,
      policy.held_gpu_h, 1.0 - policy.held_gpu_h / none.held_gpu_h,
      policy.busy_gpu_h > 0 ? policy.busy_lost_gpu_h / policy.busy_gpu_h : 0.0,
      none.wall_s + policy.wall_s);
  return 0;
}

}  // namespace
}  // namespace gantry::bench

int main(int argc, char** argv) { return gantry::bench::Main(argc, argv); }
