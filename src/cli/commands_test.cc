// Commands driven end to end through RunCli against an in-memory fake of gantryd.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "cli/apply.h"
#include "cli/cli.h"
#include "cli/config.h"
#include "cli/context.h"

namespace gantry::cli {
namespace {

namespace json = boost::json;

struct Request {
  std::string method, target, body;
};

// Answers by "METHOD target" from a queue of scripted responses; unknown requests get 404.
class FakeTransport : public client::HttpTransport {
 public:
  void On(const std::string& method, const std::string& target, int status, std::string body) {
    script_[method + " " + target].push_back({status, "application/json", std::move(body), {}});
  }
  absl::StatusOr<client::HttpResponse> Send(std::string_view method, std::string_view target,
                                            std::string_view body, std::string_view) override {
    requests.push_back({std::string(method), std::string(target), std::string(body)});
    if (unreachable) {
      return absl::UnavailableError("cannot reach gantryd at http://fake:1: connection refused");
    }
    auto it = script_.find(std::string(method) + " " + std::string(target));
    if (it == script_.end() || it->second.empty()) {
      return client::HttpResponse{
          404,
          "application/json",
          R"({"kind":"Status","code":404,"reason":"NotFound","message":"not found: )" +
              std::string(target) + "\"}",
          {}};
    }
    client::HttpResponse r = it->second.front();
    if (it->second.size() > 1) it->second.pop_front();
    return r;
  }
  absl::Status Stream(std::string_view, const std::function<bool(std::string_view)>&) override {
    return absl::UnimplementedError("no streams");
  }
  const std::string& base_url() const override { return url_; }

  std::vector<Request> requests;
  bool unreachable = false;

