// Lifecycle policies checked at save (API.md "Lifecycle policies", issue 17 items 2 and 3 and
// "Bad input") against a real gantryd: every bad profile spec.lifecycle and instance
// spec.lifecycle is a 422 naming the field, a valid policy round-trips, and a PUT of a
// deployed instance's spec.lifecycle.ttl moves status.expiresAt (raising the ttl extends
// it) without leaving "unpublished changes" (status.deployedGeneration follows the
// generation when only spec.lifecycle changed), and an upgrade to a newer profile revision
// re-checks the ttl against that revision's max and counts expiresAt under its policy. The
// deploys run the real exec driver on the standard script (engine_fixture.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "engine_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char kPolicy[] = R"({
  "ttl": {"default": "8h", "max": "72h", "action": "Stop"},
  "idle": {"gpuUtilizationBelow": 5, "after": "30m", "action": "Stop"},
  "schedule": {"timezone": "Europe/Berlin", "start": "0 8 * * 1-5", "stop": "0 20 * * 1-5",
               "allowOptOut": false}})";

absl::Time Rfc3339(const std::string& text) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, text, &t, &err)) << text << ": " << err;
  return t;
}

class LifecyclePolicyTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    CreateStandardProfile("plain", "std-tmpl");
  }

  std::string ProfilePath(const std::string& name) {
    return NsPath("default", "computeprofiles", name);
  }
  std::string InstancePath(const std::string& name) {
    return NsPath("default", "computeinstances", name);
  }

  // POST of profile `name` on the standard template with spec.lifecycle `lifecycle`.
  Resp PostProfile(const std::string& name, const json::value& lifecycle) {
    json::object obj = ProfileObject(name, "std-tmpl");
    obj["spec"].as_object()["lifecycle"] = lifecycle;
    return api().Post(NsPath("default", "computeprofiles"), obj);
  }

  // POST of instance `name` of `profile` with spec.lifecycle `lifecycle`.
  Resp PostInstance(const std::string& name, const std::string& profile,
                    const json::value& lifecycle) {
    json::object obj = InstanceObject(name, profile);
    obj["spec"].as_object()["lifecycle"] = lifecycle;
    return api().Post(NsPath("default", "computeinstances"), obj);
  }

  // The instance as stored with spec.lifecycle replaced (null: removed), PUT back.
  Resp PutLifecycle(const std::string& name, const json::value& lifecycle) {
    json::object obj = Get(name);
    if (lifecycle.is_null())
      obj["spec"].as_object().erase("lifecycle");
    else
      obj["spec"].as_object()["lifecycle"] = lifecycle;
    return api().Put(InstancePath(name), obj);
  }
};

// A 422 Invalid whose only cause is `field`, its message containing `message`.
void ExpectInvalid(const Resp& r, const std::string& field, const std::string& message) {
  EXPECT_TRUE(r.IsStatus(422, "Invalid")) << r.status << " " << r.raw;
  EXPECT_THAT(r.cause_fields(), ElementsAre(field)) << r.raw;
  EXPECT_THAT(r.cause_message(field), HasSubstr(message)) << r.raw;
}

TEST_F(LifecyclePolicyTest, AValidPolicyRoundTrips) {
  json::value policy = json::parse(kPolicy);
  Resp created = PostProfile("nb", policy);
  ASSERT_EQ(created.status, 201) << created.raw;
  EXPECT_EQ(At(created.obj(), "spec.lifecycle"), policy);
  Resp got = api().Get(ProfilePath("nb"));
  ASSERT_EQ(got.status, 200) << got.raw;
  EXPECT_EQ(At(got.obj(), "spec.lifecycle"), policy);

  // Changing it is a new revision; the instance pins the one it was created on.
  json::object next = got.obj();
  next["spec"].as_object()["lifecycle"].as_object()["ttl"].as_object()["max"] = "24h";
  Resp put = api().Put(ProfilePath("nb"), next);
  ASSERT_EQ(put.status, 200) << put.raw;
  EXPECT_EQ(Str(put.obj(), "spec.lifecycle.ttl.max"), "24h");
  EXPECT_EQ(At(put.obj(), "status.revision"), 2);

  Resp instance =
      PostInstance("web", "nb", json::parse(R"({"ttl": "24h", "scheduleOptOut": false})"));
  ASSERT_EQ(instance.status, 201) << instance.raw;
  EXPECT_EQ(At(instance.obj(), "spec.lifecycle"),
            json::parse(R"({"ttl": "24h", "scheduleOptOut": false})"));
}

