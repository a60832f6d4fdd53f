#include "auth/authorize.h"

#include <algorithm>

namespace gantry::auth {
namespace {

// Who a (kind, verb) is granted to. Project roles are ordered viewer < member <
// project-admin; `min_project_role` grants that role and the ones above it, in the project
// the object lives in (or, for reads, a project it is shared into).
struct Grant {
  Role min_project_role = Role::kNone;  // kNone: no project role grants it
  bool paas_admin = false;
  bool self = false;    // the caller's own User object and tokens
  bool anyone = false;  // every authenticated caller (lists filtered to what they may see)
};

bool IsRead(Verb v) { return v == Verb::kGet || v == Verb::kList || v == Verb::kWatch; }

int ProjectRank(Role r) {
  switch (r) {
    case Role::kViewer:
      return 1;
    case Role::kMember:
      return 2;
    case Role::kProjectAdmin:
      return 3;
    default:
      return 0;
  }
}

// The permission matrix. docs/security.md is this table written out; keep them together.
// org-admin is granted everything and is not listed.
Grant GrantFor(const Access& a) {
  const std::string& k = a.kind;
  const bool read = IsRead(a.verb);
  const bool across_projects =
      a.project.empty() && (a.verb == Verb::kList || a.verb == Verb::kWatch);
  if (k == "Project") {
    if (across_projects) return {.anyone = true};
    if (read) return {.min_project_role = Role::kViewer, .paas_admin = true};
    return {};
  }
  if (k == "User") {
    if (a.verb == Verb::kGet || a.verb == Verb::kUpdate) return {.paas_admin = read, .self = true};
    if (read) return {.paas_admin = true};
    return {};
  }
  if (k == "Token" || k == "Session") return {.self = true};  // users/NAME/tokens, sessions
  if (k == "Node" || k == "AuditEvent") return {.paas_admin = true};
  // Rate cards: everyone reads the prices; org-admin sets them.
  if (k == "RateCard") return read ? Grant{.anyone = true} : Grant{};
  // Usage reports are computed reads; what rows a caller sees is the report's own rule
  // (members: their own usage; api/usage_reports.cc).
  if (k == "UsageReport")
    return !read             ? Grant{}
           : across_projects ? Grant{.anyone = true}
                             : Grant{.min_project_role = Role::kViewer, .paas_admin = true};
  if (k == "ClusterWebhook") return {};  // org-admin only: it sees every project's events
  // Namespaced kinds.
  if (across_projects) return {.anyone = true};
  if (k == "RoleBinding")
    return read ? Grant{.min_project_role = Role::kViewer, .paas_admin = true}
                : Grant{.min_project_role = Role::kProjectAdmin};
  if (k == "EnvironmentTemplate" || k == "ComputeProfile" || k == "ServiceProfile")
    return read ? Grant{.min_project_role = Role::kViewer, .paas_admin = true}
                : Grant{.paas_admin = true};
  if (k == "ComputeInstance" || k == "ServiceInstance")
    return read ? Grant{.min_project_role = Role::kViewer, .paas_admin = true}
                : Grant{.min_project_role = Role::kMember, .paas_admin = true};
  if (k == "Webhook" || k == "WebhookDelivery")
    // A receiver URL may name internal hosts; deliveries are read-only (405 to writers).
    return {.min_project_role = Role::kProjectAdmin};
  if (k == "Run")
    // Read-only: writes reach the resource layer, which answers 405 to whoever may read.
    return {.min_project_role = Role::kViewer, .paas_admin = true};
  return {};  // unknown kinds: org-admin only
}

std::string Plural(const std::string& kind) {
  if (kind == "Token") return "tokens";
  std::string out;
  for (char c : kind) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out + "s";
}

std::string JoinRoles(const std::vector<Role>& roles) {
  std::string out;
  for (size_t i = 0; i < roles.size(); ++i) {
    if (i) out += i + 1 == roles.size() ? " or " : ", ";
    out += RoleName(roles[i]);
  }
  return out;
}

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kViewer:
      return "viewer";
    case Role::kMember:
      return "member";
    case Role::kProjectAdmin:
      return "project-admin";
    case Role::kPaasAdmin:
      return "paas-admin";
    case Role::kOrgAdmin:
      return "org-admin";
    default:
      return "";
  }
}