 private:
  std::map<std::string, std::deque<client::HttpResponse>> script_;
  std::string url_ = "http://fake:1";
};

constexpr char kPrefix[] = "/apis/paas.gantry.dev/v1";

class CliTest : public ::testing::Test {
 protected:
  int Run(std::vector<std::string> args) {
    out.str("");
    err.str("");
    fake.requests.clear();
    args.insert(args.begin(), "gantry");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    CliEnvironment env;
    env.out = &out;
    env.err = &err;
    env.in = &in;
    env.getenv = [this](const std::string& n) -> std::optional<std::string> {
      auto it = vars.find(n);
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
    env.read_file = [this](const std::string& p) -> absl::StatusOr<std::string> {
      auto it = files.find(p);
      if (it == files.end()) return absl::NotFoundError(p + ": no such file or not readable");
      return it->second;
    };
    env.now = [] { return absl::FromUnixSeconds(1'800'000'000); };
    env.connect = [this](const Settings& s) {
      connected_server = s.server;
      connected_token = s.token;
      connected_ca_file = s.ca_file;
      struct Borrowed : client::HttpTransport {
        FakeTransport* f;
        explicit Borrowed(FakeTransport* f) : f(f) {}
        absl::StatusOr<client::HttpResponse> Send(std::string_view m, std::string_view t,
                                                  std::string_view b, std::string_view c) override {
          return f->Send(m, t, b, c);
        }
        absl::Status Stream(std::string_view t,
                            const std::function<bool(std::string_view)>& l) override {
          return f->Stream(t, l);
        }
        const std::string& base_url() const override { return f->base_url(); }
      };
      return std::unique_ptr<client::HttpTransport>(new Borrowed(&fake));
    };
    return RunCli(static_cast<int>(argv.size()), argv.data(), env);
  }

  FakeTransport fake;
  std::ostringstream out, err;
  std::istringstream in;
  std::map<std::string, std::string> vars;
  std::map<std::string, std::string> files;
  std::string connected_server, connected_token, connected_ca_file;
};

TEST_F(CliTest, GetFollowsContinueAndPrintsATable) {
  std::string base = std::string(kPrefix) + "/namespaces/ml/computeinstances?limit=500";
  fake.On("GET", base + "&labelSelector=env%3Dprod", 200,
          R"({"kind":"ComputeInstanceList","metadata":{"continue":"tok 1"},"items":[)"
          R"({"metadata":{"name":"a","namespace":"ml","creationTimestamp":"2027-01-15T07:55:00Z"},)"
          R"("spec":{"profileRef":{"name":"p"}},"status":{"phase":"Success"}}]})");
  fake.On("GET", base + "&labelSelector=env%3Dprod&continue=tok%201", 200,
          R"({"kind":"ComputeInstanceList","metadata":{"resourceVersion":"9"},"items":[)"
          R"({"metadata":{"name":"bb","namespace":"ml"},"spec":{"displayName":"B"}}]})");
  EXPECT_EQ(Run({"get", "instances", "-n", "ml", "-l", "env=prod"}), 0) << err.str();
  EXPECT_EQ(out.str(),
            "NAME  DISPLAY NAME  PROFILE  EXPIRES  GPU%    CREATED    STATUS   SHARING\n"
            "a     <none>        p        <none>   <none>  5m         Success  None\n"
            "bb    B             <none>   <none>   <none>  <unknown>  <none>   None\n");
  EXPECT_EQ(fake.requests.size(), 2u);
}

TEST_F(CliTest, EmptyListSaysSoOnStderr) {
  fake.On("GET", std::string(kPrefix) + "/namespaces/default/computeprofiles?limit=500", 200,
          R"({"kind":"ComputeProfileList","metadata":{},"items":[]})");
  EXPECT_EQ(Run({"get", "cp"}), 0);
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(err.str(), "No resources found in default project.\n");
}

TEST_F(CliTest, GetOneAsNameAndYaml) {
  fake.On("GET", std::string(kPrefix) + "/projects/ml", 200,
          R"({"apiVersion":"paas.gantry.dev/v1","kind":"Project","metadata":{"name":"ml"}})");
  EXPECT_EQ(Run({"get", "proj", "ml", "-o", "name"}), 0);
  EXPECT_EQ(out.str(), "project/ml\n");
  EXPECT_EQ(Run({"-n", "x", "get", "project", "ml", "-o", "yaml"}), 0);
  EXPECT_EQ(out.str(), "apiVersion: paas.gantry.dev/v1\nkind: Project\nmetadata:\n  name: ml\n");
}

TEST_F(CliTest, ServerErrorsPrintTheirMessageAndExit1) {
  EXPECT_EQ(Run({"get", "ci", "nope"}), 1);
  EXPECT_EQ(err.str(), "error: not found: " + std::string(kPrefix) +
                           "/namespaces/default/computeinstances/nope\n");
  fake.unreachable = true;
  EXPECT_EQ(Run({"get", "ci"}), 1);
  EXPECT_EQ(err.str(), "error: cannot reach gantryd at http://fake:1: connection refused\n");
}

TEST_F(CliTest, UsageErrorsExit2) {
  EXPECT_EQ(Run({}), 2);
  EXPECT_EQ(Run({"get"}), 2);
  EXPECT_EQ(Run({"get", "ci", "-o", "xml"}), 2);
  EXPECT_EQ(err.str(), "error: unknown output format \"xml\": use one of json, yaml, wide, name\n");
  EXPECT_EQ(Run({"get", "ci", "--bogus"}), 2);
  EXPECT_EQ(Run({"--help"}), 0);
  EXPECT_TRUE(absl::StrContains(out.str(), "apply"));
}

TEST_F(CliTest, ApplyCreatesConfiguresAndLeavesUnchanged) {
  files["m.yaml"] =
      "apiVersion: paas.gantry.dev/v1\nkind: ComputeInstance\nmetadata: {name: gpu-1}\n"
      "spec: {displayName: GPU, profileRef: {name: p}}\n---\n"
      "kind: ComputeProfile\nmetadata: {name: p, labels: {a: b}}\nspec: {displayName: P}\n---\n"
      "kind: Project\nmetadata: {name: ml}\nspec: {displayName: ML}\n";
  std::string ns = std::string(kPrefix) + "/namespaces/ml";
  // Project: absent → created. Profile: same → unchanged. Instance: different → configured.
  fake.On("POST", std::string(kPrefix) + "/projects", 201, "{}");
  fake.On("GET", ns + "/computeprofiles/p", 200,
          R"({"kind":"ComputeProfile","metadata":{"name":"p","resourceVersion":"3",)"
          R"("labels":{"a":"b"},"annotations":{}},"spec":{"displayName":"P"},"status":{}})");
  fake.On("GET", ns + "/computeinstances/gpu-1", 200,
          R"({"metadata":{"name":"gpu-1","resourceVersion":"7"},"spec":{"displayName":"old",)"
          R"("profileRef":{"name":"p"}}})");
  fake.On("PUT", ns + "/computeinstances/gpu-1", 200, "{}");
  EXPECT_EQ(Run({"apply", "-f", "m.yaml", "-n", "ml"}), 0) << err.str();
  EXPECT_EQ(out.str(),
            "project/ml created\ncomputeprofile/p unchanged\ncomputeinstance/gpu-1 configured\n");
  ASSERT_EQ(fake.requests.size(), 5u);
  EXPECT_EQ(fake.requests[0].target, std::string(kPrefix) + "/projects/ml");
  EXPECT_EQ(fake.requests[1].method, "POST");
  const Request& put = fake.requests[4];
  EXPECT_EQ(put.method, "PUT");
  json::object sent = json::parse(put.body).as_object();
  EXPECT_EQ(sent["metadata"].at("resourceVersion"), "7");
  EXPECT_EQ(sent["metadata"].at("namespace"), "ml");
  EXPECT_EQ(sent["spec"].at("displayName"), "GPU");
}

TEST_F(CliTest, ApplyContinuesAfterARefusalAndExits1) {
  files["a.yaml"] =
      "kind: ComputeInstance\nmetadata: {name: a}\n---\n"
      "kind: ComputeInstance\nmetadata: {name: b}\n";
  std::string col = std::string(kPrefix) + "/namespaces/default/computeinstances";
  fake.On("POST", col, 422,
          R"({"kind":"Status","code":422,"reason":"Invalid","message":"ComputeInstance \"a\" )"
          R"(is invalid: spec.profileRef.name: Required value"})");
  fake.On("POST", col, 201, "{}");
  EXPECT_EQ(Run({"apply", "-f", "a.yaml"}), 1);
  EXPECT_EQ(err.str(),
            "error: ComputeInstance \"a\" is invalid: spec.profileRef.name: Required value\n");
  EXPECT_EQ(out.str(), "computeinstance/b created\n");
}

TEST_F(CliTest, ApplyFromStdinAndBadFiles) {
  in.str("kind: Project\nmetadata: {name: p}\n");
  fake.On("POST", std::string(kPrefix) + "/projects", 201, "{}");
  EXPECT_EQ(Run({"apply", "-f", "-"}), 0) << err.str();
  EXPECT_EQ(out.str(), "project/p created\n");
  files["bad.yaml"] = "kind: Project\nmetadata:\n  name: [x\n";
  EXPECT_EQ(Run({"apply", "-f", "bad.yaml"}), 1);
  EXPECT_TRUE(absl::StartsWith(err.str(), "error: bad.yaml: line ")) << err.str();
  EXPECT_TRUE(fake.requests.empty());
  EXPECT_EQ(Run({"apply"}), 2);
}

TEST_F(CliTest, ApplyRefusesAProjectMismatch) {
  files["a.yaml"] = "kind: ComputeInstance\nmetadata: {name: a, namespace: other}\n";
  EXPECT_EQ(Run({"apply", "-f", "a.yaml", "-n", "ml"}), 1);
  EXPECT_EQ(err.str(),
            "error: computeinstance/a: the object's project \"other\" does not match --project "
            "\"ml\"\n");
}

TEST_F(CliTest, DeleteByNameAndFromFile) {
  std::string col = std::string(kPrefix) + "/namespaces/default/computeinstances";
  fake.On("DELETE", col + "/x", 200, "{}");
  fake.On("DELETE", col + "/y", 202, "{}");
  EXPECT_EQ(Run({"delete", "ci", "x", "y", "z"}), 1);
  EXPECT_EQ(out.str(), "computeinstance/x deleted\ncomputeinstance/y deleted\n");
  EXPECT_TRUE(absl::StartsWith(err.str(), "error: not found")) << err.str();
  files["d.yaml"] =
      "kind: Project\nmetadata: {name: p}\n---\nkind: ComputeInstance\n"
      "metadata: {name: x, namespace: p}\n";
  fake.On("DELETE", std::string(kPrefix) + "/namespaces/p/computeinstances/x", 200, "{}");
  fake.On("DELETE", std::string(kPrefix) + "/projects/p", 200, "{}");
  EXPECT_EQ(Run({"delete", "-f", "d.yaml"}), 0) << err.str();
  EXPECT_EQ(out.str(), "computeinstance/x deleted\nproject/p deleted\n");
}

TEST_F(CliTest, SettingsPrecedence) {
  files["/home/u/.config/gantry/config.yaml"] = "server: http://cfg:1\ntoken: t-cfg\nproject: p\n";
  vars["HOME"] = "/home/u";
  fake.On("GET", std::string(kPrefix) + "/namespaces/p/runs?limit=500", 200, R"({"items":[]})");
  EXPECT_EQ(Run({"get", "runs"}), 0);
  EXPECT_EQ(connected_server, "http://cfg:1");
  EXPECT_EQ(connected_token, "t-cfg");
  vars["GANTRY_SERVER"] = "http://env:2";
  vars["GANTRY_TOKEN"] = "t-env";
  Run({"get", "runs"});
  EXPECT_EQ(connected_server, "http://env:2");
  EXPECT_EQ(connected_token, "t-env");
  Run({"get", "runs", "--server", "http://flag:3", "--token", "t-flag"});
  EXPECT_EQ(connected_server, "http://flag:3");
  EXPECT_EQ(connected_token, "t-flag");
  // The CA of an https:// server: config caFile < GANTRY_CA_FILE < --ca-file.
  files["/home/u/.config/gantry/config.yaml"] += "caFile: /etc/cfg-ca.pem\n";
  Run({"get", "runs"});
  EXPECT_EQ(connected_ca_file, "/etc/cfg-ca.pem");
  vars["GANTRY_CA_FILE"] = "/etc/env-ca.pem";
  Run({"get", "runs"});
  EXPECT_EQ(connected_ca_file, "/etc/env-ca.pem");
  Run({"get", "runs", "--ca-file", "/etc/flag-ca.pem"});
  EXPECT_EQ(connected_ca_file, "/etc/flag-ca.pem");
  EXPECT_EQ(Run({"--config", "/missing.yaml", "get", "runs"}), 2);
  EXPECT_TRUE(absl::StrContains(err.str(), "/missing.yaml")) << err.str();
}

TEST(SettingsDefaults, NoConfigAnywhere) {
  auto s = ResolveSettings(
      {}, [](const std::string&) { return std::nullopt; },
      [](const std::string& p) -> absl::StatusOr<std::string> { return absl::NotFoundError(p); });
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->server, "http://127.0.0.1:8080");
  EXPECT_EQ(s->project, "default");
  EXPECT_FALSE(s->project_explicit);
}

TEST(SameDesiredState, ComparesSpecLabelsAndAnnotations) {
  auto o = [](const char* t) { return json::parse(t).as_object(); };
  EXPECT_TRUE(SameDesiredState(o(R"({"spec":{"a":1}})"),
                               o(R"({"metadata":{"labels":{},"uid":"u"},"spec":{"a":1.0},)"
                                 R"("status":{"phase":"Success"}})")));
  EXPECT_FALSE(SameDesiredState(o(R"({"spec":{"a":1}})"), o(R"({"spec":{"a":2}})")));
  EXPECT_FALSE(SameDesiredState(o(R"({"spec":{"a":"1"}})"), o(R"({"spec":{"a":1}})")));
  EXPECT_FALSE(
      SameDesiredState(o(R"({"metadata":{"labels":{"x":"y"}},"spec":{}})"), o(R"({"spec":{}})")));
  EXPECT_FALSE(SameDesiredState(o(R"({"metadata":{"annotations":{"n":"1"}}})"),
                                o(R"({"metadata":{"annotations":{"n":"2"}}})")));
  EXPECT_FALSE(
      SameDesiredState(o(R"({"spec":{"displayName":"A"}})"), o(R"({"spec":{"displayName":"B"}})")));
  EXPECT_TRUE(
      SameDesiredState(o(R"({"spec":{"list":[1,{"k":null}]}})"), o(R"({"spec":{"list":[1,{}]}})")));
}

TEST(LoadManifests, DirectoriesSortedAndRecursiveOnRequest) {
  namespace fs = std::filesystem;
  fs::path dir =
      fs::temp_directory_path() /
      ("gantry_cli_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
       "_" + std::to_string(reinterpret_cast<uintptr_t>(&dir)));
  fs::create_directories(dir / "sub");
  auto write = [](const fs::path& p, const std::string& text) { std::ofstream(p) << text; };
  write(dir / "b.yaml", "kind: Project\nmetadata: {name: b}\n");
  write(dir / "a.json", R"({"kind":"Project","metadata":{"name":"a"}})");
  write(dir / "c.yml", "kind: Project\nmetadata: {name: c}\n");
  write(dir / "notes.txt", "not a manifest");
  write(dir / "sub" / "d.yaml", "kind: Project\nmetadata: {name: d}\n");
  CommandContext ctx;
  ctx.read_file = ReadWholeFile;
  auto names = [](const std::vector<Manifest>& m) {
    std::string s;
    for (const auto& x : m) s += std::string(x.object.at("metadata").at("name").as_string());
    return s;
  };
  auto flat = LoadManifests(ctx, {dir.string()}, false);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_EQ(names(*flat), "abc");
  auto deep = LoadManifests(ctx, {dir.string()}, true);
  ASSERT_TRUE(deep.ok()) << deep.status();
  EXPECT_EQ(names(*deep), "abcd");
  auto missing = LoadManifests(ctx, {(dir / "nope.yaml").string()}, false);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  fs::remove_all(dir);
}

TEST(OrderForApply, StableByKind) {
  std::vector<Manifest> m;
  for (const char* k : {"ComputeInstance", "Widget", "Project", "ComputeProfile", "Project",
                        "EnvironmentTemplate"}) {
    m.push_back({json::object{{"kind", k}}, std::string(k) + std::to_string(m.size())});
  }
  OrderForApply(m);
  std::vector<std::string> got;
  for (const auto& x : m) got.push_back(x.source);
  EXPECT_EQ(got, (std::vector<std::string>{"Project2", "Project4", "EnvironmentTemplate5",
                                           "ComputeProfile3", "ComputeInstance0", "Widget1"}));
}

}  // namespace
}  // namespace gantry::cli
