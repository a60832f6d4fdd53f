// Integration tests of lists against a real gantryd: labelSelector (every operator),
// fieldSelector, search, limit/continue paging (newest first), lists across all projects.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "gantryd_test.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

class ListsTest : public GantrydTest {
 protected:
  void SetUp() override {
    GantrydTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    api().CreateTemplate("default", "t");
    api().CreateProfile("default", "small", "t");
    api().CreateProfile("default", "large", "t");
    // Created in this order; lists come newest first.
    Make("a-prod-llm", "small", {{"env", "prod"}, {"team", "llm"}});
    Make("b-prod-vision", "large", {{"env", "prod"}, {"team", "vision"}, {"gpu", "h100"}});
    Make("c-staging", "small", {{"env", "staging"}, {"team", "llm"}});
    Make("d-dev", "large", {{"env", "dev"}, {"example.com/owner", "ana"}});
    Make("e-unlabelled", "small", {});
  }

  void Make(const std::string& name, const std::string& profile, json::object labels) {
    api().CreateInstance("default", name, profile, std::move(labels));
  }

  std::vector<std::string> Names(const std::string& query, const std::string& ns = "default") {
    Resp r = api().Get(NsPath(ns, "computeinstances") + "?" + query);
    EXPECT_EQ(r.status, 200) << query << ": " << r.raw;
    return r.names();
  }
  std::vector<std::string> Selected(const std::string& selector) {
    return Names("labelSelector=" + Escape(selector));
  }
};

TEST_F(ListsTest, ListIsNewestFirstWithAListResourceVersion) {
  Resp r = api().Get(NsPath("default", "computeinstances"));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.obj().at("kind"), "ComputeInstanceList");
  EXPECT_EQ(r.obj().at("apiVersion"), "paas.gantry.dev/v1");
  EXPECT_THAT(r.names(),
              ElementsAre("e-unlabelled", "d-dev", "c-staging", "b-prod-vision", "a-prod-llm"));
  EXPECT_FALSE(r.meta("resourceVersion").empty());
  EXPECT_FALSE(r.obj().at("metadata").as_object().contains("continue"));
  // The list's resourceVersion is at least that of every item.
  int64_t list_rv = std::stoll(r.meta("resourceVersion"));
  for (const auto& item : r.obj().at("items").as_array())
    EXPECT_LE(std::stoll(std::string(item.at("metadata").at("resourceVersion").as_string())),
              list_rv);
}

TEST_F(ListsTest, LabelSelectorEquality) {
  EXPECT_THAT(Selected("env=prod"), ElementsAre("b-prod-vision", "a-prod-llm"));
  EXPECT_THAT(Selected("env==prod"), ElementsAre("b-prod-vision", "a-prod-llm"));
  // != also matches objects without the label, as in Kubernetes.
  EXPECT_THAT(Selected("env!=prod"), ElementsAre("e-unlabelled", "d-dev", "c-staging"));
  EXPECT_THAT(Selected("env=nothing"), IsEmpty());
}

TEST_F(ListsTest, LabelSelectorSets) {
  EXPECT_THAT(Selected("env in (prod,staging)"),
              ElementsAre("c-staging", "b-prod-vision", "a-prod-llm"));
  EXPECT_THAT(Selected("env in (dev)"), ElementsAre("d-dev"));
  EXPECT_THAT(Selected("env notin (prod,staging)"), ElementsAre("e-unlabelled", "d-dev"));
  EXPECT_THAT(Selected("team notin (llm)"), ElementsAre("e-unlabelled", "d-dev", "b-prod-vision"));
}

TEST_F(ListsTest, LabelSelectorExistence) {
  EXPECT_THAT(Selected("gpu"), ElementsAre("b-prod-vision"));
  EXPECT_THAT(Selected("!gpu"), ElementsAre("e-unlabelled", "d-dev", "c-staging", "a-prod-llm"));
  EXPECT_THAT(Selected("example.com/owner"), ElementsAre("d-dev"));
  EXPECT_THAT(Selected("example.com/owner=ana"), ElementsAre("d-dev"));
}

