// DispatchWakes: which commits may let a queued run go, so that the dispatcher looks at its
// queue after them and not after every write. A commit wakes it when it holds:
//   - a Run queued, re-queued or ended (any Run event but a delete, or a start: a run that
//     becomes Running frees nothing);
//   - a ServiceInstance change (a compute destroy waits for its services);
//   - a Project (quota, guarantees, budget) or a RateCard;
//   - a ComputeInstance that reaches Success: a service waits for it, and only a Success
//     instance can be preempted. A write to an instance already in Success (a label, the
//     idle sampler's annotations) wakes nothing: the instances last seen in Success are
//     remembered (their keys: a few bytes per running instance), so "reaches" is exact for
//     every commit this process observes (on PostgreSQL, other replicas' too).
// The dispatcher's own once-a-second look stays: a wake missed here waits at most that long.
//
// Thread-safety: Wakes may be called from any thread (the store's commit observer).
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "store/store.h"

namespace gantry::engine {

class DispatchWakes {
 public:
  // Whether `events` (one commit's) may let a queued run go; notes compute instances'
  // phases either way.
  bool Wakes(const std::vector<store::Event>& events);

 private:
  bool ComputeWakes(const store::Event& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::mutex mu_;
  std::set<std::pair<std::string, std::string>> in_success_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gantry::engine