TEST_F(LifecyclePolicyTest, EveryBadProfilePolicyIs422NamingTheField) {
  struct Case {
    const char* lifecycle;
    const char* field;
    const char* message;
  };
  const Case cases[] = {
      {R"({"schedule": {"timezone": "Europe/Berlim", "stop": "0 20 * * *"}})",
       "spec.lifecycle.schedule.timezone",
       "\"Europe/Berlim\" is not a time zone of the tz database (use an IANA name such as "
       "Europe/Berlin or UTC)"},
      {R"({"schedule": {"stop": "0 20 * * 1-5 2026"}})", "spec.lifecycle.schedule.stop",
       "\"0 20 * * 1-5 2026\": a cron expression has 5 fields (minute hour day-of-month month "
       "day-of-week"},
      {R"({"schedule": {"start": "0 24 * * *"}})", "spec.lifecycle.schedule.start",
       "\"0 24 * * *\": field 2 (hour): 24 is out of range 0-23"},
      {R"({"schedule": {"stop": "60 8 * * *"}})", "spec.lifecycle.schedule.stop",
       "field 1 (minute): 60 is out of range 0-59"},
      {R"({"schedule": {"stop": "0 8 32 * *"}})", "spec.lifecycle.schedule.stop",
       "field 3 (day-of-month): 32 is out of range 1-31"},
      {R"({"schedule": {"stop": "0 8 * 13 *"}})", "spec.lifecycle.schedule.stop",
       "field 4 (month): 13 is out of range 1-12"},
      {R"({"schedule": {"stop": "0 8 * * 8"}})", "spec.lifecycle.schedule.stop",
       "field 5 (day-of-week): 8 is out of range 0-7"},
      {R"({"schedule": {"stop": "*/0 8 * * *"}})", "spec.lifecycle.schedule.stop",
       "field 1 (minute): step \"0\" is not a number from 1 to 60"},
      {R"({"schedule": {"timezone": "UTC"}})", "spec.lifecycle.schedule",
       "set start, stop or both"},
      {R"({"ttl": {"default": "0s"}})", "spec.lifecycle.ttl.default",
       "\"0s\" is not a duration: use a whole number > 0 and one unit"},
      {R"({"ttl": {"max": "-1h"}})", "spec.lifecycle.ttl.max", "\"-1h\" is not a duration"},
      {R"({"ttl": {"default": "96h", "max": "72h"}})", "spec.lifecycle.ttl.default",
       "the default 96h is over the maximum 72h"},
      {R"({"ttl": {"action": "Pause"}})", "spec.lifecycle.ttl.action",
       "unsupported value \"Pause\": supported values: \"Stop\", \"Destroy\""},
      {R"({"idle": {"gpuUtilizationBelow": 101}})", "spec.lifecycle.idle.gpuUtilizationBelow",
       "must be a percentage from 0 to 100"},
      {R"({"idle": {"after": "1.5h"}})", "spec.lifecycle.idle.after", "\"1.5h\" is not a duration"},
      {R"({"idle": {"gpuUtilizationBelow": "low"}})", "spec.lifecycle.idle.gpuUtilizationBelow",
       "must be of type integer"},
      {R"({"ttl": {"default": "8h", "maximum": "72h"}})", "spec.lifecycle.ttl.maximum",
       "unknown field \"maximum\""},
      {R"({"budget": {}})", "spec.lifecycle.budget", "unknown field \"budget\""},
      {R"("8h")", "spec.lifecycle", "must be of type object"},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.lifecycle);
    Resp r = PostProfile("bad-" + std::to_string(n++), json::parse(c.lifecycle));
    ExpectInvalid(r, c.field, c.message);
  }
  // Nothing was stored; and an update is checked like a create.
  EXPECT_THAT(api().Get(NsPath("default", "computeprofiles")).names(), ElementsAre("plain"));
  json::object plain = api().Get(ProfilePath("plain")).obj();
  plain["spec"].as_object()["lifecycle"] = json::parse(R"({"schedule": {"stop": "0 8 * *"}})");
  ExpectInvalid(api().Put(ProfilePath("plain"), plain), "spec.lifecycle.schedule.stop",
                "a cron expression has 5 fields");
}

