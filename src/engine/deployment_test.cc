// engine::ResolveDeployment on a real SqliteStore: the one resolver of "instance -> pinned
// profile revision -> template revision" reads the revisions the instance (or run) pinned,
// not the latest, and resolves a shared profile's template in the profile's project.
#include "engine/deployment.h"

#include <filesystem>
#include <memory>
#include <string>

#include "common/test_process.h"
#include "gtest/gtest.h"
#include "store/sqlite/sqlite_store.h"

namespace gantry::engine {
namespace {

namespace json = boost::json;

class DeploymentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = gantry::testing::MakeTempDir("gantry-deploy");
    ASSERT_FALSE(dir_.empty());
    store::SqliteOptions options;
    options.path = dir_ + "/gantry.db";
    auto s = store::SqliteStore::Open(options);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Revision `revision` of kind/ns/name with `spec` (and the object itself at it).
  void PutRevision(const std::string& kind, const std::string& ns, const std::string& name,
                   int64_t revision, json::object spec) {
    json::object o{{"apiVersion", "paas.gantry.dev/v1"},
                   {"kind", kind},
                   {"metadata", json::object{{"name", name}, {"namespace", ns}, {"uid", name}}},
                   {"spec", std::move(spec)},
                   {"status", json::object{{"revision", revision}}}};
    std::vector<store::Write> w;
    if (revision == 1) w.push_back({store::Write::Op::kCreate, kind, o, 0, 0});
    w.push_back({store::Write::Op::kPutRevision, kind, o, 0, revision});
    ASSERT_TRUE(store_->Commit(std::move(w)).ok());
  }

  // A compute instance in `ns` on profile `profile_ns`/`profile`, pinned at (prev, trev).
  model::Instance InstanceOn(const std::string& ns, const std::string& profile_ns,
                             const std::string& profile, int64_t prev, int64_t trev) {
    json::object o{
        {"kind", "ComputeInstance"},
        {"metadata", json::object{{"name", "i"}, {"namespace", ns}, {"uid", "i-uid"}}},
        {"spec",
         json::object{{"profileRef", json::object{{"name", profile}, {"namespace", profile_ns}}}}},
        {"status", json::object{{"profileRevision", prev}, {"templateRevision", trev}}}};
    auto i = model::DecodeInstance(o);
    EXPECT_TRUE(i.ok()) << i.status();
    return *i;
  }

  std::string dir_;
  std::unique_ptr<store::SqliteStore> store_;
};

json::object Profile(const std::string& tmpl, int gpus) {
  return json::object{{"templateRef", json::object{{"name", tmpl}}},
                      {"resources", json::object{{"gpu", {{"type", "h100"}, {"count", gpus}}}}}};
}

json::object Template(const std::string& script) {
  return json::object{{"driver", "exec"}, {"exec", json::object{{"command", json::array{script}}}}};
}

// A profile shared from project `shared` names its template without a namespace: the
// template is the profile's project's, not the instance's (issue 16: DriverOf and
// AdoptWorkloads used to look in the instance's).
TEST_F(DeploymentTest, ASharedProfilesTemplateIsResolvedInTheProfilesProject) {
  PutRevision("EnvironmentTemplate", "shared", "t", 1, Template("/opt/shared.sh"));
  PutRevision("ComputeProfile", "shared", "p", 1, Profile("t", 2));
  auto d = ResolvePinned(*store_, InstanceOn("team", "shared", "p", 1, 1));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->profile_kind, "ComputeProfile");
  EXPECT_EQ(d->profile_ref, (model::ObjectRef{"shared", "p"}));
  EXPECT_EQ(d->profile.template_ref, (model::ObjectRef{"shared", "t"}));
  EXPECT_EQ(d->profile.resources.gpu_count, 2);
  EXPECT_EQ(d->tmpl.driver, "exec");
  EXPECT_EQ(d->tmpl.config.at("command"), (json::array{"/opt/shared.sh"}));
}

