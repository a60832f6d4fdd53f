#include "engine/admission.h"

#include "engine/dependencies.h"
#include "model/codec.h"

namespace gantry::engine {
namespace {

namespace json = boost::json;
using model::Phase;
using model::RunAction;
using Decision = Admission::Decision;

Admission Decided(Decision d, std::string reason, std::string message) {
  Admission a;
  a.decision = d;
  a.reason = std::move(reason);
  a.message = std::move(message);
  return a;
}

std::string Plural(int64_t n, const std::string& word) { return word + (n == 1 ? "" : "s"); }

// A service deploys only onto a compute instance in Success.
std::optional<Admission> GateService(const AdmissionSnapshot& s, const model::Instance& service) {
  const std::string& cns = service.compute_ns;
  const std::string& cname = service.compute_name;
  const model::Instance* compute = s.Compute(cns, cname);
  if (!compute)
    return Decided(Decision::kFail, "ComputeNotFound",
                   "compute instance " + cname + " of project " + cns + " does not exist");
  Phase phase = compute->status.PhaseOr();
  if (phase == Phase::kSuccess) return std::nullopt;
  std::string why = compute->status.reason.value_or("");
  return Decided(Decision::kWait, "ComputeNotReady",
                 "waiting for compute instance " + (cns == service.metadata.ns ? "" : cns + "/") +
                     cname + " to be Success (it is " + std::string(model::PhaseWords(phase)) +
                     (why.empty() ? "" : ": " + why) + "); the service deploys as soon as it is");
}

// Services on a compute instance go first (a cascading destroy or delete queued them).
std::optional<Admission> GateComputeDestroy(const AdmissionSnapshot& s, const model::Run& run) {
  std::vector<json::object> blocking;
  for (const model::Instance* svc : s.ServicesOn(run.metadata.ns, run.instance_name))
    if (run.delete_instance || svc->status.PhaseOr() != Phase::kNotDeployed)
      blocking.push_back(svc->raw);
  if (blocking.empty()) return std::nullopt;
  return Decided(Decision::kWait, "ServicesRunning",
                 "waiting for " + std::to_string(blocking.size()) + " " +
                     Plural(static_cast<int64_t>(blocking.size()), "service instance") + " to be " +
                     (run.delete_instance ? "deleted" : "destroyed") +
                     " first: " + DescribeServices(blocking, run.metadata.ns));
}

int FreeOf(const AdmissionSnapshot& s, const AdmissionPass& pass, const std::string& type) {
  int n = 0;
  for (const auto& g : s.inventory.gpus)
    if ((type.empty() || g.type == type) && !pass.gpu_owners.count(g.index)) ++n;
  return n;
}

int TotalOf(const AdmissionSnapshot& s, const std::string& type) {
  int n = 0;
  for (const auto& g : s.inventory.gpus) n += type.empty() || g.type == type;
  return n;
}

// Any type will do: the type with the most free GPUs among those with enough in all.
std::string ChooseType(const AdmissionSnapshot& s, const AdmissionPass& pass, int count) {
  std::set<std::string> types;
  for (const auto& g : s.inventory.gpus) types.insert(g.type);
  std::string type;
  int best_free = -1;
  for (const auto& t : types) {
    if (TotalOf(s, t) < count) continue;
    int f = FreeOf(s, pass, t);
    if (f > best_free) {
      best_free = f;
      type = t;
    }
  }
  return type;
}

std::string GpuWords(int count, const std::string& type) {
  return std::to_string(count) + " " + (type.empty() ? "" : type + " ") + Plural(count, "GPU");
}

// This host has fewer GPUs of the type than asked.
std::optional<Admission> CheckSchedulable(const AdmissionSnapshot& s, const std::string& name,
                                          const std::string& type, int count) {
  int total = TotalOf(s, type);
  if (total >= count) return std::nullopt;
  std::map<std::string, int> have;
  for (const auto& g : s.inventory.gpus) ++have[g.type];
  std::string inventory;
  for (const auto& [t, n] : have)
    inventory += (inventory.empty() ? "" : ", ") + std::to_string(n) + " " + t;
  // Several replicas: a replica on another host may have them.
  return Decided(s.sole_owner ? Decision::kFail : Decision::kWait, "Unschedulable",
                 "instance " + name + " needs " + GpuWords(count, type) + " but this host has " +
                     (total == 0 ? "none" : std::to_string(total)) + " (" +
                     (inventory.empty() ? "no GPUs" : inventory) + ", " + s.inventory.source + ")");
}

// Whether compute instance `i` holds a share of its project's quota: being or deployed,
// failed with GPUs still assigned (held until a destroy), or Waiting while its deploy runs
// (a Slurm job PENDING), not when merely queued.
bool HoldsQuota(const AdmissionSnapshot& s, const model::Instance& i) {
  switch (i.status.PhaseOr()) {
    case Phase::kInProgress:
    case Phase::kSuccess:
      return true;
    case Phase::kFailed:
      return i.status.gpus && !i.status.gpus->empty();
    case Phase::kWaiting:
      return s.running_deploys.count({i.metadata.ns, i.status.last_run.value_or("")}) > 0;
    case Phase::kNotDeployed:
      return false;
  }
  return false;
}

std::optional<Admission> CheckQuota(const AdmissionSnapshot& s, const std::string& ns,
                                    const std::string& name, const std::string& type, int count) {
  auto q = s.quotas.find(ns);
  if (q == s.quotas.end()) return std::nullopt;
  int64_t max_instances = q->second.instances;
  int64_t max_gpus = count > 0 ? q->second.GpusOf(type) : -1;
  if (max_instances < 0 && max_gpus < 0) return std::nullopt;
  int64_t deployed = 0, used = 0;
  for (const auto& [key, i] : s.computes) {
    if (key.first != ns || !HoldsQuota(s, i)) continue;
    ++deployed;
    const model::Resources held =
        model::ParseResources(i.status.resources.value_or(json::object{}));
    if (held.gpu_type == type) used += held.gpu_count;
  }
  if (max_instances >= 0 && deployed + 1 > max_instances)
    return Decided(Decision::kWait, "QuotaExceeded",
                   "project " + ns + " allows " + std::to_string(max_instances) + " " +
                       Plural(max_instances, "deployed instance") + " and has " +
                       std::to_string(deployed) + "; " + name + " waits until one is destroyed");
  if (max_gpus >= 0 && used + count > max_gpus)
    return Decided(Decision::kWait, "QuotaExceeded",
                   "project " + ns + " has a quota of " + std::to_string(max_gpus) + " " + type +
                       " GPUs; " + std::to_string(used) + " are in use and " + name + " needs " +
                       std::to_string(count));
  return std::nullopt;
}

// Free GPUs, first come first served per type; on success `a` gets them.
void TakeGpus(const AdmissionSnapshot& s, const std::string& type, int count, AdmissionPass* pass,
              Admission* a) {
  if (pass->blocked_types.count(type)) {
    *a = Decided(Decision::kWait, "InsufficientCapacity",
                 "needs " + GpuWords(count, type) + "; queued behind earlier deploys waiting for " +
                     (type.empty() ? "" : type + " ") + "GPUs");
    return;
  }
  bool held = false;
  for (const auto& [index, owner] : pass->gpu_owners) held = held || owner == a->owner;
  auto picked = PickGpus(s.inventory.gpus, pass->gpu_owners, a->owner, type, count);
  if (!picked) {
    pass->blocked_types.insert(type);
    int free_before = FreeOf(s, *pass, type);
    *a = Decided(Decision::kWait, "InsufficientCapacity",
                 "needs " + GpuWords(count, type) + "; " + std::to_string(free_before) + " of " +
                     std::to_string(TotalOf(s, type)) + " are free");
    return;
  }
  for (const auto& g : *picked) pass->gpu_owners[g.index] = a->owner;
  a->gpus = std::move(*picked);
  a->gpus_were_held = held;
}

// Capacity and quota of a compute instance's deploy with `target`.
void AdmitDeploy(const AdmissionSnapshot& s, const model::Run& run, const Target& target,
                 AdmissionPass* pass, Admission* a) {
  a->resources = target.resources.raw;
  std::string type = target.resources.gpu_type;
  const int count = target.resources.gpu_count;
  const bool assigns = target.caps.host_bound && count > 0;  // GPUs of this host
  if (assigns && type.empty()) type = ChooseType(s, *pass, count);
  if (!type.empty()) model::EnsureObject(a->resources, "gpu")["type"] = type;
  std::optional<Admission> refused;
  if (assigns) refused = CheckSchedulable(s, run.instance_name, type, count);
  if (!refused) refused = CheckQuota(s, run.metadata.ns, run.instance_name, type, count);
  if (refused) {
    refused->owner = a->owner;
    refused->host_bound = a->host_bound;
    refused->resources = std::move(a->resources);
    *a = std::move(*refused);
    return;
  }
  if (assigns) TakeGpus(s, type, count, pass, a);
}

}  // namespace

const model::Instance* AdmissionSnapshot::Compute(const std::string& ns,
                                                  const std::string& name) const {
  auto it = computes.find({ns, name});
  return it == computes.end() ? nullptr : &it->second;
}

const model::Instance* AdmissionSnapshot::Service(const std::string& ns,
                                                  const std::string& name) const {
  for (const auto& s : services)
    if (s.metadata.ns == ns && s.metadata.name == name) return &s;
  return nullptr;
}

std::vector<const model::Instance*> AdmissionSnapshot::ServicesOn(const std::string& ns,
                                                                  const std::string& name) const {
  std::vector<const model::Instance*> out;
  for (const auto& s : services)
    if (s.compute_ns == ns && s.compute_name == name) out.push_back(&s);
  return out;
}

void AdmissionPass::Release(const std::string& owner) {
  for (auto it = gpu_owners.begin(); it != gpu_owners.end();)
    it = it->second == owner ? gpu_owners.erase(it) : std::next(it);
}

bool NeedsTarget(const AdmissionSnapshot& snapshot, const model::Run& run) {
  return !snapshot.sole_owner || run.action == RunAction::kApply;
}

Admission Admit(const AdmissionSnapshot& s, const QueuedRun& queued, AdmissionPass* pass) {
  const model::Run& run = queued.run;
  const bool service = run.instance_kind == kServiceInstanceKind;
  const bool deploy = run.action == RunAction::kApply;
  if (service && deploy && queued.instance)
    if (auto gated = GateService(s, *queued.instance)) return *gated;
  if (!service && !deploy)
    if (auto gated = GateComputeDestroy(s, run)) return *gated;
  Admission a;
  if (!NeedsTarget(s, run) || !queued.instance) return a;
  a.owner = queued.instance->metadata.OwnerKey();
  if (!queued.target) return a;  // the worker reports it
  a.host_bound = queued.target->caps.host_bound;
  if (!s.sole_owner && a.host_bound) {
    // Several replicas: an instance that a host-bound driver deployed stays on its host.
    const std::string host = queued.instance->status.host.value_or("");
    if (!host.empty() && host != s.host) {
      a.decision = Decision::kSkip;
      return a;
    }
  }
  if (deploy && !service) AdmitDeploy(s, run, *queued.target, pass, &a);
  return a;
}

}  // namespace gantry::engine
