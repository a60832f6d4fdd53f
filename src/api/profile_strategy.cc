#include "api/profile_strategy.h"

#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "model/profiles.h"
#include "model/sealed_fields.h"
#include "model/templates.h"
#include "model/validation.h"

namespace gantry::api {

namespace json = boost::json;

void ProfileStrategy::PrepareForUpdate(const Target& t, const json::object& current,
                                       json::object& next) const {
  KeepSealedDefaults(ctx_, t, current, next);
}

absl::Status ProfileStrategy::CheckTemplate(const Target& t, const json::object* current,
                                            json::object& next) const {
  const std::string& kind = t.kind->kind;
  // A copy: sealing writes into `next`, which may move its members.
  ASSIGN_OR_RETURN(const model::Profile profile, model::DecodeProfile(next));
  const std::string& name = profile.metadata.name;
  const model::ObjectRef& tref = profile.spec.template_ref;
  ASSIGN_OR_RETURN(json::object stored, ResolveRef(ctx_, t, kind, name, "templateRef",
                                                   kTemplateKind, tref.ns, tref.name));
  ASSIGN_OR_RETURN(model::Template tmpl, model::DecodeEnvironmentTemplate(stored));
  ASSIGN_OR_RETURN(
      json::object plain_template,
      model::UnsealDefaults(ctx_.secrets, kTemplateKind, tref.ns, tref.name, tmpl.spec.raw));
  std::set<std::string> sensitive = model::SensitiveDeclared(plain_template);
  sensitive.merge(model::SensitiveDeclared(profile.spec.raw));
  RETURN_IF_ERROR(SealDefaults(ctx_, t, sensitive, current, next));
  ASSIGN_OR_RETURN(json::object plain_profile,
                   model::UnsealDefaults(ctx_.secrets, kind, t.ns, name, profile.spec.raw));
  std::vector<FieldCause> causes;
  model::ValidateProfileAgainstTemplate(plain_profile, plain_template, &causes);
  if (!causes.empty()) return InvalidError(kind, name, std::move(causes));
  return absl::OkStatus();
}

absl::Status ProfileStrategy::Admit(const Target& t, const json::object* current,
                                    json::object& next, std::vector<store::Write>* writes) const {
  RETURN_IF_ERROR(CheckTemplate(t, current, next));
  RETURN_IF_ERROR(AdmitMore(t, next));
  bool spec_changed = RecordRevision(ctx_, t, current, next, writes);
  if (!spec_changed) return absl::OkStatus();
  // The template revision the profile's new revision goes with.
  ASSIGN_OR_RETURN(const model::Profile profile, model::DecodeProfile(next));
  const model::ObjectRef& tref = profile.spec.template_ref;
  auto stored = ctx_.store.Get(kTemplateKind, tref.ns, tref.name);
  if (!stored.ok()) return absl::OkStatus();
  ASSIGN_OR_RETURN(model::Template tmpl, model::DecodeEnvironmentTemplate(*stored));
  next["status"].as_object()["templateRevision"] = tmpl.revision;
  return absl::OkStatus();
}

}  // namespace gantry::api
