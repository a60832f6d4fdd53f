// Deployment: what an instance deploys with — the profile revision and the template revision
// it pinned, typed (model/profiles.h, model/objects.h). The one resolver of "instance →
// pinned profile revision → template revision" for the whole server: the engine (execute,
// admit, recover, adopt) and the API (pinning revisions at save, upgrade) all call it. A
// profile's templateRef defaults to the *profile's* project, which is not the instance's when
// the profile is shared from another project.
//
// Thread-safety: free functions over the Store (itself thread-safe).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "model/objects.h"
#include "model/profiles.h"
#include "store/store.h"

namespace gantry::engine {

struct Deployment {
  std::string profile_kind;  // ComputeProfile or ServiceProfile
  model::ObjectRef profile_ref;
  int64_t profile_revision = 1, template_revision = 1;
  model::ProfileSpec profile;  // the pinned revision's spec (.template_ref names the template)
  model::TemplateSpec tmpl;    // the pinned template revision's spec (.driver, .config)
};

// The revisions `instance` (a compute or service instance) deploys with at these revision
// numbers. FAILED_PRECONDITION naming the revision that is gone; other store errors as the
// store returns them.
absl::StatusOr<Deployment> ResolveDeployment(store::Store& store, const model::Instance& instance,
                                             int64_t profile_revision, int64_t template_revision);

// The revisions a run pinned (spec.profileRevision, spec.templateRevision) for `instance`.
absl::StatusOr<Deployment> ResolveRun(store::Store& store, const model::Instance& instance,
                                      const model::Run& run);

// The revisions `instance` pinned itself (status.profileRevision, status.templateRevision):
// what its deployed workload runs, or what its next deploy runs.
absl::StatusOr<Deployment> ResolvePinned(store::Store& store, const model::Instance& instance);

// The latest revision of `profile`, as read from the store, and the template revision it
// pins. The profile's spec is its latest revision's (api/strategy_support.cc RecordRevision
// writes both in one commit), so only the template revision is read.
absl::StatusOr<Deployment> ResolveLatest(store::Store& store, const model::Profile& profile);

}  // namespace gantry::engine
