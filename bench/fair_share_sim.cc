// bench/fair_share_sim.cc: a simulated week of three teams' GPU requests on 32 GPUs through
// the real admission code (engine/admission.h: OrderQueue, Admit, SelectVictims) on a
// FakeClock (issue 18, "Benchmark"; docs/performance.md). The same trace runs twice:
//
//   fifo   today's setup: no guarantees, each team capped at 16 GPUs (quota.gpus), first
//          come first served per GPU type
//   fair   guarantees vision 12, nlp 10, speech 10 (summing to the fleet), quota.gpus 32
//          each (a team may borrow the whole idle fleet), every job preemptible; a request
//          within its team's guarantee that does not fit preempts borrowing jobs
//
// The trace (a seeded RNG, the same in both runs), Monday 00:00 to Monday 00:00 (UTC):
//   vision  the team that submits at 6 a.m.: every weekday at 06:00, 24 training jobs of 2
//           GPUs for 8-16 h, plus 1 job an hour (08:00-20:00) of 1-4 GPUs for 1-6 h
//   nlp     weekdays 09:00-18:00, 3 jobs an hour (Poisson) of 1-2 GPUs for 0.5-4 h
//   speech  bursts at 10:00 and 14:00 on weekdays of 6 jobs of 1 GPU for 1-3 h; on the
//           weekend 1 job every 3 h
//
// One step (60 s of simulated time): advance the FakeClock; jobs that finished release their
// GPUs; preempted jobs whose grace period (30 s) ran out release theirs and queue again (a
// job checkpoints every 30 min: the work since its last checkpoint is lost and redone);
// arrivals queue; then one dispatcher pass as Engine::DispatchPass makes it on a snapshot
// of the sim's state: OrderQueue, then Admit in that order (admitted jobs take the GPUs
// Admit picked; named victims start stopping).
//
// Figures per run: utilisation (GPU-hours held / 32 x 168, and over the five weekdays alone,
// when demand exceeds the fleet), the backlog left at the end, work lost to preemption, and per
// team the p95 wait (queued to started, every start) over all requests and over the requests
// "within the guarantee" (the team held, with the request, at most its guaranteed share when
// it was queued: 12/10/10 in both runs, only fair share acts on it).
//
//   fair_share_sim [--seed N]
// prints one `key=value ...` line per run and team, and a summary line.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/fake_clock.h"
#include "engine/admission.h"
#include "engine/dependencies.h"

namespace gantry::bench {
namespace {

namespace json = boost::json;
using model::Phase;
using Time = std::chrono::system_clock::time_point;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using Decision = engine::Admission::Decision;

constexpr int kFleet = 32;
constexpr seconds kStep{60}, kGrace{30}, kCheckpoint{1800};
const std::vector<std::string> kTeams = {"vision", "nlp", "speech"};
const std::map<std::string, int64_t> kGuarantee = {{"vision", 12}, {"nlp", 10}, {"speech", 10}};
const Time kMonday = std::chrono::sys_days{std::chrono::year{2026} / 1 / 5};

struct Job {
  std::string team, name;
  int gpus = 1;
  seconds work{0};  // left to do
  Time queued_at, started_at, stop_at;
  bool within = false;  // within its team's guarantee when queued
  enum State { kFuture, kQueued, kRunning, kStopping, kDone } state = kFuture;
  std::vector<std::string> held;
};

// ---- The trace ---------------------------------------------------------------------------

std::vector<Job> Trace(uint32_t seed) {
  std::mt19937 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution(lo, hi)(rng); };
  std::vector<Job> jobs;
  auto add = [&](const std::string& team, Time at, int gpus, double lo_h, double hi_h) {
    Job j;
    j.team = team;
    j.name = team + "-" + std::to_string(jobs.size());
    j.gpus = gpus;
    j.work = seconds(static_cast<int64_t>(uniform(lo_h, hi_h) * 3600));
    j.queued_at = at;
    jobs.push_back(std::move(j));
  };
  for (int day = 0; day < 7; ++day) {
    const Time d = kMonday + hours(24 * day);
    if (day < 5) {
      for (int k = 0; k < 24; ++k) add("vision", d + hours(6) + seconds(k), 2, 8, 16);
      for (int h = 8; h < 20; ++h)
        add("vision", d + hours(h) + minutes(static_cast<int>(uniform(0, 60))),
            1 << static_cast<int>(rng() % 3), 1, 6);
      std::exponential_distribution<double> gap(3.0 / 3600);  // 3 an hour
      for (double t = 9 * 3600 + gap(rng); t < 18 * 3600; t += gap(rng))
        add("nlp", d + seconds(static_cast<int64_t>(t)), 1 + static_cast<int>(rng() % 2), 0.5, 4);
      for (int h : {10, 14})
        for (int k = 0; k < 6; ++k) add("speech", d + hours(h) + seconds(k), 1, 1, 3);
    } else {
      for (int h = 0; h < 24; h += 3) add("speech", d + hours(h), 1, 1, 3);
    }
  }
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const Job& a, const Job& b) { return a.queued_at < b.queued_at; });
  return jobs;
}

