// ShareMonitor: what each project's share of the GPUs is, for /metrics and `kubectl
// describe project` (issue 18, docs/fair-share.md). Every `interval` it reads every Project
// and who holds this host's GPUs (GpuAllocator) and
//
//   - replaces gantry_project_gpus{project,gpu_type,kind} as a whole: kind `guaranteed`
//     (spec.quota.guaranteedGpus), `used` (GPUs of this host its compute instances hold) and
//     `borrowed` (those of them admitted Borrowed), for every project and type with a quota,
//     a guarantee or GPUs held (a deleted project's series go);
//   - publishes this host's GPUs for the fleet (engine/fleet_gpus.h) at its first look and
//     every kFleetRenew;
//   - keeps the Project condition GuaranteesOvercommitted: True (reason Overcommitted,
//     model::OvercommitWords) while the guarantees of one of its GPU types sum above the
//     fleet's GPUs of the type (every replica's host, FleetGpus), False (reason
//     WithinCapacity) once they fit again; absent while it never was. With several replicas
//     each computes the same and writes it only when it changes (a lost race is the same
//     write by another).
//
// It only reports: admission (engine/admission.h) decides with the same numbers on its own.
//
// Thread-safety: Start/Stop from one thread; Pass from the loop or, in tests, from one
// thread while the loop is not started.
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/loop_thread.h"
#include "common/metrics.h"
#include "engine/inventory.h"
#include "store/store.h"

namespace gantry::engine {

// GPUs of one type an instance holds on this host.
struct HeldGpus {
  std::string project, type;
  int64_t count = 0;
  bool borrowed = false;  // status.admission is Borrowed
};

// One project's GPUs of one type (a gantry_project_gpus series per number).
struct GpuShare {
  std::string project, type;
  int64_t guaranteed = 0, used = 0, borrowed = 0;
  bool operator==(const GpuShare&) const = default;
};

// Every project (of the stored `projects`) and type with a quota, a guarantee or GPUs held,
// by project then type.
std::vector<GpuShare> GpuShares(const std::vector<boost::json::object>& projects,
                                const std::vector<HeldGpus>& held);

// The status.conditions stored project `project` is to carry when its overcommit words are
// `words` ("": its guarantees fit); nullopt when nothing is to change (the same condition is
// stored, or it never was overcommitted). `now` stamps a transition.
std::optional<boost::json::array> OvercommitConditions(const boost::json::object& project,
                                                       const std::string& words,
                                                       const std::string& now);

class ShareMonitor {
 public:
  // `host`: this replica's --host-id, the name of its GpuHost record.
  ShareMonitor(store::Store& store, const Clock& clock, Metrics& metrics, GpuAllocator& gpus,
               std::string host, std::chrono::seconds interval = std::chrono::seconds(5));
  ShareMonitor(const ShareMonitor&) = delete;
  ShareMonitor& operator=(const ShareMonitor&) = delete;

  // Starts the loop; its first look is at once. Stop ends it (idempotent).
  void Start();
  void Stop();
  // One look: this host's GpuHost when due, the gauges, and the conditions.
  void Pass();

 private:
  // Who holds this host's GPUs, read from the allocator and each holder's stored status.
  std::vector<HeldGpus> HeldOnThisHost();
  void KeepConditions(const std::vector<boost::json::object>& projects);

  store::Store& store_;
  const Clock& clock_;
  Metrics& metrics_;
  GpuAllocator& gpus_;
  const std::string host_;
  const std::chrono::seconds interval_;
  std::chrono::system_clock::time_point published_{};  // the last PublishHostGpus
  void PublishWhenDue();
  LoopThread thread_;  // last: stopped before the rest goes
};

}  // namespace gantry::engine
