// Typed views of ComputeProfile and ServiceProfile objects and of their revisions' specs
// (ARCHITECTURE.md "Typed inside, JSON at the edges"): the template a profile deploys with,
// its resources, the compute instance a service profile creates, and the revisions it
// pinned. The API's profile and instance rules (api/profile_strategy.cc,
// api/instance_strategy.cc) and the engine's Deployment (engine/deployment.h) read them.
//
// As objects.h: decoded once from the stored JSON, the stored object (or spec) kept in `raw`
// for what the struct does not model (variable rules, sharing, selectors, handed on as is).
// The API writes the server-owned fields (status.revision, status.templateRevision) itself,
// when it records a revision.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "model/objects.h"

namespace gantry::model {

inline constexpr char kComputeProfileKind[] = "ComputeProfile";
inline constexpr char kServiceProfileKind[] = "ServiceProfile";

// A reference to an object in a project: spec.templateRef, spec.profileRef, spec.computeRef.
// `ns` is the namespace given, or the referring object's project when none is.
struct ObjectRef {
  std::string ns, name;
  bool operator==(const ObjectRef&) const = default;
};
// The reference at `key` of `spec` ("templateRef", "autoCreateCompute.profileRef"); an
// absent one has an empty name.
ObjectRef DecodeRef(const boost::json::object& spec, std::string_view key,
                    const std::string& default_ns);

// A service profile's spec.autoCreateCompute: the compute instance it creates per service.
struct AutoCreateCompute {
  ObjectRef profile;              // .profileRef (ns defaults to the service profile's project)
  boost::json::object variables;  // .variables, as given
};

// The spec of a profile, or of one of its revisions.
struct ProfileSpec {
  boost::json::object raw;  // variable rules, computeSelector, sharing: read as JSON
  ObjectRef template_ref;   // spec.templateRef (ns defaults to the profile's project)
  Resources resources;      // spec.resources (services: none)
  // Service profiles; set whenever the key is (a null one has an empty profile name).
  std::optional<AutoCreateCompute> auto_create_compute;
};
// `ns` is the profile's project, the default of its references.
ProfileSpec DecodeProfileSpec(const boost::json::object& spec, const std::string& ns);

// A stored ComputeProfile or ServiceProfile.
struct Profile {
  boost::json::object raw;
  std::string kind;
  ObjectMeta metadata;
  ProfileSpec spec;
  int64_t revision = 1;           // status.revision: the latest
  int64_t template_revision = 1;  // status.templateRevision: its template's, pinned with it
};
// INTERNAL when the object has no metadata.name. Moving `stored` in saves a copy of it.
absl::StatusOr<Profile> DecodeProfile(boost::json::object stored);

}  // namespace gantry::model
