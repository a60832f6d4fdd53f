// The compute instance a service instance auto-created (ServiceProfile.spec.autoCreateCompute)
// deploys or starts with the service. One rule, by that instance's phase, for the engine
// (Engine::BeforeQueue queues it) and for the approval gates in front of the service's deploy
// and start (api/approval_routes.cc, the lifecycle controller's scheduled start), which ask
// first when the compute instance's profile wants approval (docs/approvals.md).
//
// Thread-safety: a pure function.
#pragma once

#include <optional>

#include "model/lifecycle.h"
#include "model/objects.h"

namespace gantry::engine {

// What deploying or starting the service does to its auto-created compute instance in phase
// `phase`: a deploy (NotDeployed, Failed) or a start (Stopped); nothing otherwise (it is
// deployed, on its way, or waiting for approval).
inline std::optional<model::RunAction> CreatedComputeAction(model::Phase phase) {
  if (phase == model::Phase::kNotDeployed || phase == model::Phase::kFailed)
    return model::RunAction::kApply;
  if (phase == model::Phase::kStopped) return model::RunAction::kStart;
  return std::nullopt;
}

}  // namespace gantry::engine
