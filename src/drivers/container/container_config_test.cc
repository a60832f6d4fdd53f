// spec.container: what a save refuses (one cause per problem, field relative to the config)
// and the `podman run` command line a deploy builds from it (no Podman needed).
#include "drivers/container/container_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "drivers/container/container_driver.h"
#include "drivers/container/container_run.h"

namespace gantry::drivers::container {
namespace {

namespace json = boost::json;

std::vector<std::string> Fields(const json::object& config) {
  ContainerDriver driver({}, DefaultProcessLauncher());
  std::vector<FieldCause> causes;
  driver.ValidateConfig(config, &causes);
  std::vector<std::string> out;
  for (const auto& c : causes) out.push_back(c.field + ": " + c.message);
  return out;
}

json::object Parse(const char* text) { return json::parse(text).as_object(); }

TEST(ContainerConfig, AcceptsTheFullForm) {
  EXPECT_THAT(Fields(Parse(R"({"image": "${image}", "command": ["/bin/sh", "-c"],
      "args": ["echo ${GANTRY_PORT_HTTP}"], "env": {"A": "b", "N": 3}, "workingDir": "/srv",
      "ports": [{"name": "http", "containerPort": 8888}],
      "volumes": [{"name": "data", "mountPath": "/data"}],
      "readiness": {"httpPath": "/lab", "port": "http"}, "timeoutSeconds": 60})")),
              testing::IsEmpty());
}

TEST(ContainerConfig, NamesEveryField) {
  EXPECT_THAT(
      Fields(Parse(R"({"imag": "x", "ports": [{"name": "http"}, {"name": "b", "containerPort": 0}],
          "volumes": [{"name": "d", "mountPath": "rel"}, {"name": "d", "mountPath": "/x"}],
          "readiness": {"tcpPort": "nope"}, "workingDir": "srv", "args": ["${unclosed"]})")),
      testing::ElementsAre(
          testing::StartsWith("imag: is not a known field (known: image, command"),
          testing::StartsWith("image: is required: the image to run"),
          "readiness.tcpPort: \"nope\" is not one of spec.container.ports (http, b)",
          testing::StartsWith("ports[0].containerPort: is required"),
          "ports[1].containerPort: must be a whole number from 1 to 65535",
          "workingDir: must be an absolute path inside the container",
          testing::StartsWith("volumes[0].mountPath: must be an absolute path"),
          "volumes[1].name: \"d\" is used twice"));
  EXPECT_THAT(Fields(Parse(R"({"image": "a b"})")),
              testing::ElementsAre(testing::StartsWith("image: must be an image reference")));
  EXPECT_THAT(Fields(Parse(R"({"image": "x", "env": {"K": "${A"}})")),
              testing::ElementsAre(testing::HasSubstr("env.K: \"${\" is not closed")));
  EXPECT_THAT(Fields(Parse(R"({"image": "${img"})")),
              testing::ElementsAre(testing::HasSubstr("image: \"${\" is not closed")));
}

TEST(ContainerConfig, OddShapesAreCausesNotCrashes) {
  for (const char* text :
       {R"({"image": 3})", R"({"image": "x", "ports": 7})", R"({"image": "x", "ports": [3]})",
        R"({"image": "x", "ports": [{"name": 1, "containerPort": "80"}]})",
        R"({"image": "x", "volumes": {}})", R"({"image": "x", "volumes": [null]})",
        R"({"image": "x", "volumes": [{"name": "a", "mountPath": "/a", "host": "/"}]})",
        R"({"image": "x", "command": []})", R"({"image": "x", "command": "sh"})",
        R"({"image": "x", "env": []})", R"({"image": "x", "readiness": {"tcpPort": "http"}})",
        R"({"image": "x", "workingDir": 5})", R"({"image": "x", "ports": [{"name": "a",
        "containerPort": 1.5}]})",
        R"({"image": "x", "timeoutSeconds": -1})"}) {
    SCOPED_TRACE(text);
    EXPECT_THAT(Fields(Parse(text)), testing::Not(testing::IsEmpty()));
    EXPECT_FALSE(ParseContainerConfig(Parse(text)).ok());
  }
}

