#include "model/managed_fields.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/errors.h"

namespace gantry::model {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

FieldSet Set(std::initializer_list<FieldPath> paths) { return FieldSet(paths); }

constexpr char kNow[] = "2026-11-30T20:00:00Z";
constexpr char kLater[] = "2026-11-30T21:00:00Z";
constexpr char kV1[] = "paas.gantry.dev/v1";

TEST(ManagedFieldsTest, TrackedFieldsAreLabelsAnnotationsAndSpec) {
  json::object o = Obj(R"({"apiVersion":"paas.gantry.dev/v1","kind":"X",
    "metadata":{"name":"a","uid":"u","labels":{"env":"prod"},"annotations":{}},
    "spec":{"displayName":"A","resources":{"gpu":{"count":8}},"args":["x","y"],"exec":{}},
    "status":{"phase":"Deployed"}})");
  EXPECT_EQ(LeafSet(TrackedFields(o)), Set({{"metadata", "labels", "env"},
                                            {"spec", "args"},
                                            {"spec", "displayName"},
                                            {"spec", "exec"},
                                            {"spec", "resources", "gpu", "count"}}));
}

TEST(ManagedFieldsTest, LeavesSkipNulls) {
  EXPECT_EQ(LeafSet(Obj(R"({"spec":{"a":null,"b":1}})")), Set({{"spec", "b"}}));
}

TEST(ManagedFieldsTest, FieldsV1RoundTrips) {
  FieldSet s = Set({{"metadata", "labels", "app.kubernetes.io/name"},
                    {"spec", "displayName"},
                    {"spec", "resources"},
                    {"spec", "resources", "gpu", "count"}});
  json::object enc = EncodeFieldsV1(s);
  EXPECT_EQ(json::serialize(enc),
            R"({"f:metadata":{"f:labels":{"f:app.kubernetes.io/name":{}}},)"
            R"("f:spec":{"f:displayName":{},"f:resources":{".":{},"f:gpu":{"f:count":{}}}}})");
  auto back = DecodeFieldsV1(enc);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
}

TEST(ManagedFieldsTest, DecodeRefusesListKeysAndNonObjects) {
  EXPECT_THAT(
      std::string(
          DecodeFieldsV1(Obj(R"({"f:spec":{"k:{\"name\":\"a\"}":{}}})")).status().message()),
      HasSubstr("lists are atomic"));
  EXPECT_FALSE(DecodeFieldsV1(Obj(R"({"f:spec":1})")).ok());
  EXPECT_FALSE(DecodeFieldsV1(json::value(3)).ok());
}

TEST(ManagedFieldsTest, ManagedFieldsEncodeSortedAndDecode) {
  Managers m = {{"b", kOperationUpdate, kV1, kNow, Set({{"spec", "x"}})},
                {"a", kOperationUpdate, kV1, kNow, Set({{"spec", "y"}})},
                {"z", kOperationApply, kV1, kLater, Set({{"spec", "z"}})},
                {"empty", kOperationUpdate, kV1, kNow, {}}};
  json::array arr = EncodeManagedFields(m);
  ASSERT_EQ(arr.size(), 3u);
  EXPECT_EQ(arr[0].at("manager"), "z");  // Apply first
  EXPECT_EQ(arr[1].at("manager"), "a");
  EXPECT_EQ(arr[2].at("manager"), "b");
  EXPECT_EQ(arr[0].at("fieldsType"), "FieldsV1");
  auto back = DecodeManagedFields(arr);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[0].manager, "z");
  EXPECT_EQ((*back)[0].operation, "Apply");
  EXPECT_EQ((*back)[0].time, kLater);
  EXPECT_EQ((*back)[0].fields, Set({{"spec", "z"}}));
}

TEST(ManagedFieldsTest, DecodeManagedFieldsResetsAndRefuses) {
  auto reset = DecodeManagedFields(json::parse("[{}]"));
  ASSERT_TRUE(reset.ok());
  EXPECT_TRUE(reset->empty());
  EXPECT_THAT(
      std::string(DecodeManagedFields(json::parse(R"([{"manager":"a","operation":"Delete"}])"))
                      .status()
                      .message()),
      HasSubstr("managedFields[0].operation"));
  EXPECT_THAT(
      std::string(DecodeManagedFields(
                      json::parse(R"([{"manager":"a","operation":"Update","fieldsV1":{"x":{}}}])"))
                      .status()
                      .message()),
      HasSubstr("managedFields[0].fieldsV1: unsupported key \"x\""));
  EXPECT_THAT(
      std::string(
          DecodeManagedFields(
              json::parse(
                  R"([{"manager":"a","operation":"Update"},{"manager":"a","operation":"Update"}])"))
              .status()
              .message()),
      HasSubstr("listed twice"));
}