// The pinned revisions, not the latest: a run deploys what it pinned when it was queued.
TEST_F(DeploymentTest, ReadsThePinnedRevisionsNotTheLatest) {
  PutRevision("EnvironmentTemplate", "team", "t", 1, Template("/opt/v1.sh"));
  PutRevision("EnvironmentTemplate", "team", "t", 2, Template("/opt/v2.sh"));
  PutRevision("ComputeProfile", "team", "p", 1, Profile("t", 1));
  PutRevision("ComputeProfile", "team", "p", 2, Profile("t", 4));
  model::Instance instance = InstanceOn("team", "team", "p", 1, 1);
  auto pinned = ResolvePinned(*store_, instance);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_EQ(pinned->profile.resources.gpu_count, 1);
  EXPECT_EQ(pinned->tmpl.config.at("command"), (json::array{"/opt/v1.sh"}));
  model::Run run = model::NewRun("i-2", "team", "r-uid", "t0", "ComputeInstance", "i", "i-uid",
                                 model::RunAction::kApply, 2, 2, 2, model::Phase::kSuccess, false);
  auto queued = ResolveRun(*store_, instance, run);
  ASSERT_TRUE(queued.ok()) << queued.status();
  EXPECT_EQ(queued->profile_revision, 2);
  EXPECT_EQ(queued->profile.resources.gpu_count, 4);
  EXPECT_EQ(queued->tmpl.config.at("command"), (json::array{"/opt/v2.sh"}));
}

// A profile read at its latest revision resolves as an instance pinning that revision does,
// reading only the template revision (a create pins the latest: api/instance_strategy.cc).
TEST_F(DeploymentTest, TheLatestRevisionOfAProfileResolvesAsThePinnedOne) {
  PutRevision("EnvironmentTemplate", "team", "t", 1, Template("/opt/v1.sh"));
  PutRevision("EnvironmentTemplate", "team", "t", 2, Template("/opt/v2.sh"));
  PutRevision("ComputeProfile", "team", "p", 1, Profile("t", 1));
  PutRevision("ComputeProfile", "team", "p", 2, Profile("t", 4));
  json::object latest{
      {"apiVersion", "paas.gantry.dev/v1"},
      {"kind", "ComputeProfile"},
      {"metadata", json::object{{"name", "p"}, {"namespace", "team"}, {"uid", "p"}}},
      {"spec", Profile("t", 4)},
      {"status", json::object{{"revision", 2}, {"templateRevision", 2}}}};
  auto profile = model::DecodeProfile(latest);
  ASSERT_TRUE(profile.ok()) << profile.status();
  auto d = ResolveLatest(*store_, *profile);
  ASSERT_TRUE(d.ok()) << d.status();
  auto pinned = ResolvePinned(*store_, InstanceOn("team", "team", "p", 2, 2));
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_EQ(d->profile_kind, pinned->profile_kind);
  EXPECT_EQ(d->profile_ref, pinned->profile_ref);
  EXPECT_EQ(d->profile_revision, 2);
  EXPECT_EQ(d->template_revision, 2);
  EXPECT_EQ(d->profile.raw, pinned->profile.raw);
  EXPECT_EQ(d->tmpl.raw, pinned->tmpl.raw);
  EXPECT_EQ(d->tmpl.config.at("command"), (json::array{"/opt/v2.sh"}));
  latest["status"].as_object()["templateRevision"] = 3;  // a template revision that is gone
  auto gone = ResolveLatest(*store_, *model::DecodeProfile(latest));
  EXPECT_EQ(gone.status().message(), "revision 3 of environment template t is gone");
}

// A revision that is gone is FAILED_PRECONDITION naming it, for the run to fail with.
TEST_F(DeploymentTest, ARevisionThatIsGoneIsNamed) {
  PutRevision("ComputeProfile", "team", "p", 1, Profile("t", 0));
  auto no_profile = ResolvePinned(*store_, InstanceOn("team", "team", "p", 3, 1));
  EXPECT_TRUE(absl::IsFailedPrecondition(no_profile.status())) << no_profile.status();
  EXPECT_EQ(no_profile.status().message(), "revision 3 of compute profile p is gone");
  auto no_template = ResolvePinned(*store_, InstanceOn("team", "team", "p", 1, 1));
  EXPECT_TRUE(absl::IsFailedPrecondition(no_template.status())) << no_template.status();
  EXPECT_EQ(no_template.status().message(), "revision 1 of environment template t is gone");
}

}  // namespace
}  // namespace gantry::engine