Role RoleFromName(std::string_view name) {
  for (Role r :
       {Role::kViewer, Role::kMember, Role::kProjectAdmin, Role::kPaasAdmin, Role::kOrgAdmin})
    if (RoleName(r) == name) return r;
  return Role::kNone;
}

bool IsOrgRole(Role role) { return role == Role::kOrgAdmin || role == Role::kPaasAdmin; }
bool IsProjectRole(Role role) { return ProjectRank(role) > 0; }

Role Subject::RoleIn(const std::string& project) const {
  if (org_role != Role::kNone) return org_role;
  auto it = projects.find(project);
  return it == projects.end() ? Role::kNone : it->second;
}

std::string_view VerbName(Verb verb) {
  switch (verb) {
    case Verb::kGet:
      return "get";
    case Verb::kList:
      return "list";
    case Verb::kWatch:
      return "watch";
    case Verb::kCreate:
      return "create";
    case Verb::kUpdate:
      return "update";
    case Verb::kDelete:
      return "delete";
    case Verb::kOperate:
      return "operate";
  }
  return "";
}

std::vector<Role> RolesGranting(const Access& access) {
  Grant g = GrantFor(access);
  std::vector<Role> out;
  if (g.min_project_role != Role::kNone)
    for (Role r : {Role::kViewer, Role::kMember, Role::kProjectAdmin})
      if (ProjectRank(r) >= ProjectRank(g.min_project_role)) out.push_back(r);
  if (g.paas_admin) out.push_back(Role::kPaasAdmin);
  out.push_back(Role::kOrgAdmin);
  return out;
}

Decision Authorize(const Subject& subject, const Access& access) {
  Grant g = GrantFor(access);
  if (g.anyone || subject.org_role == Role::kOrgAdmin) return {true, ""};
  if (g.self && access.relation == Relation::kSelf) return {true, ""};
  if (g.paas_admin && subject.org_role == Role::kPaasAdmin) return {true, ""};
  // The project role that applies: the bound one in the object's own project; through
  // sharing, read access only (the object stays read-only in the projects it is shared into).
  Role project_role = Role::kNone;
  if (access.relation == Relation::kOwn) {
    auto it = subject.projects.find(access.project);
    if (it != subject.projects.end()) project_role = it->second;
  } else if (access.relation == Relation::kSharedIn) {
    project_role = Role::kViewer;
  }
  if (g.min_project_role != Role::kNone && ProjectRank(project_role) > 0 &&
      ProjectRank(project_role) >= ProjectRank(g.min_project_role))
    return {true, ""};

  // Refused: say which permission is missing, in the words of Kubernetes' RBAC refusals.
  std::string verb(VerbName(access.verb));
  std::string where = access.project.empty() ? "" : " in project \"" + access.project + "\"";
  std::string need;
  std::vector<Role> roles = RolesGranting(access);
  if (g.self)
    need = "only the user themself or a " + JoinRoles(roles) + " may do this";
  else
    need = "that needs the " + JoinRoles(roles) + " role";
  if (g.min_project_role != Role::kNone && access.relation == Relation::kSharedIn)
    need += " (objects shared into a project are read-only there)";
  std::string has;
  if (subject.org_role != Role::kNone) {
    has = subject.user + " is " + std::string(RoleName(subject.org_role));
  } else if (!access.project.empty()) {
    auto it = subject.projects.find(access.project);
    has = it == subject.projects.end()
              ? subject.user + " has no role in project \"" + access.project + "\""
              : subject.user + " is " + std::string(RoleName(it->second)) + " there";
  } else {
    has = subject.user + " has no org-wide role";
  }
  return {false, Plural(access.kind) + ".paas.gantry.dev is forbidden: User \"" + subject.user +
                     "\" cannot " + verb + " resource \"" + Plural(access.kind) + "\"" + where +
                     ": " + need + "; " + has};
}

}  // namespace gantry::auth