TEST(ContainerConfig, ADeployRefusesWithTheFirstProblem) {
  auto c = ParseContainerConfig(Parse(R"({"ports": [{"name": "http", "containerPort": 80}]})"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(c.status().message()),
              testing::StartsWith("spec.container.image is required"));
}

std::string After(const std::vector<std::string>& args, const std::string& flag) {
  auto it = std::find(args.begin(), args.end(), flag);
  return it == args.end() || it + 1 == args.end() ? "<none>" : *(it + 1);
}

TEST(ContainerRun, BuildsThePodmanCommandLine) {
  auto c = ParseContainerConfig(Parse(R"({"image": "${image}", "command": ["/bin/sh"],
      "args": ["-c", "serve ${PORT} ${who}"], "env": {"GANTRY_GPUS": "all", "X": "${who}"},
      "ports": [{"name": "http", "containerPort": 8888}],
      "volumes": [{"name": "data", "mountPath": "/data"}]})"));
  ASSERT_TRUE(c.ok()) << c.status();
  DeployRequest r;
  r.instance = json::object{{"uid", "U-1"}, {"name", "nb"}, {"project", "p"}};
  r.variables = {{"image", "localhost/x:1"}, {"who", "me"}};
  r.resources = json::object{{"cpu", 2}, {"memoryGiB", 1.5}};
  r.gpu_indices = {"3"};
  r.state_dir = "/state";
  ContainerDriverOptions o;
  o.owner = "/data/dir";
  auto run = BuildRun(*c, r, o, {{"http", 20005}}, /*use_cdi=*/false);
  ASSERT_TRUE(run.ok()) << run.status();
  const auto& a = run->args;
  EXPECT_EQ(After(a, "--name"), "gantry-u-1");
  EXPECT_EQ(After(a, "--runtime"), "runc");
  EXPECT_EQ(After(a, "--cpus"), "2.000");
  EXPECT_EQ(After(a, "--memory"), "1536m");
  EXPECT_EQ(After(a, "-p"), "0.0.0.0:20005:8888");
  EXPECT_EQ(After(a, "-v"), "gantry-u-1-data:/data");
  EXPECT_EQ(After(a, "--entrypoint"), "[\"/bin/sh\"]");
  EXPECT_EQ(After(a, "--device"), "<none>");
  EXPECT_EQ(After(a, "--log-opt"), "path=/state/workload.log");
  EXPECT_EQ(After(a, "--uidmap"), ::geteuid() == 0 ? "0:1000000:65536" : "<none>");
  EXPECT_THAT(a, testing::Contains("gantry.instance=U-1"));
  EXPECT_THAT(a, testing::Contains("gantry.owner=/data/dir"));
  // The values go through podman's environment, never its command line.
  EXPECT_THAT(a, testing::Not(testing::Contains(testing::HasSubstr("X=me"))));
  EXPECT_EQ(std::vector<std::string>(a.end() - 3, a.end()),
            (std::vector<std::string>{"localhost/x:1", "-c", "serve 20005 me"}));
  EXPECT_EQ(run->env.at("X"), "me");
  EXPECT_EQ(run->env.at("GANTRY_GPUS"), "3") << "gantry's value wins";
  EXPECT_EQ(run->env.at("NVIDIA_VISIBLE_DEVICES"), "3");
  EXPECT_EQ(run->env.at("GANTRY_PORT_HTTP"), "20005");
  EXPECT_EQ(run->env.at("GANTRY_VAR_WHO"), "me");

  // PATH would change how podman runs: on the command line, not in podman's environment.
  auto with_path = ParseContainerConfig(Parse(R"({"image": "x", "env": {"PATH": "/opt/bin"}})"));
  ASSERT_TRUE(with_path.ok());
  auto path_run = BuildRun(*with_path, r, o, {}, false);
  ASSERT_TRUE(path_run.ok());
  EXPECT_THAT(path_run->args, testing::Contains("PATH=/opt/bin"));
  EXPECT_EQ(path_run->env.count("PATH"), 0u);

  auto cdi = BuildRun(*c, r, o, {{"http", 20005}}, /*use_cdi=*/true);
  ASSERT_TRUE(cdi.ok());
  EXPECT_EQ(After(cdi->args, "--device"), "nvidia.com/gpu=3");
  EXPECT_EQ(cdi->env.count("NVIDIA_VISIBLE_DEVICES"), 0u);

  r.variables.erase("who");
  auto missing = BuildRun(*c, r, o, {{"http", 20005}}, false);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()),
              testing::HasSubstr("spec.container.env.X: ${who} is not set"));
}

}  // namespace
}  // namespace gantry::drivers::container
