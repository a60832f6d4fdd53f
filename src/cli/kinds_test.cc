#include "cli/kinds.h"

#include <gtest/gtest.h>

namespace gantry::cli {
namespace {

TEST(ResolveKind, AliasesResolveToPlurals) {
  struct Case {
    const char* typed;
    const char* plural;
  } cases[] = {
      {"projects", "projects"},
      {"project", "projects"},
      {"proj", "projects"},
      {"environmenttemplates", "environmenttemplates"},
      {"template", "environmenttemplates"},
      {"templates", "environmenttemplates"},
      {"et", "environmenttemplates"},
      {"environmenttemplate", "environmenttemplates"},
      {"cp", "computeprofiles"},
      {"profile", "computeprofiles"},
      {"profiles", "computeprofiles"},
      {"ComputeProfile", "computeprofiles"},
      {"ci", "computeinstances"},
      {"instance", "computeinstances"},
      {"INSTANCES", "computeinstances"},
      {"computeinstance", "computeinstances"},
      {"runs", "runs"},
      {"serviceinstances", "serviceinstances"},
      {"si", "serviceinstances"},
      {"service", "serviceinstances"},
      {"ServiceInstance", "serviceinstances"},
      {"sp", "serviceprofiles"},
      {"serviceprofile", "serviceprofiles"},
  };
  for (const Case& c : cases) {
    auto k = ResolveKind(c.typed);
    ASSERT_TRUE(k.ok()) << c.typed;
    EXPECT_EQ(k->plural, c.plural) << c.typed;
  }
}

TEST(ResolveKind, ScopeAndSingular) {
  auto p = ResolveKind("proj");
  EXPECT_FALSE(p->namespaced);
  EXPECT_EQ(p->singular, "project");
  EXPECT_EQ(p->kind, "Project");
  auto ci = ResolveKind("ci");
  EXPECT_TRUE(ci->namespaced);
  EXPECT_EQ(ci->singular, "computeinstance");
  EXPECT_FALSE(ResolveKind("users")->namespaced);
}

TEST(ResolveKind, UnknownPluralsPassThrough) {
  auto k = ResolveKind("widgets");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->plural, "widgets");
  EXPECT_EQ(k->singular, "widget");
  EXPECT_TRUE(k->namespaced);
  EXPECT_EQ(k->kind, "");
  EXPECT_FALSE(ResolveKind("").ok());
  EXPECT_FALSE(ResolveKind("a/b").ok());
}

TEST(KindFromObjectKind, KnownAndGuessed) {
  EXPECT_EQ(KindFromObjectKind("ComputeInstance").plural, "computeinstances");
  EXPECT_EQ(KindFromObjectKind("Project").namespaced, false);
  EXPECT_EQ(KindFromObjectKind("Policy").plural, "policies");
  EXPECT_EQ(KindFromObjectKind("Gateway").plural, "gateways");
  EXPECT_EQ(KindFromObjectKind("Box").plural, "boxes");
}

TEST(Paths, ClusterNamespacedAndAllProjects) {
  KindInfo ci = *ResolveKind("ci");
  KindInfo proj = *ResolveKind("projects");
  EXPECT_EQ(CollectionPath(ci, "ml", false),
            "/apis/paas.gantry.dev/v1/namespaces/ml/computeinstances");
  EXPECT_EQ(CollectionPath(ci, "ml", true), "/apis/paas.gantry.dev/v1/computeinstances");
  EXPECT_EQ(ObjectPath(ci, "ml", "gpu-1"),
            "/apis/paas.gantry.dev/v1/namespaces/ml/computeinstances/gpu-1");
  EXPECT_EQ(ObjectPath(proj, "ml", "ml"), "/apis/paas.gantry.dev/v1/projects/ml");
  EXPECT_EQ(PercentEncode("a b/c=d,e"), "a%20b%2Fc%3Dd%2Ce");
}

TEST(ApplyRank, ContainersFirst) {
  EXPECT_LT(ApplyRank("Project"), ApplyRank("EnvironmentTemplate"));
  EXPECT_LT(ApplyRank("EnvironmentTemplate"), ApplyRank("ComputeProfile"));
  EXPECT_LT(ApplyRank("ComputeProfile"), ApplyRank("ComputeInstance"));
  EXPECT_LT(ApplyRank("ComputeInstance"), ApplyRank("ServiceInstance"));
  EXPECT_LT(ApplyRank("ComputeProfile"), ApplyRank("ServiceProfile"));
  EXPECT_LT(ApplyRank("ServiceProfile"), ApplyRank("ServiceInstance"));
  EXPECT_LT(ApplyRank("ServiceInstance"), ApplyRank("Widget"));
  EXPECT_EQ(ApplyRank("Widget"), ApplyRank("Run"));
}

}  // namespace
}  // namespace gantry::cli
