// Admission: whether a queued run may start now, as a pure function of what the dispatcher
// read in one pass (an AdmissionSnapshot) — no store, no threads, no clock.
//
// In the order they are checked:
//   service gating   a service deploys (or starts) only onto a compute instance in Success
//                    (else it waits, ComputeNotReady, or fails, ComputeNotFound); a compute
//                    instance is destroyed only after the services on it, and stopped only
//                    after the services on it that are stopping (ServicesRunning)
//   host binding     several replicas: an instance a host-bound driver deployed runs on its
//                    host only (kSkip elsewhere)
//   GPU type         a deploy of a host-bound driver asking for GPUs of any type gets the
//                    type with the most free GPUs among those with enough in all
//   Unschedulable    this host has fewer GPUs of the type than asked: fails (one replica) or
//                    waits for a replica on another host (several)
//   budget           the project's Block budget is spent this month (BudgetExceeded); an
//                    instance that holds its resources already (a redeploy) is not held
//   quotas           the project's deployed instances and GPUs per type (QuotaExceeded)
//   capacity         free GPUs, in queue order per GPU type: a deploy that waits for GPUs
//                    of a type blocks the later deploys of that type in the same pass
//                    (InsufficientCapacity, with status.queuePosition)
//
// Fair share (API.md "Sharing GPUs fairly", docs/fair-share.md), on as soon as one project
// has spec.quota.guaranteedGpus:
//   queue order      OrderQueue: priority (higher first), then the project furthest below
//                    its guarantee (GPUs held / guaranteed), then age
//   admission        a deploy within its project's guarantee is Guaranteed, beyond it Borrowed;
//                    a non-preemptible profile is admitted only within the guarantee of a
//                    project that has guarantees (OverGuarantee)
//   reclaim          a Guaranteed deploy that does not fit names victims (SelectVictims):
//                    Success, preemptible instances of other projects that borrow GPUs of the
//                    type, lowest priority then newest first, the fewest that make it fit, and
//                    none when even all of them would not (no wasted kills); GPUs of instances
//                    already stopping count as freed (nobody is preempted twice)
//
// A start run is admitted exactly as a deploy (every check above); a stop run, like a
// destroy, needs no capacity (its GPUs are released when it succeeds). Services use their
// compute instance's resources: no capacity or quota of their own.
//
// Thread-safety: values and pure functions.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "drivers/driver.h"
#include "engine/inventory.h"
#include "model/objects.h"
#include "model/scheduling.h"

namespace gantry::engine {

// What the dispatcher reads once per pass. It updates `computes` with each instance it
// claims in the pass, so that later runs of the pass see it (quotas).
struct AdmissionSnapshot {
  bool sole_owner = true;                     // EngineOptions::sole_owner
  std::string host;                           // this replica's host
  std::chrono::system_clock::time_point now;  // when the pass read it (Run.reclaim expiry)
  std::map<std::pair<std::string, std::string>, model::Instance> computes;  // by (ns, name)
  // Every project's; a deque: QueuedRun::instance points into it while pages are added.
  std::deque<model::Instance> services;
  std::map<std::string, model::Quota> quotas;  // by project
  std::set<std::pair<std::string, std::string>>
      running_deploys;                    // (ns, run) deploys, starts Running
  Inventory inventory;                    // this host's GPUs
  std::map<int, std::string> gpu_owners;  // index -> owner key
  // Fair share: guaranteedGpus by project and type (empty: fair share off), and the
  // scheduling of the profiles of instances that hold GPUs of this host (victim candidates).
  std::map<std::string, std::map<std::string, int64_t>> guarantees;
  std::map<std::pair<std::string, std::string>, model::Scheduling> scheduling;
  // Projects whose Block budget is spent (engine/budgets.h), with the words that say so.
  std::map<std::string, std::string> over_budget;
  // Projects whose compute instances are all in `computes` (their quota counts them).
  std::set<std::string> listed_projects;

  bool FairShare() const { return !guarantees.empty(); }
  int64_t GuaranteeOf(const std::string& ns, const std::string& type) const;
  // GPUs of `type` the compute instances of project `ns` hold (HoldsQuota).
  int64_t UsedOf(const std::string& ns, const std::string& type) const;

