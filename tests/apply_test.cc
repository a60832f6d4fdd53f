// Integration tests of field ownership against a real gantryd: metadata.managedFields on
// every write, server-side apply (application/apply-patch+yaml: create, merge, prune,
// conflicts as Kubernetes Status, force), managedFields sent by clients, and RFC 6902 JSON
// patch (application/json-patch+json). kubectl's view of the same is in tests/kubectl.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gantryd_test.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kApply[] = "application/apply-patch+yaml";
constexpr char kJsonPatch[] = "application/json-patch+json";

std::string Str(const json::object& o, std::initializer_list<const char*> path) {
  const json::object* cur = &o;
  const json::value* v = nullptr;
  for (const char* p : path) {
    if (!cur || !(v = cur->if_contains(p))) return "";
    cur = v->if_object();
  }
  return v->is_string() ? std::string(v->as_string()) : json::serialize(*v);
}

// "manager/operation" of each managedFields entry, in order.
std::vector<std::string> Managers(const json::object& o) {
  std::vector<std::string> out;
  const json::value* mf = o.at("metadata").as_object().if_contains("managedFields");
  if (!mf) return out;
  for (const auto& e : mf->as_array())
    out.push_back(std::string(e.at("manager").as_string()) + "/" +
                  std::string(e.at("operation").as_string()));
  return out;
}

// The fieldsV1 of one manager's entry, serialized ("" when none).
std::string FieldsOf(const json::object& o, const std::string& manager) {
  const json::value* mf = o.at("metadata").as_object().if_contains("managedFields");
  if (!mf) return "";
  for (const auto& e : mf->as_array())
    if (e.at("manager") == manager.c_str()) return json::serialize(e.at("fieldsV1"));
  return "";
}

class ApplyTest : public GantrydTest {
 protected:
  void SetUp() override {
    GantrydTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    api().CreateTemplate("default", "t");
    api().CreateProfile("default", "p", "t");
  }

  static std::string Path(const std::string& name = "web") {
    return NsPath("default", "computeinstances", name);
  }
  Resp Apply(const std::string& yaml, const std::string& manager, bool force = false,
             const std::string& name = "web") {
    std::string q = manager.empty() ? "" : "?fieldManager=" + manager;
    if (force) q += (q.empty() ? "?" : "&") + std::string("force=true");
    return api().Call("PATCH", Path(name) + q, yaml, kApply);
  }
  static std::string Yaml(const std::string& display, const std::string& extra = "") {
    return "apiVersion: paas.gantry.dev/v1\nkind: ComputeInstance\nmetadata:\n  name: web\n"
           "spec:\n  displayName: " +
           display + "\n  profileRef: {name: p}\n" + extra;
  }
};

TEST_F(ApplyTest, CreatesThenMergesAndIsANoOpWhenUnchanged) {
  Resp created = Apply(Yaml("Web", "  description: first\n"), "ci-bot");
  ASSERT_EQ(created.status, 201) << created.raw;
  EXPECT_EQ(Str(created.obj(), {"spec", "displayName"}), "Web");
  EXPECT_THAT(Managers(created.obj()), ElementsAre("ci-bot/Apply"));
  EXPECT_EQ(FieldsOf(created.obj(), "ci-bot"),
            R"({"f:spec":{"f:description":{},"f:displayName":{},"f:profileRef":{"f:name":{}}}})");
  const json::object& entry =
      created.obj().at("metadata").at("managedFields").as_array()[0].as_object();
  EXPECT_EQ(entry.at("apiVersion"), "paas.gantry.dev/v1");
  EXPECT_EQ(entry.at("fieldsType"), "FieldsV1");
  EXPECT_FALSE(std::string(entry.at("time").as_string()).empty());
  EXPECT_EQ(Str(created.obj(), {"status", "createdBy"}), "system:bootstrap");

  // Unchanged: 200, same resourceVersion.
  Resp again = Apply(Yaml("Web", "  description: first\n"), "ci-bot");
  ASSERT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(again.meta("resourceVersion"), created.meta("resourceVersion"));

  // JSON is YAML: the same apply as JSON changes the display name.
  std::string as_json =
      R"({"apiVersion":"paas.gantry.dev/v1","kind":"ComputeInstance","metadata":{"name":"web"},)"
      R"("spec":{"displayName":"Web 2","profileRef":{"name":"p"},"description":"first"}})";
  Resp changed = api().Call("PATCH", Path() + "?fieldManager=ci-bot", as_json, kApply);
  ASSERT_EQ(changed.status, 200) << changed.raw;
  EXPECT_EQ(Str(changed.obj(), {"spec", "displayName"}), "Web 2");
  EXPECT_EQ(changed.meta_int("generation"), 2);

  // Status in a configuration is ignored.
  Resp status = Apply(Yaml("Web 2", "  description: first\nstatus: {phase: Deployed}\n"), "ci-bot");
  ASSERT_EQ(status.status, 200) << status.raw;
  EXPECT_EQ(Str(status.obj(), {"status", "phase"}), "NotDeployed");
  EXPECT_EQ(status.meta("resourceVersion"), changed.meta("resourceVersion"));
}