TEST_F(ListsTest, LabelSelectorRequirementsAreAnded) {
  EXPECT_THAT(Selected("env=prod,team=llm"), ElementsAre("a-prod-llm"));
  EXPECT_THAT(Selected("env in (prod, staging), team=llm, !gpu"),
              ElementsAre("c-staging", "a-prod-llm"));
  EXPECT_THAT(Selected("env=prod,env=staging"), IsEmpty());
  EXPECT_THAT(Selected(""),
              ElementsAre("e-unlabelled", "d-dev", "c-staging", "b-prod-vision", "a-prod-llm"));
}

TEST_F(ListsTest, InvalidLabelSelectorsAreBadRequest) {
  struct Case {
    std::string selector, message;
  };
  const std::vector<Case> cases = {
      {"env in (", "unable to parse requirement: found '', expected: ',', ')' or identifier"},
      {"Bad Key!", "unable to parse requirement: found 'Key', expected: in, notin, =, ==, !="},
  };
  for (const auto& c : cases) {
    Resp r =
        api().Get(NsPath("default", "computeinstances") + "?labelSelector=" + Escape(c.selector));
    EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << c.selector << ": " << r.raw;
    EXPECT_EQ(r.message(), c.message) << c.selector;
  }
  for (const std::string& bad :
       std::vector<std::string>{"env in ()", "=x", "env=" + std::string(64, 'v'), "a b c",
                                "env in (a", "-bad=x", "env notin prod", "x=(y)"}) {
    Resp r = api().Get(NsPath("default", "computeinstances") + "?labelSelector=" + Escape(bad));
    EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << bad << ": " << r.raw;
  }
}

TEST_F(ListsTest, FieldSelectors) {
  EXPECT_THAT(Names("fieldSelector=metadata.name%3Dc-staging"), ElementsAre("c-staging"));
  EXPECT_THAT(Names("fieldSelector=metadata.name!%3Dc-staging"),
              ElementsAre("e-unlabelled", "d-dev", "b-prod-vision", "a-prod-llm"));
  EXPECT_THAT(Names("fieldSelector=metadata.namespace%3Ddefault").size(), 5u);
  EXPECT_THAT(Names("fieldSelector=status.phase%3DNotDeployed").size(), 5u);
  EXPECT_THAT(Names("fieldSelector=status.phase%3DSuccess"), IsEmpty());
  EXPECT_THAT(Names("fieldSelector=spec.profileRef.name%3Dlarge"),
              ElementsAre("d-dev", "b-prod-vision"));
  EXPECT_THAT(Names("fieldSelector=spec.profileRef.name%3Dsmall,metadata.name!%3Da-prod-llm"),
              ElementsAre("e-unlabelled", "c-staging"));
  // Field and label selectors combine.
  EXPECT_THAT(Names("fieldSelector=spec.profileRef.name%3Dsmall&labelSelector=team%3Dllm"),
              ElementsAre("c-staging", "a-prod-llm"));

  Resp profiles =
      api().Get(NsPath("default", "computeprofiles") + "?fieldSelector=spec.templateRef.name%3Dt");
  EXPECT_THAT(profiles.names(), ElementsAre("large", "small"));
}

TEST_F(ListsTest, UnsupportedFieldSelectorsAreBadRequest) {
  struct Case {
    std::string path, selector, message;
  };
  const std::vector<Case> cases = {
      {NsPath("default", "computeinstances"), "spec.displayName=x",
       "field label not supported: spec.displayName"},
      {NsPath("default", "computeprofiles"), "status.phase=Success",
       "field label not supported: status.phase"},
      {ClusterPath("projects"), "spec.profileRef.name=x",
       "field label not supported: spec.profileRef.name"},
      {NsPath("default", "computeinstances"), "status.phase",
       "invalid selector: 'status.phase'; can't understand 'status.phase'"},
  };
  for (const auto& c : cases) {
    Resp r = api().Get(c.path + "?fieldSelector=" + Escape(c.selector));
    EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << c.selector << ": " << r.raw;
    EXPECT_EQ(r.message(), c.message);
  }
}