TEST_F(LifecyclePolicyTest, AnInstanceStaysWithinItsProfilesBounds) {
  ASSERT_EQ(PostProfile("nb", json::parse(kPolicy)).status, 201);
  ExpectInvalid(PostInstance("a", "nb", json::parse(R"({"ttl": "96h"})")), "spec.lifecycle.ttl",
                "ttl 96h is over the profile's maximum 72h");
  ExpectInvalid(PostInstance("b", "nb", json::parse(R"({"ttl": "0s"})")), "spec.lifecycle.ttl",
                "\"0s\" is not a duration");
  ExpectInvalid(PostInstance("c", "nb", json::parse(R"({"ttl": "-1h"})")), "spec.lifecycle.ttl",
                "\"-1h\" is not a duration");
  ExpectInvalid(PostInstance("d", "nb", json::parse(R"({"scheduleOptOut": true})")),
                "spec.lifecycle.scheduleOptOut",
                "Forbidden: the profile's schedule does not allow opting out");
  ExpectInvalid(PostInstance("e", "nb", json::parse(R"({"ttl": 3600})")), "spec.lifecycle.ttl",
                "must be of type string");
  ExpectInvalid(PostInstance("f", "nb", json::parse(R"({"ttl": "8h", "expires": "never"})")),
                "spec.lifecycle.expires", "unknown field \"expires\"");
  EXPECT_TRUE(api().Get(NsPath("default", "computeinstances")).names().empty());

  // Within the bounds it saves; loosening it later is refused the same way.
  Resp ok = PostInstance("web", "nb", json::parse(R"({"ttl": "72h"})"));
  ASSERT_EQ(ok.status, 201) << ok.raw;
  ExpectInvalid(PutLifecycle("web", json::parse(R"({"ttl": "73h"})")), "spec.lifecycle.ttl",
                "ttl 73h is over the profile's maximum 72h");
  ExpectInvalid(PutLifecycle("web", json::parse(R"({"ttl": "72h", "scheduleOptOut": true})")),
                "spec.lifecycle.scheduleOptOut", "does not allow opting out");
  EXPECT_EQ(Str(Get("web"), "spec.lifecycle.ttl"), "72h");

  // A profile that allows opting out and sets no maximum.
  ASSERT_EQ(PostProfile("free", json::parse(R"({"schedule": {"stop": "0 20 * * *",
                                                "allowOptOut": true}})"))
                .status,
            201);
  Resp free =
      PostInstance("free-1", "free", json::parse(R"({"ttl": "30d", "scheduleOptOut": true})"));
  EXPECT_EQ(free.status, 201) << free.raw;
}

