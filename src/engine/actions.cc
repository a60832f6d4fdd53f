// The lifecycle actions of engine.h (deploy, destroy, cancel, delete; stop and start in
// stop_start.cc) and the rules that tie services to their compute instances.
#include <spdlog/spdlog.h>

#include "common/errors.h"
#include "common/ids.h"
#include "common/status_macros.h"
#include "engine/created_compute.h"
#include "engine/dependencies.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "model/codec.h"

namespace gantry::engine {

namespace json = boost::json;
using internal::IsConflict;
using internal::kMaxRetries;
using model::Phase;
using model::RunAction;

namespace {

// The lifecycle action (model::Decide) a run of `action` performs.
model::Action ActionOf(RunAction action, bool delete_instance) {
  switch (action) {
    case RunAction::kApply:
      return model::Action::kDeploy;
    case RunAction::kStop:
      return model::Action::kStop;
    case RunAction::kStart:
      return model::Action::kStart;
    case RunAction::kDestroy:
      break;
  }
  return delete_instance ? model::Action::kDelete : model::Action::kDestroy;
}

}  // namespace

absl::Status Engine::BeforeQueue(const model::Instance& instance, RunAction action,
                                 bool delete_instance, bool cascade) {
  const std::string& ns = instance.metadata.ns;
  const std::string& name = instance.metadata.name;
  if (instance.kind == kComputeInstanceKind && action == RunAction::kDestroy) {
    // Services run on this compute instance: they go first (cascade), or it stays.
    ASSIGN_OR_RETURN(auto services, ServicesOn(store_, ns, name));
    std::vector<json::object> blocking = delete_instance ? services : ActiveServices(services);
    if (!blocking.empty() && !cascade)
      return HasServicesError(delete_instance ? "delete" : "destroy", ns, name, blocking);
    if (!blocking.empty()) RETURN_IF_ERROR(CascadeToServices(blocking, delete_instance));
  }
  if (action == RunAction::kStop) {
    // Refused before anything changes: an instance never ends up half-stopped.
    RETURN_IF_ERROR(CheckCanStop(instance));
    if (instance.kind == kComputeInstanceKind) StopServicesOn(instance, false);
  }
  const bool starts = action == RunAction::kApply || action == RunAction::kStart;
  if (instance.kind == kServiceInstanceKind && starts && instance.status.compute_created) {
    // The service's own compute instance (auto-create compute) deploys (or starts) with it;
    // the service waits for it (ComputeNotReady) like any other.
    auto compute = internal::LoadInstance(store_, kComputeInstanceKind, instance.compute_ns,
                                          instance.compute_name);
    // (When its profile wants approval, the gate in front of the service's deploy or start
    // asked for it already: the compute instance waits, PendingApproval, and is left alone.)
    auto caction = compute.ok() ? CreatedComputeAction(compute->status.PhaseOr()) : std::nullopt;
    if (caction) {
      auto queued = Queue(kComputeInstanceKind, instance.compute_ns, instance.compute_name,
                          *caction, false, false);
      if (!queued.ok())
        spdlog::warn("service {}/{}: cannot deploy its compute instance {}: {}", ns, name,
                     instance.compute_name, std::string(queued.status().message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<json::object> Engine::Queue(const std::string& kind, const std::string& ns,
                                           const std::string& name, RunAction action,
                                           bool delete_instance, bool cascade,
                                           const std::string& cause, const BeforeDecide* prepare,
                                           store::AlsoCommit* also,
                                           std::optional<model::Instance> read) {
  if (stopping_) return absl::UnavailableError("gantryd is shutting down; try again shortly");
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(
        model::Instance instance,
        read ? *std::exchange(read, std::nullopt) : internal::LoadInstance(store_, kind, ns, name));
    if (prepare) {
      RETURN_IF_ERROR((*prepare)(instance));
      instance.raw = model::EncodeInstance(instance);  // Decide reads the prepared phase
    }
    ASSIGN_OR_RETURN(model::Effect effect,
                     model::Decide(ActionOf(action, delete_instance), instance.raw));
    if (effect == model::Effect::kCancelQueuedRun) return Cancel(kind, ns, name);
    RETURN_IF_ERROR(BeforeQueue(instance, action, delete_instance, cascade));
    model::InstanceStatus& st = instance.status;
    int64_t count = st.run_count.value_or(0) + 1;
    // Service runs are NAME-sN, compute runs NAME-N: a service and a compute instance of
    // the same name never share a run name.
    std::string run_name =
        name + (kind == kServiceInstanceKind ? "-s" : "-") + std::to_string(count);
    model::Run run = model::NewRun(run_name, ns, NewUid(), Now(), kind, name, instance.metadata.uid,
                                   action, instance.metadata.generation, st.profile_revision,
                                   st.template_revision, st.PhaseOr(), delete_instance);
    run.cause = cause;
    const std::string verb(model::RunActionName(action));
    st.phase = Phase::kWaiting;
    st.action = action;
    st.reason = cause == kPreempted ? kPreempted : "Queued";
    st.message = verb + " run " + run_name + " is queued";
    st.run_count = count;
    st.last_run = run_name;
    std::vector<store::Write> writes;
    writes.push_back(internal::UpdateOf(std::move(instance)));
    writes.push_back(
        {store::Write::Op::kCreate, model::kRunKind, model::EncodeRun(std::move(run)), 0, 0});
    if (also) writes.push_back(also->make(writes[0].object));
    auto stored = store_.Commit(std::move(writes));
    if (stored.ok()) {
      if (also) also->committed = true;
      if (action == RunAction::kStop && kind == kComputeInstanceKind)
        if (auto now_instance = model::DecodeInstance((*stored)[0]); now_instance.ok())
          StopServicesOn(*now_instance, true);
      Notify();
      return std::move((*stored)[0]);
    }
    if (IsConflict(stored.status()) && attempt < kMaxRetries) continue;
    return stored.status();
  }
}

absl::Status Engine::CascadeToServices(const std::vector<json::object>& services, bool remove) {
  for (const model::Instance& s : internal::DecodeInstances(services)) {
    const std::string& sns = s.metadata.ns;
    const std::string& sname = s.metadata.name;
    absl::StatusOr<json::object> done;
    if (s.status.PhaseOr() == Phase::kNotDeployed) {
      if (!remove) continue;
      done = RemoveRecord(kServiceInstanceKind, sns, sname);
    } else {
      done = Queue(kServiceInstanceKind, sns, sname, RunAction::kDestroy, remove, false);
      // A deploy still queued (waiting for this compute instance) is simply canceled.
      if (done.ok() && remove) {
        auto now = model::DecodeInstance(*done);
        if (now.ok() && now->status.phase == Phase::kNotDeployed)
          done = RemoveRecord(kServiceInstanceKind, sns, sname);
      }
    }
    if (!done.ok() && !absl::IsNotFound(done.status()))
      return ConflictError("cannot destroy service instance " + sns + "/" + sname +
                               " first: " + std::string(done.status().message()),
                           ReasonOf(done.status()));
  }
  return absl::OkStatus();
}

absl::StatusOr<json::object> Engine::RemoveRecord(const std::string& kind, const std::string& ns,
                                                  const std::string& name) {
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(model::Instance instance, internal::LoadInstance(store_, kind, ns, name));
    ASSIGN_OR_RETURN(model::Effect effect, model::Decide(model::Action::kDelete, instance.raw));
    if (effect != model::Effect::kRemoveNow)
      return ConflictError(std::string(kind == kServiceInstanceKind ? "service" : "compute") +
                               " instance " + name + " is deployed; destroy it first",
                           "Conflict");
    ASSIGN_OR_RETURN(auto runs, RunsOf(kind, ns, name));
    std::vector<store::Write> writes = DeletesOf(runs);
    writes.push_back(
        {store::Write::Op::kDelete, kind, instance.raw, instance.metadata.resource_version, 0});
    auto stored = store_.Commit(std::move(writes));
    if (stored.ok()) {
      for (const auto& r : runs) logs_.Remove(r.metadata.uid);
      if (kind == kServiceInstanceKind) ReleaseCreatedCompute(instance);
      return std::move(stored->back());
    }
    if (IsConflict(stored.status()) && attempt < kMaxRetries) continue;
    return stored.status();
  }
}

absl::StatusOr<std::vector<model::Run>> Engine::RunsOf(const std::string& kind,
                                                       const std::string& ns,
                                                       const std::string& name) {
  store::ListOptions q;
  q.kind = model::kRunKind;
  q.ns = ns;
  q.fields = {{"spec.instanceRef.name", true, name}};
  ASSIGN_OR_RETURN(auto page, store_.List(q));
  std::vector<model::Run> out;
  for (auto& r : page.items) {
    auto run = model::DecodeRun(std::move(r));
    if (run.ok() && run->instance_kind == kind) out.push_back(*std::move(run));
  }
  return out;
}

std::vector<store::Write> Engine::DeletesOf(const std::vector<model::Run>& runs) {
  std::vector<store::Write> writes;
  for (const auto& r : runs)
    writes.push_back({store::Write::Op::kDelete, model::kRunKind, r.raw, 0, 0});
  return writes;
}

void Engine::ReleaseCreatedCompute(const model::Instance& service) {
  if (!service.status.compute_created) return;
  const std::string& cns = service.compute_ns;
  const std::string& cname = service.compute_name;
  // Other services may have been put on it since: then it stays.
  auto others = ServicesOn(store_, cns, cname);
  if (!others.ok() || !others->empty()) return;
  auto compute = internal::LoadInstance(store_, kComputeInstanceKind, cns, cname);
  if (!compute.ok()) return;
  auto removed = compute->status.PhaseOr() == Phase::kNotDeployed
                     ? RemoveRecord(kComputeInstanceKind, cns, cname)
                     : Queue(kComputeInstanceKind, cns, cname, RunAction::kDestroy, true, false);
  if (!removed.ok())
    spdlog::warn("service {}/{} is gone but its compute instance {} stays: {}", service.metadata.ns,
                 service.metadata.name, cname, std::string(removed.status().message()));
}

void Engine::NoteComputeState(const model::Instance& compute) {
  auto services = ServicesOn(store_, compute.metadata.ns, compute.metadata.name);
  if (!services.ok() || services->empty()) return;
  const Phase phase = compute.status.PhaseOr();
  const bool ready = phase == Phase::kSuccess;
  const std::string reason =
      ready ? "ComputeSucceeded" : "Compute" + std::string(model::PhaseName(phase));
  const std::string why = compute.status.reason.value_or("");
  const std::string message = "compute instance " + compute.metadata.name + " is " +
                              std::string(model::PhaseWords(phase)) +
                              (why.empty() || ready ? "" : " (" + why + ")") +
                              (ready ? "" : ": " + compute.status.message.value_or(""));
  const std::string now = Now();
  for (const model::Instance& listed : internal::DecodeInstances(*std::move(services))) {
    for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
      auto service = internal::LoadInstance(store_, kServiceInstanceKind, listed.metadata.ns,
                                            listed.metadata.name);
      if (!service.ok()) break;
      Phase sphase = service->status.PhaseOr();
      // Deployed services run on it, Waiting ones wait for it (ComputeNotReady); a run in
      // flight reports itself.
      if (sphase != Phase::kSuccess && sphase != Phase::kFailed && sphase != Phase::kWaiting) break;
      auto before = service->status.conditions;
      service->status.SetCondition("ComputeReady", ready, reason, message, now);
      if (service->status.conditions == before) break;
      std::vector<store::Write> w;
      w.push_back(internal::UpdateOf(*service));
      absl::Status s = internal::CommitRelaxed(store_, std::move(w));
      if (s.ok() || !IsConflict(s)) break;
    }
  }
}

absl::StatusOr<json::object> Engine::Deploy(const std::string& kind, const std::string& ns,
                                            const std::string& name, store::AlsoCommit* also,
                                            std::optional<model::Instance> read) {
  return Queue(kind, ns, name, RunAction::kApply, false, false, "", nullptr, also, std::move(read));
}

absl::StatusOr<json::object> Engine::QueueApproved(const std::string& kind, const std::string& ns,
                                                   const std::string& name, RunAction action,
                                                   const BeforeDecide& prepare) {
  return Queue(kind, ns, name, action, false, false, "", &prepare);
}

absl::StatusOr<json::object> Engine::Destroy(const std::string& kind, const std::string& ns,
                                             const std::string& name, bool cascade,
                                             const std::string& reason, store::AlsoCommit* also) {
  return Queue(kind, ns, name, RunAction::kDestroy, false, cascade, reason, nullptr, also);
}

absl::StatusOr<json::object> Engine::DeleteDeployed(const std::string& kind, const std::string& ns,
                                                    const std::string& name, bool cascade) {
  return Queue(kind, ns, name, RunAction::kDestroy, true, cascade);
}

absl::StatusOr<json::object> Engine::Delete(const std::string& kind, const std::string& ns,
                                            const std::string& name, bool cascade, bool* accepted) {
  *accepted = false;
  ASSIGN_OR_RETURN(model::Instance instance, internal::LoadInstance(store_, kind, ns, name));
  ASSIGN_OR_RETURN(model::Effect effect, model::Decide(model::Action::kDelete, instance.raw));
  if (effect == model::Effect::kTeardownThenRemove) {
    *accepted = true;
    return DeleteDeployed(kind, ns, name, cascade);
  }
  if (kind == kComputeInstanceKind) {
    ASSIGN_OR_RETURN(auto services, ServicesOn(store_, ns, name));
    if (!services.empty() && !cascade) return HasServicesError("delete", ns, name, services);
    if (!services.empty()) {
      RETURN_IF_ERROR(CascadeToServices(services, true));
      ASSIGN_OR_RETURN(auto left, ServicesOn(store_, ns, name));
      if (!left.empty())
        return ConflictError("compute instance " + name + " is not deployed but " +
                                 DescribeServices(left, ns) +
                                 " still run on it; they are being destroyed: delete it again "
                                 "when they are gone",
                             "HasServices");
    }
  }
  return RemoveRecord(kind, ns, name);
}

absl::StatusOr<json::object> Engine::CancelRunning(const model::Instance& instance,
                                                   const model::Run& run, bool last_try) {
  // Claimed, and Waiting because the driver waits on the infrastructure (a PENDING Slurm
  // job): the driver sees the cancellation, undoes what it started, and the run ends
  // Canceled.
  std::shared_ptr<Active> active;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = active_.find(run.metadata.uid); it != active_.end()) active = it->second;
  }
  if (!active) {
    if (!last_try) return absl::AbortedError("the run may be claimed right now");
    return ConflictError("run " + run.metadata.name + " is running on another gantryd replica",
                         "RunStarted");
  }
  active->cancel = true;
  logs_.Append(run.metadata.uid, "gantry: cancel requested");
  return instance.raw;
}

absl::StatusOr<json::object> Engine::Cancel(const std::string& kind, const std::string& ns,
                                            const std::string& name) {
  for (int attempt = 0;; ++attempt) {
    const bool last_try = attempt >= kMaxRetries;
    ASSIGN_OR_RETURN(model::Instance instance, internal::LoadInstance(store_, kind, ns, name));
    RETURN_IF_ERROR(model::Decide(model::Action::kCancel, instance.raw).status());
    const std::string run_name = instance.status.last_run.value_or("");
    ASSIGN_OR_RETURN(model::Run run, internal::LoadRun(store_, ns, run_name));
    absl::StatusOr<json::object> done;
    if (run.phase == model::RunPhase::kRunning) {
      done = CancelRunning(instance, run, last_try);
    } else if (run.phase != model::RunPhase::kQueued) {
      // Claimed meanwhile: the instance moves on.
      done = last_try ? ConflictError("run " + run_name + " has already started", "RunStarted")
                      : absl::AbortedError("the run has started");
    } else {
      const std::string verb(model::RunActionName(run.action));
      run.phase = model::RunPhase::kCanceled;
      run.reason = "Canceled";
      run.message = "canceled before it started; nothing ran";
      run.completion_time = Now();
      instance.status.phase = run.previous_phase;
      instance.status.reason = "Canceled";
      instance.status.message = verb + " run " + run_name + " was canceled before it started";
      std::vector<store::Write> writes;
      writes.push_back(internal::UpdateOf(instance));
      writes.push_back(internal::UpdateOf(run));
      auto stored = store_.Commit(std::move(writes));
      if (stored.ok()) {
        metrics_.Add("gantry_runs_total", {{"action", verb}, {"phase", "Canceled"}});
        logs_.Finish(run.metadata.uid);  // followers of the queued run see its end
        return std::move((*stored)[0]);
      }
      done = stored.status();
    }
    if (done.ok() || !IsConflict(done.status()) || last_try) return done;
  }
}

}  // namespace gantry::engine
