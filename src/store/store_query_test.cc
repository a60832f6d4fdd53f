// Store unit tests: label selectors, field selectors and search.
#include <algorithm>
#include <map>
#include <optional>

#include "store/store_test_fixture.h"

namespace gantry::store::store_tests {
namespace {

class StoreSelectorTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    MustCreate(Make(
        {.name = "web-prod",
         .labels = {
             {"env", "prod"}, {"app.kubernetes.io/name", "web"}, {"example.com/team", "llm"}}}));
    MustCreate(Make({.name = "web-staging",
                     .labels = {{"env", "staging"}, {"app.kubernetes.io/name", "web"}}}));
    MustCreate(Make(
        {.name = "db-prod",
         .labels = {
             {"env", "prod"}, {"app.kubernetes.io/name", "db"}, {"example.com/team", "infra"}}}));
    MustCreate(Make({.name = "bare"}));
    MustCreate(Make({.name = "empty-env", .labels = {{"env", ""}}}));
  }
};

TEST_P(StoreSelectorTest, Equals) {
  EXPECT_THAT(Selected("env=prod"), ElementsAre("db-prod", "web-prod"));
  EXPECT_THAT(Selected("env==staging"), ElementsAre("web-staging"));
  EXPECT_THAT(Selected("env=dev"), IsEmpty());
  EXPECT_THAT(Selected("env="), ElementsAre("empty-env"));
}

TEST_P(StoreSelectorTest, NotEqualsIncludesObjectsWithoutTheKey) {
  EXPECT_THAT(Selected("env!=prod"), ElementsAre("empty-env", "bare", "web-staging"));
}

TEST_P(StoreSelectorTest, In) {
  EXPECT_THAT(Selected("env in (prod, staging)"),
              ElementsAre("db-prod", "web-staging", "web-prod"));
  EXPECT_THAT(Selected("env in (dev)"), IsEmpty());
}

TEST_P(StoreSelectorTest, NotInIncludesObjectsWithoutTheKey) {
  EXPECT_THAT(Selected("env notin (prod)"), ElementsAre("empty-env", "bare", "web-staging"));
  EXPECT_THAT(Selected("env notin (prod,staging,)"), ElementsAre("bare"));
}

TEST_P(StoreSelectorTest, ExistsAndDoesNotExist) {
  EXPECT_THAT(Selected("env"), ElementsAre("empty-env", "db-prod", "web-staging", "web-prod"));
  EXPECT_THAT(Selected("!env"), ElementsAre("bare"));
  EXPECT_THAT(Selected("example.com/team"), ElementsAre("db-prod", "web-prod"));
  EXPECT_THAT(Selected("!example.com/team"), ElementsAre("empty-env", "bare", "web-staging"));
}

TEST_P(StoreSelectorTest, KeysWithDotsAndSlashes) {
  EXPECT_THAT(Selected("app.kubernetes.io/name=web"), ElementsAre("web-staging", "web-prod"));
  EXPECT_THAT(Selected("app.kubernetes.io/name in (db)"), ElementsAre("db-prod"));
  EXPECT_THAT(Selected("example.com/team notin (llm)"),
              ElementsAre("empty-env", "bare", "db-prod", "web-staging"));
  // The dotted key is one key, not a path into nested objects.
  EXPECT_THAT(Selected("app"), IsEmpty());
  EXPECT_THAT(Selected("app.kubernetes.io"), IsEmpty());
}

TEST_P(StoreSelectorTest, AllRequirementsMustHold) {
  EXPECT_THAT(Selected("env=prod,app.kubernetes.io/name=web"), ElementsAre("web-prod"));
  EXPECT_THAT(Selected("app.kubernetes.io/name=web,!example.com/team"), ElementsAre("web-staging"));
  EXPECT_THAT(Selected("env in (prod),env notin (prod)"), IsEmpty());
}

TEST_P(StoreSelectorTest, EmptySelectorSelectsEverything) { EXPECT_EQ(ListNames({}).size(), 5u); }

TEST_P(StoreSelectorTest, LabelChangesAreSeenAfterUpdate) {
  MustCommit(Update(Make({.name = "bare", .labels = {{"env", "prod"}}})));
  MustCommit(Update(Make({.name = "web-prod", .labels = {{"env", "dev"}}})));
  EXPECT_THAT(Selected("env=prod"), ElementsAre("bare", "db-prod"));
  EXPECT_THAT(Selected("example.com/team"), ElementsAre("db-prod"));
}

// ------------------------------------------------------------------------------------------
// Field filters and search

class StoreFieldTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    MustCreate(Make({.ns = "a",
                     .name = "one",
                     .phase = "Success",
                     .profile = "h100-x8",
                     .display_name = "GPU Instance (Prod)",
                     .description = "Dedicated 100-GPU cluster for LLM Pre-Training."}));
    MustCreate(Make({.ns = "a",
                     .name = "two",
                     .phase = "Failed",
                     .profile = "a100-x4",
                     .display_name = "Notebook"}));
    MustCreate(Make({.ns = "b",
                     .name = "three",
                     .phase = "Success",
                     .profile = "a100-x4",
                     .description = "Inference endpoint"}));
    MustCreate(Make({.ns = "b", .name = "gpu-four", .profile = "h100-x8"}));
  }
};

TEST_P(StoreFieldTest, StatusPhase) {
  EXPECT_THAT(Filtered({{"status.phase", true, "Success"}}), ElementsAre("three", "one"));
  EXPECT_THAT(Filtered({{"status.phase", false, "Success"}}), ElementsAre("gpu-four", "two"));
  EXPECT_THAT(Filtered({{"status.phase", true, "success"}}), IsEmpty());  // exact match
}

TEST_P(StoreFieldTest, ProfileRefName) {
  EXPECT_THAT(Filtered({{"spec.profileRef.name", true, "a100-x4"}}), ElementsAre("three", "two"));
  EXPECT_THAT(Filtered({{"spec.profileRef.name", false, "a100-x4"}}),
              ElementsAre("gpu-four", "one"));
}

TEST_P(StoreFieldTest, MetadataNameAndNamespace) {
  EXPECT_THAT(Filtered({{"metadata.name", true, "two"}}), ElementsAre("two"));
  EXPECT_THAT(Filtered({{"metadata.name", false, "two"}}), ElementsAre("gpu-four", "three", "one"));
  EXPECT_THAT(Filtered({{"metadata.namespace", true, "b"}}), ElementsAre("gpu-four", "three"));
}

TEST_P(StoreFieldTest, FiltersCombine) {
  EXPECT_THAT(Filtered({{"status.phase", true, "Success"}, {"metadata.namespace", true, "a"}}),
              ElementsAre("one"));
  EXPECT_THAT(
      Filtered({{"status.phase", true, "Success"}, {"spec.profileRef.name", true, "h100-x8"}}),
      ElementsAre("one"));
}

TEST_P(StoreFieldTest, TemplateRefNameOnProfiles) {
  MustCreate(json::object{{"metadata", json::object{{"name", "h100-x8"}, {"namespace", "p"}}},
                          {"spec", json::object{{"templateRef", json::object{{"name", "train"}}}}}},
             kProfile);
  MustCreate(json::object{{"metadata", json::object{{"name", "cpu"}, {"namespace", "p"}}},
                          {"spec", json::object{{"templateRef", json::object{{"name", "nb"}}}}}},
             kProfile);
  EXPECT_THAT(Filtered({{"spec.templateRef.name", true, "train"}}, kProfile),
              ElementsAre("h100-x8"));
}

