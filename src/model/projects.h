// Typed views of the org-level objects the API's rules read (ARCHITECTURE.md "Typed inside,
// JSON at the edges"): a Project (its quota, model::Quota), a User (role, source, whether it
// is disabled) and a RoleBinding (whom it binds: a user or a directory group).
//
// As objects.h: decoded once, the stored object kept in `raw` (the API rewrites a project
// as it was read, to guard a count: api/compute_instance_strategy.cc).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <boost/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "model/objects.h"

namespace gantry::model {

struct Project {
  boost::json::object raw;
  ObjectMeta metadata;
  Quota quota;  // spec.quota
};
// INTERNAL when the object has no metadata.name. Moving `stored` in saves a copy of it.
absl::StatusOr<Project> DecodeProject(boost::json::object stored);

inline constexpr char kOrgAdminRole[] = "org-admin";

struct User {
  boost::json::object raw;
  ObjectMeta metadata;
  std::string display_name;  // spec.displayName
  std::string org_role;      // spec.orgRole: "org-admin" or "" (a member)
  std::string source;        // spec.source: "" (local) or the directory that made it
  bool disabled = false;     // spec.disabled

  // An org-admin that may sign in: what the last-org-admin rule counts.
  bool EnabledOrgAdmin() const { return org_role == kOrgAdminRole && !disabled; }
};
absl::StatusOr<User> DecodeUser(const boost::json::object& stored);

struct RoleBinding {
  boost::json::object raw;
  ObjectMeta metadata;
  std::string user, group;  // spec.user / spec.group: exactly one is set
};
absl::StatusOr<RoleBinding> DecodeRoleBinding(const boost::json::object& stored);

}  // namespace gantry::model