TEST_F(LifecyclePolicyTest, AMemberCannotRemoveOrLoosenTheProfilesPolicy) {
  ASSERT_EQ(PostProfile("nb", json::parse(kPolicy)).status, 201);
  api().MustCreate(ClusterPath("users"),
                   json::object{{"metadata", json::object{{"name", "mia"}}},
                                {"spec", json::object{{"password", "mia-password-1"}}}});
  api().MustCreate(NsPath("default", "rolebindings"),
                   json::object{{"metadata", json::object{{"name", "mia"}}},
                                {"spec", json::object{{"user", "mia"}, {"role", "member"}}}});
  Resp t = api().Post(ClusterPath("users", "mia") + "/tokens", json::object{});
  ASSERT_EQ(t.status, 201) << t.raw;
  Api mia(gantryd_->base_url(), std::string(t.obj().at("token").as_string()));

  json::object instance = InstanceObject("mine", "nb");
  instance["spec"].as_object()["lifecycle"] = json::parse(R"({"ttl": "96h"})");
  ExpectInvalid(mia.Post(NsPath("default", "computeinstances"), instance), "spec.lifecycle.ttl",
                "ttl 96h is over the profile's maximum 72h");
  instance["spec"].as_object()["lifecycle"] = json::parse(R"({"scheduleOptOut": true})");
  ExpectInvalid(mia.Post(NsPath("default", "computeinstances"), instance),
                "spec.lifecycle.scheduleOptOut", "does not allow opting out");
  instance["spec"].as_object()["lifecycle"] = json::parse(R"({"ttl": "12h"})");
  Resp created = mia.Post(NsPath("default", "computeinstances"), instance);
  ASSERT_EQ(created.status, 201) << created.raw;

  // The policy itself is the profile's, which a member cannot change.
  json::object profile = api().Get(ProfilePath("nb")).obj();
  profile["spec"].as_object().erase("lifecycle");
  Resp removed = mia.Put(ProfilePath("nb"), profile);
  EXPECT_TRUE(removed.IsStatus(403, "Forbidden")) << removed.raw;
  EXPECT_EQ(Str(api().Get(ProfilePath("nb")).obj(), "spec.lifecycle.ttl.max"), "72h");
}

TEST_F(LifecyclePolicyTest, ChangingTheTtlOfADeployedInstanceMovesExpiresAt) {
  ASSERT_EQ(PostProfile("nb", json::parse(R"({"ttl": {"default": "8h", "max": "72h"}})")).status,
            201);
  api().CreateInstance("default", "web", "nb");
  ASSERT_EQ(Action("web", "deploy").status, 202);
  json::object deployed = WaitPhase("web", "Success");
  const std::string started = Str(deployed, "status.startedAt");
  ASSERT_FALSE(started.empty()) << json::serialize(deployed);
  const absl::Time start = Rfc3339(started);
  EXPECT_EQ(Rfc3339(Str(deployed, "status.expiresAt")), start + absl::Hours(8));

  // Raising the ttl extends it, counted from the same start.
  Resp raised = PutLifecycle("web", json::parse(R"({"ttl": "24h"})"));
  ASSERT_EQ(raised.status, 200) << raised.raw;
  EXPECT_EQ(Rfc3339(Str(raised.obj(), "status.expiresAt")), start + absl::Hours(24));
  EXPECT_EQ(Str(raised.obj(), "status.startedAt"), started);
  EXPECT_EQ(Str(Get("web"), "status.expiresAt"), Str(raised.obj(), "status.expiresAt"));

  // A merge patch does the same.
  Resp patched =
      api().Patch(InstancePath("web"), json::parse(R"({"spec": {"lifecycle": {"ttl": "48h"}}})"));
  ASSERT_EQ(patched.status, 200) << patched.raw;
  EXPECT_EQ(Rfc3339(Str(patched.obj(), "status.expiresAt")), start + absl::Hours(48));

  // Over the maximum: refused, and the deadline stays.
  ExpectInvalid(PutLifecycle("web", json::parse(R"({"ttl": "96h"})")), "spec.lifecycle.ttl",
                "ttl 96h is over the profile's maximum 72h");
  EXPECT_EQ(Rfc3339(Str(Get("web"), "status.expiresAt")), start + absl::Hours(48));

  // Lowering is allowed too; without its own ttl the profile's default applies again.
  Resp lowered = PutLifecycle("web", json::parse(R"({"ttl": "1h"})"));
  ASSERT_EQ(lowered.status, 200) << lowered.raw;
  EXPECT_EQ(Rfc3339(Str(lowered.obj(), "status.expiresAt")), start + absl::Hours(1));
  Resp removed = PutLifecycle("web", json::value(nullptr));
  ASSERT_EQ(removed.status, 200) << removed.raw;
  EXPECT_EQ(Rfc3339(Str(removed.obj(), "status.expiresAt")), start + absl::Hours(8));
  EXPECT_EQ(Str(removed.obj(), "status.phase"), "Success");
}