TEST_F(ListsTest, SearchIsCaseInsensitiveOverNameDisplayNameAndDescription) {
  api().Patch(NsPath("default", "computeinstances", "c-staging"),
              json::object{{"spec", {{"displayName", "LLM Fine-Tuning Box"}}}});
  api().Patch(NsPath("default", "computeinstances", "d-dev"),
              json::object{{"spec", {{"description", "Scratch space for the VISION team"}}}});
  EXPECT_THAT(Names("search=fine-tuning"), ElementsAre("c-staging"));
  EXPECT_THAT(Names("search=FINE"), ElementsAre("c-staging"));
  EXPECT_THAT(Names("search=vision"), ElementsAre("d-dev", "b-prod-vision"));
  EXPECT_THAT(Names("search=PROD"), ElementsAre("b-prod-vision", "a-prod-llm"));
  EXPECT_THAT(Names("search=instance%20e-unl"), ElementsAre("e-unlabelled"));  // displayName
  EXPECT_THAT(Names("search=nothing-like-this"), IsEmpty());
  // Search characters are literal, not patterns.
  EXPECT_THAT(Names("search=%25"), IsEmpty());
  EXPECT_THAT(Names("search=_"), IsEmpty());
  // Search combines with selectors.
  EXPECT_THAT(Names("search=prod&labelSelector=team%3Dllm"), ElementsAre("a-prod-llm"));

  Resp long_search =
      api().Get(NsPath("default", "computeinstances") + "?search=" + std::string(257, 'x'));
  EXPECT_TRUE(long_search.IsStatus(400, "BadRequest")) << long_search.raw;
  EXPECT_EQ(long_search.message(), "search text is longer than 256 characters");
}

TEST_F(ListsTest, LimitAndContinuePageNewestFirstWithoutDuplicates) {
  for (int i = 0; i < 6; ++i) Make("z" + std::to_string(i), "small", {});
  std::vector<std::string> all = api().Get(NsPath("default", "computeinstances")).names();
  ASSERT_EQ(all.size(), 11u);

  std::vector<std::string> paged;
  std::string token;
  int pages = 0;
  while (true) {
    std::string q = NsPath("default", "computeinstances") + "?limit=4";
    if (!token.empty()) q += "&continue=" + Escape(token);
    Resp r = api().Get(q);
    ASSERT_EQ(r.status, 200) << r.raw;
    ++pages;
    auto names = r.names();
    EXPECT_LE(names.size(), 4u);
    paged.insert(paged.end(), names.begin(), names.end());
    token = r.meta("continue");
    if (token.empty()) break;
    // A create between pages is newer than every page: it must not appear later.
    if (pages == 1) Make("between-pages", "small", {});
    ASSERT_LT(pages, 10);
  }
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(paged, all);
  EXPECT_EQ(std::set<std::string>(paged.begin(), paged.end()).size(), paged.size());
}

TEST_F(ListsTest, LimitExactlyTheCountHasNoContinue) {
  Resp r = api().Get(NsPath("default", "computeinstances") + "?limit=5");
  EXPECT_EQ(r.names().size(), 5u);
  EXPECT_FALSE(r.obj().at("metadata").as_object().contains("continue"));
  Resp zero = api().Get(NsPath("default", "computeinstances") + "?limit=0");
  EXPECT_EQ(zero.names().size(), 5u);
}

TEST_F(ListsTest, PagingWorksWithSelectors) {
  Resp p1 = api().Get(NsPath("default", "computeinstances") +
                      "?limit=1&labelSelector=" + Escape("env in (prod,staging)"));
  EXPECT_THAT(p1.names(), ElementsAre("c-staging"));
  Resp p2 = api().Get(NsPath("default", "computeinstances") + "?limit=1&labelSelector=" +
                      Escape("env in (prod,staging)") + "&continue=" + Escape(p1.meta("continue")));
  EXPECT_THAT(p2.names(), ElementsAre("b-prod-vision"));
}