TEST_F(ApplyTest, FieldsNoLongerAppliedAreRemovedUnlessSomeoneElseOwnsThem) {
  auto labeled = [](const std::string& labels, const std::string& extra) {
    return "apiVersion: paas.gantry.dev/v1\nkind: ComputeInstance\nmetadata:\n  name: web\n"
           "  labels: {" +
           labels + "}\nspec:\n  profileRef: {name: p}\n" + extra;
  };
  ASSERT_EQ(Apply(labeled("team: ml, env: dev", "  description: d\n"), "a").status, 201);
  // b applies the same env label: both own it.
  ASSERT_EQ(Apply(labeled("env: dev", ""), "b").status, 200);
  Resp r = Apply(labeled("team: ml", ""), "a");  // a stops applying description and env
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(Str(r.obj(), {"spec", "description"}), "");  // only a owned it: removed
  EXPECT_EQ(Str(r.obj(), {"metadata", "labels"}), R"({"team":"ml","env":"dev"})");  // b: kept
  r = Apply(labeled("team: ml", ""), "b");  // b stops applying env: nobody owns it now
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(Str(r.obj(), {"metadata", "labels"}), R"({"team":"ml"})");
  EXPECT_THAT(Managers(r.obj()), ElementsAre("a/Apply", "b/Apply"));
}

TEST_F(ApplyTest, ConflictsAreAKubernetesStatusAndForceTakesOwnership) {
  ASSERT_EQ(Apply(Yaml("Web"), "a").status, 201);
  // An update by another manager (a merge patch naming its manager).
  Resp patched = api().Call("PATCH", Path() + "?fieldManager=editor",
                            R"({"spec":{"displayName":"Edited"}})", "application/merge-patch+json");
  ASSERT_EQ(patched.status, 200) << patched.raw;
  EXPECT_THAT(Managers(patched.obj()), ElementsAre("a/Apply", "editor/Update"));
  EXPECT_EQ(FieldsOf(patched.obj(), "editor"), R"({"f:spec":{"f:displayName":{}}})");
  EXPECT_EQ(FieldsOf(patched.obj(), "a"), R"({"f:spec":{"f:profileRef":{"f:name":{}}}})");

  Resp conflict = Apply(Yaml("Mine"), "a");
  ASSERT_TRUE(conflict.IsStatus(409, "Conflict")) << conflict.raw;
  EXPECT_EQ(conflict.message(),
            "Apply failed with 1 conflict: conflict with \"editor\" using paas.gantry.dev/v1: "
            ".spec.displayName");
  const json::array& causes = conflict.obj().at("details").at("causes").as_array();
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].at("reason"), "FieldManagerConflict");
  EXPECT_EQ(causes[0].at("field"), ".spec.displayName");
  EXPECT_EQ(causes[0].at("message"), "conflict with \"editor\" using paas.gantry.dev/v1");
  EXPECT_EQ(Str(api().Get(Path()).obj(), {"spec", "displayName"}), "Edited");

  Resp forced = Apply(Yaml("Mine"), "a", /*force=*/true);
  ASSERT_EQ(forced.status, 200) << forced.raw;
  EXPECT_EQ(Str(forced.obj(), {"spec", "displayName"}), "Mine");
  EXPECT_THAT(Managers(forced.obj()), ElementsAre("a/Apply"));  // editor owns nothing now
}