TEST(ManagedFieldsTest, CompareFindsAddedModifiedRemoved) {
  auto c = CompareFields(Obj(R"({"spec":{"a":1,"b":[1],"c":"x"}})"),
                         Obj(R"({"spec":{"a":1,"b":[2],"d":true}})"));
  EXPECT_EQ(c.added, Set({{"spec", "d"}}));
  EXPECT_EQ(c.modified, Set({{"spec", "b"}}));
  EXPECT_EQ(c.removed, Set({{"spec", "c"}}));
  EXPECT_EQ(c.present, Set({{"spec", "a"}, {"spec", "b"}, {"spec", "d"}}));
}

TEST(ManagedFieldsTest, UpdateTakesChangedFieldsFromOthers) {
  Managers m = {{"applier", kOperationApply, kV1, kNow, Set({{"spec", "a"}, {"spec", "b"}})}};
  auto c = CompareFields(Obj(R"({"spec":{"a":1,"b":2}})"), Obj(R"({"spec":{"a":1,"b":3,"c":4}})"));
  RecordUpdate(m, c, "kubectl-edit", kV1, kLater);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].fields, Set({{"spec", "a"}}));
  EXPECT_EQ(m[0].time, kNow);  // untouched entries keep their time
  EXPECT_EQ(m[1].manager, "kubectl-edit");
  EXPECT_EQ(m[1].operation, "Update");
  EXPECT_EQ(m[1].time, kLater);
  EXPECT_EQ(m[1].fields, Set({{"spec", "b"}, {"spec", "c"}}));
}

TEST(ManagedFieldsTest, UpdateRemovesFieldsFromEveryoneAndDropsEmptyManagers) {
  Managers m = {{"a", kOperationUpdate, kV1, kNow, Set({{"spec", "x"}})}};
  auto c = CompareFields(TrackedFields(Obj(R"({"spec":{"x":1}})")),
                         TrackedFields(Obj(R"({"spec":{}})")));
  RecordUpdate(m, c, "b", kV1, kLater);
  EXPECT_TRUE(m.empty());
}

TEST(ManagedFieldsTest, NoOpUpdateChangesNothing) {
  Managers m = {{"a", kOperationUpdate, kV1, kNow, Set({{"spec", "x"}})}};
  Managers before = m;
  auto c = CompareFields(Obj(R"({"spec":{"x":1}})"), Obj(R"({"spec":{"x":1}})"));
  RecordUpdate(m, c, "a", kV1, kLater);
  RecordUpdate(m, c, "b", kV1, kLater);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].time, kNow);
  EXPECT_EQ(m[0].fields, before[0].fields);
}

TEST(ManagedFieldsTest, CreateOwnsEverything) {
  Managers m;
  json::object obj = Obj(R"({"metadata":{"labels":{"a":"1"}},"spec":{"x":1}})");
  RecordUpdate(m, CompareFields({}, obj), "kubectl-client-side-apply", kV1, kNow);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].fields, Set({{"metadata", "labels", "a"}, {"spec", "x"}}));
}

TEST(ManagedFieldsTest, ApplyConflictsWithAnotherManagersChangedField) {
  Managers m = {{"kubectl-client-side-apply", kOperationUpdate, kV1, kNow,
                 Set({{"spec", "displayName"}, {"spec", "size"}})}};
  json::object live = Obj(R"({"spec":{"displayName":"A","size":1}})");
  json::object config = Obj(R"({"spec":{"displayName":"B","size":1}})");
  json::object merged = MergeApplied(live, config);
  auto c = CompareFields(TrackedFields(live), TrackedFields(merged));
  Managers before = m;
  absl::Status s = RecordApply(m, c, LeafSet(TrackedFields(config)), "ssa", kV1, kLater, false);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(HttpCodeOf(s), 409);
  EXPECT_EQ(ReasonOf(s), "Conflict");
  EXPECT_EQ(s.message(),
            "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using "
            "paas.gantry.dev/v1: .spec.displayName");
  auto causes = CausesOf(s);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].field, ".spec.displayName");
  EXPECT_EQ(causes[0].type, "FieldManagerConflict");
  EXPECT_EQ(causes[0].message,
            "conflict with \"kubectl-client-side-apply\" using paas.gantry.dev/v1");
  EXPECT_EQ(m[0].fields, before[0].fields);  // unchanged on refusal

  // Forced: the applier takes the changed field; the same value (size) is shared.
  ASSERT_TRUE(RecordApply(m, c, LeafSet(TrackedFields(config)), "ssa", kV1, kLater, true).ok());
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].manager, "kubectl-client-side-apply");
  EXPECT_EQ(m[0].fields, Set({{"spec", "size"}}));
  EXPECT_EQ(m[1].manager, "ssa");
  EXPECT_EQ(m[1].operation, "Apply");
  EXPECT_EQ(m[1].fields, Set({{"spec", "displayName"}, {"spec", "size"}}));
}