TEST_F(ListsTest, BadPagingParametersAreBadRequest) {
  struct Case {
    std::string query, message;
  };
  const std::vector<Case> cases = {
      {"limit=abc", "limit must be a non-negative integer, not \"abc\""},
      {"limit=-1", "limit must be a non-negative integer, not \"-1\""},
      {"limit=99999999999999999999999",
       "limit must be a non-negative integer, not "
       "\"99999999999999999999999\""},
      {"continue=garbage", "continue token \"garbage\" is not valid; start the list again"},
      {"continue=c1.99999999999999999999999",
       "continue token \"c1.99999999999999999999999\" is not valid; start the list again"},
      {"continue=c1.abc", "continue token \"c1.abc\" is not valid; start the list again"},
  };
  for (const auto& c : cases) {
    Resp r = api().Get(NsPath("default", "computeinstances") + "?" + c.query);
    EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << c.query << ": " << r.raw;
    EXPECT_EQ(r.message(), c.message);
  }
}

// A continue token whose number does not fit in 64 bits (19 or 20 digits pass the token's
// length check) must be refused like any other bad token.
// Regression (fixed; was: src/store/sqlite/sqlite_store.cc:351, SqliteStore::List): the token check
// lets up to 20 digits through, then std::stoll throws std::out_of_range; the exception escapes the
// request's coroutine and the connection is dropped without any answer (no Status; curl
// reports an empty reply). Expected: 400 BadRequest "continue token \"c1.9999999999999999999\"
// is not valid; start the list again". Enable when fixed.
TEST_F(ListsTest, ContinueTokenWithAnOverflowingNumberIsBadRequest) {
  for (const std::string token : {"c1.9999999999999999999", "c1.99999999999999999999"}) {
    Resp r = api().Get(NsPath("default", "computeinstances") + "?limit=1&continue=" + token);
    EXPECT_TRUE(r.IsStatus(400, "BadRequest")) << token << ": " << r.raw;
    EXPECT_EQ(r.message(), "continue token \"" + token + "\" is not valid; start the list again");
    ASSERT_TRUE(api().Healthy()) << gantryd_->Log();
  }
}

TEST_F(ListsTest, ListsAcrossAllProjects) {
  api().CreateProject("ml");
  api().CreateTemplate("ml", "t");
  api().CreateProfile("ml", "p", "t");
  api().CreateInstance("ml", "ml-one", "p", {{"env", "prod"}});

  Resp all = api().Get(ClusterPath("computeinstances"));
  ASSERT_EQ(all.status, 200) << all.raw;
  EXPECT_EQ(all.obj().at("kind"), "ComputeInstanceList");
  EXPECT_THAT(all.names(), ElementsAre("ml-one", "e-unlabelled", "d-dev", "c-staging",
                                       "b-prod-vision", "a-prod-llm"));
  EXPECT_EQ(all.obj().at("items").as_array()[0].at("metadata").at("namespace"), "ml");

  EXPECT_THAT(api().Get(ClusterPath("computeinstances") + "?labelSelector=env%3Dprod").names(),
              ElementsAre("ml-one", "b-prod-vision", "a-prod-llm"));
  EXPECT_THAT(
      api().Get(ClusterPath("computeinstances") + "?fieldSelector=metadata.namespace%3Dml").names(),
      ElementsAre("ml-one"));
  EXPECT_THAT(api().Get(ClusterPath("computeprofiles")).names(),
              ElementsAre("p", "large", "small"));
  EXPECT_THAT(api().Get(ClusterPath("environmenttemplates")).names(), ElementsAre("t", "t"));
  // A project's list holds only its own objects.
  EXPECT_THAT(Names("", "ml"), ElementsAre("ml-one"));

  // Paging across projects.
  Resp p1 = api().Get(ClusterPath("computeinstances") + "?limit=2");
  EXPECT_THAT(p1.names(), ElementsAre("ml-one", "e-unlabelled"));
  Resp p2 = api().Get(ClusterPath("computeinstances") +
                      "?limit=2&continue=" + Escape(p1.meta("continue")));
  EXPECT_THAT(p2.names(), ElementsAre("d-dev", "c-staging"));
}