TEST_F(ApplyTest, RequestsApplyRefuses) {
  Resp no_manager = Apply(Yaml("Web"), "");
  EXPECT_TRUE(no_manager.IsStatus(400, "BadRequest")) << no_manager.raw;
  EXPECT_EQ(no_manager.message(), "fieldManager is required for apply requests");
  Resp no_kind = Apply("metadata: {name: web}\nspec: {displayName: x}\n", "a");
  EXPECT_TRUE(no_kind.IsStatus(400, "BadRequest")) << no_kind.raw;
  EXPECT_EQ(no_kind.message(), "an apply configuration must set apiVersion and kind");
  Resp two = Apply(Yaml("A") + "---\n" + Yaml("B"), "a");
  EXPECT_TRUE(two.IsStatus(400, "BadRequest")) << two.raw;
  Resp bad_yaml = Apply("spec: [\n", "a");
  EXPECT_TRUE(bad_yaml.IsStatus(400, "BadRequest")) << bad_yaml.raw;
  EXPECT_THAT(bad_yaml.message(), HasSubstr("not valid YAML or JSON"));
  Resp other_name = Apply(Yaml("Web"), "a", false, "other");
  EXPECT_TRUE(other_name.IsStatus(400, "BadRequest")) << other_name.raw;
  EXPECT_EQ(other_name.message(),
            "the name of the object (web) does not match the name on the URL (other)");
  ASSERT_EQ(Apply(Yaml("Web"), "a").status, 201);
  Resp mf = Apply(
      "apiVersion: paas.gantry.dev/v1\nkind: ComputeInstance\nmetadata:\n  name: web\n"
      "  managedFields: [{manager: x, operation: Apply}]\nspec: {displayName: y}\n",
      "a");
  EXPECT_TRUE(mf.IsStatus(400, "BadRequest")) << mf.raw;
  EXPECT_EQ(mf.message(), "metadata.managedFields must be nil in an apply configuration");
  Resp invalid = Apply(Yaml("Web", "  bogus: 1\n"), "a");
  EXPECT_TRUE(invalid.IsStatus(422, "Invalid")) << invalid.raw;
  EXPECT_THAT(invalid.cause_fields(), ElementsAre("spec.bogus"));
  Resp force_on_merge =
      api().Call("PATCH", Path() + "?force=true", R"({"spec":{}})", "application/merge-patch+json");
  EXPECT_TRUE(force_on_merge.IsStatus(400, "BadRequest")) << force_on_merge.raw;
  Resp runs =
      api().Call("PATCH", NsPath("default", "runs", "r") + "?fieldManager=a",
                 "apiVersion: paas.gantry.dev/v1\nkind: Run\nmetadata: {name: r}\n", kApply);
  EXPECT_TRUE(runs.IsStatus(405, "MethodNotAllowed")) << runs.raw;
  Resp no_project = api().Call(
      "PATCH", NsPath("nope", "computeinstances", "web") + "?fieldManager=a", Yaml("Web"), kApply);
  EXPECT_TRUE(no_project.IsStatus(404, "NotFound")) << no_project.raw;
}

TEST_F(ApplyTest, ProfileRevisionsFollowAppliedSpecChanges) {
  std::string yaml =
      "apiVersion: paas.gantry.dev/v1\nkind: ComputeProfile\nmetadata: {name: p}\n"
      "spec: {templateRef: {name: t}, displayName: P}\n";
  Resp r =
      api().Call("PATCH", NsPath("default", "computeprofiles", "p") + "?fieldManager=a&force=true",
                 yaml, kApply);
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.obj().at("status").at("revision"), 2);
  r = api().Call("PATCH", NsPath("default", "computeprofiles", "p") + "?fieldManager=a", yaml,
                 kApply);
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.obj().at("status").at("revision"), 2);
}

