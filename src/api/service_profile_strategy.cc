// Service profiles: the shared profile rules (profile_strategy.h), plus autoCreateCompute:
// the compute profile it creates instances from exists, is shared in, matches the
// computeSelector and accepts the variables, none of them secret; a valid ttl policy
// (spec.lifecycle.ttl: model::ValidateLifecyclePolicy). Not deleted while service instances
// run it.
#include "api/profile_strategy.h"
#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "model/label_selector.h"
#include "model/lifecycle_policy.h"
#include "model/profiles.h"
#include "model/sealed_fields.h"
#include "model/templates.h"
#include "model/validation.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

class ServiceProfileStrategy : public ProfileStrategy {
 public:
  using ProfileStrategy::ProfileStrategy;

  absl::Status ValidateDelete(const Target& t, const json::object&,
                              std::vector<store::Write>*) const override {
    ASSIGN_OR_RETURN(auto names, UsersOf(ctx_, t, kServiceInstanceKind, "spec.profileRef.name"));
    if (names.empty()) return absl::OkStatus();
    return ConflictError("serviceprofile " + t.name + " is used by " +
                             Counted(names, "service instance") + "; delete them first",
                         "InUse");
  }

 protected:
  absl::Status AdmitMore(const Target& t, const json::object& next) const override;

 private:
  // The causes of autoCreateCompute.variables (`vars`) against the compute profile's
  // template.
  absl::Status CheckVariables(const std::string& name, json::object vars,
                              const model::Profile& compute) const;
};

absl::Status ServiceProfileStrategy::AdmitMore(const Target& t, const json::object& next) const {
  std::vector<FieldCause> lifecycle;
  model::ValidateLifecyclePolicy(ObjectAt(next, "spec"), &lifecycle);
  if (!lifecycle.empty())
    return InvalidError(t.kind->kind, model::GetString(next, "metadata.name"),
                        std::move(lifecycle));
  ASSIGN_OR_RETURN(const model::Profile service, model::DecodeProfile(next));
  if (!service.spec.auto_create_compute) return absl::OkStatus();
  const std::string& name = service.metadata.name;
  const model::AutoCreateCompute& create = *service.spec.auto_create_compute;
  const std::string& cname = create.profile.name;
  ASSIGN_OR_RETURN(json::object stored,
                   ResolveRef(ctx_, t, kServiceProfileKind, name, "autoCreateCompute.profileRef",
                              kComputeProfileKind, create.profile.ns, cname));
  ASSIGN_OR_RETURN(model::Profile compute, model::DecodeProfile(stored));
  // The compute profile must be one the service can run on.
  model::LabelSelector selector = model::ComputeSelector(service.spec.raw);
  if (!selector.Matches(model::LabelsOf(compute.raw)))
    return InvalidError(kServiceProfileKind, name,
                        {{"spec.autoCreateCompute.profileRef",
                          "computeprofile \"" + cname + "\" does not match spec.computeSelector (" +
                              model::DescribeSelector(selector) + ")",
                          "FieldValueInvalid"}});
  return CheckVariables(name, create.variables, compute);
}

absl::Status ServiceProfileStrategy::CheckVariables(const std::string& name, json::object vars,
                                                    const model::Profile& compute) const {
  const std::string& cname = compute.metadata.name;
  const model::ObjectRef& tref = compute.spec.template_ref;
  auto stored = ctx_.store.Get(kTemplateKind, tref.ns, tref.name);
  if (!stored.ok()) return absl::OkStatus();  // the compute profile's own problem
  ASSIGN_OR_RETURN(model::Template tmpl, model::DecodeEnvironmentTemplate(*stored));
  model::NormalizeVariableValues(vars);
  ASSIGN_OR_RETURN(
      json::object plain_template,
      model::UnsealDefaults(ctx_.secrets, kTemplateKind, tref.ns, tref.name, tmpl.spec.raw));
  ASSIGN_OR_RETURN(json::object plain_profile,
                   model::UnsealDefaults(ctx_.secrets, kComputeProfileKind, compute.metadata.ns,
                                         cname, compute.spec.raw));
  std::vector<FieldCause> causes;
  auto resolved = model::ResolveVariables(plain_template, plain_profile, vars, &causes);
  // A service profile is read by every project it is shared with: no secrets in it.
  for (const auto& kv : vars)
    if (auto it = resolved.find(std::string(kv.key()));
        it != resolved.end() && it->second.sensitive)
      causes.push_back({"spec.variables." + std::string(kv.key()),
                        "Forbidden: variable \"" + std::string(kv.key()) +
                            "\" is sensitive and a service profile is readable by every project "
                            "it is shared with; give it a default in compute profile " +
                            cname + " (sealed there) instead",
                        "FieldValueForbidden"});
  for (auto& c : causes)
    if (c.field.rfind("spec.variables", 0) == 0)
      c.field = "spec.autoCreateCompute.variables" + c.field.substr(sizeof "spec.variables" - 1);
  if (!causes.empty()) return InvalidError(kServiceProfileKind, name, std::move(causes));
  return absl::OkStatus();
}

}  // namespace

std::unique_ptr<KindStrategy> NewServiceProfileStrategy(StrategyContext& context) {
  return std::make_unique<ServiceProfileStrategy>(context);
}

}  // namespace gantry::api