TEST_P(StoreFieldTest, UnsupportedFieldIsBadRequest) {
  auto r = store_->List({.kind = kInstance, .fields = {{"spec.display-name", true, "x"}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpCodeOf(r.status()), 400);
  EXPECT_EQ(StatusText(r.status()), "field label not supported: spec.display-name");
  for (std::string bad : {".spec", "spec.", "spec..name", "1spec", "spec['x']", "spec.*"})
    EXPECT_FALSE(store_->List({.kind = kInstance, .fields = {{bad, true, "x"}}}).ok()) << bad;
}

// Fields without a column (spec.user of RoleBindings, ...) are read from the stored JSON;
// absent ones compare as "".
TEST_P(StoreFieldTest, OtherFieldsAreReadFromTheObject) {
  EXPECT_THAT(Filtered({{"spec.displayName", true, "Notebook"}}), ElementsAre("two"));
  EXPECT_THAT(Filtered({{"spec.displayName", false, "Notebook"}}),
              ElementsAre("gpu-four", "three", "one"));
  EXPECT_THAT(Filtered({{"spec.displayName", true, ""}}), ElementsAre("gpu-four", "three"));
  EXPECT_THAT(Filtered({{"spec.description", true, "Inference endpoint"},
                        {"metadata.namespace", true, "b"}}),
              ElementsAre("three"));
  EXPECT_EQ(*store_->Count(kInstance, std::nullopt, {{"spec.displayName", true, "Notebook"}}), 1);
}

TEST_P(StoreFieldTest, PhaseChangesAreSeenAfterUpdate) {
  MustCommit(
      Update(Make({.ns = "b", .name = "gpu-four", .phase = "Success", .profile = "h100-x8"})));
  EXPECT_THAT(Filtered({{"status.phase", true, "Success"}}),
              ElementsAre("gpu-four", "three", "one"));
}

TEST_P(StoreFieldTest, SearchIsCaseInsensitiveOverNameDisplayNameAndDescription) {
  EXPECT_THAT(Searched("GPU"), ElementsAre("gpu-four", "one"));  // name, displayName
  EXPECT_THAT(Searched("pre-training"), ElementsAre("one"));     // description
  EXPECT_THAT(Searched("NOTEBOOK"), ElementsAre("two"));         // displayName
  EXPECT_THAT(Searched("inference"), ElementsAre("three"));      // description
  EXPECT_THAT(Searched("thr"), ElementsAre("three"));            // name
  EXPECT_THAT(Searched("nothing like this"), IsEmpty());
  EXPECT_THAT(Searched("%"), IsEmpty());  // no LIKE wildcards
  EXPECT_THAT(Searched("_"), IsEmpty());
}

TEST_P(StoreFieldTest, SearchCombinesWithFiltersAndNamespace) {
  ListOptions o{.kind = kInstance, .ns = "b", .search = "gpu"};
  EXPECT_THAT(ListNames(o), ElementsAre("gpu-four"));
  EXPECT_THAT(Filtered({{"status.phase", true, "Success"}}), ElementsAre("three", "one"));
  ListOptions both{
      .kind = kInstance, .fields = {{"status.phase", true, "Success"}}, .search = "gpu"};
  EXPECT_THAT(ListNames(both), ElementsAre("one"));
}

TEST_P(StoreFieldTest, Count) {
  auto all = store_->Count(kInstance, std::nullopt, {});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(*all, 4);
  EXPECT_EQ(*store_->Count(kInstance, "a", {}), 2);
  EXPECT_EQ(*store_->Count(kInstance, "c", {}), 0);
  EXPECT_EQ(*store_->Count(kInstance, std::nullopt, {{"status.phase", true, "Success"}}), 2);
  EXPECT_EQ(*store_->Count(kInstance, "b", {{"spec.profileRef.name", true, "h100-x8"}}), 1);
  EXPECT_EQ(*store_->Count(kInstance, std::nullopt, {{"status.phase", false, "Success"}}), 2);
  EXPECT_EQ(*store_->Count(kProfile, std::nullopt, {}), 0);
  auto bad = store_->Count(kInstance, std::nullopt, {{"status.re-ason", true, "x"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(StatusText(bad.status()), "field label not supported: status.re-ason");
}

// ------------------------------------------------------------------------------------------
// Selectors the label index answers (equality, in), alone and combined with the forms it
// does not (notin, !=, exists, !key), field selectors, namespaces and pages. The expected
// answer of each list is computed here with model::LabelSelector::Matches over the objects
// created, so every combination is checked against the selector's own semantics.

class StoreIndexedSelectorTest : public StoreTest {
 protected:
  struct Made {
    std::string ns, name, phase;
    std::map<std::string, std::string> labels;
  };

  void SetUp() override {
    StoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    for (int i = 0; i < 60; ++i) {
      Made m{i % 3 == 0 ? "b" : "a",
             "o" + std::to_string(i),
             i % 4 == 0 ? "Success" : "Failed",
             {{"tier", i % 2 ? "gpu" : "cpu"}, {"shard", "s" + std::to_string(i % 7)}}};
      if (i % 5 == 0) m.labels["canary"] = "";
      if (i % 6 == 0) m.labels.erase("tier");
      json::object labels;
      for (const auto& [k, v] : m.labels) labels[k] = v;
      MustCreate(Make({.ns = m.ns, .name = m.name, .labels = labels, .phase = m.phase}));
      made_.push_back(std::move(m));
    }
    // Updates move objects in the index; deletes take them out.
    for (int i : {7, 14, 21}) {
      made_[i].labels["shard"] = "moved";
      json::object labels;
      for (const auto& [k, v] : made_[i].labels) labels[k] = v;
      MustCommit(Update(Make(
          {.ns = made_[i].ns, .name = made_[i].name, .labels = labels, .phase = made_[i].phase})));
    }
    for (int i : {0, 13, 28}) {
      MustCommit(Delete(made_[i].name, made_[i].ns));
      made_[i].name.clear();
    }
  }

  // Newest first, as the store lists.
  std::vector<std::string> Expected(const model::LabelSelector& sel,
                                    const std::optional<std::string>& ns,
                                    const std::string& phase) {
    std::vector<std::string> out;
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      if (it->name.empty() || (ns && it->ns != *ns) || (!phase.empty() && it->phase != phase))
        continue;
      if (sel.Matches(it->labels)) out.push_back(it->name);
    }
    return out;
  }

  // Every page of `limit`, concatenated.
  std::vector<std::string> Walk(ListOptions o) {
    std::vector<std::string> walked;
    for (int page = 0; page < 100; ++page) {
      auto r = store_->List(o);
      EXPECT_TRUE(r.ok()) << r.status();
      if (!r.ok()) break;
      for (auto& n : Names(r->items)) walked.push_back(n);
      if (r->continue_token.empty()) break;
      EXPECT_EQ(static_cast<int64_t>(r->items.size()), o.limit);
      o.continue_token = r->continue_token;
    }
    return walked;
  }

  std::vector<Made> made_;
};

TEST_P(StoreIndexedSelectorTest, EveryCombinationMatchesTheSelectorsMeaning) {
  const char* selectors[] = {
      "tier=gpu",
      "shard=s3",
      "shard=moved",
      "shard==s0",
      "canary=",
      "tier=none",
      "tier in (gpu)",
      "shard in (s1,s2)",
      "shard in (s1,s2,moved,nothing)",
      "tier in (cpu,gpu),shard=s4",
      "tier=gpu,shard notin (s1,s3)",
      "tier=cpu,!canary",
      "shard in (s5,s6),canary",
      "shard=s2,tier!=gpu",
      "shard in (s0,s1),tier notin (cpu)",
  };
  for (const char* text : selectors) {
    auto sel = model::ParseLabelSelector(text);
    ASSERT_TRUE(sel.ok()) << text << ": " << sel.status();
    for (std::optional<std::string> ns :
         {std::optional<std::string>(), std::optional<std::string>("a")}) {
      for (std::string phase : {"", "Success"}) {
        for (int64_t limit : {0, 1, 4}) {
          SCOPED_TRACE(std::string(text) + " ns=" + ns.value_or("*") + " phase=" + phase +
                       " limit=" + std::to_string(limit));
          ListOptions o{.kind = kInstance, .ns = ns, .labels = *sel, .limit = limit};
          if (!phase.empty()) o.fields = {{"status.phase", true, phase}};
          EXPECT_EQ(Walk(o), Expected(*sel, ns, phase));
        }
      }
    }
  }
}

TEST_P(StoreIndexedSelectorTest, OldestFirstPagesThroughTheIndexToo) {
  auto sel = model::ParseLabelSelector("tier=gpu");
  ASSERT_TRUE(sel.ok());
  std::vector<std::string> expected = Expected(*sel, std::nullopt, "");
  std::reverse(expected.begin(), expected.end());
  EXPECT_EQ(Walk({.kind = kInstance, .labels = *sel, .limit = 3, .oldest_first = true}), expected);
  auto multi = model::ParseLabelSelector("shard in (s1,s2)");
  ASSERT_TRUE(multi.ok());
  expected = Expected(*multi, std::nullopt, "");
  std::reverse(expected.begin(), expected.end());
  EXPECT_EQ(Walk({.kind = kInstance, .labels = *multi, .limit = 2, .oldest_first = true}),
            expected);
}

TEST_P(StoreIndexedSelectorTest, OtherKindsWithTheSameLabelsAreNotListed) {
  MustCreate(json::object{{"metadata", json::object{{"name", "p1"},
                                                    {"namespace", "a"},
                                                    {"labels", json::object{{"tier", "gpu"}}}}},
                          {"spec", json::object{}}},
             kProfile);
  auto sel = model::ParseLabelSelector("tier=gpu");
  ASSERT_TRUE(sel.ok());
  EXPECT_THAT(ListNames({.kind = kProfile, .labels = *sel}), ElementsAre("p1"));
  EXPECT_EQ(ListNames({.kind = kInstance, .labels = *sel}), Expected(*sel, std::nullopt, ""));
}

// ------------------------------------------------------------------------------------------
// Events

INSTANTIATE_TEST_SUITE_P(Backends, StoreSelectorTest, ::testing::Values("sqlite", "postgres"),
                         BackendName);
INSTANTIATE_TEST_SUITE_P(Backends, StoreIndexedSelectorTest,
                         ::testing::Values("sqlite", "postgres"), BackendName);
INSTANTIATE_TEST_SUITE_P(Backends, StoreFieldTest, ::testing::Values("sqlite", "postgres"),
                         BackendName);

}  // namespace
}  // namespace gantry::store::store_tests
