#include "cli/printers.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "client/yaml_json.h"

namespace gantry::cli {
namespace {

namespace json = boost::json;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);  // 2027-01-15T08:00:00Z

std::vector<json::object> Instances() {
  return {
      json::parse(R"({"metadata":{"name":"gpu-1","namespace":"ml","creationTimestamp":)"
                  R"("2027-01-15T07:55:00Z"},"spec":{"displayName":"GPU one","profileRef":)"
                  R"({"name":"h100-x8","namespace":"platform"},"sharing":{"mode":"Selected",)"
                  R"("projects":["a"]}},"status":{"phase":"InProgress","profileRevision":4}})")
          .as_object(),
      json::parse(R"({"metadata":{"name":"cpu","namespace":"ml","creationTimestamp":)"
                  R"("2027-01-13T08:00:00Z"},"spec":{"profileRef":{"name":"small",)"
                  R"("namespace":"ml"}},"status":{"phase":"NotDeployed"}})")
          .as_object(),
  };
}

TEST(RenderTable, ComputeInstances) {
  EXPECT_EQ(
      RenderTable(*ResolveKind("ci"), Instances(), {false, false, kNow}),
      "NAME   DISPLAY NAME  PROFILE           EXPIRES  GPU%    CREATED  STATUS        SHARING\n"
      "gpu-1  GPU one       platform/h100-x8  <none>   <none>  5m       In Progress   "
      "Selected(1)\n"
      "cpu    <none>        small             <none>   <none>  2d       Not Deployed  None\n");
}

TEST(RenderTable, AllProjectsAndWide) {
  std::string t = RenderTable(*ResolveKind("ci"), Instances(), {true, true, kNow});
  EXPECT_EQ(
      t.substr(0, t.find('\n')),
      "PROJECT  NAME   DISPLAY NAME  PROFILE           EXPIRES  GPU%    CREATED  STATUS        "
      "SHARING      PROFILE REVISION  REASON  ADMISSION  POSITION  CREATED AT");
  EXPECT_NE(t.find("ml       gpu-1"), std::string::npos) << t;
  EXPECT_NE(t.find("2027-01-15T07:55:00Z"), std::string::npos) << t;
}

TEST(RenderTable, ProfilesTemplatesProjectsAndOthers) {
  auto profile =
      json::parse(
          R"({"metadata":{"name":"h100-x8","creationTimestamp":"2027-01-15T05:00:00Z"},)"
          R"("spec":{"displayName":"8x H100","templateRef":{"name":"train"},"resources":{"gpu":)"
          R"({"type":"h100","count":8}},"sharing":{"mode":"All"}},"status":{"revision":4}})")
          .as_object();
  EXPECT_EQ(RenderTable(*ResolveKind("cp"), {profile}, {false, false, kNow}),
            "NAME     DISPLAY NAME  TEMPLATE  GPU       REVISION  SHARING  AGE\n"
            "h100-x8  8x H100       train     h100 x 8  4         All      3h\n");
  auto tmpl = json::parse(R"({"metadata":{"name":"train"},"spec":{"driver":"exec"},)"
                          R"("status":{"revision":1}})")
                  .as_object();
  EXPECT_EQ(RenderTable(*ResolveKind("et"), {tmpl}, {false, false, kNow}),
            "NAME   DISPLAY NAME  DRIVER  REVISION  AGE\n"
            "train  <none>        exec    1         <unknown>\n");
  auto proj = json::parse(R"({"metadata":{"name":"ml","creationTimestamp":"2027-01-15T07:59:30Z"},)"
                          R"("spec":{"displayName":"ML research"}})")
                  .as_object();
  auto spent =
      json::parse(R"({"metadata":{"name":"cv","creationTimestamp":"2027-01-15T07:00:00Z"},)"
                  R"("spec":{"budget":{"monthly":1000}},"status":{"spend":{"month":)"
                  R"("2027-01","cost":412.5,"currency":"EUR","monthly":1000,"percent":41}}})")
          .as_object();
  EXPECT_EQ(RenderTable(*ResolveKind("proj"), {proj, spent}, {false, true, kNow}),
            "NAME  DISPLAY NAME  BUDGET                 AGE\n"
            "ml    ML research   <none>                 30s\n"
            "cv    <none>        412.50/1000 EUR (41%)  1h\n");
  EXPECT_EQ(RenderTable(*ResolveKind("rolebindings"), {proj}, {false, false, kNow}),
            "NAME  AGE\nml    30s\n");
}

TEST(RenderTable, ServiceProfiles) {
  auto sp =
      json::parse(
          R"({"metadata":{"name":"jupyter","namespace":"ml","creationTimestamp":"2027-01-15T05:00:00Z"},)"
          R"("spec":{"displayName":"Jupyter","serviceType":"notebook","templateRef":{"name":"nb"},)"
          R"("computeSelector":{"matchLabels":{"tier":"gpu"},"matchExpressions":[)"
          R"({"key":"zone","operator":"In","values":["a","b"]},{"key":"spot","operator":"DoesNotExist"},)"
          R"({"key":"gpu","operator":"Exists"},{"key":"os","operator":"NotIn","values":["win"]}]},)"
          R"("autoCreateCompute":{"profileRef":{"name":"small","namespace":"platform"}},)"
          R"("sharing":{"mode":"All"}},"status":{"revision":2}})")
          .as_object();
  auto bare = json::parse(R"({"metadata":{"name":"ray"},"spec":{"serviceType":"ray",)"
                          R"("templateRef":{"name":"ray"}},"status":{"revision":1}})")
                  .as_object();
  EXPECT_EQ(RenderTable(*ResolveKind("sp"), {sp, bare}, {false, false, kNow}),
            "NAME     DISPLAY NAME  TYPE      TEMPLATE  REVISION  AGE\n"
            "jupyter  Jupyter       notebook  nb        2         3h\n"
            "ray      <none>        ray       ray       1         <unknown>\n");
  std::string wide = RenderTable(*ResolveKind("sp"), {sp, bare}, {true, false, kNow});
  EXPECT_EQ(wide.substr(0, wide.find('\n')),
            "NAME     DISPLAY NAME  TYPE      TEMPLATE  REVISION  AGE        COMPUTE SELECTOR"
            "                                 AUTO-CREATE COMPUTE  SHARING  CREATED AT");
  EXPECT_NE(wide.find("tier=gpu,zone in (a,b),!spot,gpu,os notin (win)  platform/small"),
            std::string::npos)
      << wide;
  EXPECT_NE(wide.find("<any>"), std::string::npos) << wide;
}

TEST(RenderTable, ServiceInstances) {
  std::vector<json::object> items = {
      json::parse(R"({"metadata":{"name":"nb","namespace":"ml","creationTimestamp":)"
                  R"("2027-01-15T07:55:00Z"},"spec":{"displayName":"Notebook","profileRef":)"
                  R"({"name":"jupyter"},"computeRef":{"name":"gpu-1","namespace":"platform"}},)"
                  R"("status":{"phase":"Waiting","reason":"ComputeNotReady","profileRevision":2}})")
          .as_object(),
      json::parse(R"({"metadata":{"name":"mlflow","namespace":"ml","creationTimestamp":)"
                  R"("2027-01-13T08:00:00Z"},"spec":{"profileRef":{"name":"mlops"},)"
                  R"("computeRef":{"name":"gpu-2","namespace":"ml"}},"status":{"phase":"Success",)"
                  R"("outputs":{"endpoint":"http://h:1","run":"7"}}})")
          .as_object(),
  };
  EXPECT_EQ(RenderTable(*ResolveKind("si"), items, {false, false, kNow}),
            "NAME    DISPLAY NAME  PROFILE  COMPUTE         STATUS   EXPIRES  GPU%    AGE\n"
            "nb      Notebook      jupyter  platform/gpu-1  Waiting  <none>   <none>  5m\n"
            "mlflow  <none>        mlops    gpu-2           Success  <none>   <none>  2d\n");
  EXPECT_EQ(RenderTable(*ResolveKind("serviceinstances"), items, {true, false, kNow}),
            "NAME    DISPLAY NAME  PROFILE  COMPUTE         STATUS   EXPIRES  GPU%    AGE  "
            "PROFILE REVISION  REASON           OUTPUTS                    SHARING  CREATED AT\n"
            "nb      Notebook      jupyter  platform/gpu-1  Waiting  <none>   <none>  5m   "
            "2                 ComputeNotReady  <none>                     None     "
            "2027-01-15T07:55:00Z\n"
            "mlflow  <none>        mlops    gpu-2           Success  <none>   <none>  2d   "
            "<none>            <none>           endpoint=http://h:1,run=7  None     "
            "2027-01-13T08:00:00Z\n");
}

TEST(RenderTable, NodesShowTheirGpusNotAnAge) {
  auto node = json::parse(R"({"metadata":{"name":"gpu-host"},"status":{"gpuSource":"nvidia-smi",)"
                          R"("capacity":{"a100":2,"h100":8},"allocated":{"a100":0,"h100":3}}})")
                  .as_object();
  EXPECT_EQ(RenderTable(*ResolveKind("nodes"), {node}, {false, false, kNow}),
            "NAME      GPU SOURCE  GPUS (ALLOCATED/CAPACITY)\n"
            "gpu-host  nvidia-smi  a100 0/2,h100 3/8\n");
}

TEST(RenderNames, KindSlashName) {
  EXPECT_EQ(RenderNames(*ResolveKind("ci"), Instances()),
            "computeinstance/gpu-1\ncomputeinstance/cpu\n");
}

TEST(RenderDocument, ObjectAndList) {
  auto items = Instances();
  std::string one = RenderDocument(*ResolveKind("ci"), {items[0]}, false, "json");
  auto parsed = json::parse(one).as_object();
  EXPECT_EQ(parsed["kind"], "ComputeInstance");
  EXPECT_EQ(parsed["apiVersion"], "paas.gantry.dev/v1");
  std::string list = RenderDocument(*ResolveKind("ci"), items, true, "yaml");
  auto docs = client::YamlToJsonObjects(list);
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 2u);  // a List expands back into its items
  EXPECT_EQ((*docs)[1]["metadata"].at("name"), "cpu");
  EXPECT_EQ(list.substr(0, 24), "apiVersion: v1\nkind: Lis");
}

TEST(RenderRevisions, BothShapes) {
  std::vector<json::object> revs = {
      json::parse(R"({"revision":2,"creationTimestamp":"2027-01-15T07:00:00Z"})").as_object(),
      json::parse(R"({"metadata":{"creationTimestamp":"2027-01-14T08:00:00Z"},)"
                  R"("status":{"revision":1}})")
          .as_object()};
  EXPECT_EQ(RenderRevisions(revs, {false, false, kNow}),
            "REVISION  CREATED\n2         1h\n1         1d\n");
}

TEST(RenderDescribe, FlattensSpecAndStatus) {
  auto obj =
      json::parse(
          R"({"kind":"ComputeInstance","metadata":{"name":"gpu-1","namespace":"ml",)"
          R"("labels":{"env":"prod","team":"llm"},"creationTimestamp":"2027-01-15T07:55:00Z"},)"
          R"("spec":{"displayName":"GPU one","profileRef":{"name":"h100"},"variables":{"nodes":"12"},)"
          R"("tags":["a"]},"status":{"phase":"Success","conditions":[{"type":"Ready",)"
          R"("status":"True","reason":"Deployed","lastTransitionTime":"2027-01-15T07:58:00Z"}]}})")
          .as_object();
  EXPECT_EQ(RenderDescribe(*ResolveKind("ci"), obj, kNow),
            "Name:         gpu-1\n"
            "Project:      ml\n"
            "Kind:         ComputeInstance\n"
            "Labels:       env=prod\n"
            "              team=llm\n"
            "Annotations:  <none>\n"
            "Created:      2027-01-15T07:55:00Z (5m ago)\n"
            "Spec:\n"
            "  displayName:      GPU one\n"
            "  profileRef.name:  h100\n"
            "  variables.nodes:  12\n"
            "  tags[0]:          a\n"
            "Status:\n"
            "  phase:  Success\n"
            "Lifecycle:\n"
            "  Started:                <none>\n"
            "  Expires:                <none>\n"
            "  TTL:                    <profile default>\n"
            "  GPU%:                   <none>\n"
            "  Idle Since:             <none>\n"
            "  Last Automatic Action:  <none>\n"
            "Conditions:\n"
            "  TYPE   STATUS  REASON    MESSAGE  LAST TRANSITION\n"
            "  Ready  True    Deployed  <none>   2m ago\n");
}

// The lifecycle as `gantry get` shows it (the server's Table has the same cells): the time
// left until status.expiresAt in kubectl's HumanDuration, "expired" once past, GPU%.
TEST(RenderTable, ComputeInstanceLifecycleColumns) {
  auto with = [](const std::string& status) {
    return json::parse(R"({"metadata":{"name":"nb","namespace":"ml","creationTimestamp":)"
                       R"("2027-01-15T06:00:00Z"},"spec":{"profileRef":{"name":"a100"}},)"
                       R"("status":)" +
                       status + "}")
        .as_object();
  };
  std::vector<json::object> items = {
      with(R"({"phase":"Success","expiresAt":"2027-01-15T12:13:00Z","gpuUtilization":37})"),
      with(R"({"phase":"Success","expiresAt":"2027-01-15T10:13:00Z","gpuUtilization":0})"),
      with(R"({"phase":"Success","expiresAt":"2027-01-15T08:00:45Z","gpuUtilization":99.6})"),
      with(R"({"phase":"Stopped","reason":"TTLExpired","expiresAt":"2027-01-15T07:00:00Z"})"),
  };
  EXPECT_EQ(RenderTable(*ResolveKind("ci"), items, {false, false, kNow}),
            "NAME  DISPLAY NAME  PROFILE  EXPIRES  GPU%    CREATED  STATUS   SHARING\n"
            "nb    <none>        a100     4h13m    37%     2h       Success  None\n"
            "nb    <none>        a100     133m     0%      2h       Success  None\n"
            "nb    <none>        a100     45s      100%    2h       Success  None\n"
            "nb    <none>        a100     expired  <none>  2h       Stopped  None\n");
}

// describe's Lifecycle section: what the server did by itself is said in words.
TEST(RenderDescribe, LifecycleOfAStoppedInstance) {
  auto obj = json::parse(R"({"metadata":{"name":"nb","namespace":"ml"},)"
                         R"("spec":{"profileRef":{"name":"a100"},"lifecycle":{"ttl":"3h"}},)"
                         R"("status":{"phase":"Stopped","reason":"TTLExpired",)"
                         R"("startedAt":"2027-01-15T04:00:00Z","expiresAt":"2027-01-15T07:00:00Z",)"
                         R"("gpuUtilization":3,"idleSince":"2027-01-15T06:48:00Z"}})")
                 .as_object();
  std::string d = RenderDescribe(*ResolveKind("ci"), obj, kNow);
  EXPECT_NE(d.find("Lifecycle:\n"
                   "  Started:                2027-01-15T04:00:00Z (4h ago)\n"
                   "  Expires:                2027-01-15T07:00:00Z (expired)\n"
                   "  TTL:                    3h\n"
                   "  GPU%:                   3%\n"
                   "  Idle Since:             2027-01-15T06:48:00Z (72m ago)\n"
                   "  Last Automatic Action:  Stopped: TTL expired\n"),
            std::string::npos)
      << d;
  EXPECT_EQ(AutomaticActionText(
                json::parse(R"({"status":{"phase":"Stopped","reason":"Idle"}})").as_object()),
            "Stopped: idle");
  EXPECT_EQ(
      AutomaticActionText(
          json::parse(R"({"status":{"phase":"NotDeployed","reason":"Scheduled"}})").as_object()),
      "Not Deployed: scheduled stop");
  EXPECT_EQ(
      AutomaticActionText(
          json::parse(R"({"status":{"phase":"Stopped","reason":"StoppedByUser"}})").as_object()),
      "");
}

// describe's Events: the lifecycle warnings with the runs, oldest first, as kubectl lists them.
TEST(RenderEvents, OldestFirstWithTheirSource) {
  std::vector<json::object> events = {
      json::parse(R"({"type":"Warning","reason":"ExpiresSoon","message":"expires in 10m",)"
                  R"("lastTimestamp":"2027-01-15T07:50:00Z","source":{"component":"gantryd"}})")
          .as_object(),
      json::parse(R"({"type":"Normal","reason":"DeploySucceeded","message":"run nb-1 succeeded",)"
                  R"("firstTimestamp":"2027-01-15T06:00:00Z","reportingComponent":"gantryd"})")
          .as_object(),
  };
  EXPECT_EQ(RenderEvents(events, kNow),
            "Events:\n"
            "  TYPE     REASON           AGE  FROM     MESSAGE\n"
            "  Normal   DeploySucceeded  2h   gantryd  run nb-1 succeeded\n"
            "  Warning  ExpiresSoon      10m  gantryd  expires in 10m\n");
  EXPECT_EQ(RenderEvents({}, kNow), "Events:  <none>\n");
}

}  // namespace
}  // namespace gantry::cli
