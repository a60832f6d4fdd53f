// The container driver end to end (issue 23): a real gantryd deploys real Podman containers
// from an image built in the test from local files (container_fixture.h). Deploy: the
// endpoint answers, the container has its label, GPU, limits and env; stop: the container
// removed, its volume kept, its GPU free; start: a new container on that volume (data kept);
// destroy: no container and no volume left. A missing image fails with Podman's words, a container
// that exits before it is ready with its log (streamed into the run log). kill -9 of gantryd: the
// container runs on and is adopted again. Isolation: the workload cannot see gantryd's data
// directory or environment, and root inside is not root on the host.
#include <gtest/gtest.h>

#include "container_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using local_test::Assignments;
using local_test::EnvValue;
using local_test::GetNode;

// Each start appends to /data/starts (the volume) and publishes what the workload sees.
constexpr char kScript[] = R"SH(
echo "start" >> /data/starts
cp /data/starts /www/starts.txt
env | sort > /www/env.txt
cat /proc/self/uid_map > /www/uidmap.txt
)SH";

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

class ContainerDriverTest : public ContainerTest {
 protected:
  static constexpr char kSecretMark[] = "gantryd-only-7f3a";
  void Configure(GantrydProcess& gantryd) override {
    gantryd.SetEnv("GANTRY_TEST_GANTRYD_SECRET", kSecretMark);
  }

  // Deploys instance `name` of profile `profile` and waits for Success.
  json::object DeployOk(const std::string& name, const std::string& profile) {
    api().CreateInstance("default", name, profile);
    Deploy(name);
    return WaitPhase(name, "Success");
  }

  std::vector<std::string> VolumesOf(const std::string& uid) {
    return Podman({"volume", "ls", "-q", "--filter", "label=gantry.instance=" + uid}).lines;
  }
};

