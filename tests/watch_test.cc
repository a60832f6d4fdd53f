// Integration tests of `?watch=true` against a real gantryd: resourceVersion=0 sends the
// current objects as ADDED and then live changes; resuming from a resourceVersion replays
// exactly the later events; an expired resourceVersion yields an ERROR event with code 410.
//
// Synchronisation without sleeps: a watch ends when it sees a marker event (stop_when), and
// waits are on conditions over the events received (with a deadline that only bounds a
// failure).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gantryd_test.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;

std::string TypeOf(const json::object& e) {
  const json::value* t = e.if_contains("type");
  return t && t->is_string() ? std::string(t->get_string()) : "";
}
std::string NameOf(const json::object& e) {
  const json::value* o = e.if_contains("object");
  if (!o || !o->is_object()) return "";
  const json::value* m = o->get_object().if_contains("metadata");
  if (!m || !m->is_object()) return "";
  const json::value* n = m->get_object().if_contains("name");
  return n && n->is_string() ? std::string(n->get_string()) : "";
}
// Stops the watch at the event of `type` for `name`.
std::function<bool(const json::object&)> StopAt(std::string type, std::string name) {
  return [type, name](const json::object& e) { return TypeOf(e) == type && NameOf(e) == name; };
}

class WatchTest : public GantrydTest {
 protected:
  void SetUp() override {
    GantrydTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    api().CreateTemplate("default", "t");
    api().CreateProfile("default", "p", "t");
  }

  std::unique_ptr<WatchCollector> Watch(const std::string& target,
                                        std::function<bool(const json::object&)> stop_when) {
    return std::make_unique<WatchCollector>(gantryd_->base_url(), target, std::move(stop_when));
  }

  std::string Instances() { return NsPath("default", "computeinstances"); }
};

TEST_F(WatchTest, ResourceVersionZeroSendsCurrentObjectsThenLiveChanges) {
  api().CreateInstance("default", "a", "p");
  api().CreateInstance("default", "b", "p");
  auto watch = Watch(Instances() + "?watch=true&resourceVersion=0", StopAt("DELETED", "b"));
  ASSERT_TRUE(watch->WaitFor([](const auto& ev) { return ev.size() >= 2; }));
  EXPECT_THAT(watch->Summary(), ElementsAre("ADDED a", "ADDED b"));

  Resp patched = api().Patch(NsPath("default", "computeinstances", "a"),
                             json::object{{"spec", {{"description", "live"}}}});
  api().CreateInstance("default", "c", "p");
  api().Delete(NsPath("default", "computeinstances", "b"));
  ASSERT_TRUE(watch->WaitDone());
  EXPECT_TRUE(watch->result().ok()) << watch->result();
  EXPECT_THAT(watch->Summary(),
              ElementsAre("ADDED a", "ADDED b", "MODIFIED a", "ADDED c", "DELETED b"));
  // The MODIFIED event carries the object as stored.
  json::object modified = watch->events()[2].at("object").as_object();
  EXPECT_EQ(modified, patched.obj());
}

TEST_F(WatchTest, NoResourceVersionBehavesLikeZero) {
  api().CreateInstance("default", "a", "p");
  auto watch = Watch(Instances() + "?watch=true", StopAt("ADDED", "marker"));
  ASSERT_TRUE(watch->WaitFor([](const auto& ev) { return ev.size() >= 1; }));
  api().CreateInstance("default", "marker", "p");
  ASSERT_TRUE(watch->WaitDone());
  EXPECT_THAT(watch->Summary(), ElementsAre("ADDED a", "ADDED marker"));
}

TEST_F(WatchTest, ResumingReplaysExactlyTheLaterEvents) {
  json::object a = api().CreateInstance("default", "a", "p");
  std::string after = std::string(a.at("metadata").at("resourceVersion").as_string());
  api().Patch(NsPath("default", "computeinstances", "a"),
              json::object{{"metadata", {{"labels", {{"k", "v"}}}}}});
  api().CreateInstance("default", "c", "p");
  api().Delete(NsPath("default", "computeinstances", "c"));
  api().CreateProject("elsewhere");  // another kind: not in this watch
  api().CreateInstance("default", "marker", "p");

  auto watch = Watch(Instances() + "?watch=true&resourceVersion=" + after,
                     StopAt("ADDED", "marker"));
  ASSERT_TRUE(watch->WaitDone());
  EXPECT_THAT(watch->Summary(),
              ElementsAre("MODIFIED a", "ADDED c", "DELETED c", "ADDED marker"));

  // Each event's object carries its own resourceVersion, increasing.
  int64_t last = std::stoll(after);
  for (const auto& e : watch->events()) {
    int64_t rv = std::stoll(
        std::string(e.at("object").at("metadata").at("resourceVersion").as_string()));
    EXPECT_GT(rv, last);
    last = rv;
  }
}

TEST_F(WatchTest, ResumingFromTheLatestVersionSendsOnlyNewEvents) {
  api().CreateInstance("default", "old", "p");
  Resp list = api().Get(Instances());
  auto watch = Watch(Instances() + "?watch=true&resourceVersion=" + list.meta("resourceVersion"),
                     StopAt("ADDED", "new"));
  api().CreateInstance("default", "new", "p");
  ASSERT_TRUE(watch->WaitDone());
  EXPECT_THAT(watch->Summary(), ElementsAre("ADDED new"));
}

