// Recovery and leases of engine.h: after a restart, runs left Running are re-queued or
// failed (Recover, RecoverRun) and the workloads of long-running drivers are adopted again
// (AdoptWorkloads); while running, the heartbeat renews this replica's leases and, with
// several replicas, takes over the runs of replicas whose leases expired. Long-running
// workloads report what they do through OnWorkloadEvent.
#include <spdlog/spdlog.h>

#include "common/status_macros.h"
#include "engine/dependencies.h"
#include "engine/deployment.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/usage_ledger.h"
#include "model/codec.h"

namespace gantry::engine {

namespace json = boost::json;
using internal::IsConflict;
using internal::kMaxRetries;
using model::Phase;

absl::Status Engine::RebuildGpuAssignments() {
  // Page by page: every instance is read, and a whole listing of 100,000 decoded at once
  // left gantryd at 400 MiB after a restart (docs/performance.md, 2026-12-04).
  store::ListOptions q;
  q.kind = kComputeInstanceKind;
  q.limit = 1000;
  return internal::ForEachPage(store_, q, [this](std::vector<json::object>& page) {
    for (const model::Instance& i : internal::DecodeInstances(std::move(page))) RestoreGpus(i);
  });
}

void Engine::RestoreGpus(const model::Instance& i) {
  if (!options_.sole_owner && i.status.host.value_or("") != options_.host) return;
  if (!i.status.gpus || i.status.gpus->empty()) return;
  std::vector<int> indices;
  for (const auto& g : *i.status.gpus) indices.push_back(std::atoi(g.c_str()));
  const std::string owner = i.metadata.OwnerKey();
  auto rejected = gpus_.Restore(owner, indices);
  if (!rejected.empty())
    spdlog::warn("instance {} holds GPUs this host does not have (any more) or another holds",
                 owner);
}

void Engine::AdoptWorkloads() {
  for (const char* kind : {kComputeInstanceKind, kServiceInstanceKind}) {
    store::ListOptions q;
    q.kind = kind;
    q.fields = {{"status.phase", true, "Success"}};
    auto page = store_.List(q);
    if (!page.ok()) continue;
    for (model::Instance& i : internal::DecodeInstances(std::move(page->items))) {
      i.kind = kind;
      AdoptWorkload(i);
    }
  }
}

std::optional<drivers::DeployRequest> Engine::AdoptRequest(const model::Instance& inst,
                                                           drivers::Driver** driver) {
  auto deployment = ResolvePinned(store_, inst);
  if (!deployment.ok()) return std::nullopt;
  const model::TemplateSpec& tmpl = deployment->tmpl;
  *driver = drivers_.Find(tmpl.driver);
  if (!*driver) return std::nullopt;
  drivers::DeployRequest req;
  req.action = "apply";
  req.instance = json::object{{"kind", inst.kind},
                              {"name", inst.metadata.name},
                              {"project", inst.metadata.ns},
                              {"uid", inst.metadata.uid},
                              {"labels", inst.metadata.labels}};
  req.config = tmpl.config;
  req.resources = deployment->profile.resources.raw;
  req.state_dir = options_.state_dir + "/" + inst.metadata.uid;
  req.gpu_indices = inst.status.gpus.value_or(std::vector<std::string>{});
  if (inst.kind == kServiceInstanceKind) {
    auto compute =
        internal::LoadInstance(store_, kComputeInstanceKind, inst.compute_ns, inst.compute_name);
    if (compute.ok()) req.gpu_indices = compute->status.gpus.value_or(std::vector<std::string>{});
  }
  return req;
}

void Engine::AdoptWorkload(const model::Instance& inst) {
  if (!inst.status.driver_state || inst.status.driver_state->empty()) return;
  // Several replicas: each adopts the workloads of its own host.
  if (!options_.sole_owner && inst.status.host.value_or("") != options_.host) return;
  drivers::Driver* driver = nullptr;
  auto req = AdoptRequest(inst, &driver);
  if (!req) return;
  const json::object& state = *inst.status.driver_state;
  if (driver->Adopt(*req, state)) {
    spdlog::info("adopted the workload of instance {}/{}", inst.metadata.ns, inst.metadata.name);
    return;
  }
  drivers::WorkloadEvent e;
  e.kind = drivers::WorkloadEvent::Kind::kFailed;
  e.ns = inst.metadata.ns;
  e.name = inst.metadata.name;
  e.instance_uid = inst.metadata.uid;
  e.reason = "WorkloadLost";
  e.message = "the workload was gone when gantryd restarted (pid " +
              std::to_string(model::GetInt(state, "pid", 0)) + ")";
  e.restart_count = static_cast<int>(inst.status.restart_count.value_or(0));
  OnWorkloadEvent(e);
}

void Engine::OnWorkloadEvent(const drivers::WorkloadEvent& e) {
  for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
    // The event names the instance by project, name and uid; a compute and a service
    // instance may share a name, never a uid.
    std::string kind = kComputeInstanceKind;
    auto instance = internal::LoadInstance(store_, kind, e.ns, e.name);
    if (!instance.ok() || instance->metadata.uid != e.instance_uid) {
      kind = kServiceInstanceKind;
      instance = internal::LoadInstance(store_, kind, e.ns, e.name);
    }
    if (!instance.ok() || instance->metadata.uid != e.instance_uid) return;
    model::InstanceStatus& st = instance->status;
    // Only a deployed workload's news matter; a run in progress owns the status.
    if (st.PhaseOr() != Phase::kSuccess && st.PhaseOr() != Phase::kFailed) return;
    const std::string now = Now();
    st.restart_count = e.restart_count;
    if (!e.driver_state.empty()) st.driver_state = e.driver_state;
    st.reason = e.reason;
    st.message = e.message;
    switch (e.kind) {
      case drivers::WorkloadEvent::Kind::kRunning:
        st.phase = Phase::kSuccess;
        st.reason = "";
        st.message = e.message.empty() ? "the workload is running" : e.message;
        st.SetCondition("Ready", true, "Running", *st.message, now);
        break;
      case drivers::WorkloadEvent::Kind::kRestarting:
        st.SetCondition("Ready", false, e.reason, e.message, now);
        break;
      case drivers::WorkloadEvent::Kind::kFailed:
        st.phase = Phase::kFailed;
        st.SetCondition("Ready", false, e.reason, e.message, now);
        break;
    }
    std::vector<store::Write> w;
    w.push_back(internal::UpdateOf(*instance));
    auto stored = store_.Commit(std::move(w));
    if (stored.ok() && kind == kComputeInstanceKind)
      if (auto now_instance = model::DecodeInstance(std::move((*stored)[0])); now_instance.ok())
        NoteComputeState(*now_instance);
    if (stored.ok() || !IsConflict(stored.status())) return;
  }
}

