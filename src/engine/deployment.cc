#include "engine/deployment.h"

#include "engine/dependencies.h"
#include "model/codec.h"

namespace gantry::engine {

using model::GetInt;
using model::GetString;

absl::StatusOr<Deployment> ResolveDeployment(store::Store& store,
                                             const boost::json::object& instance,
                                             int64_t profile_revision, int64_t template_revision) {
  Deployment d;
  const std::string kind = GetString(instance, "kind");
  d.profile_kind = ProfileKindOf(kind);
  d.profile_ns =
      GetString(instance, "spec.profileRef.namespace", GetString(instance, "metadata.namespace"));
  d.profile_name = GetString(instance, "spec.profileRef.name");
  auto profile = store.GetRevision(d.profile_kind, d.profile_ns, d.profile_name, profile_revision);
  if (!profile.ok()) {
    if (!absl::IsNotFound(profile.status())) return profile.status();
    return absl::FailedPreconditionError("revision " + std::to_string(profile_revision) + " of " +
                                         (kind == kServiceInstanceKind ? "service" : "compute") +
                                         " profile " + d.profile_name + " is gone");
  }
  d.profile = *std::move(profile);
  d.template_ns = GetString(d.profile.spec, "templateRef.namespace", d.profile_ns);
  d.template_name = GetString(d.profile.spec, "templateRef.name");
  auto tmpl =
      store.GetRevision("EnvironmentTemplate", d.template_ns, d.template_name, template_revision);
  if (!tmpl.ok()) {
    if (!absl::IsNotFound(tmpl.status())) return tmpl.status();
    return absl::FailedPreconditionError("revision " + std::to_string(template_revision) +
                                         " of environment template " + d.template_name +
                                         " is gone");
  }
  d.tmpl = *std::move(tmpl);
  d.driver = GetString(d.tmpl.spec, "driver");
  return d;
}

absl::StatusOr<Deployment> ResolveRun(store::Store& store, const boost::json::object& instance,
                                      const boost::json::object& run) {
  return ResolveDeployment(store, instance, GetInt(run, "spec.profileRevision", 1),
                           GetInt(run, "spec.templateRevision", 1));
}

absl::StatusOr<Deployment> ResolvePinned(store::Store& store, const boost::json::object& instance) {
  return ResolveDeployment(store, instance, GetInt(instance, "status.profileRevision", 1),
                           GetInt(instance, "status.templateRevision", 1));
}

}  // namespace gantry::engine
