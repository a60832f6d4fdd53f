#include "engine/deployment.h"

#include "common/status_macros.h"
#include "engine/dependencies.h"

namespace gantry::engine {

namespace {

// The template revision `d` pins (d->template_revision of d->profile.template_ref).
absl::Status AddTemplate(store::Store& store, Deployment* d) {
  const model::ObjectRef& t = d->profile.template_ref;
  auto tmpl = store.GetRevision("EnvironmentTemplate", t.ns, t.name, d->template_revision);
  if (!tmpl.ok()) {
    if (!absl::IsNotFound(tmpl.status())) return tmpl.status();
    return absl::FailedPreconditionError("revision " + std::to_string(d->template_revision) +
                                         " of environment template " + t.name + " is gone");
  }
  d->tmpl = model::DecodeTemplate(tmpl->spec);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Deployment> ResolveDeployment(store::Store& store, const model::Instance& instance,
                                             int64_t profile_revision, int64_t template_revision) {
  Deployment d;
  d.profile_kind = ProfileKindOf(instance.kind);
  d.profile_ref = {instance.profile_ns, instance.profile_name};
  d.profile_revision = profile_revision;
  d.template_revision = template_revision;
  auto profile = store.GetRevision(d.profile_kind, instance.profile_ns, instance.profile_name,
                                   profile_revision);
  if (!profile.ok()) {
    if (!absl::IsNotFound(profile.status())) return profile.status();
    return absl::FailedPreconditionError(
        "revision " + std::to_string(profile_revision) + " of " +
        (instance.kind == kServiceInstanceKind ? "service" : "compute") + " profile " +
        instance.profile_name + " is gone");
  }
  d.profile = model::DecodeProfileSpec(profile->spec, instance.profile_ns);
  RETURN_IF_ERROR(AddTemplate(store, &d));
  return d;
}

absl::StatusOr<Deployment> ResolveRun(store::Store& store, const model::Instance& instance,
                                      const model::Run& run) {
  return ResolveDeployment(store, instance, run.profile_revision, run.template_revision);
}

absl::StatusOr<Deployment> ResolvePinned(store::Store& store, const model::Instance& instance) {
  return ResolveDeployment(store, instance, instance.status.profile_revision,
                           instance.status.template_revision);
}

absl::StatusOr<Deployment> ResolveLatest(store::Store& store, const model::Profile& profile) {
  Deployment d;
  d.profile_kind = profile.kind;
  d.profile_ref = {profile.metadata.ns, profile.metadata.name};
  d.profile_revision = profile.revision;
  d.template_revision = profile.template_revision;
  d.profile = profile.spec;
  RETURN_IF_ERROR(AddTemplate(store, &d));
  return d;
}

}  // namespace gantry::engine