absl::Status Engine::Recover() {
  // Before any claim reads the ledger: intervals an older gantryd wrote without the label.
  if (absl::Status labelled = usage::LabelOpenIntervals(store_); !labelled.ok())
    spdlog::warn("usage ledger: cannot label open intervals: {}", std::string(labelled.message()));
  store::ListOptions q;
  q.kind = model::kRunKind;
  q.fields = {{"status.phase", true, "Running"}};
  q.oldest_first = true;
  ASSIGN_OR_RETURN(auto page, store_.List(q));
  const auto now = clock_.Now();
  for (auto& stored : page.items) {
    auto run = model::DecodeRun(std::move(stored));
    if (!run.ok()) continue;
    if (run->lease && run->lease->holder == options_.holder) continue;
    if (options_.sole_owner) {
      RETURN_IF_ERROR(RecoverRun(*run, true));
      continue;
    }
    TakeOver(*run, now);
  }
  return absl::OkStatus();
}

void Engine::TakeOver(const model::Run& run, std::chrono::system_clock::time_point now) {
  const model::Lease lease = run.lease.value_or(model::Lease{});
  // Another replica may be alive: only expired leases are taken over. Renewal times have
  // second precision; a second of slack keeps a live holder's lease.
  auto renewed = internal::ParseRfc3339(lease.renew_time);
  auto duration = std::chrono::seconds(lease.duration_seconds);
  if (renewed && now <= *renewed + duration + std::chrono::seconds(1)) return;
  const bool same_host = lease.host == options_.host;
  const drivers::Driver* d = DriverOf(run);
  if (d && d->Caps().host_bound && !same_host) return;  // the replica on its host takes it over
  // Take the lease first: exactly one replica wins (the commit is guarded by the run's
  // resourceVersion) and recovers the run.
  model::Run taken = run;
  taken.lease = model::Lease{options_.holder, options_.host, Now(), options_.lease.count()};
  std::vector<store::Write> w;
  w.push_back(internal::UpdateOf(taken));
  auto stored = store_.Commit(std::move(w));
  if (!stored.ok()) return;  // another replica took it, or it moved on
  auto mine = model::DecodeRun(std::move((*stored)[0]));
  if (!mine.ok()) return;
  spdlog::info("taking over run {}/{} from {} (lease expired)", run.metadata.ns, run.metadata.name,
               lease.holder);
  // The dead replica's usage counts until its last heartbeat, not this takeover's.
  usage::CloseAtLastHeartbeat(store_, run).IgnoreError();
  RecoverRun(*mine, same_host).IgnoreError();
}

