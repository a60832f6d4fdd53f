#include "engine/admission.h"

#include <algorithm>

#include "engine/dependencies.h"
#include "engine/engine_internal.h"
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

// A compute instance stops after the services on it that are stopping (StopServicesOn
// queued their stop runs first): they run on its GPUs.
std::optional<Admission> GateComputeStop(const AdmissionSnapshot& s, const model::Run& run) {
  std::vector<json::object> stopping;
  for (const model::Instance* svc : s.ServicesOn(run.metadata.ns, run.instance_name)) {
    const Phase phase = svc->status.PhaseOr();
    const bool stop = svc->status.action == RunAction::kStop;
    if (phase == Phase::kInProgress || (phase == Phase::kWaiting && stop))
      stopping.push_back(svc->raw);
  }
  if (stopping.empty()) return std::nullopt;
  return Decided(Decision::kWait, "ServicesRunning",
                 "waiting for " + std::to_string(stopping.size()) + " " +
                     Plural(static_cast<int64_t>(stopping.size()), "service instance") +
                     " on it to stop first: " + DescribeServices(stopping, run.metadata.ns));
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
// failed with GPUs still assigned (held until a destroy), or Waiting while its deploy or
// start runs (a Slurm job PENDING), not when merely queued, nor when Stopped.
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
    case Phase::kStopped:  // its GPUs were released; a start is admitted as a deploy
      return false;
  }
  return false;
}

// What compute instance `i` counts for in its project's usage (nothing unless HoldsQuota).
void AddUsage(const AdmissionSnapshot& s, const model::Instance& i, int64_t sign,
              AdmissionPass::Usage* u) {
  if (!HoldsQuota(s, i)) return;
  const model::Resources held = model::ParseResources(i.status.resources.value_or(json::object{}));
  u->deployed += sign;
  u->gpus += sign * held.gpu_count;
  u->by_type[held.gpu_type] += sign * held.gpu_count;
}

// Project `ns`'s usage in this pass: one scan of its instances the first time.
const AdmissionPass::Usage& UsageOf(const AdmissionSnapshot& s, AdmissionPass* pass,
                                    const std::string& ns) {
  auto [it, added] = pass->usage.try_emplace(ns);
  if (added)
    for (auto c = s.computes.lower_bound({ns, ""}); c != s.computes.end() && c->first.first == ns;
         ++c)
      AddUsage(s, c->second, 1, &it->second);
  return it->second;
}

// An admitted deploy of `instance` holds `count` GPUs of `type` from now on (Engine::Claim
// records it in the snapshot): the usage this pass counted already follows.
void NoteAdmitted(const AdmissionSnapshot& s, const model::Instance& instance,
                  const std::string& type, int64_t count, AdmissionPass* pass) {
  auto it = pass->usage.find(instance.metadata.ns);
  if (it == pass->usage.end()) return;  // counted from the snapshot when first needed
  AddUsage(s, instance, -1, &it->second);
  ++it->second.deployed;
  it->second.gpus += count;
  it->second.by_type[type] += count;
}