TEST_F(ContainerDriverTest, DeployStopStartDestroy) {
  CreateContainerTemplate("web", kScript);
  json::object resources = Gpu(1);
  resources["cpu"] = 1;
  resources["memoryGiB"] = 0.5;
  CreateLocalProfile("web-1gpu", "web", resources);
  json::object o = DeployOk("nb", "web-1gpu");
  const std::string uid = Str(o, "metadata.uid");
  const std::string container = "gantry-" + uid;
  const std::string endpoint = Str(o, "status.outputs.endpoint");
  EXPECT_EQ(endpoint.rfind(std::string("http://") + kAdvertiseHost + ":", 0), 0u) << endpoint;
  EXPECT_EQ(Str(o, "status.outputs.container"), container);
  const int port = PortOf(endpoint);
  ASSERT_GE(port, kMinPort);
  ASSERT_LE(port, kMaxPort);
  auto [status, body] = HttpGet(port, "/");
  EXPECT_EQ(status, 200);
  EXPECT_EQ(Joined(body), "hello from a container\n");

  // Its label, limits, GPU (no CDI spec here: NVIDIA_VISIBLE_DEVICES) and environment.
  EXPECT_EQ(Inspect(container, "{{index .Config.Labels \"gantry.instance\"}}"), uid);
  EXPECT_EQ(Inspect(container, "{{.HostConfig.Memory}}"), std::to_string(512 * 1024 * 1024));
  EXPECT_EQ(Inspect(container, "{{.HostConfig.NanoCpus}}"), "1000000000");
  const std::string gpu = local_test::JoinStrings(At(o, "status.gpus"));
  EXPECT_EQ(gpu.size(), 1u) << gpu;
  std::string env = Joined(HttpGet(port, "/env.txt").second);
  EXPECT_EQ(EnvValue(env, "NVIDIA_VISIBLE_DEVICES"), gpu);
  EXPECT_EQ(EnvValue(env, "GANTRY_GPUS"), gpu);
  EXPECT_EQ(EnvValue(env, "GANTRY_INSTANCE"), "nb");
  EXPECT_EQ(EnvValue(env, "GANTRY_PORT_HTTP"), std::to_string(port));
  EXPECT_EQ(EnvValue(env, "GANTRY_VAR_IMAGE"), kTestImage);
  EXPECT_EQ(EnvValue(env, "WORKLOAD_MARK"), "set-by-template");
  EXPECT_EQ(Joined(HttpGet(port, "/starts.txt").second), "start\n");
  EXPECT_EQ(VolumesOf(uid), std::vector<std::string>{container + "-data"});

  // Stop: the container is gone, its volume kept, the GPU free.
  const std::string id = Inspect(container, "{{.Id}}");
  ASSERT_EQ(Action("nb", "stop").status, 202);
  o = WaitPhase("nb", "Stopped");
  EXPECT_EQ(Inspect(container, "{{.State.Status}}"), "");
  EXPECT_EQ(VolumesOf(uid), std::vector<std::string>{container + "-data"});
  EXPECT_TRUE(At(o, "status.gpus").is_null()) << json::serialize(o);
  for (const auto& [index, owner] : Assignments(GetNode(api())))
    EXPECT_EQ(owner, "") << "GPU " << index;

  // Start: a new container of the same name on the same volume, what it wrote there kept.
  ASSERT_EQ(Action("nb", "start").status, 202);
  o = WaitPhase("nb", "Success");
  EXPECT_EQ(Inspect(container, "{{.State.Status}}"), "running");
  EXPECT_NE(Inspect(container, "{{.Id}}"), id);
  EXPECT_EQ(local_test::JoinStrings(At(o, "status.gpus")), gpu);
  const int again = PortOf(Str(o, "status.outputs.endpoint"));
  EXPECT_EQ(Joined(HttpGet(again, "/starts.txt").second), "start\nstart\n");

  // Stopped again while another instance takes its GPU: the start gets another GPU, and
  // its container sees that one.
  ASSERT_EQ(Action("nb", "stop").status, 202);
  WaitPhase("nb", "Stopped");
  json::object other = DeployOk("other", "web-1gpu");
  EXPECT_EQ(local_test::JoinStrings(At(other, "status.gpus")), gpu);
  ASSERT_EQ(Action("nb", "start").status, 202);
  o = WaitPhase("nb", "Success");
  const std::string moved = local_test::JoinStrings(At(o, "status.gpus"));
  EXPECT_NE(moved, gpu);
  const int third = PortOf(Str(o, "status.outputs.endpoint"));
  EXPECT_EQ(Joined(HttpGet(third, "/starts.txt").second), "start\nstart\nstart\n");
  EXPECT_EQ(EnvValue(Joined(HttpGet(third, "/env.txt").second), "NVIDIA_VISIBLE_DEVICES"), moved);
  ASSERT_EQ(Action("other", "destroy").status, 202);
  WaitPhase("other", "NotDeployed");

  // Destroy: no container, no volume.
  ASSERT_EQ(Action("nb", "destroy").status, 202);
  WaitPhase("nb", "NotDeployed");
  EXPECT_EQ(Inspect(container, "{{.State.Status}}"), "");
  EXPECT_EQ(VolumesOf(uid), std::vector<std::string>{});
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 0);
}

TEST_F(ContainerDriverTest, MissingImageFailsWithPodmansWords) {
  CreateContainerTemplate("web", kScript);
  CreateLocalProfile("cpu", "web", json::object{});
  api().CreateInstance("default", "bad", "cpu", {},
                       json::object{{"variables", {{"image", "localhost:1/gantry/none:1"}}}});
  Deploy("bad");
  json::object o = WaitPhase("bad", "Failed");
  const std::string message = Str(o, "status.message");
  EXPECT_NE(message.find("the image localhost:1/gantry/none:1 is not on this host and cannot be "
                         "pulled: "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("connection refused"), std::string::npos) << message;
  EXPECT_EQ(Inspect("gantry-" + Str(o, "metadata.uid"), "{{.State.Status}}"), "");
}

TEST_F(ContainerDriverTest, ExitBeforeReadyFailsWithTheLogAndLeavesNothing) {
  CreateContainerTemplate("web", "echo 'out of coffee'; exit 4");
  CreateLocalProfile("web-1gpu", "web", Gpu(1));
  api().CreateInstance("default", "crash", "web-1gpu");
  const std::string run = Deploy("crash");
  json::object o = WaitPhase("crash", "Failed");
  const std::string message = Str(o, "status.message");
  EXPECT_NE(message.find("the container exited with code 4 before it was ready; last log "
                         "lines:\nout of coffee"),
            std::string::npos)
      << message;
  // The container's output streamed into the run log.
  Resp log = api().Get(NsPath("default", "runs", run) + "/log");
  EXPECT_NE(log.raw.find("out of coffee"), std::string::npos) << log.raw;
  EXPECT_EQ(Inspect("gantry-" + Str(o, "metadata.uid"), "{{.State.Status}}"), "");
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 0);
}

