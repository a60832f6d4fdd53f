// The typed views the API's strategies read (profiles.h, templates.h, projects.h): what each
// field decodes to, its defaults, and that `raw` keeps the stored object.
#include "model/profiles.h"

#include <boost/json.hpp>

#include "gtest/gtest.h"
#include "model/projects.h"
#include "model/templates.h"

namespace gantry::model {
namespace {

namespace json = boost::json;

json::object Parse(std::string_view text) { return json::parse(text).as_object(); }

TEST(ProfilesTest, ReferencesDefaultToTheProfilesProject) {
  auto p = DecodeProfile(Parse(R"({"kind":"ServiceProfile","metadata":{"name":"nb",
      "namespace":"shared"},"spec":{"templateRef":{"name":"t"},"autoCreateCompute":
      {"profileRef":{"name":"gpu","namespace":"infra"},"variables":{"size":"8"}}},
      "status":{"revision":3,"templateRevision":2}})"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kind, "ServiceProfile");
  EXPECT_EQ(p->spec.template_ref, (ObjectRef{"shared", "t"}));
  ASSERT_TRUE(p->spec.auto_create_compute.has_value());
  EXPECT_EQ(p->spec.auto_create_compute->profile, (ObjectRef{"infra", "gpu"}));
  EXPECT_EQ(p->spec.auto_create_compute->variables, Parse(R"({"size":"8"})"));
  EXPECT_EQ(p->revision, 3);
  EXPECT_EQ(p->template_revision, 2);
  EXPECT_EQ(p->raw.at("metadata").at("name"), "nb");
}

// A null autoCreateCompute is still "set" (and names no profile), as the API read it before
// it was typed: the reference check then reports the missing name.
TEST(ProfilesTest, ANullAutoCreateComputeNamesNoProfile) {
  ProfileSpec s = DecodeProfileSpec(Parse(R"({"autoCreateCompute":null})"), "ns");
  ASSERT_TRUE(s.auto_create_compute.has_value());
  EXPECT_EQ(s.auto_create_compute->profile, (ObjectRef{"ns", ""}));
  EXPECT_FALSE(DecodeProfileSpec(Parse(R"({})"), "ns").auto_create_compute.has_value());
}

TEST(ProfilesTest, RevisionsDefaultToOneAndANameIsRequired) {
  auto p = DecodeProfile(Parse(R"({"metadata":{"name":"p","namespace":"a"},"spec":{}})"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->revision, 1);
  EXPECT_EQ(p->template_revision, 1);
  EXPECT_EQ(p->spec.resources.gpu_count, 0);
  EXPECT_FALSE(DecodeProfile(Parse(R"({"metadata":{}})")).ok());
}

TEST(TemplatesTest, TheDriversConfigurationAndTheRawSpec) {
  auto t = DecodeEnvironmentTemplate(Parse(R"({"metadata":{"name":"t","namespace":"a"},
      "spec":{"driver":"exec","exec":{"command":["x"],"timeoutSeconds":9},"variables":[]},
      "status":{"revision":4}})"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->spec.driver, "exec");
  EXPECT_EQ(t->spec.config, Parse(R"({"command":["x"],"timeoutSeconds":9})"));
  EXPECT_EQ(t->spec.timeout_seconds, 9);
  EXPECT_TRUE(t->spec.raw.contains("variables"));
  EXPECT_EQ(t->revision, 4);
}

// instancesPerUser is a limit only as a whole number, as the API counted it before.
TEST(ProjectsTest, InstancesPerUserIsALimitOnlyAsAnInteger) {
  auto p = DecodeProject(Parse(R"({"metadata":{"name":"ml","resourceVersion":"17"},
      "spec":{"quota":{"instancesPerUser":2,"gpus":{"h100":4}}}})"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->quota.instances_per_user, 2);
  EXPECT_EQ(p->quota.GpusOf("h100"), 4);
  EXPECT_EQ(p->metadata.resource_version, 17);
  auto loose = DecodeProject(
      Parse(R"({"metadata":{"name":"ml"},"spec":{"quota":{"instancesPerUser":"2"}}})"));
  ASSERT_TRUE(loose.ok()) << loose.status();
  EXPECT_FALSE(loose->quota.instances_per_user.has_value());
}

TEST(ProjectsTest, UsersAndRoleBindings) {
  auto admin = DecodeUser(Parse(R"({"metadata":{"name":"ana"},"spec":{"orgRole":"org-admin",
      "source":"ldap","displayName":"Ana"}})"));
  ASSERT_TRUE(admin.ok()) << admin.status();
  EXPECT_TRUE(admin->EnabledOrgAdmin());
  EXPECT_EQ(admin->source, "ldap");
  EXPECT_EQ(admin->display_name, "Ana");
  auto disabled = DecodeUser(
      Parse(R"({"metadata":{"name":"bo"},"spec":{"orgRole":"org-admin","disabled":true}})"));
  ASSERT_TRUE(disabled.ok()) << disabled.status();
  EXPECT_FALSE(disabled->EnabledOrgAdmin());
  auto b = DecodeRoleBinding(Parse(R"({"metadata":{"name":"b"},"spec":{"group":"ml-team"}})"));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->group, "ml-team");
  EXPECT_EQ(b->user, "");
}

}  // namespace
}  // namespace gantry::model
