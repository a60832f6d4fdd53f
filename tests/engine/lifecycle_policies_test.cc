// The lifecycle controller against a real gantryd (SQLite, and PostgreSQL as the _pg run):
// a profile's ttl of 3s stops a deployed exec instance with reason TTLExpired after an
// ExpiresSoon warning, which the core events list, stock kubectl (get events, describe) and
// the audit log (done by system:lifecycle) show; a service instance whose service profile has
// a ttl of 3s is stopped the same way while its compute instance runs on; a gantryd killed
// with SIGKILL before a deadline and started again after it fires that deadline once.
//
// No sleeps: each step waits for a condition (a phase, an event, the wall clock passing a
// stored deadline) with PollUntil, whose deadline only bounds a failure.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "engine_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

// Runs argv to completion (stdin /dev/null); stdout and stderr together.
struct Ran {
  int code = -1;
  std::string output;
};
Ran RunProcess(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  Ran r;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) r.output.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

class LifecyclePoliciesTest : public EngineTest {
 protected:
  // kubectl sends bearer tokens only over TLS.
  std::vector<std::string> Args() override {
    auto args = EngineTest::Args();
    args.insert(args.end(), {"--tls-listen", "127.0.0.1:0"});
    return args;
  }

  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    // An exec template whose script takes stop and start as well.
    CreateExecTemplate("std-tmpl", json::array{StandardScript()},
                       json::object{{"actions", json::array{"apply", "destroy", "stop", "start"}}});
  }

  void CreateProfileWithTtl(const std::string& ttl) {
    api().MustCreate(
        NsPath("default", "computeprofiles"),
        json::object{
            {"apiVersion", "paas.gantry.dev/v1"},
            {"kind", "ComputeProfile"},
            {"metadata", {{"name", "short"}}},
            {"spec",
             {{"displayName", "Short-lived"},
              {"templateRef", {{"name", "std-tmpl"}}},
              {"lifecycle", {{"ttl", {{"default", ttl}, {"max", "1h"}, {"action", "Stop"}}}}}}}});
  }

  json::object DeployToSuccess(const std::string& name) {
    api().CreateInstance("default", name, "short");
    Resp r = Action(name, "deploy");
    EXPECT_EQ(r.status, 202) << r.raw;
    return WaitPhase(name, "Success");
  }

  int StopRuns(const std::string& name) {
    int n = 0;
    for (const auto& r : RunsOf(name))
      if (Str(r, "spec.action") == "stop") ++n;
    return n;
  }

  // Stock kubectl with a kubeconfig for this gantryd ("" when kubectl is not installed).
  std::string WriteKubeconfig() {
    if (!std::filesystem::exists("/usr/bin/kubectl")) return "";
    std::string path = Path("kubeconfig");
    std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters:\n- name: gantry\n  cluster: "
                        << "{server: https://127.0.0.1:" << gantryd_->tls_port()
                        << ", certificate-authority: " << gantryd_->data_dir()
                        << "/tls.crt}\nusers:\n- name: me\n  user: {token: " << kBootstrapToken
                        << "}\ncontexts:\n- name: gantry\n  context: "
                           "{cluster: gantry, user: me, namespace: default}\n"
                           "current-context: gantry\n";
    return path;
  }
  Ran Kubectl(const std::string& config, std::vector<std::string> args) {
    args.insert(args.begin(),
                {"/usr/bin/kubectl", "--kubeconfig", config, "--cache-dir", Path("kubectl-cache")});
    return RunProcess(args);
  }
};