TEST_F(ContainerDriverTest, BadConfigIsRefusedAtSave) {
  Resp r = api().Post(
      NsPath("default", "environmenttemplates"),
      json::object{
          {"apiVersion", "paas.gantry.dev/v1"},
          {"kind", "EnvironmentTemplate"},
          {"metadata", {{"name", "broken"}}},
          {"spec",
           {{"driver", "container"},
            {"container",
             {{"ports", json::array{json::object{{"name", "http"}, {"containerPort", 70000}}}},
              {"volumes", json::array{json::object{{"name", "Data"}, {"mountPath", "/"}}}}}}}}});
  ASSERT_EQ(r.status, 422) << r.raw;
  std::string fields;
  const json::value causes = At(r.obj(), "details.causes");
  ASSERT_TRUE(causes.is_array()) << r.raw;
  for (const auto& c : causes.get_array()) fields += Str(c.as_object(), "field") + ";";
  EXPECT_EQ(fields,
            "spec.container.image;spec.container.ports[0].containerPort;"
            "spec.container.volumes[0].name;spec.container.volumes[0].mountPath;")
      << r.raw;
}

TEST_F(ContainerDriverTest, Kill9OfGantrydReadoptsTheContainer) {
  CreateContainerTemplate("web", kScript);
  CreateLocalProfile("web-1gpu", "web", Gpu(1));
  json::object o = DeployOk("nb", "web-1gpu");
  const std::string container = "gantry-" + Str(o, "metadata.uid");
  const int port = PortOf(Str(o, "status.outputs.endpoint"));
  auto node_before = Assignments(GetNode(api()));

  gantryd_->Kill9();
  EXPECT_EQ(Inspect(container, "{{.State.Status}}"), "running");
  ASSERT_TRUE(gantryd_->Restart().ok()) << gantryd_->Log();
  Reconnect();
  o = Get("nb");
  EXPECT_EQ(Str(o, "status.phase"), "Success") << json::serialize(o);
  EXPECT_TRUE(gantryd_->WaitForLog("adopted the workload of instance default/nb"))
      << gantryd_->Log();
  EXPECT_EQ(Assignments(GetNode(api())), node_before);
  EXPECT_EQ(HttpGet(port, "/").first, 200);
  EXPECT_EQ(Podman({"ps", "-aq", "--filter", "label=gantry.owner=" + Owner()}).lines.size(), 1u);

  // Still supervised: a container that exits is reported.
  ASSERT_EQ(Podman({"kill", container}).exit_code, 0);
  o = WaitInstance(
      "nb", [](const json::object& i) { return Str(i, "status.reason") == "WorkloadExited"; },
      "the exit of the adopted container reported");
  EXPECT_NE(Str(o, "status.message").find("the container exited with code"), std::string::npos)
      << json::serialize(o);
  ASSERT_EQ(Action("nb", "destroy").status, 202);
  WaitPhase("nb", "NotDeployed");
  EXPECT_EQ(Inspect(container, "{{.State.Status}}"), "");
}

TEST_F(ContainerDriverTest, WorkloadCannotSeeGantrydsDataOrEnvironment) {
  const std::string data_dir = Owner();
  CreateContainerTemplate("web", std::string(kScript) + "ls " + data_dir +
                                     " > /www/datadir.txt 2>&1 || echo hidden >> /www/datadir.txt");
  CreateLocalProfile("cpu", "web", json::object{});
  json::object o = DeployOk("iso", "cpu");
  const int port = PortOf(Str(o, "status.outputs.endpoint"));
  std::string env = Joined(HttpGet(port, "/env.txt").second);
  EXPECT_EQ(env.find(kSecretMark), std::string::npos) << env;
  EXPECT_EQ(env.find(data_dir), std::string::npos) << env;
  EXPECT_EQ(EnvValue(env, "NVIDIA_VISIBLE_DEVICES"), "void") << "no GPU for a profile without";
  std::string listing = Joined(HttpGet(port, "/datadir.txt").second);
  EXPECT_NE(listing.find("hidden"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("gantry.db"), std::string::npos) << listing;
  if (::geteuid() == 0) {
    // Root inside is an unprivileged host user: uid 0 maps to the driver's base.
    std::string map = Joined(HttpGet(port, "/uidmap.txt").second);
    EXPECT_NE(map.find("1000000"), std::string::npos) << map;
  }
}

}  // namespace
}  // namespace gantry::testing
