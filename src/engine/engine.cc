// The Engine's start, stop and shared plumbing. The rest of it, by part:
//   actions.cc     the lifecycle actions (deploy, destroy, cancel, delete) and services
//   dispatcher.cc  the dispatcher (one snapshot per pass, pure admission, claims), workers
//   executor.cc    running a claimed run through its driver, recording its end
//   recovery.cc    restarts (recover, adopt), leases (heartbeat, take-over), workload events
#include "engine/engine.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/status_macros.h"
#include "engine/engine_internal.h"
#include "engine/usage_rollup.h"
#include "model/schema.h"

namespace gantry::engine {

namespace json = boost::json;
using internal::IsConflict;
using internal::kMaxRetries;

Engine::Engine(store::Store& store, drivers::DriverRegistry& drivers, const SecretBox& secrets,
               RunLogs& logs, const Clock& clock, Metrics& metrics, GpuAllocator& gpus,
               EngineOptions options)
    : store_(store),
      drivers_(drivers),
      secrets_(secrets),
      logs_(logs),
      clock_(clock),
      metrics_(metrics),
      gpus_(gpus),
      options_(std::move(options)) {
  metrics_.Describe("gantry_runs_total", "counter", "Runs finished, by action and phase.");
  metrics_.Describe("gantry_run_duration_seconds", "histogram", "Time from claim to end of a run.",
                    {0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600});
  metrics_.Describe("gantry_run_queue_depth", "gauge", "Runs queued and not yet claimed.");
  metrics_.Describe("gantry_dispatch_pass_seconds", "histogram",
                    "One dispatcher pass over a non-empty queue: reads, admission, writes.",
                    {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5});
  metrics_.Describe("gantry_runs_active", "gauge", "Runs executing on this replica.");
  metrics_.Describe("gantry_preemptions_total", "counter",
                    "Instances preempted to give GPUs back to a project within its guarantee, by "
                    "the preempted instance's project and GPU type.");
}

Engine::~Engine() { Stop(); }

std::string Engine::Now() const { return FormatRfc3339(clock_.Now()); }

void Engine::Notify() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
  }
  wake_.notify_all();
}

int64_t Engine::QueueDepth() {
  auto n = store_.Count(model::kRunKind, std::nullopt, {{"status.phase", true, "Queued"}});
  return n.ok() ? *n : 0;
}

absl::Status Engine::Start() {
  drivers_.SetObserver(this);
  RETURN_IF_ERROR(RebuildGpuAssignments());
  RETURN_IF_ERROR(usage::UpgradeLedger(store_));  // a ledger from before the rollups
  RETURN_IF_ERROR(Recover());
  AdoptWorkloads();
  running_ = true;
  Notify();  // the first look at the queue is at once (recovery may have re-queued runs)
  threads_.emplace_back([this] { DispatchLoop(); });
  for (int i = 0; i < options_.workers; ++i) threads_.emplace_back([this] { WorkerLoop(); });
  threads_.emplace_back([this] { HeartbeatLoop(); });
  return absl::OkStatus();
}

bool Engine::Stop() {
  if (!running_.exchange(false)) return true;
  bool drained = true;
  stopping_ = true;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Claimed but not started runs go back to the queue.
    std::vector<Claimed> unstarted;
    unstarted.swap(claimed_);
    lock.unlock();
    for (const Claimed& c : unstarted) {
      UpdateRun(c.run.metadata.ns, c.run.metadata.name, [](model::Run& r) {
        r.phase = model::RunPhase::kQueued;
        r.lease.reset();
      }).IgnoreError();
    }
    lock.lock();
    drained = idle_.wait_for(lock, options_.drain, [this] { return busy_ == 0; });
    if (!drained)
      spdlog::warn("engine: {} runs still running at shutdown; the next start recovers them",
                   busy_);
  }
  wake_.notify_all();
  work_ready_.notify_all();
  stopped_.notify_all();
  for (auto& t : threads_) {
    if (!t.joinable()) continue;
    // Workers still inside a driver call are detached: the process exits under them and the
    // next start recovers their runs from the store.
    if (drained)
      t.join();
    else
      t.detach();
  }
  threads_.clear();
  return drained;
}

absl::Status Engine::UpdateRun(const std::string& ns, const std::string& name,
                               const std::function<void(model::Run&)>& mutate) {
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(model::Run run, internal::LoadRun(store_, ns, name));
    mutate(run);
    std::vector<store::Write> writes;
    writes.push_back(internal::UpdateOf(std::move(run)));
    absl::Status s = internal::CommitRelaxed(store_, std::move(writes));
    if (s.ok()) return s;
    if (IsConflict(s) && attempt < kMaxRetries) continue;
    return s;
  }
}

json::object Engine::NodeView() {
  const Inventory& inv = gpus_.inventory();
  auto assignments = gpus_.Assignments();
  std::map<std::string, int64_t> capacity, allocated;
  json::array gpus;
  for (const auto& g : inv.gpus) {
    ++capacity[g.type];
    json::object o{{"index", g.index},
                   {"uuid", g.uuid},
                   {"name", g.name},
                   {"type", g.type},
                   {"memoryMiB", g.memory_mib}};
    if (auto it = assignments.find(g.index); it != assignments.end()) {
      ++allocated[g.type];
      std::string owner = it->second;
      o["assignedTo"] = owner.substr(0, owner.rfind('/'));
    }
    gpus.push_back(std::move(o));
  }
  json::object cap, alloc;
  for (const auto& [t, n] : capacity) {
    cap[t] = n;
    alloc[t] = allocated[t];
  }
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return json::object{{"apiVersion", model::kApiVersion},
                      {"kind", "Node"},
                      {"metadata", json::object{{"name", host}}},
                      {"status", json::object{{"gpuSource", inv.source},
                                              {"capacity", std::move(cap)},
                                              {"allocated", std::move(alloc)},
                                              {"gpus", std::move(gpus)}}}};
}

}  // namespace gantry::engine