TEST_F(ListsTest, CrossProjectPathsAreOnlyForLists) {
  Resp get = api().Get(ClusterPath("computeinstances", "a-prod-llm"));
  EXPECT_TRUE(get.IsStatus(404, "NotFound")) << get.raw;
  EXPECT_EQ(get.message(),
            "computeinstances live in projects; use "
            "/apis/paas.gantry.dev/v1/namespaces/PROJECT/computeinstances/a-prod-llm");
  Resp post = api().Post(ClusterPath("computeinstances"), InstanceObject("x", "small"));
  EXPECT_TRUE(post.IsStatus(400, "BadRequest")) << post.raw;
  EXPECT_EQ(post.message(),
            "create computeinstances in a project: POST "
            "/apis/paas.gantry.dev/v1/namespaces/PROJECT/computeinstances");
  Resp proj = api().Get(NsPath("default", "projects"));
  EXPECT_TRUE(proj.IsStatus(404, "NotFound")) << proj.raw;
  EXPECT_EQ(proj.message(), "projects are not in a project; use /apis/paas.gantry.dev/v1/projects");
}

TEST_F(ListsTest, ProjectsListWithSelectorsAndSearch) {
  json::object p{{"metadata", {{"name", "vision"}, {"labels", {{"org", "research"}}}}},
                 {"spec", {{"displayName", "Computer Vision"}}}};
  api().MustCreate(ClusterPath("projects"), p);
  EXPECT_THAT(api().Get(ClusterPath("projects") + "?labelSelector=org%3Dresearch").names(),
              ElementsAre("vision"));
  EXPECT_THAT(api().Get(ClusterPath("projects") + "?search=computer").names(),
              ElementsAre("vision"));
  EXPECT_THAT(api().Get(ClusterPath("projects") + "?fieldSelector=metadata.name%3Ddefault").names(),
              ElementsAre("default"));
}

// resourceVersionMatch (issue 24): gantryd lists the current state only, so NotOlderThan (and
// a bare resourceVersion) is served by the current list, Exact only at the current version,
// an older Exact is 410 Expired (clients list again), and so is a version not reached yet.
TEST_F(ListsTest, ResourceVersionMatchIsServedByTheCurrentList) {
  Resp first = api().Get(NsPath("default", "computeinstances"));
  const std::string old_rv = first.meta("resourceVersion");
  Make("f-newer", "small", {});
  Resp now = api().Get(NsPath("default", "computeinstances"));
  const std::string rv = now.meta("resourceVersion");

  EXPECT_EQ(Names("resourceVersion=" + rv + "&resourceVersionMatch=Exact").size(), 6u);
  EXPECT_EQ(Names("resourceVersion=" + old_rv + "&resourceVersionMatch=NotOlderThan").size(), 6u);
  EXPECT_EQ(Names("resourceVersion=" + old_rv).size(), 6u);
  EXPECT_EQ(Names("resourceVersion=0").size(), 6u);

  Resp exact = api().Get(NsPath("default", "computeinstances") + "?resourceVersion=" + old_rv +
                         "&resourceVersionMatch=Exact");
  EXPECT_TRUE(exact.IsStatus(410, "Expired")) << exact.raw;
  EXPECT_EQ(exact.message(), "too old resource version: " + old_rv + " (" + rv +
                                 "): gantryd lists only the current state; list again without "
                                 "resourceVersionMatch=Exact");
  Resp future = api().Get(NsPath("default", "computeinstances") + "?resourceVersion=999999999");
  EXPECT_TRUE(future.IsStatus(410, "Expired")) << future.raw;
  EXPECT_EQ(future.message(), "Too large resource version: 999999999, current: " + rv +
                                  ": list again without resourceVersion");
}

