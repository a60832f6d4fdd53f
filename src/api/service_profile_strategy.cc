// Service profiles: the shared profile rules (profile_strategy.h), plus autoCreateCompute:
// the compute profile it creates instances from exists, is shared in, matches the
// computeSelector and accepts the variables, none of them secret. Not deleted while service
// instances run it.
#include "api/profile_strategy.h"
#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "model/label_selector.h"
#include "model/sealed_fields.h"
#include "model/validation.h"

namespace gantry::api {
namespace {

namespace json = boost::json;
using model::GetString;

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
  // The causes of autoCreateCompute.variables against the compute profile's template.
  absl::Status CheckVariables(const std::string& name, const json::object& spec,
                              const json::object& profile, const std::string& cns,
                              const std::string& cname) const;
};

absl::Status ServiceProfileStrategy::AdmitMore(const Target& t, const json::object& next) const {
  const json::object& spec = ObjectAt(next, "spec");
  if (!spec.contains("autoCreateCompute")) return absl::OkStatus();
  std::string name = GetString(next, "metadata.name");
  std::string cns = GetString(spec, "autoCreateCompute.profileRef.namespace", t.ns);
  std::string cname = GetString(spec, "autoCreateCompute.profileRef.name");
  ASSIGN_OR_RETURN(json::object profile,
                   ResolveRef(ctx_, t, kServiceProfileKind, name, "autoCreateCompute.profileRef",
                              kComputeProfileKind, cns, cname));
  // The compute profile must be one the service can run on.
  model::LabelSelector selector = model::ComputeSelector(spec);
  if (!selector.Matches(model::LabelsOf(profile)))
    return InvalidError(kServiceProfileKind, name,
                        {{"spec.autoCreateCompute.profileRef",
                          "computeprofile \"" + cname + "\" does not match spec.computeSelector (" +
                              model::DescribeSelector(selector) + ")",
                          "FieldValueInvalid"}});
  return CheckVariables(name, spec, profile, cns, cname);
}

absl::Status ServiceProfileStrategy::CheckVariables(const std::string& name,
                                                    const json::object& spec,
                                                    const json::object& profile,
                                                    const std::string& cns,
                                                    const std::string& cname) const {
  std::string tns = GetString(profile, "spec.templateRef.namespace", cns);
  std::string tname = GetString(profile, "spec.templateRef.name");
  auto tmpl = ctx_.store.Get(kTemplateKind, tns, tname);
  if (!tmpl.ok()) return absl::OkStatus();  // the compute profile's own problem
  json::object vars = ObjectAt(spec, "autoCreateCompute.variables");
  model::NormalizeVariableValues(vars);
  ASSIGN_OR_RETURN(
      json::object plain_template,
      model::UnsealDefaults(ctx_.secrets, kTemplateKind, tns, tname, ObjectAt(*tmpl, "spec")));
  ASSIGN_OR_RETURN(json::object plain_profile,
                   model::UnsealDefaults(ctx_.secrets, kComputeProfileKind, cns, cname,
                                         ObjectAt(profile, "spec")));
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
