// Compute instances: the shared instance rules (instance_strategy.h), plus the project's
// spec.quota.instancesPerUser, counted when one is created, and spec.lifecycle within the
// pinned profile revision's policy (model::ValidateInstanceLifecycle): a changed lifecycle
// of a running instance moves status.expiresAt (raising the ttl extends it); the same check
// and count run on upgrade (ApplyInstanceLifecycle, instance_strategy.h).
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

  // BeforeCreate reads the project whatever the caller: no existence check before it.
  KindTraits Traits() const override {
    KindTraits traits = InstanceStrategy::Traits();
    traits.create_reads_project = true;
    return traits;
  }

  // NOT_FOUND when the project is missing. 403 when t.caller has as many as the quota
  // allows; else appends a write that guards the count (a rewrite of the project at the
  // resourceVersion counted at, so a racing create conflicts and retries).
  absl::Status BeforeCreate(const Target& t, std::vector<store::Write>* writes) const override {
    ASSIGN_OR_RETURN(json::object project, GetProject(ctx_, t.ns));  // also: does it exist
    if (t.caller.empty()) return absl::OkStatus();
    ASSIGN_OR_RETURN(model::Project typed, model::DecodeProject(std::move(project)));
    const std::optional<int64_t> limit = typed.quota.instances_per_user;
    if (!limit) return absl::OkStatus();
    ASSIGN_OR_RETURN(int64_t owned, ctx_.store.Count(kComputeInstanceKind, t.ns,
                                                     {{"status.createdBy", true, t.caller}}));
    if (owned >= *limit)
      return ForbiddenError("exceeded quota: project " + t.ns + " allows " +
                            std::to_string(*limit) + " compute instances per user and " + t.caller +
                            " already has " + std::to_string(owned) + "; delete one first");
    // The count holds only while nobody else creates one: the same commit rewrites the
    // project at the resourceVersion read here, so of two racing creates one gets a
    // conflict and counts again (the project's content does not change).
    int64_t rv = typed.metadata.resource_version;
    writes->push_back(
        store::Write{store::Write::Op::kUpdate, kProjectKind, std::move(typed.raw), rv, 0});
    return absl::OkStatus();
  }

  absl::Status AdmitMore(const Target& t, const json::object* current,
                         const json::object& profile_spec, json::object& next,
                         std::vector<store::Write>*) const override {
    const bool changed =
        !current || ObjectAt(*current, "spec.lifecycle") != ObjectAt(next, "spec.lifecycle");
    return ApplyInstanceLifecycle(t.kind->kind, profile_spec, changed, next);
  }
};

}  // namespace

std::unique_ptr<KindStrategy> NewComputeInstanceStrategy(StrategyContext& context) {
  return std::make_unique<ComputeInstanceStrategy>(context);
}

}  // namespace gantry::api