TEST_F(LifecyclePoliciesTest, TtlStopsAfterAnExpiresSoonWarningShownEverywhere) {
  CreateProfileWithTtl("3s");
  json::object running = DeployToSuccess("nb");
  EXPECT_FALSE(Str(running, "status.expiresAt").empty()) << json::serialize(running);

  json::object stopped = WaitInstance(
      "nb", [](const json::object& o) { return Str(o, "status.phase") == "Stopped"; },
      "phase Stopped");
  EXPECT_EQ(Str(stopped, "status.reason"), "TTLExpired");
  EXPECT_EQ(StopRuns("nb"), 1);

  bool warned = false;
  for (const auto& e : EventsOf("nb"))
    if (Str(e, "reason") == "ExpiresSoon") {
      warned = true;
      EXPECT_EQ(Str(e, "type"), "Warning");
      EXPECT_EQ(Str(e, "involvedObject.uid"), Str(stopped, "metadata.uid"));
      EXPECT_THAT(Str(e, "message"), HasSubstr("the instance will be stopped at "));
      EXPECT_THAT(Str(e, "message"), HasSubstr("ttl 3s"));
    }
  EXPECT_TRUE(warned) << "no ExpiresSoon event";
  // The run events are still there.
  bool stop_run = false;
  for (const auto& e : EventsOf("nb")) stop_run = stop_run || Str(e, "reason") == "StopSucceeded";
  EXPECT_TRUE(stop_run);

  std::vector<json::object> audit;
  ASSERT_TRUE(PollUntil([&] { return !(audit = SystemAudit("nb")).empty(); }));
  ASSERT_EQ(audit.size(), 1u);
  EXPECT_EQ(Str(audit[0], "verb"), "stop");
  EXPECT_EQ(Str(audit[0], "objectRef.resource"), "computeinstances");
  EXPECT_EQ(Str(audit[0], "message"), "TTLExpired: ttl 3s expired");

  std::string config = WriteKubeconfig();
  if (config.empty()) GTEST_SKIP() << "kubectl is not installed (/usr/bin/kubectl)";
  Ran get = Kubectl(config, {"get", "events"});
  ASSERT_EQ(get.code, 0) << get.output;
  EXPECT_THAT(get.output, HasSubstr("ExpiresSoon"));
  Ran describe = Kubectl(config, {"describe", "ci", "nb"});
  ASSERT_EQ(describe.code, 0) << describe.output;
  EXPECT_THAT(describe.output, HasSubstr("ExpiresSoon"));
  EXPECT_THAT(describe.output, HasSubstr("TTLExpired"));
}

