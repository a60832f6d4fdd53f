#include "api/instance_strategy.h"

#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "model/lifecycle.h"
#include "model/sealed_fields.h"

namespace gantry::api {

namespace json = boost::json;
using model::GetInt;
using model::GetString;

const char* ProfileKindOf(const std::string& instance_kind) {
  return instance_kind == kServiceInstanceKind ? kServiceProfileKind : kComputeProfileKind;
}

namespace {

// How messages name the kind of profile: "compute" or "service".
std::string Noun(const std::string& instance_kind) {
  return instance_kind == kServiceInstanceKind ? "service" : "compute";
}

}  // namespace

void InstanceStrategy::PrepareForCreate(const Target& t, json::object& status) const {
  status["phase"] = "NotDeployed";
  status["conditions"] = json::array();
  if (!t.caller.empty()) status["createdBy"] = t.caller;
}

void InstanceStrategy::PrepareForUpdate(const Target& t, const json::object& current,
                                        json::object& next) const {
  // A secret sent again in plaintext (or as shown, redacted) is the stored one: keep the
  // sealed value so that re-applying the same manifest changes nothing.
  const json::object& old_vars = ObjectAt(current, "spec.variables");
  json::value* new_vars = next["spec"].as_object().if_contains("variables");
  if (new_vars && new_vars->is_object()) {
    for (auto& kv : new_vars->get_object()) {
      auto old = old_vars.find(kv.key());
      if (old == old_vars.end() || !old->value().is_string() || !kv.value().is_string() ||
          !SecretBox::IsSealed(old->value().get_string()))
        continue;
      if (kv.value().get_string() == kRedacted) {
        kv.value() = old->value();
      } else if (auto plain = ctx_.secrets.Unseal(old->value().get_string(),
                                                  model::VariableContext(current, kv.key()));
                 plain.ok() && *plain == kv.value().get_string()) {
        kv.value() = old->value();
      }
    }
  }
  model::RedactLastApplied(next, /*is_instance=*/true, SensitiveNames(old_vars));
}

absl::Status InstanceStrategy::ValidateUpdate(const json::object& current) const {
  return model::Decide(model::Action::kUpdate, current).status();
}

absl::Status InstanceStrategy::PinRevisions(const Target& t, const json::object* current,
                                            json::object& next, json::object* profile_spec,
                                            json::object* template_spec) const {
  const std::string& kind = t.kind->kind;
  const std::string profile_kind = ProfileKindOf(kind);
  std::string name = GetString(next, "metadata.name");
  std::string pns = GetString(next, "spec.profileRef.namespace", t.ns);
  std::string pname = GetString(next, "spec.profileRef.name");
  bool ref_changed = !current || GetString(*current, "spec.profileRef.name") != pname ||
                     GetString(*current, "spec.profileRef.namespace", t.ns) != pns;
  if (current && ref_changed && model::WasEverDeployed(*current))
    return InvalidError(kind, name,
                        {{"spec.profileRef",
                          "Forbidden: the " + Noun(kind) +
                              " profile can only be changed before the instance is first "
                              "deployed",
                          "FieldValueForbidden"}});
  json::object& status = model::EnsureObject(next, "status");
  if (ref_changed) {
    ASSIGN_OR_RETURN(json::object profile,
                     ResolveRef(ctx_, t, kind, name, "profileRef", profile_kind, pns, pname));
    *profile_spec = ObjectAt(profile, "spec");
    status["profileRevision"] = GetInt(profile, "status.revision", 1);
    status["templateRevision"] = GetInt(profile, "status.templateRevision", 1);
  }
  int64_t prev = GetInt(status, "profileRevision", 1);
  int64_t trev = GetInt(status, "templateRevision", 1);
  if (profile_spec->empty()) {
    ASSIGN_OR_RETURN(auto rev, ctx_.store.GetRevision(profile_kind, pns, pname, prev));
    *profile_spec = std::move(rev.spec);
  }
  std::string tns = GetString(*profile_spec, "templateRef.namespace", pns);
  std::string tname = GetString(*profile_spec, "templateRef.name");
  ASSIGN_OR_RETURN(auto trevision, ctx_.store.GetRevision(kTemplateKind, tns, tname, trev));
  ASSIGN_OR_RETURN(*profile_spec,
                   model::UnsealDefaults(ctx_.secrets, profile_kind, pns, pname, *profile_spec));
  ASSIGN_OR_RETURN(*template_spec,
                   model::UnsealDefaults(ctx_.secrets, kTemplateKind, tns, tname, trevision.spec));
  return absl::OkStatus();
}

absl::Status InstanceStrategy::Admit(const Target& t, const json::object* current,
                                     json::object& next, std::vector<store::Write>* writes) const {
  json::object profile_spec, template_spec;
  RETURN_IF_ERROR(PinRevisions(t, current, next, &profile_spec, &template_spec));
  json::object variables = ObjectAt(next, "spec.variables");
  RETURN_IF_ERROR(
      CheckAndSealVariables(ctx_, next, template_spec, profile_spec, current, variables));
  model::RedactLastApplied(next, /*is_instance=*/true, SensitiveNames(variables));
  if (!variables.empty()) model::EnsureObject(next, "spec")["variables"] = std::move(variables);
  return AdmitMore(t, current, profile_spec, next, writes);
}

namespace {

// The profile an instance upgrades to: 409 ProfileGone when it was deleted.
absl::StatusOr<json::object> UpgradeProfile(const StrategyContext& ctx, const Target& t,
                                            const std::string& pns, const std::string& pname) {
  auto profile = ctx.store.Get(ProfileKindOf(t.kind->kind), pns, pname);
  if (profile.ok() || !absl::IsNotFound(profile.status())) return profile;
  return ConflictError(Noun(t.kind->kind) + " profile " + pname + " of instance " + t.name +
                           " no longer exists; there is nothing to upgrade to",
                       "ProfileGone");
}

}  // namespace

absl::StatusOr<json::object> UpgradedInstance(const StrategyContext& ctx, const Target& t,
                                              const json::object& current) {
  RETURN_IF_ERROR(model::Decide(model::Action::kUpgrade, current).status());
  const std::string profile_kind = ProfileKindOf(t.kind->kind);
  std::string pns = GetString(current, "spec.profileRef.namespace", t.ns);
  std::string pname = GetString(current, "spec.profileRef.name");
  ASSIGN_OR_RETURN(json::object profile, UpgradeProfile(ctx, t, pns, pname));
  int64_t latest = GetInt(profile, "status.revision", 1);
  int64_t latest_t = GetInt(profile, "status.templateRevision", 1);
  if (latest == GetInt(current, "status.profileRevision", 1) &&
      latest_t == GetInt(current, "status.templateRevision", 1))
    return current;  // already on the latest revision
  const json::object& profile_spec = ObjectAt(profile, "spec");
  std::string tns = GetString(profile_spec, "templateRef.namespace", pns);
  std::string tname = GetString(profile_spec, "templateRef.name");
  ASSIGN_OR_RETURN(auto trev, ctx.store.GetRevision(kTemplateKind, tns, tname, latest_t));
  json::object next = current;
  json::object variables = ObjectAt(current, "spec.variables");
  ASSIGN_OR_RETURN(json::object plain_profile,
                   model::UnsealDefaults(ctx.secrets, profile_kind, pns, pname, profile_spec));
  ASSIGN_OR_RETURN(json::object plain_template,
                   model::UnsealDefaults(ctx.secrets, kTemplateKind, tns, tname, trev.spec));
  RETURN_IF_ERROR(
      CheckAndSealVariables(ctx, next, plain_template, plain_profile, &current, variables));
  json::object& spec = model::EnsureObject(next, "spec");
  if (!variables.empty()) spec["variables"] = std::move(variables);
  json::object& status = model::EnsureObject(next, "status");
  status["profileRevision"] = latest;
  status["templateRevision"] = latest_t;
  // The desired state changed: what is deployed is now behind (deployedGeneration).
  model::EnsureObject(next, "metadata")["generation"] =
      GetInt(current, "metadata.generation", 1) + 1;
  return next;
}

}  // namespace gantry::api