std::optional<Admission> CheckQuota(const AdmissionSnapshot& s, AdmissionPass* pass,
                                    const std::string& ns, const std::string& name,
                                    const std::string& type, int count) {
  auto q = s.quotas.find(ns);
  if (q == s.quotas.end()) return std::nullopt;
  int64_t max_instances = q->second.instances;
  int64_t max_gpus = count > 0 ? q->second.GpusOf(type) : -1;
  if (max_instances < 0 && max_gpus < 0) return std::nullopt;
  const AdmissionPass::Usage& u = UsageOf(s, pass, ns);
  const int64_t deployed = u.deployed;
  auto by_type = u.by_type.find(type);
  const int64_t used = by_type == u.by_type.end() ? 0 : by_type->second;
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

std::optional<Admission> CheckBudget(const AdmissionSnapshot& s, const model::Run& run) {
  auto over = s.over_budget.find(run.metadata.ns);
  if (over == s.over_budget.end()) return std::nullopt;
  const model::Instance* i = s.Compute(run.metadata.ns, run.instance_name);
  if (i && HoldsQuota(s, *i)) return std::nullopt;  // a redeploy keeps what it holds
  return Decided(Decision::kWait, "BudgetExceeded",
                 over->second + "; " + run.instance_name +
                     " waits until the budget is raised or the month ends");
}

std::string Ordinal(int64_t n) {
  const int64_t tens = n % 100, ones = n % 10;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : ones == 1                ? "st"
                       : ones == 2                ? "nd"
                       : ones == 3                ? "rd"
                                                  : "th";
  return std::to_string(n) + suffix;
}

// The GPUs of `type` on this host that compute instance `i` holds.
int HeldHere(const AdmissionSnapshot& s, const model::Instance& i, const std::string& type) {
  if (!i.status.gpus) return 0;
  // Several replicas: GPU indices are per host, and an instance bound to another host holds
  // none of this host's (whose indices may have the same numbers).
  if (!s.sole_owner && i.status.host && *i.status.host != s.host) return 0;
  int n = 0;
  for (const auto& index : *i.status.gpus)
    for (const auto& g : s.inventory.gpus)
      if (std::to_string(g.index) == index && (type.empty() || g.type == type)) ++n;
  return n;
}

// Whether the stored state of compute instance `i` says it holds GPU `index`.
bool StoredAsHolding(const model::Instance& i, int index) {
  const Phase phase = i.status.PhaseOr();
  if (phase == Phase::kStopped || phase == Phase::kNotDeployed || !i.status.gpus) return false;
  for (const auto& held : *i.status.gpus)
    if (held == std::to_string(index)) return true;
  return false;
}

// GPUs of `type` that instances already stopping (a preemption or a stop under way), named as
// victims earlier in this pass, or done with them but not yet released will free.
int BeingFreed(const AdmissionSnapshot& s, const AdmissionPass& pass, const std::string& type) {
  int n = 0;
  for (const auto& [key, i] : s.computes) {
    const Phase phase = i.status.PhaseOr();
    const bool stopping = i.status.action == RunAction::kStop &&
                          (phase == Phase::kWaiting || phase == Phase::kInProgress);
    if (stopping || pass.preempting.count(key)) n += HeldHere(s, i, type);
  }
  // GPUs this host still assigns to instances whose stored state no longer holds them: they
  // stopped (and may be queued to start again) and the worker releases them right after its
  // commit. The snapshot reads the allocator before it reads some instances, so one may show
  // an instance a step further than the allocator does.
  for (const auto& [index, owner] : pass.gpu_owners) {
    const size_t a = owner.find('/'), b = owner.find('/', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const model::Instance* i = s.Compute(owner.substr(0, a), owner.substr(a + 1, b - a - 1));
    if (!i || StoredAsHolding(*i, index)) continue;
    for (const auto& g : s.inventory.gpus)
      n += g.index == index && (type.empty() || g.type == type);
  }
  return n;
}

struct Candidate {
  std::pair<std::string, std::string> key;
  const model::Instance* instance;
  model::Scheduling scheduling;
  int gpus;
};

// Success, preemptible instances of projects other than `ns` holding GPUs of `type` here,
// lowest priority then newest first.
std::vector<Candidate> Candidates(const AdmissionSnapshot& s, const AdmissionPass& pass,
                                  const std::string& ns, const std::string& type) {
  std::vector<Candidate> out;
  for (const auto& [key, i] : s.computes) {
    if (key.first == ns || i.status.PhaseOr() != Phase::kSuccess || pass.preempting.count(key))
      continue;
    auto sched = s.scheduling.find(key);
    if (sched == s.scheduling.end() || !sched->second.preemptible) continue;
    const int gpus = HeldHere(s, i, type);
    if (gpus > 0) out.push_back({key, &i, sched->second, gpus});
  }
  // Newest: the latest start; within one second (RFC 3339 stamps), the later write.
  auto newer = [](const model::Instance& a, const model::Instance& b) {
    const std::string sa = a.status.started_at.value_or(""), sb = b.status.started_at.value_or("");
    if (sa != sb) return sa > sb;
    return a.metadata.resource_version > b.metadata.resource_version;
  };
  std::stable_sort(out.begin(), out.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.scheduling.priority != b.scheduling.priority)
      return a.scheduling.priority < b.scheduling.priority;
    return newer(*a.instance, *b.instance);
  });
  return out;
}