TEST_F(LifecyclePoliciesTest, AServiceInstanceWithATtlIsStoppedByTheController) {
  api().CreateProfile("default", "plain", "std-tmpl");  // compute without a ttl
  api().CreateInstance("default", "gpu", "plain");
  ASSERT_EQ(Action("gpu", "deploy").status, 202);
  WaitPhase("gpu", "Success");
  const std::string profiles = NsPath("default", "serviceprofiles");
  json::object profile{
      {"metadata", {{"name", "jupyter"}}},
      {"spec",
       {{"displayName", "Jupyter"},
        {"serviceType", "notebook"},
        {"templateRef", {{"name", "std-tmpl"}}},
        {"lifecycle", {{"ttl", {{"default", "96h"}, {"max", "1h"}, {"action", "Stop"}}}}}}}};
  // The ttl policy is checked as a compute profile's.
  Resp bad = api().Post(profiles, profile);
  EXPECT_TRUE(bad.IsStatus(422, "Invalid")) << bad.raw;
  EXPECT_THAT(bad.cause_message("spec.lifecycle.ttl.default"), HasSubstr("over the maximum 1h"))
      << bad.raw;
  // A service holds no GPUs: idle (and schedule) are its compute instance's, not its own.
  profile["spec"].as_object()["lifecycle"] = json::parse(R"({"idle": {"after": "30m"}})");
  Resp idle = api().Post(profiles, profile);
  EXPECT_TRUE(idle.IsStatus(422, "Invalid")) << idle.raw;
  EXPECT_THAT(idle.cause_fields(), ::testing::ElementsAre("spec.lifecycle.idle")) << idle.raw;
  profile["spec"].as_object()["lifecycle"] =
      json::parse(R"({"ttl": {"default": "3s", "max": "1h"}})");
  api().MustCreate(profiles, profile);

  const std::string services = NsPath("default", "serviceinstances");
  json::object service{{"metadata", {{"name", "nb"}}},
                       {"spec",
                        {{"profileRef", {{"name", "jupyter"}}},
                         {"computeRef", {{"name", "gpu"}}},
                         {"lifecycle", {{"ttl", "2h"}}}}}};
  Resp over = api().Post(services, service);
  EXPECT_TRUE(over.IsStatus(422, "Invalid")) << over.raw;
  EXPECT_THAT(over.cause_message("spec.lifecycle.ttl"),
              HasSubstr("ttl 2h is over the profile's maximum 1h"))
      << over.raw;
  service["spec"].as_object().erase("lifecycle");
  api().MustCreate(services, service);
  ASSERT_EQ(api().Post(services + "/nb/deploy", json::object{}).status, 202);

  json::object stopped;
  ASSERT_TRUE(PollUntil([&] {
    Resp r = api().Get(services + "/nb");
    stopped = r.status == 200 ? r.obj() : json::object{};
    return Str(stopped, "status.phase") == "Stopped";
  })) << json::serialize(stopped);
  EXPECT_EQ(Str(stopped, "status.reason"), "TTLExpired");
  EXPECT_EQ(Str(Get("gpu"), "status.phase"), "Success");  // its compute instance runs on

  bool warned = false;
  for (const auto& e : EventsOf("nb", "ServiceInstance"))
    warned = warned || (Str(e, "reason") == "ExpiresSoon" &&
                        Str(e, "involvedObject.uid") == Str(stopped, "metadata.uid"));
  EXPECT_TRUE(warned) << "no ExpiresSoon event";
  std::vector<json::object> audit;
  ASSERT_TRUE(PollUntil([&] { return !(audit = SystemAudit("nb")).empty(); }));
  ASSERT_EQ(audit.size(), 1u);
  EXPECT_EQ(Str(audit[0], "verb"), "stop");
  EXPECT_EQ(Str(audit[0], "objectRef.resource"), "serviceinstances");
  EXPECT_EQ(Str(audit[0], "message"), "TTLExpired: ttl 3s expired");

  // A longer ttl is nothing to deploy: deployedGeneration follows the generation.
  const int64_t gen = Int(stopped, "metadata.generation", 0);
  ASSERT_EQ(Int(stopped, "status.deployedGeneration", 0), gen) << json::serialize(stopped);
  Resp longer =
      api().Patch(services + "/nb", json::parse(R"({"spec": {"lifecycle": {"ttl": "30m"}}})"));
  ASSERT_EQ(longer.status, 200) << longer.raw;
  EXPECT_EQ(Int(longer.obj(), "metadata.generation", 0), gen + 1);
  EXPECT_EQ(Int(longer.obj(), "status.deployedGeneration", 0), gen + 1) << longer.raw;
}

TEST_F(LifecyclePoliciesTest, Kill9BeforeTheDeadlineThenRestartAfterItFiresOnce) {
  CreateProfileWithTtl("4s");
  json::object running = DeployToSuccess("nb");
  auto expires = ParseUtc(Str(running, "status.expiresAt"));
  ASSERT_TRUE(expires) << json::serialize(running);
  EXPECT_EQ(StopRuns("nb"), 0);
  ASSERT_LT(std::chrono::system_clock::now(), *expires) << "the deadline passed before the kill";
  gantryd_->Kill9();

  // Down over the deadline.
  ASSERT_TRUE(PollUntil([&] { return std::chrono::system_clock::now() > *expires; }));
  ASSERT_TRUE(gantryd_->Restart().ok());
  Reconnect();
  json::object stopped = WaitInstance(
      "nb", [](const json::object& o) { return Str(o, "status.phase") == "Stopped"; },
      "phase Stopped");
  EXPECT_EQ(Str(stopped, "status.reason"), "TTLExpired");
  EXPECT_EQ(StopRuns("nb"), 1);
  std::vector<json::object> audit;
  ASSERT_TRUE(PollUntil([&] { return !(audit = SystemAudit("nb")).empty(); }));
  EXPECT_EQ(audit.size(), 1u);
}

}  // namespace
}  // namespace gantry::testing
