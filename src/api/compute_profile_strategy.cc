// Compute profiles: the shared profile rules (profile_strategy.h) and a valid lifecycle
// policy (spec.lifecycle: model::ValidateLifecyclePolicy) and approval gate (spec.approval:
// model::ValidateApprovalPolicy); not deleted while compute
// instances run them or service profiles create compute instances from them.
#include "api/profile_strategy.h"
#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/approval.h"
#include "model/codec.h"
#include "model/lifecycle_policy.h"
#include "model/scheduling.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

class ComputeProfileStrategy : public ProfileStrategy {
 public:
  using ProfileStrategy::ProfileStrategy;

  absl::Status AdmitMore(const Target& t, const json::object& next) const override {
    std::vector<FieldCause> causes;
    model::ValidateLifecyclePolicy(ObjectAt(next, "spec"), &causes);
    model::ValidateScheduling(ObjectAt(next, "spec"), &causes);
    model::ValidateApprovalPolicy(ObjectAt(next, "spec"), &causes);
    if (causes.empty()) return absl::OkStatus();
    return InvalidError(t.kind->kind, model::GetString(next, "metadata.name"), std::move(causes));
  }

  absl::Status ValidateDelete(const Target& t, const json::object&,
                              std::vector<store::Write>*) const override {
    ASSIGN_OR_RETURN(auto names, UsersOf(ctx_, t, kComputeInstanceKind, "spec.profileRef.name"));
    if (!names.empty())
      return ConflictError("computeprofile " + t.name + " is used by " +
                               Counted(names, "compute instance") + "; delete them first",
                           "InUse");
    ASSIGN_OR_RETURN(auto profiles, UsersOf(ctx_, t, kServiceProfileKind,
                                            "spec.autoCreateCompute.profileRef.name"));
    if (!profiles.empty())
      return ConflictError("computeprofile " + t.name + " is created by " +
                               std::to_string(profiles.size()) + " service profile" +
                               (profiles.size() == 1 ? "" : "s") + " (" + ListNames(profiles) +
                               ", autoCreateCompute); change them first",
                           "InUse");
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<KindStrategy> NewComputeProfileStrategy(StrategyContext& context) {
  return std::make_unique<ComputeProfileStrategy>(context);
}

}  // namespace gantry::api