TEST_F(ApplyTest, EveryWriteRecordsItsManager) {
  // The harness's client says User-Agent: gantry-cli; without ?fieldManager that names it.
  json::object created = api().CreateInstance("default", "web", "p", {{"env", "dev"}});
  EXPECT_THAT(Managers(created), ElementsAre("gantry-cli/Update"));
  EXPECT_EQ(FieldsOf(created, "gantry-cli"),
            R"({"f:metadata":{"f:labels":{"f:env":{}}},"f:spec":{"f:displayName":{},)"
            R"("f:profileRef":{"f:name":{}}}})");
  json::object put = created;
  put["spec"].as_object()["displayName"] = "Put";
  Resp replaced = api().Call("PUT", Path() + "?fieldManager=kubectl-replace", json::serialize(put));
  ASSERT_EQ(replaced.status, 200) << replaced.raw;
  EXPECT_THAT(Managers(replaced.obj()), ElementsAre("gantry-cli/Update", "kubectl-replace/Update"));
  EXPECT_EQ(FieldsOf(replaced.obj(), "kubectl-replace"), R"({"f:spec":{"f:displayName":{}}})");

  // A label removed by a merge patch leaves every manager.
  Resp unlabeled =
      api().Call("PATCH", Path() + "?fieldManager=kubectl-label",
                 R"({"metadata":{"labels":{"env":null}}})", "application/merge-patch+json");
  ASSERT_EQ(unlabeled.status, 200) << unlabeled.raw;
  EXPECT_EQ(FieldsOf(unlabeled.obj(), "gantry-cli"),
            R"({"f:spec":{"f:profileRef":{"f:name":{}}}})");
  EXPECT_EQ(Str(unlabeled.obj(), {"metadata", "labels"}), "");
  EXPECT_THAT(Managers(unlabeled.obj()),
              ElementsAre("gantry-cli/Update", "kubectl-replace/Update"));
}

TEST_F(ApplyTest, ManagedFieldsSentByClientsReplaceOrResetOrAreRefused) {
  json::object created = api().CreateInstance("default", "web", "p");
  json::object put = api().Get(Path()).obj();
  put["metadata"].as_object()["managedFields"] = json::parse(
      R"([{"manager":"someone","operation":"Update","apiVersion":"paas.gantry.dev/v1",)"
      R"("time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:profileRef":{"f:name":{}}}}}])");
  Resp r = api().Call("PUT", Path(), json::serialize(put));
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_THAT(Managers(r.obj()), ElementsAre("someone/Update"));

  put = r.obj();
  put["metadata"].as_object()["managedFields"] = json::parse("[{}]");
  put["spec"].as_object()["displayName"] = "Reset";
  r = api().Call("PUT", Path() + "?fieldManager=me", json::serialize(put));
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_THAT(Managers(r.obj()), ElementsAre("me/Update"));  // only what this write changed
  EXPECT_EQ(FieldsOf(r.obj(), "me"), R"({"f:spec":{"f:displayName":{}}})");

  put = r.obj();
  put["metadata"].as_object()["managedFields"] = json::parse(
      R"([{"manager":"x","operation":"Update","fieldsV1":{"f:spec":{"k:{\"a\":1}":{}}}}])");
  r = api().Call("PUT", Path(), json::serialize(put));
  EXPECT_TRUE(r.IsStatus(422, "Invalid")) << r.raw;
  EXPECT_THAT(r.cause_fields(), ElementsAre("metadata.managedFields[0].fieldsV1"));
  put["metadata"].as_object()["managedFields"] =
      json::parse(R"([{"manager":"x","operation":"Delete"}])");
  r = api().Call("PUT", Path(), json::serialize(put));
  EXPECT_TRUE(r.IsStatus(422, "Invalid")) << r.raw;
  EXPECT_THAT(r.cause_fields(), ElementsAre("metadata.managedFields[0].operation"));
}