// The fewest borrowing candidates whose GPUs make `need` fit; none when all would not.
std::vector<std::pair<std::string, std::string>> SelectVictims(const AdmissionSnapshot& s,
                                                               AdmissionPass* pass,
                                                               const std::string& ns,
                                                               const std::string& type, int need) {
  std::map<std::string, int64_t> held;  // by project, as the victims are taken
  std::vector<Candidate> chosen;
  int freed = 0;
  for (const Candidate& c : Candidates(s, *pass, ns, type)) {
    if (freed >= need) break;
    const std::string& project = c.key.first;
    if (!held.count(project)) held[project] = UsageOf(s, pass, project).Of(type);
    if (held[project] <= s.GuaranteeOf(project, type)) continue;  // not borrowing (any more)
    held[project] -= c.gpus;
    freed += c.gpus;
    chosen.push_back(c);
  }
  if (freed < need) return {};  // no wasted kills
  // The fewest: drop, newest choice first, those the others make unnecessary.
  for (size_t k = chosen.size(); k-- > 0;)
    if (freed - chosen[k].gpus >= need) {
      freed -= chosen[k].gpus;
      chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(k));
    }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& c : chosen) out.push_back(c.key);
  return out;
}

std::string VictimNames(const std::vector<std::pair<std::string, std::string>>& victims) {
  std::string out;
  for (const auto& [vns, vname] : victims) out += (out.empty() ? "" : ", ") + vns + "/" + vname;
  return out;
}

// Fair share: the waiting message ("3rd for h100: 2 of 8 free, ...") and, for a deploy
// within its project's guarantee that is first in line (`first`: no earlier deploy of the
// pass waits for the type, which would take the freed GPUs first), the victims that make it
// fit.
constexpr char kPreemptingWords[] = "; preempting ";

// The end of the waiting message while `host`'s replica preempts for the deploy.
std::string ReclaimWords(const std::string& host) {
  return "; waiting for the GPUs " + host + " is reclaiming for it";
}

void ExplainWait(const AdmissionSnapshot& s, const model::Run& run, const std::string& type,
                 int count, bool first, AdmissionPass* pass, Admission* a) {
  const std::string& ns = run.metadata.ns;
  const int free_now = FreeOf(s, *pass, type);
  const int64_t used = UsageOf(s, pass, ns).Of(type), guarantee = s.GuaranteeOf(ns, type);
  std::string msg = Ordinal(a->queue_position) + " for " + (type.empty() ? "GPUs" : type) + ": " +
                    std::to_string(free_now) + " of " + std::to_string(TotalOf(s, type)) +
                    " free, needs " + std::to_string(count) + ", project " + ns;
  if (used + count > guarantee) {
    a->message = msg + " is over its guarantee (" + std::to_string(used) + " held, " +
                 std::to_string(guarantee) + " guaranteed)";
    return;
  }
  if (!first) {
    a->message = msg + " is within its guarantee; queued behind earlier deploys";
    return;
  }
  const int need = count - free_now - BeingFreed(s, *pass, type);
  if (need <= 0) {
    a->message = msg + " is within its guarantee; waiting for preempted instances to stop";
    return;
  }
  if (std::string host = ReclaimingHost(s, run); !host.empty()) {
    a->message = msg + " is within its guarantee" + ReclaimWords(host);
    return;
  }
  a->victims = SelectVictims(s, pass, ns, type, need);
  for (const auto& v : a->victims) pass->preempting.insert(v);
  a->message = msg + " is within its guarantee" +
               (a->victims.empty() ? "; no borrowed GPUs can be reclaimed"
                                   : kPreemptingWords + VictimNames(a->victims));
}

// Free GPUs, in queue order per type; on success `a` gets them.
void TakeGpus(const AdmissionSnapshot& s, const model::Run& run, const std::string& type, int count,
              AdmissionPass* pass, Admission* a) {
  const std::string ns = a->owner.substr(0, a->owner.find('/'));
  if (pass->blocked_types.count(type)) {
    *a = Decided(Decision::kWait, "InsufficientCapacity",
                 "needs " + GpuWords(count, type) + "; queued behind earlier deploys waiting for " +
                     (type.empty() ? "" : type + " ") + "GPUs");
    a->queue_position = ++pass->waiting[type];
    if (s.FairShare()) ExplainWait(s, run, type, count, false, pass, a);
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
    a->queue_position = ++pass->waiting[type];
    if (s.FairShare()) ExplainWait(s, run, type, count, true, pass, a);
    return;
  }
  if (s.FairShare())
    a->admission = UsageOf(s, pass, ns).Of(type) + count <= s.GuaranteeOf(ns, type)
                       ? model::kGuaranteed
                       : model::kBorrowed;
  for (const auto& g : *picked) pass->gpu_owners[g.index] = a->owner;
  a->gpus = std::move(*picked);
  a->gpus_were_held = held;
}

