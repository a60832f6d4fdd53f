#include "auth/authorize.h"

#include <gtest/gtest.h>

namespace gantry::auth {
namespace {

Subject User(std::string name, Role org, std::map<std::string, Role> projects = {}) {
  return Subject{std::move(name), org, std::move(projects)};
}

bool Allowed(const Subject& s, Verb v, std::string kind, std::string project,
             Relation rel = Relation::kOwn) {
  return Authorize(s, Access{v, std::move(kind), std::move(project), rel}).allowed;
}

TEST(Authorize, OrgAdminMayDoAnything) {
  Subject s = User("root", Role::kOrgAdmin);
  for (Verb v : {Verb::kGet, Verb::kCreate, Verb::kDelete, Verb::kOperate})
    for (const char* k :
         {"Project", "User", "ComputeProfile", "ComputeInstance", "AuditEvent", "Token"})
      EXPECT_TRUE(Allowed(s, v, k, "p", Relation::kOther)) << k;
}

TEST(Authorize, PaasAdminCuratesEverywhereButManagesNoUsersOrProjects) {
  Subject s = User("pa", Role::kPaasAdmin);
  EXPECT_TRUE(Allowed(s, Verb::kCreate, "ComputeProfile", "anyproj", Relation::kOther));
  EXPECT_TRUE(Allowed(s, Verb::kUpdate, "EnvironmentTemplate", "anyproj", Relation::kOther));
  EXPECT_TRUE(Allowed(s, Verb::kOperate, "ComputeInstance", "anyproj", Relation::kOther));
  EXPECT_TRUE(Allowed(s, Verb::kList, "AuditEvent", ""));
  EXPECT_FALSE(Allowed(s, Verb::kCreate, "Project", "new"));
  EXPECT_FALSE(Allowed(s, Verb::kCreate, "User", ""));
  EXPECT_FALSE(Allowed(s, Verb::kCreate, "RoleBinding", "anyproj", Relation::kOther));
}

TEST(Authorize, MemberOperatesInstancesOfItsProjectOnly) {
  Subject s = User("alice", Role::kNone, {{"ml", Role::kMember}});
  EXPECT_TRUE(Allowed(s, Verb::kCreate, "ComputeInstance", "ml"));
  EXPECT_TRUE(Allowed(s, Verb::kOperate, "ComputeInstance", "ml"));
  EXPECT_TRUE(Allowed(s, Verb::kGet, "ComputeProfile", "ml"));
  EXPECT_FALSE(Allowed(s, Verb::kCreate, "ComputeProfile", "ml"));
  EXPECT_FALSE(Allowed(s, Verb::kGet, "ComputeInstance", "other", Relation::kOther));
  EXPECT_FALSE(Allowed(s, Verb::kCreate, "RoleBinding", "ml"));
  EXPECT_FALSE(Allowed(s, Verb::kList, "AuditEvent", ""));
}

TEST(Authorize, SharedInIsReadOnly) {
  Subject s = User("alice", Role::kNone, {{"ml", Role::kProjectAdmin}});
  EXPECT_TRUE(Allowed(s, Verb::kGet, "ComputeProfile", "platform", Relation::kSharedIn));
  EXPECT_TRUE(Allowed(s, Verb::kGet, "ComputeInstance", "platform", Relation::kSharedIn));
  EXPECT_FALSE(Allowed(s, Verb::kUpdate, "ComputeInstance", "platform", Relation::kSharedIn));
  EXPECT_FALSE(Allowed(s, Verb::kOperate, "ComputeInstance", "platform", Relation::kSharedIn));
  Decision d =
      Authorize(s, Access{Verb::kOperate, "ComputeInstance", "platform", Relation::kSharedIn});
  EXPECT_NE(d.reason.find("read-only"), std::string::npos) << d.reason;
}

TEST(Authorize, ViewerReadsOnly) {
  Subject s = User("vic", Role::kNone, {{"ml", Role::kViewer}});
  EXPECT_TRUE(Allowed(s, Verb::kList, "ComputeInstance", "ml"));
  EXPECT_TRUE(Allowed(s, Verb::kGet, "Run", "ml"));
  EXPECT_FALSE(Allowed(s, Verb::kOperate, "ComputeInstance", "ml"));
  EXPECT_FALSE(Allowed(s, Verb::kDelete, "ComputeInstance", "ml"));
}

TEST(Authorize, SelfServiceOfOwnUserAndTokens) {
  Subject s = User("bob", Role::kNone);
  EXPECT_TRUE(Allowed(s, Verb::kGet, "User", "", Relation::kSelf));
  EXPECT_TRUE(Allowed(s, Verb::kUpdate, "User", "", Relation::kSelf));
  EXPECT_TRUE(Allowed(s, Verb::kCreate, "Token", "", Relation::kSelf));
  EXPECT_FALSE(Allowed(s, Verb::kCreate, "Token", "", Relation::kOther));
  EXPECT_FALSE(Allowed(s, Verb::kGet, "User", "", Relation::kOther));
  EXPECT_FALSE(Allowed(s, Verb::kDelete, "User", "", Relation::kSelf));
}

TEST(Authorize, OwnSessionsOnlyButAnOrgAdminEndsAnyones) {
  Subject bob = User("bob", Role::kNone);
  EXPECT_TRUE(Allowed(bob, Verb::kList, "Session", "", Relation::kSelf));
  EXPECT_TRUE(Allowed(bob, Verb::kDelete, "Session", "", Relation::kSelf));
  EXPECT_FALSE(Allowed(bob, Verb::kList, "Session", "", Relation::kOther));
  EXPECT_FALSE(Allowed(bob, Verb::kDelete, "Session", "", Relation::kOther));
  // A paas-admin curates profiles; whose sessions are open is none of its business.
  EXPECT_FALSE(Allowed(User("pa", Role::kPaasAdmin), Verb::kList, "Session", "", Relation::kOther));
  EXPECT_TRUE(
      Allowed(User("root", Role::kOrgAdmin), Verb::kDelete, "Session", "", Relation::kOther));
  EXPECT_TRUE(Allowed(User("root", Role::kOrgAdmin), Verb::kDelete, "Token", "", Relation::kOther));
}

TEST(Authorize, ListsAcrossProjectsAreOpenAndFilteredByTheCaller) {
  Subject s = User("nobody", Role::kNone);
  EXPECT_TRUE(Allowed(s, Verb::kList, "ComputeInstance", ""));
  EXPECT_TRUE(Allowed(s, Verb::kList, "Project", ""));
  EXPECT_FALSE(Allowed(s, Verb::kList, "Node", ""));
}

TEST(Authorize, RefusalNamesThePermissionAndTheCallersRole) {
  Subject s = User("alice", Role::kNone, {{"ml", Role::kMember}});
  Decision d = Authorize(s, Access{Verb::kCreate, "ComputeProfile", "ml", Relation::kOwn});
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(d.reason,
            "computeprofiles.paas.gantry.dev is forbidden: User \"alice\" cannot create resource "
            "\"computeprofiles\" in project \"ml\": that needs the paas-admin or org-admin role; "
            "alice is member there");
  d = Authorize(s, Access{Verb::kGet, "ComputeInstance", "x", Relation::kOther});
  EXPECT_NE(d.reason.find("viewer, member, project-admin, paas-admin or org-admin"),
            std::string::npos)
      << d.reason;
  EXPECT_NE(d.reason.find("alice has no role in project \"x\""), std::string::npos) << d.reason;
}

TEST(Roles, NamesRoundTrip) {
  for (Role r :
       {Role::kViewer, Role::kMember, Role::kProjectAdmin, Role::kPaasAdmin, Role::kOrgAdmin})
    EXPECT_EQ(RoleFromName(RoleName(r)), r);
  EXPECT_EQ(RoleFromName("root"), Role::kNone);
}

}  // namespace
}  // namespace gantry::auth
