// Compute instances: the shared instance rules (instance_strategy.h), plus the project's
// spec.quota.instancesPerUser, counted when one is created.
#include "api/instance_strategy.h"
#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"

namespace gantry::api {
namespace {

namespace json = boost::json;
using model::GetString;

class ComputeInstanceStrategy : public InstanceStrategy {
 public:
  using InstanceStrategy::InstanceStrategy;

  // 403 when t.caller has as many as the quota allows; else appends a write that guards the
  // count (a rewrite of the project at the resourceVersion counted at, so a racing create
  // conflicts and retries).
  absl::Status BeforeCreate(const Target& t, std::vector<store::Write>* writes) const override {
    if (t.caller.empty()) return absl::OkStatus();
    ASSIGN_OR_RETURN(json::object project, ctx_.store.Get(kProjectKind, "", t.ns));
    const json::value* q = model::FindPath(project, "spec.quota.instancesPerUser");
    if (!q || !q->is_int64()) return absl::OkStatus();
    ASSIGN_OR_RETURN(int64_t owned, ctx_.store.Count(kComputeInstanceKind, t.ns,
                                                     {{"status.createdBy", true, t.caller}}));
    if (owned >= q->get_int64())
      return ForbiddenError("exceeded quota: project " + t.ns + " allows " +
                            std::to_string(q->get_int64()) + " compute instances per user and " +
                            t.caller + " already has " + std::to_string(owned) +
                            "; delete one first");
    // The count holds only while nobody else creates one: the same commit rewrites the
    // project at the resourceVersion read here, so of two racing creates one gets a
    // conflict and counts again (the project's content does not change).
    int64_t rv = std::stoll(GetString(project, "metadata.resourceVersion", "0"));
    writes->push_back(
        store::Write{store::Write::Op::kUpdate, kProjectKind, std::move(project), rv, 0});
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<KindStrategy> NewComputeInstanceStrategy(StrategyContext& context) {
  return std::make_unique<ComputeInstanceStrategy>(context);
}

}  // namespace gantry::api