// A non-preemptible profile runs only within the guarantee of a project that has guarantees.
std::optional<Admission> CheckGuarantee(const AdmissionSnapshot& s, AdmissionPass* pass,
                                        const model::Run& run, const Target& target,
                                        const std::string& type, int count) {
  const std::string& ns = run.metadata.ns;
  if (target.scheduling.preemptible || !s.guarantees.count(ns)) return std::nullopt;
  const int64_t used = UsageOf(s, pass, ns).Of(type), guarantee = s.GuaranteeOf(ns, type);
  if (used + count <= guarantee) return std::nullopt;
  return Decided(Decision::kWait, "OverGuarantee",
                 "the profile is not preemptible, so " + run.instance_name +
                     " runs only within project " + ns + "'s guarantee of " +
                     GpuWords(static_cast<int>(guarantee), type) + "; " + std::to_string(used) +
                     " are in use and it needs " + std::to_string(count));
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
  if (!refused) refused = CheckBudget(s, run);
  if (!refused) refused = CheckQuota(s, pass, run.metadata.ns, run.instance_name, type, count);
  if (!refused && assigns) refused = CheckGuarantee(s, pass, run, target, type, count);
  if (refused) {
    refused->owner = a->owner;
    refused->host_bound = a->host_bound;
    refused->resources = std::move(a->resources);
    *a = std::move(*refused);
    return;
  }
  if (assigns) TakeGpus(s, run, type, count, pass, a);
}

}  // namespace

std::string ReclaimingHost(const AdmissionSnapshot& s, const model::Run& run) {
  if (s.sole_owner || !run.reclaim || run.reclaim->host == s.host) return "";
  auto renewed = internal::ParseRfc3339(run.reclaim->renew_time);
  if (!renewed || s.now > *renewed + std::chrono::seconds(run.reclaim->duration_seconds))
    return "";  // expired: its replica is gone or done
  return run.reclaim->host;
}

void ForgoVictims(const std::string& host, Admission* a) {
  a->victims.clear();
  if (size_t at = a->message.find(kPreemptingWords); at != std::string::npos)
    a->message = a->message.substr(0, at) + ReclaimWords(host.empty() ? "another replica" : host);
}

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

int64_t AdmissionSnapshot::GuaranteeOf(const std::string& ns, const std::string& type) const {
  auto p = guarantees.find(ns);
  if (p == guarantees.end()) return 0;
  auto t = p->second.find(type);
  return t == p->second.end() ? 0 : t->second;
}

int64_t AdmissionSnapshot::UsedOf(const std::string& ns, const std::string& type) const {
  int64_t used = 0;
  for (auto it = computes.lower_bound({ns, ""}); it != computes.end() && it->first.first == ns;
       ++it) {
    if (!HoldsQuota(*this, it->second)) continue;
    const model::Resources held =
        model::ParseResources(it->second.status.resources.value_or(json::object{}));
    if (type.empty() || held.gpu_type == type) used += held.gpu_count;
  }
  return used;
}