drivers::Driver* Engine::DriverOf(const model::Run& run) {
  auto instance =
      internal::LoadInstance(store_, run.instance_kind, run.metadata.ns, run.instance_name);
  if (!instance.ok()) return nullptr;
  auto deployment = ResolveRun(store_, *instance, run);
  return deployment.ok() ? drivers_.Find(deployment->tmpl.driver) : nullptr;
}

void Engine::UpdateInstanceOf(const model::Run& run,
                              const std::function<bool(model::InstanceStatus&)>& mutate) {
  for (int i = 0; i < kMaxRetries; ++i) {
    auto inst =
        internal::LoadInstance(store_, run.instance_kind, run.metadata.ns, run.instance_name);
    if (!inst.ok() || !mutate(inst->status)) return;
    std::vector<store::Write> w;
    w.push_back(internal::UpdateOf(*inst));
    if (store_.Commit(std::move(w)).ok()) return;
  }
}

absl::Status Engine::RecoverRun(const model::Run& run, bool cleanup) {
  const std::string& ns = run.metadata.ns;
  const std::string& name = run.metadata.name;
  // The driver cleans up what the dead run left (its process group) and says whether
  // running the action again from the start is safe. Another host's run: its processes are
  // out of reach; the driver's contract (apply and destroy are idempotent) makes a re-run
  // safe. Host-bound drivers never get here.
  bool resume = false;
  if (drivers::Driver* d = DriverOf(run))
    resume = cleanup ? d->Recover(run.driver_state.value_or(json::object{})) : true;
  // The dead run's usage counts until its last heartbeat (usage_ledger.h).
  usage::CloseAtLastHeartbeat(store_, run).IgnoreError();
  const int64_t attempts = run.attempt;
  if (resume && attempts < kMaxAttempts) {
    logs_.Append(run.metadata.uid, "gantry: gantryd restarted during attempt " +
                                       std::to_string(attempts) +
                                       "; the run is queued again (the driver says re-running "
                                       "is safe)");
    RETURN_IF_ERROR(UpdateRun(ns, name, [](model::Run& r) {
      r.phase = model::RunPhase::kQueued;
      r.lease.reset();
      r.driver_state.reset();
    }));
    UpdateInstanceOf(run, [&](model::InstanceStatus& st) {
      st.phase = Phase::kWaiting;
      st.reason = "ControlPlaneRestarted";
      st.message = "gantryd restarted while run " + name + " was running; it is queued again";
      return true;
    });
    spdlog::info("recovery: run {}/{} re-queued", ns, name);
    return absl::OkStatus();
  }
  logs_.Append(run.metadata.uid,
               "gantry: gantryd restarted during the run; it cannot be resumed safely");
  Finish(run, absl::AbortedError("gantryd restarted while the run was in progress"), {});
  // Finish maps the code to DriverError; say precisely why.
  UpdateRun(ns, name, [](model::Run& r) { r.reason = "ControlPlaneRestarted"; }).IgnoreError();
  UpdateInstanceOf(run, [](model::InstanceStatus& st) {
    if (st.PhaseOr() != Phase::kFailed) return false;
    st.reason = "ControlPlaneRestarted";
    return true;
  });
  spdlog::info("recovery: run {}/{} failed with reason ControlPlaneRestarted", ns, name);
  return absl::OkStatus();
}

void Engine::HeartbeatLoop() {
  auto period = std::max<std::chrono::seconds>(std::chrono::seconds(1), options_.lease / 3);
  while (running_) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      stopped_.wait_for(lock, period, [this] { return !running_; });
      if (!running_) return;
    }
    std::vector<std::shared_ptr<Active>> active;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [uid, a] : active_) active.push_back(a);
    }
    const std::string now = Now();
    for (auto& a : active)
      UpdateRun(a->ns, a->name, [&](model::Run& r) {
        if (r.phase != model::RunPhase::kRunning) return;
        if (!r.lease || r.lease->holder != options_.holder) return;
        r.lease->renew_time = now;
      }).IgnoreError();
    // Several replicas: take over the runs of replicas whose leases expired.
    if (!options_.sole_owner) Recover().IgnoreError();
  }
}

}  // namespace gantry::engine