// ---- One run -----------------------------------------------------------------------------

json::object GpuResources(int gpus) {
  return json::object{{"gpu", json::object{{"type", "h100"}, {"count", gpus}}}};
}

class Sim {
 public:
  Sim(bool fair, std::vector<Job> jobs) : fair_(fair), jobs_(std::move(jobs)) {
    s_.inventory.source = "configured";
    for (int g = 0; g < kFleet; ++g) s_.inventory.gpus.push_back({g, "", "h100", "h100", 0});
    for (const auto& team : kTeams) {
      model::Quota q;
      q.gpus = {{"h100", fair ? kFleet : 16}};
      s_.quotas[team] = q;
      if (fair) s_.guarantees[team] = {{"h100", kGuarantee.at(team)}};
    }
  }

  void Run() {
    const Time end = kMonday + hours(24 * 7);
    size_t next = 0;
    while (clock_.Now() < end) {
      clock_.Advance(kStep);
      const Time now = clock_.Now();
      Progress(now);
      for (; next < jobs_.size() && jobs_[next].queued_at <= now; ++next) Queue(jobs_[next], now);
      Pass(now);
      for (const Job& j : jobs_)
        if (j.state == Job::kRunning || j.state == Job::kStopping) {
          held_s_ += j.gpus * kStep.count();
          if (now <= kMonday + hours(24 * 5)) weekday_held_s_ += j.gpus * kStep.count();
        }
    }
  }

  void Print(const char* mode) const {
    const double capacity = kFleet * 168.0 * 3600;
    double left_s = 0;  // work not done by the end of the week
    for (const Job& j : jobs_)
      if (j.state == Job::kQueued || j.state == Job::kStopping) left_s += j.gpus * j.work.count();
    std::printf(
        "run=%s utilisation=%.3f weekday_utilisation=%.3f held_gpu_hours=%.0f "
        "lost_gpu_hours=%.1f preemptions=%d backlog_gpu_hours_at_end=%.0f\n",
        mode, held_s_ / capacity, weekday_held_s_ / (kFleet * 120.0 * 3600), held_s_ / 3600,
        lost_s_ / 3600, preemptions_, left_s / 3600);
    for (const auto& team : kTeams) {
      auto w = waits_.find(team), g = within_waits_.find(team);
      std::printf(
          "run=%s team=%s starts=%zu p95_wait_min=%.0f within_guarantee_starts=%zu "
          "p95_wait_within_guarantee_min=%.0f\n",
          mode, team.c_str(), w == waits_.end() ? 0 : w->second.size(), P95(waits_, team),
          g == within_waits_.end() ? 0 : g->second.size(), P95(within_waits_, team));
    }
  }

  double Utilisation() const { return weekday_held_s_ / (kFleet * 120.0 * 3600); }
  double P95Within(const std::string& team) const { return P95(within_waits_, team); }