TEST_F(ApplyTest, JsonPatch) {
  json::object created = api().CreateInstance("default", "web", "p");
  std::string rv(created.at("metadata").at("resourceVersion").as_string());
  Resp r = api().Call("PATCH", Path(),
                      R"([{"op":"add","path":"/spec/displayName","value":"J"},)"
                      R"({"op":"add","path":"/metadata/labels","value":{"a":"b"}},)"
                      R"({"op":"replace","path":"/status/phase","value":"Deployed"}])",
                      kJsonPatch);
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(Str(r.obj(), {"spec", "displayName"}), "J");
  EXPECT_EQ(Str(r.obj(), {"metadata", "labels", "a"}), "b");
  EXPECT_EQ(Str(r.obj(), {"status", "phase"}), "NotDeployed");  // status is the server's

  // Optimistic locking: test the resourceVersion read before, then change it.
  std::string stale = R"([{"op":"test","path":"/metadata/resourceVersion","value":")" + rv +
                      R"("},{"op":"replace","path":"/spec/displayName","value":"K"}])";
  Resp failed = api().Call("PATCH", Path(), stale, kJsonPatch);
  EXPECT_TRUE(failed.IsStatus(422, "Invalid")) << failed.raw;
  EXPECT_EQ(failed.message(),
            "the JSON patch's operation 1 (test) failed: the value at /metadata/resourceVersion "
            "is not the one tested");
  std::string old_rv_set = R"([{"op":"replace","path":"/metadata/resourceVersion","value":")" + rv +
                           R"("},{"op":"replace","path":"/spec/displayName","value":"K"}])";
  Resp conflict = api().Call("PATCH", Path(), old_rv_set, kJsonPatch);
  EXPECT_TRUE(conflict.IsStatus(409, "Conflict")) << conflict.raw;

  Resp invalid =
      api().Call("PATCH", Path(), R"([{"op":"add","path":"/spec/gpus","value":"x"}])", kJsonPatch);
  EXPECT_TRUE(invalid.IsStatus(422, "Invalid")) << invalid.raw;
  EXPECT_THAT(invalid.cause_fields(), ElementsAre("spec.gpus"));
  Resp malformed = api().Call("PATCH", Path(), R"({"op":"add"})", kJsonPatch);
  EXPECT_TRUE(malformed.IsStatus(400, "BadRequest")) << malformed.raw;
  Resp whole =
      api().Call("PATCH", Path(), R"([{"op":"replace","path":"","value":[]}])", kJsonPatch);
  EXPECT_TRUE(whole.IsStatus(422, "Invalid")) << whole.raw;
  Resp missing =
      api().Call("PATCH", NsPath("default", "computeinstances", "nope"), "[]", kJsonPatch);
  EXPECT_TRUE(missing.IsStatus(404, "NotFound")) << missing.raw;
  EXPECT_EQ(Str(api().Get(Path()).obj(), {"spec", "displayName"}), "J");
}

TEST_F(ApplyTest, SensitiveVariablesReappliedInPlaintextAreUnchanged) {
  api().CreateTemplate("default", "st",
                       json::array{json::object{{"name", "pw"}, {"sensitive", true}}});
  api().CreateProfile("default", "sp", "st");
  auto yaml = [](const std::string& pw) {
    return "apiVersion: paas.gantry.dev/v1\nkind: ComputeInstance\nmetadata: {name: web}\n"
           "spec:\n  profileRef: {name: sp}\n  variables: {pw: \"" +
           pw + "\"}\n";
  };
  Resp r = Apply(yaml("s3cret-1"), "a");
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(Str(r.obj(), {"spec", "variables", "pw"}), "<sensitive>");
  EXPECT_EQ(r.raw.find("s3cret"), std::string::npos);
  Resp again = Apply(yaml("s3cret-1"), "a");
  ASSERT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(again.meta("resourceVersion"), r.meta("resourceVersion"));
  // Another manager applying the same secret shares it; a different one conflicts.
  EXPECT_EQ(Apply(yaml("s3cret-1"), "b").status, 200);
  Resp conflict = Apply(yaml("s3cret-2"), "c");
  EXPECT_TRUE(conflict.IsStatus(409, "Conflict")) << conflict.raw;
  EXPECT_THAT(conflict.message(), HasSubstr(".spec.variables.pw"));
  EXPECT_EQ(conflict.raw.find("s3cret"), std::string::npos);
  Resp changed = Apply(yaml("s3cret-2"), "c", /*force=*/true);
  ASSERT_EQ(changed.status, 200) << changed.raw;
  EXPECT_NE(changed.meta("resourceVersion"), r.meta("resourceVersion"));
}

