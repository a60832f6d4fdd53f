// Query parameters read as the Kubernetes API server reads them, and watch bookmarks: which
// resourceVersion a BOOKMARK may promise.
#include "api/query_params.h"

#include <gtest/gtest.h>

#include "api/watch_hub.h"
#include "common/errors.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

TEST(QueryBoolTest, OnlyAbsenceZeroAndFalseAreFalse) {
  for (const char* yes : {"true", "True", "TRUE", "1", "t", "yes", "", "2"})
    EXPECT_TRUE(QueryBool({{"watch", yes}}, "watch")) << yes;
  for (const char* no : {"false", "False", "FALSE", "fAlSe", "0"})
    EXPECT_FALSE(QueryBool({{"watch", no}}, "watch")) << no;
  EXPECT_FALSE(QueryBool({}, "watch"));
}

TEST(QueryNonNegativeTest, NamesTheParameter) {
  EXPECT_EQ(*QueryNonNegative({{"limit", "25"}}, "limit"), 25);
  EXPECT_EQ(*QueryNonNegative({{"limit", ""}}, "limit"), 0);
  auto bad = QueryNonNegative({{"timeoutSeconds", "+5"}}, "timeoutSeconds");
  EXPECT_EQ(ReasonOf(bad.status()), "BadRequest");
  EXPECT_EQ(bad.status().message(), "timeoutSeconds must be a non-negative integer, not \"+5\"");
}

TEST(VersionOptionsTest, ListsAndWatches) {
  auto list = ParseVersionOptions({{"resourceVersion", "7"}, {"resourceVersionMatch", "Exact"}},
                                  /*watch=*/false);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->resource_version, 7);
  EXPECT_EQ(list->match, VersionOptions::Match::kExact);
  auto watch = ParseVersionOptions({{"sendInitialEvents", "true"},
                                    {"resourceVersionMatch", "NotOlderThan"},
                                    {"allowWatchBookmarks", "1"}},
                                   /*watch=*/true);
  ASSERT_TRUE(watch.ok()) << watch.status();
  EXPECT_EQ(watch->send_initial_events, true);
  EXPECT_TRUE(watch->allow_bookmarks);
  EXPECT_FALSE(watch->resource_version.has_value());
  auto forbidden = ParseVersionOptions({{"resourceVersionMatch", "Exact"}}, /*watch=*/true);
  EXPECT_EQ(HttpCodeOf(forbidden.status()), 422);
  EXPECT_EQ(CausesOf(forbidden.status()).size(), 2u);  // needs sendInitialEvents; not Exact
}

TEST(VersionOptionsTest, ListVersions) {
  VersionOptions exact{7, VersionOptions::Match::kExact, std::nullopt, false};
  EXPECT_TRUE(CheckListVersion(exact, 7).ok());
  EXPECT_EQ(ReasonOf(CheckListVersion(exact, 8)), "Expired");
  VersionOptions newer{9, VersionOptions::Match::kNotOlderThan, std::nullopt, false};
  EXPECT_EQ(HttpCodeOf(CheckListVersion(newer, 8)), 410);
  EXPECT_EQ(CheckListVersion(newer, 8).message(),
            "Too large resource version: 9, current: 8: list again without resourceVersion");
  EXPECT_TRUE(CheckListVersion(newer, 9).ok());
  EXPECT_TRUE(CheckListVersion(VersionOptions{}, 1).ok());
}

store::Event MakeEvent(int64_t rv, const std::string& kind, const std::string& name) {
  json::object obj{{"kind", kind},
                   {"metadata", json::object{{"name", name},
                                             {"namespace", "default"},
                                             {"resourceVersion", std::to_string(rv)}}}};
  return store::Event{rv, "ADDED", kind, "default", name, obj};
}

std::vector<json::object> Lines(LineStream& s) {
  bool closed = false;
  std::vector<json::object> out;
  for (std::string& line : s.Drain(&closed)) out.push_back(json::parse(line).as_object());
  return out;
}

TEST(WatchHubBookmarkTest, ABookmarkPromisesEverythingPublishedAndOnlyThat) {
  WatchHub hub;
  auto with = std::make_shared<LineStream>();
  auto without = std::make_shared<LineStream>();
  WatchFilter filter;
  filter.kind = "ComputeInstance";
  auto a = hub.Subscribe(filter, with, /*bookmarks=*/true);
  auto b = hub.Subscribe(filter, without);
  hub.SendBookmarks();  // not started yet: nothing
  EXPECT_TRUE(Lines(*with).empty());
  hub.Start(a, 10);
  hub.Start(b, 10);
  hub.Publish({MakeEvent(11, "ComputeInstance", "x"), MakeEvent(12, "Project", "p")});
  hub.SendBookmarks();
  auto lines = Lines(*with);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].at("type"), "ADDED");
  EXPECT_EQ(json::serialize(lines[1]),
            R"({"type":"BOOKMARK","object":{"kind":"ComputeInstance",)"
            R"("apiVersion":"paas.gantry.dev/v1","metadata":{"resourceVersion":"12"}}})");
  ASSERT_EQ(Lines(*without).size(), 1u);  // the ADDED only
  hub.CloseAll();
}

TEST(WatchHubBookmarkTest, TheInitialEventsEndBookmarkIsAnnotated) {
  EXPECT_EQ(
      BookmarkLine("Project", 5, /*initial_events_end=*/true),
      R"({"type":"BOOKMARK","object":{"kind":"Project","apiVersion":"paas.gantry.dev/v1",)"
      R"("metadata":{"resourceVersion":"5","annotations":{"k8s.io/initial-events-end":"true"}}}})");
}

}  // namespace
}  // namespace gantry::api