  const model::Instance* Compute(const std::string& ns, const std::string& name) const;
  const model::Instance* Service(const std::string& ns, const std::string& name) const;
  // The service instances whose spec.computeRef names compute instance ns/name.
  std::vector<const model::Instance*> ServicesOn(const std::string& ns,
                                                 const std::string& name) const;
};

// What the deploy of a queued run resolves to (engine/deployment.h), as admission needs it.
struct Target {
  drivers::Capabilities caps;    // all false when the driver is not in this gantryd
  model::Resources resources;    // the pinned profile revision's
  model::Scheduling scheduling;  // its spec.scheduling
};

struct QueuedRun {
  model::Run run;
  const model::Instance* instance = nullptr;  // nullptr: gone (the worker reports it)
  std::optional<Target> target;  // nullopt: not resolved (gone revision: the worker reports)
};

// What one pass has decided so far: GPUs handed out and GPU types blocked by an earlier
// deploy that waits for them.
struct AdmissionPass {
  explicit AdmissionPass(const AdmissionSnapshot& s) : gpu_owners(s.gpu_owners) {}
  // What a project's compute instances hold (HoldsQuota), counted once per pass the first
  // time admission needs it (quota, guarantee, victims) instead of a scan per queued run, and
  // kept up to date with what the pass admits. A claim lost after its admission keeps
  // counting until the next pass (stricter for the rest of this one, never looser).
  struct Usage {
    int64_t deployed = 0;                       // compute instances holding quota
    int64_t gpus = 0;                           // GPUs of every type
    std::map<std::string, int64_t> by_type;     // GPUs per type ("" = untyped)
    int64_t Of(const std::string& type) const;  // UsedOf's sense: "" = every type
  };
  std::map<std::string, Usage> usage;  // by project
  std::set<std::string> blocked_types;
  std::map<int, std::string> gpu_owners;
  std::map<std::string, int> waiting;  // per GPU type: deploys told to wait so far
  std::set<std::pair<std::string, std::string>> preempting;  // victims named in this pass
  // The admission of `owner` did not happen after all (its claim was lost).
  void Release(const std::string& owner);
};

struct Admission {
  // kSkip: another replica's run (its instance lives on another host).
  enum class Decision { kAdmit, kWait, kFail, kSkip } decision = Decision::kAdmit;
  std::string reason, message;    // kWait, kFail: CamelCase reason and a sentence
  std::string owner;              // GPU owner key of the instance
  std::vector<Gpu> gpus;          // assigned on this host (host-bound drivers)
  bool gpus_were_held = false;    // the owner held GPUs before this admission
  boost::json::object resources;  // the profile's spec.resources, with the chosen GPU type
  bool host_bound = false;        // the template's driver is host-bound
  std::string admission;          // kAdmit with GPUs, fair share on: Guaranteed or Borrowed
  int64_t queue_position = 0;     // kWait for capacity: 1 = next for its GPU type
  // kWait: instances (ns, name) to preempt so that this deploy fits.
  std::vector<std::pair<std::string, std::string>> victims;
};

// Puts the queued deploys and starts that need GPUs into fair-share order (priority, then
// the project furthest below its guarantee, then age), in the places such runs held; the
// other runs keep their places. FIFO (no change) without priorities and guarantees.
void OrderQueue(const AdmissionSnapshot& snapshot, std::vector<QueuedRun>* queue);

// Guaranteed or Borrowed for each GPU-holding compute instance of one project, oldest
// start first: the first ones up to the guarantee of their type are Guaranteed. Keys: names.
std::map<std::string, std::string> AdmissionLabels(const std::vector<model::Instance>& instances,
                                                   const std::map<std::string, int64_t>& guarantee);

// The cause of a preemption's stop and start runs, and the reason of a preempted instance.
inline constexpr char kPreempted[] = "Preempted";

// Several replicas: the host of another replica whose unexpired Run.reclaim says it is
// preempting for `run` ("" when none: this replica may reclaim for it).
std::string ReclaimingHost(const AdmissionSnapshot& s, const model::Run& run);

// `a` named victims, but another replica took the run's reclaim first (`host`: its host, ""
// when not known): no victims here, and the message says who reclaims.
void ForgoVictims(const std::string& host, Admission* a);

// Decides on `queued` and records the GPUs it hands out in `pass`.
Admission Admit(const AdmissionSnapshot& snapshot, const QueuedRun& queued, AdmissionPass* pass);

// Whether a run of `action` starts a workload (deploy, start): admitted alike, GPUs assigned.
bool StartsWorkload(model::RunAction action);

// Whether admitting `run` needs its Target (QueuedRun::target) resolved.
bool NeedsTarget(const AdmissionSnapshot& snapshot, const model::Run& run);

}  // namespace gantry::engine