TEST_F(LifecyclePolicyTest, AnInstanceNotRunningGetsNoExpiresAtFromAnEdit) {
  ASSERT_EQ(PostProfile("nb", json::parse(R"({"ttl": {"default": "8h", "max": "72h"}})")).status,
            201);
  api().CreateInstance("default", "idle", "nb");
  Resp r = PutLifecycle("idle", json::parse(R"({"ttl": "24h"})"));
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(Str(r.obj(), "status.phase"), "NotDeployed");
  EXPECT_EQ(Str(r.obj(), "status.expiresAt"), "");
  // Its first deploy counts the new ttl.
  ASSERT_EQ(Action("idle", "deploy").status, 202);
  json::object deployed = WaitPhase("idle", "Success");
  EXPECT_EQ(Rfc3339(Str(deployed, "status.expiresAt")),
            Rfc3339(Str(deployed, "status.startedAt")) + absl::Hours(24));
}

TEST_F(LifecyclePolicyTest, ExtendKeepsNothingToDeployAVariableChangeDoesNot) {
  // A template with a plain and a sensitive variable: the sealed one must compare equal.
  CreateExecTemplate("vars-tmpl", json::array{StandardScript()}, {},
                     json::array{json::object{{"name", "version"}},
                                 json::object{{"name", "pw"}, {"sensitive", true}}});
  json::object profile = ProfileObject("nb", "vars-tmpl");
  profile["spec"].as_object()["lifecycle"] = json::parse(R"({"ttl": {"default": "8h"}})");
  ASSERT_EQ(api().Post(NsPath("default", "computeprofiles"), profile).status, 201);
  json::object obj = InstanceObject("web", "nb");
  obj["spec"].as_object()["variables"] = json::object{{"version", "1"}, {"pw", "s3cret"}};
  ASSERT_EQ(api().Post(NsPath("default", "computeinstances"), obj).status, 201);
  ASSERT_EQ(Action("web", "deploy").status, 202);
  json::object deployed = WaitPhase("web", "Success");
  const int64_t gen = Int(deployed, "metadata.generation", 0);
  ASSERT_EQ(Int(deployed, "status.deployedGeneration", 0), gen) << json::serialize(deployed);

  // Extend (what `gantry extend` and the UI send): generation + 1, deployedGeneration follows.
  Resp extended =
      api().Patch(InstancePath("web"), json::parse(R"({"spec": {"lifecycle": {"ttl": "24h"}}})"));
  ASSERT_EQ(extended.status, 200) << extended.raw;
  EXPECT_EQ(Int(extended.obj(), "metadata.generation", 0), gen + 1);
  EXPECT_EQ(Int(extended.obj(), "status.deployedGeneration", 0), gen + 1) << extended.raw;
  EXPECT_EQ(Int(Get("web"), "status.deployedGeneration", 0), gen + 1);
  // A PUT of the stored object with only the lifecycle changed (the secret as shown,
  // redacted) does the same.
  Resp put = PutLifecycle("web", json::parse(R"({"ttl": "48h"})"));
  ASSERT_EQ(put.status, 200) << put.raw;
  EXPECT_EQ(Int(put.obj(), "metadata.generation", 0), gen + 2);
  EXPECT_EQ(Int(put.obj(), "status.deployedGeneration", 0), gen + 2) << put.raw;

  // A variable change is something to deploy: deployedGeneration stays behind.
  Resp changed =
      api().Patch(InstancePath("web"), json::parse(R"({"spec": {"variables": {"version": "2"}}})"));
  ASSERT_EQ(changed.status, 200) << changed.raw;
  EXPECT_EQ(Int(changed.obj(), "metadata.generation", 0), gen + 3);
  EXPECT_EQ(Int(changed.obj(), "status.deployedGeneration", 0), gen + 2) << changed.raw;
  // ... and an extend after it does not hide that change.
  Resp again =
      api().Patch(InstancePath("web"), json::parse(R"({"spec": {"lifecycle": {"ttl": "72h"}}})"));
  ASSERT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(Int(again.obj(), "metadata.generation", 0), gen + 4);
  EXPECT_EQ(Int(again.obj(), "status.deployedGeneration", 0), gen + 2) << again.raw;

  // A never-deployed instance has nothing deployed to follow.
  api().CreateInstance("default", "fresh", "nb");
  Resp fresh = PutLifecycle("fresh", json::parse(R"({"ttl": "1h"})"));
  ASSERT_EQ(fresh.status, 200) << fresh.raw;
  EXPECT_EQ(Int(fresh.obj(), "metadata.generation", 0), 2);
  EXPECT_EQ(Int(fresh.obj(), "status.deployedGeneration", 0), 0) << fresh.raw;
}

