// Deployment: what an instance deploys with — the profile revision and the template revision
// it pinned, and the template's driver. The one resolver of "instance → pinned profile
// revision → template revision" for the whole engine (execute, admit, recover, adopt): a
// profile's templateRef defaults to the *profile's* project, which is not the instance's when
// the profile is shared from another project.
//
// Thread-safety: free functions over the Store (itself thread-safe).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "store/store.h"

namespace gantry::engine {

struct Deployment {
  std::string profile_kind;  // ComputeProfile or ServiceProfile
  std::string profile_ns, profile_name;
  std::string template_ns, template_name;
  store::Revision profile;  // the pinned revision's spec
  store::Revision tmpl;
  std::string driver;  // the template revision's spec.driver
};

// The revisions `instance` (a compute or service instance) deploys with at these revision
// numbers. FAILED_PRECONDITION naming the revision that is gone; other store errors as the
// store returns them.
absl::StatusOr<Deployment> ResolveDeployment(store::Store& store,
                                             const boost::json::object& instance,
                                             int64_t profile_revision, int64_t template_revision);

// The revisions a run pinned (spec.profileRevision, spec.templateRevision) for `instance`.
absl::StatusOr<Deployment> ResolveRun(store::Store& store, const boost::json::object& instance,
                                      const boost::json::object& run);

// The revisions `instance` pinned itself (status.profileRevision, status.templateRevision):
// what its deployed workload runs.
absl::StatusOr<Deployment> ResolvePinned(store::Store& store, const boost::json::object& instance);

}  // namespace gantry::engine
