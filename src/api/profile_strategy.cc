#include "api/profile_strategy.h"

#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "model/sealed_fields.h"
#include "model/validation.h"

namespace gantry::api {

namespace json = boost::json;
using model::GetInt;
using model::GetString;

void ProfileStrategy::PrepareForUpdate(const Target& t, const json::object& current,
                                       json::object& next) const {
  KeepSealedDefaults(ctx_, t, current, next);
}

absl::Status ProfileStrategy::CheckTemplate(const Target& t, const json::object* current,
                                            json::object& next) const {
  const std::string& kind = t.kind->kind;
  // A copy: sealing writes into `next`, which may move its members.
  json::object spec = ObjectAt(next, "spec");
  std::string name = GetString(next, "metadata.name");
  std::string tns = GetString(spec, "templateRef.namespace", t.ns);
  std::string tname = GetString(spec, "templateRef.name");
  ASSIGN_OR_RETURN(json::object tmpl,
                   ResolveRef(ctx_, t, kind, name, "templateRef", kTemplateKind, tns, tname));
  ASSIGN_OR_RETURN(
      json::object plain_template,
      model::UnsealDefaults(ctx_.secrets, kTemplateKind, tns, tname, ObjectAt(tmpl, "spec")));
  std::set<std::string> sensitive = model::SensitiveDeclared(plain_template);
  sensitive.merge(model::SensitiveDeclared(spec));
  RETURN_IF_ERROR(SealDefaults(ctx_, t, sensitive, current, next));
  ASSIGN_OR_RETURN(json::object plain_profile,
                   model::UnsealDefaults(ctx_.secrets, kind, t.ns, name, spec));
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
  // The template revision the profile's new revision goes with.
  const json::object& spec = ObjectAt(next, "spec");
  auto tmpl = ctx_.store.Get(kTemplateKind, GetString(spec, "templateRef.namespace", t.ns),
                             GetString(spec, "templateRef.name"));
  if (tmpl.ok() && spec_changed)
    next["status"].as_object()["templateRevision"] = GetInt(*tmpl, "status.revision", 1);
  return absl::OkStatus();
}

}  // namespace gantry::api