TEST(ManagedFieldsTest, ManyConflictsAreGroupedByManager) {
  Managers m = {{"b", kOperationApply, kV1, kNow, Set({{"spec", "x"}})},
                {"a", kOperationUpdate, kV1, kNow, Set({{"spec", "y"}, {"spec", "z"}})}};
  auto c =
      CompareFields(Obj(R"({"spec":{"x":1,"y":1,"z":1}})"), Obj(R"({"spec":{"x":2,"y":2,"z":2}})"));
  absl::Status s = RecordApply(m, c, Set({{"spec", "x"}, {"spec", "y"}, {"spec", "z"}}), "me", kV1,
                               kLater, false);
  EXPECT_EQ(s.message(),
            "Apply failed with 3 conflicts: conflicts with \"a\" using paas.gantry.dev/v1:\n"
            "- .spec.y\n- .spec.z\nconflicts with \"b\":\n- .spec.x");
}

TEST(ManagedFieldsTest, ApplyDoesNotConflictWithItself) {
  Managers m = {{"me", kOperationApply, kV1, kNow, Set({{"spec", "x"}})}};
  auto c = CompareFields(Obj(R"({"spec":{"x":1}})"), Obj(R"({"spec":{"x":2}})"));
  ASSERT_TRUE(RecordApply(m, c, Set({{"spec", "x"}}), "me", kV1, kLater, false).ok());
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].time, kLater);
}

TEST(ManagedFieldsTest, UnchangedApplyKeepsTheTime) {
  Managers m = {{"me", kOperationApply, kV1, kNow, Set({{"spec", "x"}})}};
  auto c = CompareFields(Obj(R"({"spec":{"x":1}})"), Obj(R"({"spec":{"x":1}})"));
  ASSERT_TRUE(RecordApply(m, c, Set({{"spec", "x"}}), "me", kV1, kLater, false).ok());
  EXPECT_EQ(m[0].time, kNow);
}

TEST(ManagedFieldsTest, MergeAppliedMergesObjectsAndReplacesLists) {
  json::object live = Obj(R"({"metadata":{"name":"a","uid":"u","labels":{"x":"1"}},
      "spec":{"args":["a","b"],"resources":{"gpu":{"type":"h100","count":8}},"keep":true},
      "status":{"phase":"Deployed"}})");
  json::object config = Obj(R"({"apiVersion":"v","metadata":{"name":"a","labels":{"y":"2"}},
      "spec":{"args":["c"],"resources":{"gpu":{"count":4}},"gone":null},"status":{"phase":"X"}})");
  json::object merged = MergeApplied(live, config);
  EXPECT_EQ(json::serialize(merged),
            R"({"metadata":{"name":"a","uid":"u","labels":{"x":"1","y":"2"}},)"
            R"("spec":{"args":["c"],"resources":{"gpu":{"type":"h100","count":4}},"keep":true}})");
}

TEST(ManagedFieldsTest, PruneRemovesWhatOnlyTheApplierOwned) {
  Managers m = {{"me", kOperationApply, kV1, kNow,
                 Set({{"spec", "a"}, {"spec", "b"}, {"spec", "c"}, {"spec", "n", "x"}})},
                {"other", kOperationUpdate, kV1, kNow, Set({{"spec", "b"}})}};
  // Applied now: a, and something under c (c changed shape).
  FieldSet prune = FieldsToPrune(m, "me", Set({{"spec", "a"}, {"spec", "c", "d"}}));
  EXPECT_EQ(prune, Set({{"spec", "n", "x"}}));
  json::object obj = Obj(R"({"metadata":{"name":"a"},"spec":{"a":1,"b":2,"n":{"x":1}}})");
  RemoveFields(obj, prune);
  EXPECT_EQ(json::serialize(obj), R"({"metadata":{"name":"a"},"spec":{"a":1,"b":2}})");
  json::object only = Obj(R"({"spec":{"n":{"x":1}}})");
  RemoveFields(only, prune);
  EXPECT_EQ(json::serialize(only), R"({"spec":{}})");  // spec itself stays
}

TEST(ManagedFieldsTest, ForgetAbsentFieldsDropsWhatTheServerRemoved) {
  json::object obj = Obj(R"({"metadata":{"name":"u"},"spec":{"displayName":"U"}})");
  Managers m = {
      {"a", kOperationUpdate, kV1, kNow, Set({{"spec", "displayName"}, {"spec", "password"}})},
      {"b", kOperationUpdate, kV1, kNow, Set({{"spec", "password"}})}};
  obj["metadata"].as_object()["managedFields"] = EncodeManagedFields(m);
  ASSERT_TRUE(ForgetAbsentFields(obj).ok());
  auto back = ManagersOf(obj);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].fields, Set({{"spec", "displayName"}}));
  EXPECT_EQ(json::serialize(obj).find("password"), std::string::npos);
}

TEST(ManagedFieldsTest, PathStringIsKubernetesStyle) {
  EXPECT_EQ(PathString({"spec", "resources", "gpu"}), ".spec.resources.gpu");
}

}  // namespace
}  // namespace gantry::model
