#include "model/projects.h"

#include "common/status_macros.h"
#include "model/codec.h"

namespace gantry::model {
namespace {

namespace json = boost::json;

const json::object& SpecOf(const json::object& stored) {
  static const json::object kEmpty;
  const json::value* v = stored.if_contains("spec");
  return v && v->is_object() ? v->get_object() : kEmpty;
}

}  // namespace

absl::StatusOr<Project> DecodeProject(json::object stored) {
  ASSIGN_OR_RETURN(Project p, DecodeObjectWithMeta<Project>(std::move(stored)));
  p.quota = DecodeQuota(p.raw);
  return p;
}

absl::StatusOr<User> DecodeUser(const json::object& stored) {
  ASSIGN_OR_RETURN(User u, DecodeObjectWithMeta<User>(stored));
  const json::object& spec = SpecOf(stored);
  u.display_name = GetString(spec, "displayName");
  u.org_role = GetString(spec, "orgRole");
  u.source = GetString(spec, "source");
  u.disabled = GetBool(spec, "disabled");
  return u;
}

absl::StatusOr<RoleBinding> DecodeRoleBinding(const json::object& stored) {
  ASSIGN_OR_RETURN(RoleBinding b, DecodeObjectWithMeta<RoleBinding>(stored));
  b.user = GetString(stored, "spec.user");
  b.group = GetString(stored, "spec.group");
  return b;
}

}  // namespace gantry::model