TEST_F(WatchTest, WatchesAreFilteredBySelectorsProjectAndName) {
  api().CreateProject("other");
  api().CreateTemplate("other", "t");
  api().CreateProfile("other", "p", "t");

  // Resuming from a list's resourceVersion: every later event arrives, whether the watch is
  // established before or after the writes below.
  const std::string rv = "&resourceVersion=" + api().Get(ClusterPath("projects")).meta("resourceVersion");
  auto by_label = Watch(Instances() + "?watch=true&labelSelector=env%3Dprod" + rv,
                        StopAt("ADDED", "prod-marker"));
  auto by_name = Watch(NsPath("default", "computeinstances", "x") + "?watch=true" + rv,
                       StopAt("DELETED", "x"));
  auto all = Watch(ClusterPath("computeinstances") + "?watch=true" + rv,
                   StopAt("ADDED", "prod-marker"));

  api().CreateInstance("other", "x", "p", {{"env", "prod"}});  // other project
  api().CreateInstance("default", "x", "p");
  api().CreateInstance("default", "y", "p", {{"env", "prod"}});
  api().Patch(NsPath("default", "computeinstances", "x"),
              json::object{{"metadata", {{"labels", {{"env", "dev"}}}}}});
  api().Delete(NsPath("default", "computeinstances", "x"));
  api().CreateInstance("default", "prod-marker", "p", {{"env", "prod"}});

  ASSERT_TRUE(by_label->WaitDone());
  ASSERT_TRUE(by_name->WaitDone());
  ASSERT_TRUE(all->WaitDone());
  EXPECT_THAT(by_label->Summary(), ElementsAre("ADDED y", "ADDED prod-marker"));
  EXPECT_THAT(by_name->Summary(), ElementsAre("ADDED x", "MODIFIED x", "DELETED x"));
  EXPECT_THAT(all->Summary(), ElementsAre("ADDED x", "ADDED x", "ADDED y", "MODIFIED x",
                                          "DELETED x", "ADDED prod-marker"));
}

TEST_F(WatchTest, ProjectsCanBeWatched) {
  auto watch = Watch(ClusterPath("projects") + "?watch=true&resourceVersion=0",
                     StopAt("DELETED", "temp"));
  ASSERT_TRUE(watch->WaitFor([](const auto& ev) { return ev.size() >= 1; }));
  api().CreateProject("temp");
  api().Delete(ClusterPath("projects", "temp"));
  ASSERT_TRUE(watch->WaitDone());
  EXPECT_THAT(watch->Summary(), ElementsAre("ADDED default", "ADDED temp", "DELETED temp"));
}

TEST_F(WatchTest, BadWatchParametersAreBadRequest) {
  struct Case {
    std::string query, message;
  };
  const std::vector<Case> cases = {
      {"resourceVersion=abc", "resourceVersion \"abc\" is not valid"},
      {"resourceVersion=-1", "resourceVersion \"-1\" is not valid"},
      {"resourceVersion=99999999999999999999", "resourceVersion \"99999999999999999999\" is not valid"},
      {"timeoutSeconds=soon", "timeoutSeconds must be a non-negative integer, not \"soon\""},
      {"labelSelector=" + Escape("env in ("),
       "unable to parse requirement: found '', expected: ',', ')' or identifier"},
      {"fieldSelector=" + Escape("spec.displayName=x"),
       "field label not supported: spec.displayName"},
  };
  for (const auto& c : cases) {
    Resp r = api().Get(Instances() + "?watch=true&" + c.query);
    EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << c.query << ": " << r.raw;
    EXPECT_EQ(r.message(), c.message);
  }
  Resp missing = api().Get(NsPath("nope", "computeinstances") + "?watch=true");
  EXPECT_TRUE(missing.IsStatus(404, "NotFound")) << missing.raw;
  EXPECT_EQ(missing.message(), "project \"nope\" not found");
}

class ExpiredWatchTest : public WatchTest {
 protected:
  std::vector<std::string> Args() override { return {"--event-retention", "5"}; }
};

TEST_F(ExpiredWatchTest, TooOldResourceVersionYieldsAnErrorEventWith410) {
  const std::string path = ClusterPath("projects", "default");
  // Compaction runs every 100 commits; 120 writes guarantee it ran with only 5 kept.
  for (int i = 0; i < 120; ++i) {
    Resp r = api().Patch(path, json::object{{"metadata", {{"labels", {{"n", std::to_string(i)}}}}}});
    ASSERT_EQ(r.status, 200) << r.raw;
  }
  auto watch = Watch(ClusterPath("projects") + "?watch=true&resourceVersion=1", nullptr);
  ASSERT_TRUE(watch->WaitDone()) << "the server must end an expired watch";
  EXPECT_TRUE(watch->result().ok()) << watch->result();
  auto events = watch->events();
  ASSERT_EQ(events.size(), 1u) << json::serialize(json::value_from(events));
  EXPECT_EQ(TypeOf(events[0]), "ERROR");
  const json::object& status = events[0].at("object").as_object();
  EXPECT_EQ(status.at("kind"), "Status");
  EXPECT_EQ(status.at("status"), "Failure");
  EXPECT_EQ(status.at("code"), 410);
  EXPECT_EQ(status.at("reason"), "Expired");
  EXPECT_TRUE(std::string(status.at("message").as_string()).starts_with(
      "too old resource version: 1 ("))
      << status.at("message");

  // A recent resourceVersion still resumes.
  Resp list = api().Get(ClusterPath("projects"));
  auto recent = Watch(ClusterPath("projects") + "?watch=true&resourceVersion=" +
                          list.meta("resourceVersion"),
                      StopAt("ADDED", "marker"));
  api().CreateProject("marker");
  ASSERT_TRUE(recent->WaitDone());
  EXPECT_THAT(recent->Summary(), ElementsAre("ADDED marker"));
}

}  // namespace
}  // namespace gantry::testing