TEST_F(ApplyTest, ApplyIsAuthorizedAsAnUpdateAndACreate) {
  api().MustCreate(ClusterPath("users"),
                   json::object{{"metadata", json::object{{"name", "vic"}}},
                                {"spec", json::object{{"password", "vic-password-1"}}}});
  api().MustCreate(NsPath("default", "rolebindings"),
                   json::object{{"metadata", json::object{{"name", "vic"}}},
                                {"spec", json::object{{"user", "vic"}, {"role", "viewer"}}}});
  Resp t = api().Post(ClusterPath("users", "vic") + "/tokens", json::object{});
  ASSERT_EQ(t.status, 201) << t.raw;
  Api vic(gantryd_->base_url(), std::string(t.obj().at("token").as_string()));
  Resp r = vic.Call("PATCH", Path() + "?fieldManager=vic", Yaml("Web"), kApply);
  EXPECT_TRUE(r.IsStatus(403, "Forbidden")) << r.raw;
  EXPECT_EQ(api().Get(Path()).status, 404);
  ASSERT_EQ(Apply(Yaml("Web"), "a").status, 201);
  r = vic.Call("PATCH", Path() + "?fieldManager=vic", Yaml("Vic"), kApply);
  EXPECT_TRUE(r.IsStatus(403, "Forbidden")) << r.raw;
  r = vic.Call("PATCH", Path(), R"([{"op":"remove","path":"/spec/displayName"}])", kJsonPatch);
  EXPECT_TRUE(r.IsStatus(403, "Forbidden")) << r.raw;
}

// An applied template's driver configuration is checked by the driver, as on any write:
// 422 naming spec.local.<field> when the apply would create it and when it would change it.
TEST_F(ApplyTest, AppliedTemplateDriverConfigIsCheckedWhenSaved) {
  const std::string path = NsPath("default", "environmenttemplates", "web") + "?fieldManager=ci";
  auto yaml = [](const std::string& local) {
    return "apiVersion: paas.gantry.dev/v1\nkind: EnvironmentTemplate\nmetadata:\n  name: web\n"
           "spec:\n  displayName: Web\n  driver: local\n  local: " +
           local + "\n";
  };
  Resp refused = api().Call("PATCH", path, yaml("{command: [python3, 1]}"), kApply);
  ASSERT_TRUE(refused.IsStatus(422, "Invalid")) << refused.raw;
  EXPECT_THAT(refused.cause_fields(), ElementsAre("spec.local.command[1]"));

  Resp created = api().Call("PATCH", path, yaml("{command: [python3, app.py]}"), kApply);
  ASSERT_EQ(created.status, 201) << created.raw;
  Resp changed = api().Call("PATCH", path,
                            yaml("{command: [python3, app.py], restartPolicy: always}"), kApply);
  ASSERT_TRUE(changed.IsStatus(422, "Invalid")) << changed.raw;
  EXPECT_THAT(changed.cause_fields(), ElementsAre("spec.local.restartPolicy"));
}

TEST_F(ApplyTest, StrategicMergeIsRefusedWithAHint) {
  api().CreateInstance("default", "web", "p");
  Resp r = api().Call("PATCH", Path(), R"({"spec":{}})", "application/strategic-merge-patch+json");
  EXPECT_TRUE(r.IsStatus(415, "UnsupportedMediaType")) << r.raw;
  EXPECT_THAT(r.message(), HasSubstr("use kubectl patch --type=merge or --type=json"));
}

}  // namespace
}  // namespace gantry::testing
