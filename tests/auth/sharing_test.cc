// Manage Sharing (the seed's rule 10) against a real gantryd: None (default), All, Selected
// and back, for profiles, templates and instances; instances launched while shared keep
// working after unsharing; shared-in objects are listed (status.sharedFrom) and read-only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "api_client.h"
#include "gantryd_test.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

class SharingTest : public GantrydTest {
 protected:
  void SetUp() override {
    GantrydTest::SetUp();
    if (HasFatalFailure()) return;
    for (const char* p : {"platform", "team-a", "team-b"}) api().CreateProject(p);
    // A template whose apply and destroy succeed at once, and a profile without GPUs.
    api().MustCreate(
        NsPath("platform", "environmenttemplates"),
        json::object{
            {"metadata", json::object{{"name", "nb"}}},
            {"spec", json::object{{"driver", "exec"},
                                  {"exec", json::object{{"command", json::array{"true"}}}}}}});
    api().MustCreate(
        NsPath("platform", "computeprofiles"),
        json::object{{"metadata", json::object{{"name", "small"}}},
                     {"spec", json::object{{"displayName", "Small notebook"},
                                           {"templateRef", json::object{{"name", "nb"}}}}}});
    api().MustCreate(ClusterPath("users"),
                     json::object{{"metadata", json::object{{"name", "ann"}}},
                                  {"spec", json::object{{"password", "ann-password-1"}}}});
    api().MustCreate(NsPath("team-a", "rolebindings"),
                     json::object{{"metadata", json::object{{"name", "ann"}}},
                                  {"spec", json::object{{"user", "ann"}, {"role", "member"}}}});
    Resp t = api().Post(ClusterPath("users", "ann") + "/tokens", json::object{});
    ASSERT_EQ(t.status, 201);
    ann_ =
        std::make_unique<Api>(gantryd_->base_url(), std::string(t.obj().at("token").as_string()));
  }

  void Share(const std::string& ns, const std::string& plural, const std::string& name,
             json::object sharing) {
    Resp r = api().Patch(NsPath(ns, plural, name),
                         json::object{{"spec", json::object{{"sharing", std::move(sharing)}}}});
    ASSERT_EQ(r.status, 200) << r.raw;
  }

  // Names in `ns`'s list of `plural` that come from `from` (status.sharedFrom).
  std::vector<std::string> SharedIn(Api& as, const std::string& ns, const std::string& plural,
                                    const std::string& from) {
    Resp r = as.Get(NsPath(ns, plural));
    EXPECT_EQ(r.status, 200) << r.raw;
    std::vector<std::string> out;
    if (r.status != 200) return out;
    for (const auto& item : r.obj().at("items").as_array()) {
      const json::object& o = item.as_object();
      if (o.at("metadata").at("namespace").as_string() != from) continue;
      EXPECT_EQ(o.at("status").at("sharedFrom").at("namespace").as_string(), from);
      out.push_back(std::string(o.at("metadata").at("name").as_string()));
    }
    return out;
  }

  Resp Launch(Api& as, const std::string& ns, const std::string& name) {
    return as.Post(
        NsPath(ns, "computeinstances"),
        json::object{
            {"metadata", json::object{{"name", name}}},
            {"spec", json::object{{"profileRef",
                                   json::object{{"name", "small"}, {"namespace", "platform"}}}}}});
  }