// The combinations Kubernetes' ValidateListOptions forbids, in its words (422 ListOptions).
TEST_F(ListsTest, ForbiddenListOptionsAreInvalid) {
  struct Case {
    std::string query, field, message;
  };
  const std::vector<Case> cases = {
      {"resourceVersionMatch=Exact", "resourceVersionMatch",
       "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"},
      {"resourceVersion=0&resourceVersionMatch=Exact", "resourceVersionMatch",
       "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""},
      {"resourceVersion=5&resourceVersionMatch=Newest", "resourceVersionMatch",
       "Unsupported value: \"Newest\": supported values: \"Exact\", \"NotOlderThan\", \"\""},
      {"resourceVersion=5&resourceVersionMatch=Exact&continue=r5.c1.3", "resourceVersionMatch",
       "Forbidden: resourceVersionMatch is forbidden when continue is provided"},
      {"sendInitialEvents=true", "sendInitialEvents",
       "Forbidden: sendInitialEvents is forbidden for list"},
  };
  for (const auto& c : cases) {
    Resp r = api().Get(NsPath("default", "computeinstances") + "?" + c.query);
    EXPECT_TRUE(r.IsStatus(422, "Invalid")) << c.query << ": " << r.raw;
    EXPECT_EQ(r.message(), "ListOptions.meta.k8s.io \"\" is invalid: " + c.field + ": " + c.message)
        << c.query;
    EXPECT_EQ(r.cause_message(c.field), c.message) << c.query;
  }
}

class ExpiredContinueTest : public ListsTest {
 protected:
  std::vector<std::string> Args() override { return {"--event-retention", "5"}; }
};

// A continue token carries its first page's resourceVersion and expires with that version's
// history, as Kubernetes' do: 410 Expired, after which the client lists again.
TEST_F(ExpiredContinueTest, AContinueTokenOlderThanTheHistoryIsExpired) {
  Resp page = api().Get(NsPath("default", "computeinstances") + "?limit=2");
  ASSERT_EQ(page.status, 200) << page.raw;
  const std::string token = page.meta("continue");
  ASSERT_FALSE(token.empty());
  // Compaction runs every 100 commits; 120 writes guarantee it ran with only 5 kept.
  for (int i = 0; i < 120; ++i) {
    Resp r = api().Patch(ClusterPath("projects", "default"),
                         json::object{{"metadata", {{"labels", {{"n", std::to_string(i)}}}}}});
    ASSERT_EQ(r.status, 200) << r.raw;
  }
  Resp expired =
      api().Get(NsPath("default", "computeinstances") + "?limit=2&continue=" + Escape(token));
  EXPECT_TRUE(expired.IsStatus(410, "Expired")) << expired.raw;
  EXPECT_EQ(expired.message(),
            "The provided continue parameter is too old to display a consistent list result. "
            "You can start a new list without the continue parameter.");

  // A new list pages to the end.
  std::vector<std::string> names;
  std::string next;
  do {
    Resp r = api().Get(NsPath("default", "computeinstances") + "?limit=2" +
                       (next.empty() ? "" : "&continue=" + Escape(next)));
    ASSERT_EQ(r.status, 200) << r.raw;
    for (const auto& n : r.names()) names.push_back(n);
    next = r.meta("continue");
  } while (!next.empty());
  EXPECT_THAT(names,
              ElementsAre("e-unlabelled", "d-dev", "c-staging", "b-prod-vision", "a-prod-llm"));
}

// Lists without a limit, read and sent a page at a time (here 2 objects a page).
class StreamedListTest : public ListsTest {
 protected:
  std::vector<std::string> Args() override { return {"--list-page-size", "2"}; }

  // GET with these request headers, as the client received it.
  client::HttpResponse Raw(const std::string& target, std::map<std::string, std::string> headers) {
    auto r = api().http().SendWithHeaders("GET", target, headers);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : client::HttpResponse{};
  }
  // The names of a list read page by page with limit=2.
  std::vector<std::string> Paged(const std::string& collection, const std::string& query = "") {
    std::vector<std::string> names;
    std::string next;
    do {
      Resp r = api().Get(collection + "?limit=2" + query +
                         (next.empty() ? "" : "&continue=" + Escape(next)));
      EXPECT_EQ(r.status, 200) << r.raw;
      for (const auto& n : r.names()) names.push_back(n);
      next = r.meta("continue");
    } while (!next.empty());
    return names;
  }
};

TEST_F(StreamedListTest, AListWithoutALimitIsSentInPiecesAsOneList) {
  const std::string path = NsPath("default", "computeinstances");
  client::HttpResponse raw = Raw(path, {});
  ASSERT_EQ(raw.status, 200) << raw.body;
  EXPECT_EQ(raw.headers["transfer-encoding"], "chunked");
  EXPECT_FALSE(raw.headers.count("content-length"));
  Resp r = api().Get(path);
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.obj().at("kind"), "ComputeInstanceList");
  EXPECT_EQ(r.obj().at("apiVersion"), "paas.gantry.dev/v1");
  EXPECT_THAT(r.names(),
              ElementsAre("e-unlabelled", "d-dev", "c-staging", "b-prod-vision", "a-prod-llm"));
  EXPECT_THAT(r.names(), ElementsAreArray(Paged(path)));
  EXPECT_FALSE(r.obj().at("metadata").as_object().contains("continue"));
  // Nothing changed meanwhile: the list's resourceVersion is at least every item's, and each
  // item is the object as a GET returns it.
  int64_t list_rv = std::stoll(r.meta("resourceVersion"));
  for (const auto& item : r.obj().at("items").as_array()) {
    const json::object& meta = item.at("metadata").as_object();
    EXPECT_LE(std::stoll(std::string(meta.at("resourceVersion").as_string())), list_rv);
    Resp one = api().Get(path + "/" + std::string(meta.at("name").as_string()));
    EXPECT_EQ(item.as_object(), one.obj());
  }
}

