#include "engine/dispatch_wakes.h"

#include "engine/dependencies.h"
#include "model/codec.h"
#include "model/lifecycle.h"
#include "model/objects.h"

namespace gantry::engine {

bool DispatchWakes::Wakes(const std::vector<store::Event>& events) {
  bool wakes = false;
  std::lock_guard<std::mutex> lock(mu_);
  for (const store::Event& e : events) {
    if (e.kind == kComputeInstanceKind) {
      wakes = ComputeWakes(e) || wakes;  // every compute event is noted
    } else if (e.kind == model::kRunKind) {
      wakes = wakes || (e.type != "DELETED" && model::GetString(e.object, "status.phase") !=
                                                   model::RunPhaseName(model::RunPhase::kRunning));
    } else {
      wakes =
          wakes || e.kind == kServiceInstanceKind || e.kind == "Project" || e.kind == "RateCard";
    }
  }
  return wakes;
}

bool DispatchWakes::ComputeWakes(const store::Event& e) {
  std::pair<std::string, std::string> key{e.ns, e.name};
  const bool success = e.type != "DELETED" && model::GetString(e.object, "status.phase") ==
                                                  model::PhaseName(model::Phase::kSuccess);
  if (!success) {
    in_success_.erase(key);
    return false;
  }
  return in_success_.insert(std::move(key)).second;
}

}  // namespace gantry::engine
