#include "api/instance_strategy.h"

#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "engine/deployment.h"
#include "model/codec.h"
#include "model/lifecycle.h"
#include "model/lifecycle_policy.h"
#include "model/objects.h"
#include "model/profiles.h"
#include "model/sealed_fields.h"

namespace gantry::api {

namespace json = boost::json;

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

namespace {

// spec.profileRef of an instance (its namespace defaults to the instance's).
model::ObjectRef ProfileRefOf(const json::object& instance) {
  return model::DecodeRef(ObjectAt(instance, "spec"), "profileRef",
                          model::GetString(instance, "metadata.namespace"));
}

// Writes into instance `next` the revisions it now pins: `profile`'s latest, and the template
// revision that goes with it.
void PinLatest(const model::Profile& profile, json::object& next) {
  json::object& status = model::EnsureObject(next, "status");
  status["profileRevision"] = profile.revision;
  status["templateRevision"] = profile.template_revision;
}

// The specs of a deployment's revisions with their sensitive defaults unsealed: what an
// instance's variables are checked against.
absl::StatusOr<PlainSpecs> Unsealed(const StrategyContext& ctx, const engine::Deployment& d) {
  PlainSpecs out;
  const model::ObjectRef& tref = d.profile.template_ref;
  ASSIGN_OR_RETURN(out.profile, model::UnsealDefaults(ctx.secrets, d.profile_kind, d.profile_ref.ns,
                                                      d.profile_ref.name, d.profile.raw));
  ASSIGN_OR_RETURN(
      out.tmpl, model::UnsealDefaults(ctx.secrets, kTemplateKind, tref.ns, tref.name, d.tmpl.raw));
  return out;
}

}  // namespace

absl::StatusOr<PlainSpecs> InstanceStrategy::PinRevisions(const Target& t,
                                                          const json::object* current,
                                                          json::object& next) const {
  const std::string& kind = t.kind->kind;
  const std::string name = model::GetString(next, "metadata.name");
  const model::ObjectRef ref = ProfileRefOf(next);
  const bool ref_changed = !current || ProfileRefOf(*current) != ref;
  if (current && ref_changed && model::WasEverDeployed(*current))
    return InvalidError(kind, name,
                        {{"spec.profileRef",
                          "Forbidden: the " + Noun(kind) +
                              " profile can only be changed before the instance is first "
                              "deployed",
                          "FieldValueForbidden"}});
  if (!ref_changed) {
    ASSIGN_OR_RETURN(model::Instance instance, model::DecodeInstance(next));
    ASSIGN_OR_RETURN(engine::Deployment d, engine::ResolvePinned(ctx_.store, instance));
    return Unsealed(ctx_, d);
  }
  ASSIGN_OR_RETURN(json::object stored, ResolveRef(ctx_, t, kind, name, "profileRef",
                                                   ProfileKindOf(kind), ref.ns, ref.name));
  ASSIGN_OR_RETURN(model::Profile profile, model::DecodeProfile(std::move(stored)));
  PinLatest(profile, next);
  ASSIGN_OR_RETURN(engine::Deployment d, engine::ResolveLatest(ctx_.store, profile));
  return Unsealed(ctx_, d);
}

absl::Status InstanceStrategy::Admit(const Target& t, const json::object* current,
                                     json::object& next, std::vector<store::Write>* writes) const {
  ASSIGN_OR_RETURN(PlainSpecs specs, PinRevisions(t, current, next));
  json::object variables = ObjectAt(next, "spec.variables");
  RETURN_IF_ERROR(CheckAndSealVariables(ctx_, next, specs.tmpl, specs.profile, current, variables));
  model::RedactLastApplied(next, /*is_instance=*/true, SensitiveNames(variables));
  if (!variables.empty()) model::EnsureObject(next, "spec")["variables"] = std::move(variables);
  RETURN_IF_ERROR(AdmitMore(t, current, specs.profile, next, writes));
  if (current) FollowDeployedGeneration(*current, next);
  return absl::OkStatus();
}

absl::Status ApplyInstanceLifecycle(const std::string& kind, const json::object& profile_spec,
                                    bool recompute, json::object& next, std::string_view context) {
  model::LifecyclePolicy policy = model::DecodeLifecyclePolicy(profile_spec);
  const json::object& spec = ObjectAt(next, "spec");
  std::vector<FieldCause> causes;
  model::ValidateInstanceLifecycle(spec, policy, &causes);
  for (FieldCause& c : causes) c.message = std::string(context) + c.message;
  if (!causes.empty())
    return InvalidError(kind, model::GetString(next, "metadata.name"), std::move(causes));
  if (!recompute) return absl::OkStatus();
  json::object& status = model::EnsureObject(next, "status");
  if (model::GetString(status, "phase") != "Success" ||
      model::GetString(status, "startedAt").empty())
    return absl::OkStatus();
  auto expires = model::ExpiresAtFor(model::GetString(status, "startedAt"), policy,
                                     model::DecodeInstanceLifecycle(spec));
  if (expires)
    status["expiresAt"] = *expires;
  else
    status.erase("expiresAt");
  return absl::OkStatus();
}

void FollowDeployedGeneration(const json::object& current, json::object& next) {
  const int64_t was = model::GetInt(current, "metadata.generation", 1);
  if (model::GetInt(current, "status.deployedGeneration", 0) != was) return;  // already behind
  json::object old_spec = ObjectAt(current, "spec"), new_spec = ObjectAt(next, "spec");
  old_spec.erase("lifecycle");
  new_spec.erase("lifecycle");
  if (old_spec != new_spec) return;  // something a deploy would publish changed
  model::EnsureObject(next, "status")["deployedGeneration"] =
      model::GetInt(next, "metadata.generation", was);
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
  ASSIGN_OR_RETURN(model::Instance instance, model::DecodeInstance(current));
  ASSIGN_OR_RETURN(json::object stored,
                   UpgradeProfile(ctx, t, instance.profile_ns, instance.profile_name));
  ASSIGN_OR_RETURN(model::Profile profile, model::DecodeProfile(std::move(stored)));
  if (profile.revision == instance.status.profile_revision &&
      profile.template_revision == instance.status.template_revision)
    return current;  // already on the latest revision
  ASSIGN_OR_RETURN(
      engine::Deployment d,
      engine::ResolveDeployment(ctx.store, instance, profile.revision, profile.template_revision));
  ASSIGN_OR_RETURN(PlainSpecs specs, Unsealed(ctx, d));
  json::object next = current;
  json::object variables = instance.variables;
  RETURN_IF_ERROR(CheckAndSealVariables(ctx, next, specs.tmpl, specs.profile, &current, variables));
  json::object& spec = model::EnsureObject(next, "spec");
  if (!variables.empty()) spec["variables"] = std::move(variables);
  PinLatest(profile, next);
  // The new revision's lifecycle policy applies from now on: the ttl within its max, and
  // expiresAt counted under it.
  RETURN_IF_ERROR(ApplyInstanceLifecycle(t.kind->kind, specs.profile, /*recompute=*/true, next,
                                         "upgrading to revision " +
                                             std::to_string(profile.revision) + " of profile " +
                                             instance.profile_name + ": "));
  // The desired state changed: what is deployed is now behind (deployedGeneration).
  model::EnsureObject(next, "metadata")["generation"] = instance.metadata.generation + 1;
  return next;
}

}  // namespace gantry::api
