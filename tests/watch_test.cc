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

  auto watch =
      Watch(Instances() + "?watch=true&resourceVersion=" + after, StopAt("ADDED", "marker"));
  ASSERT_TRUE(watch->WaitDone());
  EXPECT_THAT(watch->Summary(), ElementsAre("MODIFIED a", "ADDED c", "DELETED c", "ADDED marker"));

  // Each event's object carries its own resourceVersion, increasing.
  int64_t last = std::stoll(after);
  for (const auto& e : watch->events()) {
    int64_t rv =
        std::stoll(std::string(e.at("object").at("metadata").at("resourceVersion").as_string()));
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
  const std::string rv =
      "&resourceVersion=" + api().Get(ClusterPath("projects")).meta("resourceVersion");
  auto by_label = Watch(Instances() + "?watch=true&labelSelector=env%3Dprod" + rv,
                        StopAt("ADDED", "prod-marker"));
  auto by_name = Watch(NsPath("default", "computeinstances", "x") + "?watch=true" + rv,
                       StopAt("DELETED", "x"));
  auto all =
      Watch(ClusterPath("computeinstances") + "?watch=true" + rv, StopAt("ADDED", "prod-marker"));

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
  auto watch =
      Watch(ClusterPath("projects") + "?watch=true&resourceVersion=0", StopAt("DELETED", "temp"));
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
      {"resourceVersion=99999999999999999999",
       "resourceVersion \"99999999999999999999\" is not valid"},
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
    Resp r =
        api().Patch(path, json::object{{"metadata", {{"labels", {{"n", std::to_string(i)}}}}}});
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
  EXPECT_TRUE(
      std::string(status.at("message").as_string()).starts_with("too old resource version: 1 ("))
      << status.at("message");

  // A recent resourceVersion still resumes.
  Resp list = api().Get(ClusterPath("projects"));
  auto recent =
      Watch(ClusterPath("projects") + "?watch=true&resourceVersion=" + list.meta("resourceVersion"),
            StopAt("ADDED", "marker"));
  api().CreateProject("marker");
  ASSERT_TRUE(recent->WaitDone());
  EXPECT_THAT(recent->Summary(), ElementsAre("ADDED marker"));
}

// Boolean query parameters as the Kubernetes API server reads them (issue 24): absent, "0"
// and "false" in any case are false, anything else is true. The official Python client sends
// watch=True.
TEST_F(WatchTest, BooleanParametersAreReadAsKubernetesReadsThem) {
  api().CreateInstance("default", "a", "p");
  for (const char* yes : {"true", "True", "TRUE", "1", "t", "yes", ""}) {
    auto watch = Watch(Instances() + "?watch=" + yes, StopAt("ADDED", "a"));
    ASSERT_TRUE(watch->WaitDone()) << yes;
    EXPECT_TRUE(watch->result().ok()) << yes << ": " << watch->result();
    EXPECT_THAT(watch->Summary(), ElementsAre("ADDED a")) << yes;
  }
  for (const char* no : {"false", "False", "FALSE", "0"}) {
    Resp list = api().Get(Instances() + "?watch=" + no);
    EXPECT_EQ(list.status, 200) << no << ": " << list.raw;
    EXPECT_EQ(list.obj().at("kind"), "ComputeInstanceList") << no;
  }
}

std::string BookmarkVersion(const json::object& e) {
  if (TypeOf(e) != "BOOKMARK") return "";
  return std::string(e.at("object").at("metadata").at("resourceVersion").as_string());
}

class BookmarkTest : public WatchTest {
 protected:
  std::vector<std::string> Args() override { return {"--watch-bookmark-seconds", "0.1"}; }
};

// allowWatchBookmarks=true: BOOKMARK events carry the resourceVersion up to which the watch
// has seen everything, writes of other kinds included, so a client resumes from there.
TEST_F(BookmarkTest, BookmarksCarryTheVersionAWatchHasSeenEverythingUpTo) {
  auto plain = Watch(Instances() + "?watch=true&resourceVersion=0", StopAt("ADDED", "marker"));
  const std::string start = api().Get(Instances()).meta("resourceVersion");
  auto watch =
      Watch(Instances() + "?watch=true&allowWatchBookmarks=true&resourceVersion=" + start, nullptr);
  // A write of another kind moves the bookmarks of this watch past it.
  json::object other = api().CreateProject("elsewhere");
  const int64_t other_rv =
      std::stoll(std::string(other.at("metadata").at("resourceVersion").as_string()));
  ASSERT_TRUE(watch->WaitFor([&](const auto& events) {
    int seen = 0;
    for (const auto& e : events)
      if (!BookmarkVersion(e).empty() && std::stoll(BookmarkVersion(e)) >= other_rv) ++seen;
    return seen >= 2;  // two periods: `plain` has been open for a whole one
  }));
  json::object bookmark;
  for (const auto& e : watch->events())
    if (TypeOf(e) == "BOOKMARK") bookmark = e.at("object").as_object();
  EXPECT_EQ(bookmark.at("kind"), "ComputeInstance");
  EXPECT_EQ(bookmark.at("apiVersion"), "paas.gantry.dev/v1");
  EXPECT_EQ(bookmark.at("metadata").as_object().size(), 1u) << json::serialize(bookmark);
  for (const auto& e : watch->events()) EXPECT_EQ(TypeOf(e), "BOOKMARK");

  // Resuming from the bookmark sends exactly what came after it.
  const std::string resume = std::string(bookmark.at("metadata").at("resourceVersion").as_string());
  api().CreateInstance("default", "marker", "p");
  auto resumed =
      Watch(Instances() + "?watch=true&resourceVersion=" + resume, StopAt("ADDED", "marker"));
  ASSERT_TRUE(resumed->WaitDone());
  EXPECT_THAT(resumed->Summary(), ElementsAre("ADDED marker"));
  // Without allowWatchBookmarks there are none.
  ASSERT_TRUE(plain->WaitDone());
  EXPECT_THAT(plain->Summary(), ElementsAre("ADDED marker"));
}

