// Admission: whether a queued run may start now, as a pure function of what the dispatcher
// read in one pass (an AdmissionSnapshot) — no store, no threads, no clock.
//
// In the order they are checked:
//   service gating   a service deploys only onto a compute instance in Success (else it
//                    waits, ComputeNotReady, or fails, ComputeNotFound); a compute instance
//                    is destroyed only after the services on it (ServicesRunning)
//   host binding     several replicas: an instance a host-bound driver deployed runs on its
//                    host only (kSkip elsewhere)
//   GPU type         a deploy of a host-bound driver asking for GPUs of any type gets the
//                    type with the most free GPUs among those with enough in all
//   Unschedulable    this host has fewer GPUs of the type than asked: fails (one replica) or
//                    waits for a replica on another host (several)
//   quotas           the project's deployed instances and GPUs per type (QuotaExceeded)
//   capacity         free GPUs, first come first served per GPU type: a deploy that waits
//                    for GPUs of a type blocks the later deploys of that type in the same pass
//                    (InsufficientCapacity)
//
// Services use their compute instance's resources: no capacity or quota of their own.
//
// Thread-safety: values and pure functions.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "drivers/driver.h"
#include "engine/inventory.h"
#include "model/objects.h"

namespace gantry::engine {

// What the dispatcher reads once per pass. It updates `computes` with each instance it
// claims in the pass, so that later runs of the pass see it (quotas).
struct AdmissionSnapshot {
  bool sole_owner = true;  // EngineOptions::sole_owner
  std::string host;        // this replica's host
  std::map<std::pair<std::string, std::string>, model::Instance> computes;  // by (ns, name)
  std::vector<model::Instance> services;                                    // every project
  std::map<std::string, model::Quota> quotas;                               // by project
  std::set<std::pair<std::string, std::string>> running_deploys;  // (ns, run) deploys Running
  Inventory inventory;                                            // this host's GPUs
  std::map<int, std::string> gpu_owners;                          // index -> owner key

  const model::Instance* Compute(const std::string& ns, const std::string& name) const;
  const model::Instance* Service(const std::string& ns, const std::string& name) const;
  // The service instances whose spec.computeRef names compute instance ns/name.
  std::vector<const model::Instance*> ServicesOn(const std::string& ns,
                                                 const std::string& name) const;
};

// What the deploy of a queued run resolves to (engine/deployment.h), as admission needs it.
struct Target {
  drivers::Capabilities caps;  // all false when the driver is not in this gantryd
  model::Resources resources;  // the pinned profile revision's
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
  std::set<std::string> blocked_types;
  std::map<int, std::string> gpu_owners;
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
};

// Decides on `queued` and records the GPUs it hands out in `pass`.
Admission Admit(const AdmissionSnapshot& snapshot, const QueuedRun& queued, AdmissionPass* pass);

// Whether admitting `run` needs its Target (QueuedRun::target) resolved.
bool NeedsTarget(const AdmissionSnapshot& snapshot, const model::Run& run);

}  // namespace gantry::engine