void OrderQueue(const AdmissionSnapshot& s, std::vector<QueuedRun>* queue) {
  std::vector<size_t> slots;
  bool priorities = false;
  for (size_t k = 0; k < queue->size(); ++k) {
    const QueuedRun& q = (*queue)[k];
    if (q.run.instance_kind == kServiceInstanceKind || !StartsWorkload(q.run.action) || !q.target ||
        q.target->resources.gpu_count <= 0)
      continue;
    slots.push_back(k);
    priorities = priorities || q.target->scheduling.priority != 0;
  }
  if (slots.size() < 2 || (!priorities && !s.FairShare())) return;
  // GPUs held / guaranteed, per (project, type); no guarantee: after every guarantee.
  std::map<std::pair<std::string, std::string>, double> share;
  auto share_of = [&](const QueuedRun& q) {
    const std::string& ns = q.run.metadata.ns;
    const std::string& type = q.target->resources.gpu_type;
    auto [it, added] = share.try_emplace({ns, type}, 0.0);
    if (added) {
      const int64_t g = s.GuaranteeOf(ns, type), used = s.UsedOf(ns, type);
      it->second = g > 0 ? static_cast<double>(used) / static_cast<double>(g)
                         : 1e9 + static_cast<double>(used);
    }
    return it->second;
  };
  std::vector<QueuedRun> runs;
  for (size_t k : slots) runs.push_back(std::move((*queue)[k]));
  std::vector<double> shares;
  for (const auto& q : runs) shares.push_back(share_of(q));
  std::vector<size_t> order(runs.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t pa = runs[a].target->scheduling.priority,
                  pb = runs[b].target->scheduling.priority;
    if (pa != pb) return pa > pb;
    return shares[a] < shares[b];  // then age: the queue's order (stable)
  });
  for (size_t k = 0; k < slots.size(); ++k) (*queue)[slots[k]] = std::move(runs[order[k]]);
}

std::map<std::string, std::string> AdmissionLabels(
    const std::vector<model::Instance>& instances,
    const std::map<std::string, int64_t>& guarantee) {
  std::vector<const model::Instance*> holding;
  for (const auto& i : instances)
    if (i.status.gpus && !i.status.gpus->empty() && i.status.resources) holding.push_back(&i);
  // Oldest start first; within one second (RFC 3339 stamps), the earlier write.
  std::stable_sort(holding.begin(), holding.end(), [](auto* a, auto* b) {
    const std::string sa = a->status.started_at.value_or(""),
                      sb = b->status.started_at.value_or("");
    if (sa != sb) return sa < sb;
    return a->metadata.resource_version < b->metadata.resource_version;
  });
  std::map<std::string, int64_t> held;
  std::map<std::string, std::string> out;
  for (const model::Instance* i : holding) {
    const model::Resources r = model::ParseResources(*i->status.resources);
    auto g = guarantee.find(r.gpu_type);
    held[r.gpu_type] += r.gpu_count;
    const bool within = g != guarantee.end() && held[r.gpu_type] <= g->second;
    out[i->metadata.name] = within ? model::kGuaranteed : model::kBorrowed;
  }
  return out;
}

int64_t AdmissionPass::Usage::Of(const std::string& type) const {
  if (type.empty()) return gpus;
  auto it = by_type.find(type);
  return it == by_type.end() ? 0 : it->second;
}

void AdmissionPass::Release(const std::string& owner) {
  for (auto it = gpu_owners.begin(); it != gpu_owners.end();)
    it = it->second == owner ? gpu_owners.erase(it) : std::next(it);
}

bool StartsWorkload(RunAction action) {
  return action == RunAction::kApply || action == RunAction::kStart;
}

bool NeedsTarget(const AdmissionSnapshot& snapshot, const model::Run& run) {
  return !snapshot.sole_owner || StartsWorkload(run.action);
}

Admission Admit(const AdmissionSnapshot& s, const QueuedRun& queued, AdmissionPass* pass) {
  const model::Run& run = queued.run;
  const bool service = run.instance_kind == kServiceInstanceKind;
  // A start is admitted exactly as a deploy.
  const bool deploy = StartsWorkload(run.action);
  if (service && deploy && queued.instance)
    if (auto gated = GateService(s, *queued.instance)) return *gated;
  if (!service && run.action == RunAction::kDestroy)
    if (auto gated = GateComputeDestroy(s, run)) return *gated;
  if (!service && run.action == RunAction::kStop)
    if (auto gated = GateComputeStop(s, run)) return *gated;
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
  if (deploy && !service) {
    AdmitDeploy(s, run, *queued.target, pass, &a);
    if (a.decision == Decision::kAdmit)  // the type AdmitDeploy chose, the profile's count
      NoteAdmitted(s, *queued.instance, model::ParseResources(a.resources).gpu_type,
                   queued.target->resources.gpu_count, pass);
  }
  return a;
}

}  // namespace gantry::engine