TEST_F(LifecyclePolicyTest, UpgradeRechecksTheTtlAndCountsExpiresAtUnderTheNewRevision) {
  ASSERT_EQ(PostProfile("nb", json::parse(R"({"ttl": {"default": "8h", "max": "72h"}})")).status,
            201);
  ASSERT_EQ(PostInstance("own", "nb", json::parse(R"({"ttl": "48h"})")).status, 201);
  api().CreateInstance("default", "dflt", "nb");
  ASSERT_EQ(Action("own", "deploy").status, 202);
  ASSERT_EQ(Action("dflt", "deploy").status, 202);
  json::object own = WaitPhase("own", "Success");
  json::object dflt = WaitPhase("dflt", "Success");
  const absl::Time own_start = Rfc3339(Str(own, "status.startedAt"));
  const absl::Time dflt_start = Rfc3339(Str(dflt, "status.startedAt"));
  EXPECT_EQ(Rfc3339(Str(own, "status.expiresAt")), own_start + absl::Hours(48));

  // Revision 2: default 2h, max 24h.
  json::object profile = api().Get(ProfilePath("nb")).obj();
  profile["spec"].as_object()["lifecycle"] =
      json::parse(R"({"ttl": {"default": "2h", "max": "24h"}})");
  ASSERT_EQ(api().Put(ProfilePath("nb"), profile).status, 200);

  // "own" asks for 48h, over the new max: 422 naming the field and the max; nothing changes.
  Resp refused = Action("own", "upgrade");
  ExpectInvalid(refused, "spec.lifecycle.ttl", "ttl 48h is over the profile's maximum 24h");
  EXPECT_THAT(refused.cause_message("spec.lifecycle.ttl"),
              HasSubstr("upgrading to revision 2 of profile nb"));
  json::object still = Get("own");
  EXPECT_EQ(Int(still, "status.profileRevision", 0), 1);
  EXPECT_EQ(Str(still, "metadata.resourceVersion"), Str(own, "metadata.resourceVersion"));

  // Within it after a PATCH: the upgrade goes through, expiresAt counted from the same start.
  ASSERT_EQ(
      api()
          .Patch(InstancePath("own"), json::parse(R"({"spec": {"lifecycle": {"ttl": "12h"}}})"))
          .status,
      200);
  Resp upgraded = Action("own", "upgrade");
  ASSERT_EQ(upgraded.status, 200) << upgraded.raw;
  EXPECT_EQ(Int(upgraded.obj(), "status.profileRevision", 0), 2);
  EXPECT_EQ(Rfc3339(Str(upgraded.obj(), "status.expiresAt")), own_start + absl::Hours(12));

  // "dflt" has no ttl of its own: the new revision's default applies at once.
  Resp moved = Action("dflt", "upgrade");
  ASSERT_EQ(moved.status, 200) << moved.raw;
  EXPECT_EQ(Rfc3339(Str(moved.obj(), "status.expiresAt")), dflt_start + absl::Hours(2));
  EXPECT_EQ(Rfc3339(Str(Get("dflt"), "status.expiresAt")), dflt_start + absl::Hours(2));

  // Revision 3 has no ttl: the upgrade removes expiresAt.
  profile = api().Get(ProfilePath("nb")).obj();
  profile["spec"].as_object().erase("lifecycle");
  ASSERT_EQ(api().Put(ProfilePath("nb"), profile).status, 200);
  Resp none = Action("dflt", "upgrade");
  ASSERT_EQ(none.status, 200) << none.raw;
  EXPECT_EQ(Int(none.obj(), "status.profileRevision", 0), 3);
  EXPECT_EQ(Str(none.obj(), "status.expiresAt"), "") << none.raw;
}

}  // namespace
}  // namespace gantry::testing