 private:
  static double P95(const std::map<std::string, std::vector<double>>& m, const std::string& team) {
    auto it = m.find(team);
    if (it == m.end() || it->second.empty()) return 0;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(0.95 * static_cast<double>(v.size())))];
  }

  int64_t HeldBy(const std::string& team) const {
    int64_t n = 0;
    for (const Job& j : jobs_)
      if (j.team == team && (j.state == Job::kRunning || j.state == Job::kStopping)) n += j.gpus;
    return n;
  }

  void Queue(Job& j, Time now) {
    j.state = Job::kQueued;
    j.queued_at = now;
    j.within = HeldBy(j.team) + j.gpus <= kGuarantee.at(j.team);
  }

  // Finished jobs and preempted jobs past their grace period release their GPUs.
  void Progress(Time now) {
    for (Job& j : jobs_) {
      if (j.state == Job::kRunning && now - j.started_at >= j.work) {
        Release(j);
        j.state = Job::kDone;
      } else if (j.state == Job::kStopping && now >= j.stop_at) {
        const auto ran = std::chrono::duration_cast<seconds>(j.stop_at - j.started_at);
        const seconds kept = ran / kCheckpoint * kCheckpoint;  // since the last checkpoint: lost
        lost_s_ += static_cast<double>(j.gpus * (ran - kept).count());
        j.work -= kept;
        Release(j);
        Queue(j, now);
      }
    }
  }

  void Release(Job& j) {
    for (const auto& g : j.held) s_.gpu_owners.erase(std::stoi(g));
    j.held.clear();
  }

  model::Instance InstanceOf(const Job& j) const {
    model::Instance i;
    i.kind = engine::kComputeInstanceKind;
    i.metadata.ns = j.team;
    i.metadata.name = j.name;
    i.metadata.uid = j.name;
    const bool holds = j.state == Job::kRunning || j.state == Job::kStopping;
    i.status.phase = j.state == Job::kStopping ? Phase::kInProgress
                     : holds                   ? Phase::kSuccess
                                               : Phase::kWaiting;
    if (j.state == Job::kStopping) i.status.action = model::RunAction::kStop;
    if (holds) {
      i.status.resources = GpuResources(j.gpus);
      i.status.gpus = j.held;
      i.status.started_at = FormatRfc3339(j.started_at);
    }
    return i;
  }

  engine::QueuedRun QueuedOf(const Job& j, const engine::AdmissionSnapshot& s) const {
    engine::QueuedRun q;
    q.run.metadata.ns = j.team;
    q.run.metadata.name = j.name + "-run";
    q.run.instance_kind = engine::kComputeInstanceKind;
    q.run.instance_name = j.name;
    q.run.action = model::RunAction::kApply;
    q.instance = s.Compute(j.team, j.name);
    engine::Target t;
    t.caps.host_bound = true;
    t.resources.gpu_type = "h100";
    t.resources.gpu_count = j.gpus;
    t.resources.raw = GpuResources(j.gpus);
    t.scheduling = model::Scheduling{0, true, kGrace};
    q.target = t;
    return q;
  }

  // One dispatcher pass on a snapshot of the sim's state.
  void Pass(Time now) {
    engine::AdmissionSnapshot s = s_;
    std::map<std::string, Job*> by_name;
    std::vector<Job*> queued;
    for (Job& j : jobs_) {
      if (j.state == Job::kFuture || j.state == Job::kDone) continue;
      by_name[j.name] = &j;
      s.computes.insert_or_assign({j.team, j.name}, InstanceOf(j));
      if (j.state != Job::kQueued) s.scheduling[{j.team, j.name}] = model::Scheduling{0, true};
      if (j.state == Job::kQueued) queued.push_back(&j);
    }
    if (queued.empty()) return;
    std::stable_sort(queued.begin(), queued.end(),
                     [](const Job* a, const Job* b) { return a->queued_at < b->queued_at; });
    std::vector<engine::QueuedRun> queue;
    for (const Job* j : queued) queue.push_back(QueuedOf(*j, s));
    engine::OrderQueue(s, &queue);
    engine::AdmissionPass pass(s);
    for (const engine::QueuedRun& q : queue) {
      engine::Admission a = engine::Admit(s, q, &pass);
      Job& j = *by_name.at(q.run.instance_name);
      if (a.decision == Decision::kAdmit) Start(j, a, now, &s);
      for (const auto& [vns, vname] : a.victims) {
        Job& v = *by_name.at(vname);
        v.state = Job::kStopping;
        v.stop_at = now + kGrace;
        ++preemptions_;
      }
    }
  }

  void Start(Job& j, const engine::Admission& a, Time now, engine::AdmissionSnapshot* s) {
    j.state = Job::kRunning;
    j.started_at = now;
    for (const auto& g : a.gpus) {
      j.held.push_back(std::to_string(g.index));
      s_.gpu_owners[g.index] = s->Compute(j.team, j.name)->metadata.OwnerKey();
    }
    const double waited = std::chrono::duration<double>(now - j.queued_at).count() / 60;
    waits_[j.team].push_back(waited);
    if (j.within) within_waits_[j.team].push_back(waited);
    s->computes.insert_or_assign({j.team, j.name}, InstanceOf(j));  // as Engine::Claim does
  }

  bool fair_;
  std::vector<Job> jobs_;
  FakeClock clock_{kMonday};
  engine::AdmissionSnapshot s_;  // fleet, quotas, guarantees, GPU owners
  double held_s_ = 0, weekday_held_s_ = 0, lost_s_ = 0;
  int preemptions_ = 0;
  std::map<std::string, std::vector<double>> waits_, within_waits_;
};

}  // namespace
}  // namespace gantry::bench

int main(int argc, char** argv) {
  using namespace gantry::bench;
  uint32_t seed = 18;
  for (int k = 1; k + 1 < argc; k += 2)
    if (!std::strcmp(argv[k], "--seed")) seed = static_cast<uint32_t>(std::atoi(argv[k + 1]));
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<Job> trace = Trace(seed);
  Sim fifo(false, trace), fair(true, trace);
  fifo.Run();
  fair.Run();
  fifo.Print("fifo");
  fair.Print("fair");
  std::printf("summary jobs=%zu weekday_utilisation_fifo=%.3f weekday_utilisation_fair=%.3f",
              trace.size(), fifo.Utilisation(), fair.Utilisation());
  for (const auto& team : kTeams)
    std::printf(" p95_within_%s_min=%.0f/%.0f", team.c_str(), fifo.P95Within(team),
                fair.P95Within(team));
  std::printf(" wall_s=%.1f\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}