TEST_F(StreamedListTest, SelectorsAndListsAcrossProjectsStreamToo) {
  const std::string path = NsPath("default", "computeinstances");
  EXPECT_THAT(Names("labelSelector=" + Escape("env!=prod")),
              ElementsAre("e-unlabelled", "d-dev", "c-staging"));
  EXPECT_THAT(Names("labelSelector=" + Escape("env!=prod")),
              ElementsAreArray(Paged(path, "&labelSelector=" + Escape("env!=prod"))));
  api().CreateProject("other");
  api().CreateTemplate("other", "t");
  api().CreateProfile("other", "small", "t");
  for (const char* name : {"x", "y", "z"}) api().CreateInstance("other", name, "small");
  Resp all = api().Get(ClusterPath("computeinstances"));
  ASSERT_EQ(all.status, 200) << all.raw;
  EXPECT_THAT(all.names(), ElementsAre("z", "y", "x", "e-unlabelled", "d-dev", "c-staging",
                                       "b-prod-vision", "a-prod-llm"));
  EXPECT_THAT(all.names(), ElementsAreArray(Paged(ClusterPath("computeinstances"))));
}

TEST_F(StreamedListTest, ATableForKubectlIsStreamedToo) {
  client::HttpResponse raw = Raw(NsPath("default", "computeinstances"),
                                 {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"}});
  ASSERT_EQ(raw.status, 200) << raw.body;
  EXPECT_EQ(raw.headers["transfer-encoding"], "chunked");
  boost::system::error_code ec;
  json::value table = json::parse(raw.body, ec);
  ASSERT_FALSE(ec) << raw.body;
  EXPECT_EQ(table.at("kind"), "Table");
  EXPECT_EQ(table.at("apiVersion"), "meta.k8s.io/v1");
  EXPECT_FALSE(table.at("columnDefinitions").as_array().empty());
  EXPECT_FALSE(table.at("metadata").as_object().contains("continue"));
  EXPECT_FALSE(table.at("metadata").at("resourceVersion").as_string().empty());
  std::vector<std::string> names;
  for (const auto& row : table.at("rows").as_array())
    names.push_back(std::string(row.at("object").at("metadata").at("name").as_string()));
  EXPECT_THAT(names,
              ElementsAre("e-unlabelled", "d-dev", "c-staging", "b-prod-vision", "a-prod-llm"));
}

}  // namespace
}  // namespace gantry::testing
