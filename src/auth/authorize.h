// authorize(): the one decision function of Gantry's role-based access control.
//
// Every request the API serves is reduced to an Access (who, which verb, which kind, in which
// project, and how the object relates to the caller) and answered here, from the permission
// matrix written down in docs/security.md. The function is pure: no I/O, no clock; the
// caller computes the relation (whether an object of another project is shared into one of
// the caller's projects) before asking.
//
// Roles: org-wide roles sit on the User (org-admin, paas-admin); project roles come from
// RoleBindings (project-admin, member, viewer). An org-wide role applies in every project.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gantry::auth {

enum class Role { kNone, kViewer, kMember, kProjectAdmin, kPaasAdmin, kOrgAdmin };

// "org-admin", "paas-admin", "project-admin", "member", "viewer", "" for kNone.
std::string_view RoleName(Role role);
// kNone for an unknown name.
Role RoleFromName(std::string_view name);
bool IsOrgRole(Role role);      // org-admin, paas-admin
bool IsProjectRole(Role role);  // project-admin, member, viewer

// Who is asking, with every role they hold.
struct Subject {
  std::string user;  // user name; "system:bootstrap" for GANTRY_BOOTSTRAP_TOKEN
  Role org_role = Role::kNone;
  std::map<std::string, Role> projects;  // project -> role bound there

  bool IsAdmin() const { return org_role == Role::kOrgAdmin || org_role == Role::kPaasAdmin; }
  // The role that applies in `project`: the higher of the org-wide one and the bound one.
  Role RoleIn(const std::string& project) const;
  // True when the subject may see every project (org-wide role).
  bool SeesAllProjects() const { return IsAdmin(); }
};

// Verbs. Reads: get, list, watch. Writes: create, update (PUT and PATCH), delete. `operate`
// covers the instance actions deploy, destroy, cancel and upgrade.
enum class Verb { kGet, kList, kWatch, kCreate, kUpdate, kDelete, kOperate };
std::string_view VerbName(Verb verb);

// How the object (or collection) relates to the caller.
enum class Relation {
  kOwn,       // in a project where the caller holds a role (or cluster-scoped)
  kOther,     // in a project where the caller holds no role
  kSharedIn,  // in another project, and shared (spec.sharing) into one of the caller's
  kSelf,      // the caller's own User object or its tokens
};

struct Access {
  Verb verb = Verb::kGet;
  // API kind: Project, User, RoleBinding, EnvironmentTemplate, ComputeProfile,
  // ComputeInstance, Run, Node, AuditEvent; "Token" and "Session" for the users/NAME/tokens
  // and users/NAME/sessions subresources.
  std::string kind;
  std::string project;  // "" for cluster-scoped kinds and lists across projects
  Relation relation = Relation::kOwn;
};

struct Decision {
  bool allowed = false;
  // For a refusal: the missing permission, for a person ("creating computeprofiles needs the
  // paas-admin or org-admin role; alice is member in project ml").
  std::string reason;
};

Decision Authorize(const Subject& subject, const Access& access);

// The roles that grant `access` (ignoring who asks): what docs/security.md lists, and what
// the refusal message names. A role listed here grants the access in the project it is bound
// to (project roles) or everywhere (org roles).
std::vector<Role> RolesGranting(const Access& access);

}  // namespace gantry::auth