  std::string WaitPhase(const std::string& ns, const std::string& name, const std::string& phase) {
    std::string seen;
    for (int i = 0; i < 1200; ++i) {
      Resp r = api().Get(NsPath(ns, "computeinstances", name));
      seen = r.status == 200 ? std::string(r.obj().at("status").at("phase").as_string()) : "";
      if (seen == phase) return seen;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return seen;
  }

  std::unique_ptr<Api> ann_;
};

TEST_F(SharingTest, ModesNoneAllSelectedAndBackWithInstancesLaunchedWhileShared) {
  using V = std::vector<std::string>;
  // None (the default): invisible elsewhere, unusable.
  EXPECT_EQ(SharedIn(*ann_, "team-a", "computeprofiles", "platform"), V{});
  Resp refused = Launch(*ann_, "team-a", "early");
  EXPECT_TRUE(refused.IsStatus(422, "Invalid")) << refused.raw;
  EXPECT_THAT(refused.message(), HasSubstr("not shared with project team-a"));
  EXPECT_TRUE(ann_->Get(NsPath("platform", "computeprofiles", "small")).IsStatus(403, "Forbidden"));

  // All: listed in every project, readable, launchable.
  Share("platform", "computeprofiles", "small", json::object{{"mode", "All"}});
  EXPECT_EQ(SharedIn(*ann_, "team-a", "computeprofiles", "platform"), V{"small"});
  EXPECT_EQ(SharedIn(api(), "team-b", "computeprofiles", "platform"), V{"small"});
  EXPECT_EQ(ann_->Get(NsPath("platform", "computeprofiles", "small")).status, 200);
  EXPECT_EQ(ann_->Get(NsPath("platform", "computeprofiles", "small") + "/revisions").status, 200);
  ASSERT_EQ(Launch(*ann_, "team-a", "nb1").status, 201);
  ASSERT_EQ(
      ann_->Post(NsPath("team-a", "computeinstances", "nb1") + "/deploy", json::object{}).status,
      202);
  EXPECT_EQ(WaitPhase("team-a", "nb1", "Success"), "Success");
  // Shared-in is read-only: a member of team-a cannot edit the profile.
  Resp edit = ann_->Patch(NsPath("platform", "computeprofiles", "small"),
                          json::object{{"spec", json::object{{"description", "mine"}}}});
  EXPECT_TRUE(edit.IsStatus(403, "Forbidden")) << edit.raw;

  // Selected (team-b only): team-a sees it no more and cannot launch new instances, but nb1,
  // launched while shared, keeps working: destroy and deploy again.
  Share("platform", "computeprofiles", "small",
        json::object{{"mode", "Selected"}, {"projects", json::array{"team-b"}}});
  EXPECT_EQ(SharedIn(*ann_, "team-a", "computeprofiles", "platform"), V{});
  EXPECT_EQ(SharedIn(api(), "team-b", "computeprofiles", "platform"), V{"small"});
  EXPECT_TRUE(Launch(*ann_, "team-a", "nb2").IsStatus(422, "Invalid"));
  EXPECT_EQ(Launch(api(), "team-b", "nb3").status, 201);
  ASSERT_EQ(
      ann_->Post(NsPath("team-a", "computeinstances", "nb1") + "/destroy", json::object{}).status,
      202);
  EXPECT_EQ(WaitPhase("team-a", "nb1", "NotDeployed"), "NotDeployed");
  ASSERT_EQ(
      ann_->Post(NsPath("team-a", "computeinstances", "nb1") + "/deploy", json::object{}).status,
      202);
  EXPECT_EQ(WaitPhase("team-a", "nb1", "Success"), "Success");

  // Back to None: nobody else sees it; what runs keeps running.
  Share("platform", "computeprofiles", "small",
        json::object{{"mode", "None"}, {"projects", nullptr}});
  EXPECT_EQ(SharedIn(api(), "team-b", "computeprofiles", "platform"), V{});
  EXPECT_EQ(api().Get(NsPath("team-a", "computeinstances", "nb1")).obj().at("status").at("phase"),
            "Success");
}

TEST_F(SharingTest, SharedInstancesAreVisibleReadOnlyInTheTargetProject) {
  Share("platform", "computeprofiles", "small", json::object{{"mode", "All"}});
  ASSERT_EQ(Launch(api(), "platform", "kubeflow").status, 201);
  Share("platform", "computeinstances", "kubeflow",
        json::object{{"mode", "Selected"}, {"projects", json::array{"team-a"}}});
  EXPECT_EQ(SharedIn(*ann_, "team-a", "computeinstances", "platform"),
            std::vector<std::string>{"kubeflow"});
  EXPECT_EQ(ann_->Get(NsPath("platform", "computeinstances", "kubeflow")).status, 200);
  EXPECT_TRUE(
      ann_->Post(NsPath("platform", "computeinstances", "kubeflow") + "/deploy", json::object{})
          .IsStatus(403, "Forbidden"));
  EXPECT_TRUE(
      ann_->Delete(NsPath("platform", "computeinstances", "kubeflow")).IsStatus(403, "Forbidden"));
  EXPECT_EQ(SharedIn(api(), "team-b", "computeinstances", "platform"), std::vector<std::string>{});
}

TEST_F(SharingTest, TemplatesSharedIntoAProjectBackItsProfiles) {
  json::object profile{
      {"metadata", json::object{{"name", "mine"}}},
      {"spec",
       json::object{{"templateRef", json::object{{"name", "nb"}, {"namespace", "platform"}}}}}};
  Resp r = api().Post(NsPath("team-b", "computeprofiles"), profile);
  EXPECT_TRUE(r.IsStatus(422, "Invalid")) << r.raw;
  Share("platform", "environmenttemplates", "nb",
        json::object{{"mode", "Selected"}, {"projects", json::array{"team-b"}}});
  EXPECT_EQ(SharedIn(api(), "team-b", "environmenttemplates", "platform"),
            std::vector<std::string>{"nb"});
  EXPECT_EQ(api().Post(NsPath("team-b", "computeprofiles"), profile).status, 201);
}

TEST_F(SharingTest, ListsPageThroughOwnThenSharedObjects) {
  Share("platform", "environmenttemplates", "nb", json::object{{"mode", "All"}});
  Share("platform", "computeprofiles", "small", json::object{{"mode", "All"}});
  for (int i = 0; i < 3; ++i)
    api().MustCreate(
        NsPath("team-a", "computeprofiles"),
        json::object{
            {"metadata", json::object{{"name", "own-" + std::to_string(i)}}},
            {"spec", json::object{{"templateRef",
                                   json::object{{"name", "nb"}, {"namespace", "platform"}}}}}});
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    Resp r = ann_->Get(NsPath("team-a", "computeprofiles") + "?limit=2" +
                       (token.empty() ? "" : "&continue=" + Escape(token)));
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_LE(r.obj().at("items").as_array().size(), 2u);
    for (const auto& n : r.names()) seen.push_back(n);
    token = r.meta("continue");
    ASSERT_LT(++pages, 10);
  } while (!token.empty());
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"own-0", "own-1", "own-2", "small"}));
  EXPECT_TRUE(ann_->Get(NsPath("team-a", "computeprofiles") + "?continue=s1.x")
                  .IsStatus(400, "BadRequest"));
}

}  // namespace
}  // namespace gantry::testing