// sendInitialEvents=true (Kubernetes' streaming list): the current objects, then a bookmark
// annotated k8s.io/initial-events-end at the version they were read at; =false skips them.
TEST_F(WatchTest, SendInitialEventsEndsWithAnAnnotatedBookmark) {
  api().CreateInstance("default", "a", "p");
  api().CreateInstance("default", "b", "p");
  const std::string rv = api().Get(Instances()).meta("resourceVersion");
  auto watch = Watch(Instances() +
                         "?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
                         "&resourceVersionMatch=NotOlderThan",
                     [](const json::object& e) { return TypeOf(e) == "BOOKMARK"; });
  ASSERT_TRUE(watch->WaitDone());
  EXPECT_THAT(watch->Summary(), ElementsAre("ADDED a", "ADDED b", "BOOKMARK "));
  const json::object end = watch->events().back().at("object").as_object();
  EXPECT_EQ(BookmarkVersion(watch->events().back()), rv);
  EXPECT_EQ(end.at("metadata").at("annotations").as_object(),
            (json::object{{"k8s.io/initial-events-end", "true"}}));
}

TEST_F(BookmarkTest, SendInitialEventsFalseStartsFromNow) {
  api().CreateInstance("default", "a", "p");
  auto fresh = Watch(Instances() +
                         "?watch=1&sendInitialEvents=false&allowWatchBookmarks=1"
                         "&resourceVersionMatch=NotOlderThan",
                     StopAt("ADDED", "marker"));
  // A bookmark says the watch has started: what is written now reaches it.
  ASSERT_TRUE(fresh->WaitFor([](const auto& events) { return !events.empty(); }));
  api().CreateInstance("default", "marker", "p");
  ASSERT_TRUE(fresh->WaitDone());
  std::vector<std::string> changes;
  for (const std::string& line : fresh->Summary())
    if (line != "BOOKMARK ") changes.push_back(line);
  EXPECT_THAT(changes, ElementsAre("ADDED marker"));
}

TEST_F(WatchTest, ForbiddenWatchOptionsAreInvalid) {
  struct Case {
    std::string query, field, message;
  };
  const std::vector<Case> cases = {
      {"resourceVersion=1&resourceVersionMatch=NotOlderThan", "resourceVersionMatch",
       "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
       "provided"},
      {"sendInitialEvents=true&allowWatchBookmarks=true", "resourceVersionMatch",
       "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"},
      {"sendInitialEvents=true&resourceVersionMatch=NotOlderThan", "allowWatchBookmarks",
       "Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true"},
  };
  for (const auto& c : cases) {
    Resp r = api().Get(Instances() + "?watch=true&" + c.query);
    EXPECT_TRUE(r.IsStatus(422, "Invalid")) << c.query << ": " << r.raw;
    EXPECT_EQ(r.message(), "ListOptions.meta.k8s.io \"\" is invalid: " + c.field + ": " + c.message)
        << c.query;
  }
}

// A watch's initial events read a page at a time (here 2 objects a page).
class PagedInitialEventsTest : public WatchTest {
 protected:
  std::vector<std::string> Args() override { return {"--list-page-size", "2"}; }
};

TEST_F(PagedInitialEventsTest, InitialEventsComeOldestFirstThenLiveChanges) {
  for (const char* name : {"a", "b", "c", "d", "e"}) api().CreateInstance("default", name, "p");
  auto watch = Watch(Instances() + "?watch=true", StopAt("ADDED", "marker"));
  ASSERT_TRUE(watch->WaitFor([](const auto& ev) { return ev.size() >= 5; }));
  api().CreateInstance("default", "marker", "p");
  ASSERT_TRUE(watch->WaitDone());
  EXPECT_TRUE(watch->result().ok()) << watch->result();
  EXPECT_THAT(watch->Summary(),
              ElementsAre("ADDED a", "ADDED b", "ADDED c", "ADDED d", "ADDED e", "ADDED marker"));
}

TEST_F(PagedInitialEventsTest, TheInitialEventsEndWithTheirBookmark) {
  for (const char* name : {"a", "b", "c"}) api().CreateInstance("default", name, "p");
  Resp list = api().Get(Instances());
  auto watch = Watch(Instances() +
                         "?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&"
                         "resourceVersionMatch=NotOlderThan",
                     [](const json::object& e) { return TypeOf(e) == "BOOKMARK"; });
  ASSERT_TRUE(watch->WaitDone());
  EXPECT_TRUE(watch->result().ok()) << watch->result();
  EXPECT_THAT(watch->Summary(), ElementsAre("ADDED a", "ADDED b", "ADDED c", "BOOKMARK "));
  const json::object bookmark = watch->events().back().at("object").as_object();
  EXPECT_EQ(BookmarkVersion(watch->events().back()), list.meta("resourceVersion"));
  EXPECT_EQ(bookmark.at("metadata").at("annotations").at("k8s.io/initial-events-end"), "true");
}

}  // namespace
}  // namespace gantry::testing
