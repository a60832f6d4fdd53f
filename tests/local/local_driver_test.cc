// The local driver end to end (issue 6), against a real gantryd with `--gpus h100:8` running
// real workload processes (tests/local/local_fixture.h): deploy with HTTP readiness, outputs,
// the GPUs the workload sees and the Node view; a crash under each restart policy; destroy
// (SIGTERM, grace, SIGKILL) leaving nothing in /proc and freeing the GPUs; re-adoption after
// kill -9 of gantryd, and a workload that died while gantryd was down.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "local_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using local_test::Alive;
using local_test::Assignments;
using local_test::EnvValue;
using local_test::GetNode;
using local_test::JoinStrings;
using local_test::ProcessesInGroup;
using local_test::ReadProcStat;

// The port in "http://HOST:PORT/PATH" (0 when there is none).
int PortOf(const std::string& endpoint) {
  size_t scheme = endpoint.find("://");
  if (scheme == std::string::npos) return 0;
  size_t colon = endpoint.find(':', scheme + 3);
  return colon == std::string::npos ? 0 : std::atoi(endpoint.c_str() + colon + 1);
}

// GET / on 127.0.0.1:`port`; the status and the body's lines.
std::pair<int, std::vector<std::string>> HttpGet(int port) {
  LineStreamReader reader(port, "/");
  EXPECT_TRUE(reader.WaitDone()) << "GET http://127.0.0.1:" << port << "/ did not end";
  return {reader.http_status(), reader.lines()};
}

bool Contains(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

// The object of a watch event line (empty when the line is not one).
json::object ObjectOfLine(const std::string& line) {
  boost::system::error_code ec;
  json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) return {};
  json::value obj = At(v.get_object(), "object");
  return obj.is_object() ? obj.get_object() : json::object{};
}

bool ReadyIs(const json::object& instance, const std::string& status, const std::string& reason) {
  json::object c = Condition(instance, "Ready");
  return Str(c, "status") == status && Str(c, "reason") == reason;
}

class LocalDriverTest : public LocalTest {};

TEST_F(LocalDriverTest, DeployServesHttpWithItsGpusAndShowsThemInOutputsAndNode) {
  CreateLocalTemplate("nb", /*http=*/true);
  CreateLocalProfile("nb-2gpu", "nb", Gpu(2));
  api().CreateInstance("default", "web", "nb-2gpu");
  std::string run = Deploy("web");
  EXPECT_EQ(run, "web-1");
  json::object o = WaitPhase("web", "Success");

  // Two distinct GPUs of the eight.
  json::value gpus = At(o, "status.gpus");
  ASSERT_TRUE(gpus.is_array()) << json::serialize(o);
  ASSERT_EQ(gpus.get_array().size(), 2u) << json::serialize(o);
  std::set<std::string> distinct;
  for (const auto& g : gpus.get_array()) {
    ASSERT_TRUE(g.is_string());
    int index = std::atoi(std::string(g.get_string()).c_str());
    EXPECT_TRUE(index >= 0 && index < 8) << g;
    distinct.insert(std::string(g.get_string()));
  }
  EXPECT_EQ(distinct.size(), 2u);
  const std::string gpu_list = JoinStrings(gpus);
  EXPECT_EQ(Str(o, "status.resources.gpu.type"), "h100");
  EXPECT_EQ(Int(o, "status.resources.gpu.count"), 2);

  // Outputs: endpoint on the advertised host, pid, gpus, ports.
  const std::string endpoint = Str(o, "status.outputs.endpoint");
  int port = PortOf(endpoint);
  EXPECT_TRUE(port >= 30000 && port <= 39999) << endpoint;
  EXPECT_EQ(endpoint, std::string("http://") + kAdvertiseHost + ":" + std::to_string(port) + "/");
  int pid = DriverPid(o);
  ASSERT_GT(pid, 0) << json::serialize(o);
  EXPECT_EQ(Str(o, "status.outputs.pid"), std::to_string(pid));
  EXPECT_EQ(Str(o, "status.outputs.gpus"), gpu_list);
  EXPECT_EQ(Str(o, "status.outputs.ports"), "{\"http\":" + std::to_string(port) + "}");
  EXPECT_EQ(Str(Condition(o, "Deployed"), "status"), "True") << json::serialize(o);

  // The pid is the live workload, leader of its own session and process group.
  EXPECT_TRUE(Alive(pid));
  local_test::ProcStat st = ReadProcStat(pid);
  EXPECT_EQ(st.pgrp, pid);
  EXPECT_EQ(st.session, pid);
  std::vector<int> mine = local_test::LiveProcessesWith(dir() + "/www-web");
  EXPECT_EQ(mine, std::vector<int>{pid}) << "the python http.server of web";

  // It answers HTTP on its port.
  auto [status, body] = HttpGet(port);
  EXPECT_EQ(status, 200);
  EXPECT_TRUE(Contains(body, "hello from web")) << ::testing::PrintToString(body);

  // It sees exactly its GPUs, and what the template and gantry set.
  std::string env = WorkloadEnv("web");
  EXPECT_EQ(EnvValue(env, "CUDA_VISIBLE_DEVICES"), gpu_list) << env;
  EXPECT_EQ(EnvValue(env, "NVIDIA_VISIBLE_DEVICES"), gpu_list) << env;
  EXPECT_EQ(EnvValue(env, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID") << env;
  EXPECT_EQ(EnvValue(env, "GANTRY_GPUS"), gpu_list) << env;
  EXPECT_EQ(EnvValue(env, "GANTRY_INSTANCE"), "web") << env;
  EXPECT_EQ(EnvValue(env, "GANTRY_PROJECT"), "default") << env;
  EXPECT_EQ(EnvValue(env, "GANTRY_PORT_HTTP"), std::to_string(port)) << env;
  EXPECT_EQ(EnvValue(env, "PORT"), std::to_string(port)) << env;
  EXPECT_EQ(EnvValue(env, "WORKLOAD_MARK"), "set-by-template") << env;

  // The Node view: capacity, allocation and who holds which GPU.
  json::object node = GetNode(api());
  EXPECT_EQ(Str(node, "kind"), "Node");
  EXPECT_EQ(Str(node, "status.gpuSource"), "configured") << json::serialize(node);
  EXPECT_EQ(Int(node, "status.capacity.h100"), 8) << json::serialize(node);
  EXPECT_EQ(Int(node, "status.allocated.h100"), 2) << json::serialize(node);
  auto assigned = Assignments(node);
  ASSERT_EQ(assigned.size(), 8u) << json::serialize(node);
  for (const auto& [index, owner] : assigned)
    EXPECT_EQ(owner, distinct.count(std::to_string(index)) ? "default/web" : "") << index;
  // UUIDs: the workload gets those of its GPUs, in the same order.
  std::string uuids;
  const json::value node_gpus = At(node, "status.gpus");
  for (const auto& g : gpus.get_array()) {
    for (const auto& n : node_gpus.get_array())
      if (std::to_string(Int(n.get_object(), "index")) == g.get_string())
        uuids += (uuids.empty() ? "" : ",") + Str(n.get_object(), "uuid");
  }
  if (!uuids.empty()) {
    EXPECT_EQ(EnvValue(env, "GANTRY_GPU_UUIDS"), uuids) << env;
  }

  // The node by name; nodes are read-only.
  Resp by_name = api().Get(ClusterPath("nodes", Str(node, "metadata.name")));
  EXPECT_EQ(by_name.status, 200) << by_name.raw;
  EXPECT_EQ(api().Delete(ClusterPath("nodes", Str(node, "metadata.name"))).status, 405);
}

TEST_F(LocalDriverTest, WithoutGpusTheWorkloadSeesNoneAndAnyTypeTakesAConfiguredOne) {
  CreateLocalTemplate("plain", /*http=*/false);
  CreateLocalProfile("cpu", "plain", json::object{{"cpu", 2}});
  CreateLocalProfile("any-gpu", "plain", Gpu(1, /*type=*/""));
  api().CreateInstance("default", "cpu-job", "cpu");
  api().CreateInstance("default", "gpu-job", "any-gpu");
  Deploy("cpu-job");
  Deploy("gpu-job");
  json::object cpu = WaitPhase("cpu-job", "Success");
  json::object gpu = WaitPhase("gpu-job", "Success");

  std::string env = WorkloadEnv("cpu-job");
  EXPECT_EQ(EnvValue(env, "CUDA_VISIBLE_DEVICES"), "") << env;
  EXPECT_EQ(EnvValue(env, "NVIDIA_VISIBLE_DEVICES"), "void") << env;
  EXPECT_TRUE(At(cpu, "status.gpus").is_null()) << json::serialize(cpu);
  EXPECT_EQ(Str(cpu, "status.outputs.gpus"), "");
  EXPECT_EQ(Str(cpu, "status.outputs.endpoint"), "") << "no ports, no endpoint";

  // gpu.type left out: any type; this host has only h100.
  EXPECT_EQ(Str(gpu, "status.resources.gpu.type"), "h100") << json::serialize(gpu);
  std::string gpu_list = JoinStrings(At(gpu, "status.gpus"));
  EXPECT_EQ(EnvValue(WorkloadEnv("gpu-job"), "CUDA_VISIBLE_DEVICES"), gpu_list);
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 1);
}

// Issue 9: a service deployed onto a local compute instance runs on this host with the
// compute instance's GPUs and endpoint, holds no GPUs of its own, and goes first when the
// compute instance is destroyed with cascade.
TEST_F(LocalDriverTest, ServiceOnLocalComputeSeesItsGpusAndEndpoint) {
  CreateLocalTemplate("nb", /*http=*/true);
  CreateLocalProfile("nb-2gpu", "nb", Gpu(2));
  api().CreateInstance("default", "gpu-box", "nb-2gpu");
  Deploy("gpu-box");
  json::object compute = WaitPhase("gpu-box", "Success");
  const std::string gpu_list = JoinStrings(At(compute, "status.gpus"));
  ASSERT_EQ(gpu_list.size(), 3u) << json::serialize(compute);  // "i,j"

  CreateLocalTemplate("svc", /*http=*/false);
  api().MustCreate(
      NsPath("default", "serviceprofiles"),
      json::object{{"metadata", json::object{{"name", "jupyter"}}},
                   {"spec", json::object{{"serviceType", "notebook"},
                                         {"templateRef", json::object{{"name", "svc"}}}}}});
  api().MustCreate(
      NsPath("default", "serviceinstances"),
      json::object{{"metadata", json::object{{"name", "lab"}}},
                   {"spec", json::object{{"profileRef", json::object{{"name", "jupyter"}}},
                                         {"computeRef", json::object{{"name", "gpu-box"}}}}}});
  ASSERT_EQ(
      api().Post(NsPath("default", "serviceinstances", "lab") + "/deploy", json::object{}).status,
      202);
  ASSERT_TRUE(PollUntil([&] {
    return Str(api().Get(NsPath("default", "serviceinstances", "lab")).obj(), "status.phase") ==
           "Success";
  }));
  std::string env = WorkloadEnv("lab");
  EXPECT_EQ(EnvValue(env, "CUDA_VISIBLE_DEVICES"), gpu_list) << env;
  EXPECT_EQ(EnvValue(env, "GANTRY_COMPUTE_GPUS"), gpu_list) << env;
  EXPECT_EQ(EnvValue(env, "GANTRY_COMPUTE_ENDPOINT"), Str(compute, "status.outputs.endpoint"))
      << env;
  EXPECT_EQ(EnvValue(env, "GANTRY_COMPUTE_NAME"), "gpu-box") << env;
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 2);  // the compute instance's only
  json::object service = api().Get(NsPath("default", "serviceinstances", "lab")).obj();
  int service_pid = DriverPid(service);
  ASSERT_GT(service_pid, 0) << json::serialize(service);

  ASSERT_EQ(api()
                .Post(NsPath("default", "computeinstances", "gpu-box") + "/destroy?cascade=true",
                      json::object{})
                .status,
            202);
  WaitPhase("gpu-box", "NotDeployed");
  EXPECT_EQ(Str(api().Get(NsPath("default", "serviceinstances", "lab")).obj(), "status.phase"),
            "NotDeployed");
  EXPECT_TRUE(PollUntil([&] { return !Alive(service_pid); }));
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 0);
}

TEST_F(LocalDriverTest, CrashIsRestartedUnderOnFailureAndShownInStatus) {
  CreateLocalTemplate("nb", /*http=*/true, json::object{{"restartPolicy", "OnFailure"}});
  CreateLocalProfile("nb-1gpu", "nb", Gpu(1));
  api().CreateInstance("default", "web", "nb-1gpu");
  Deploy("web");
  json::object o = WaitPhase("web", "Success");
  const int pid1 = DriverPid(o);
  const int port = PortOf(Str(o, "status.outputs.endpoint"));
  const std::string gpus = JoinStrings(At(o, "status.gpus"));
  ASSERT_GT(pid1, 0);

  // Every change of the instance, so the short Ready=False window cannot be missed.
  LineStreamReader watch(gantryd_->port(),
                         NsPath("default", "computeinstances", "web") + "?watch=true");
  ASSERT_TRUE(watch.WaitFor([](const auto& lines) { return !lines.empty(); }));

  for (int crash = 1; crash <= 2; ++crash) {
    SCOPED_TRACE("crash " + std::to_string(crash));
    json::object before = Get("web");
    int pid = DriverPid(before);
    ASSERT_GT(pid, 0) << json::serialize(before);
    ASSERT_TRUE(local_test::KillWorkload(pid));
    // Called with the reader's lock held: look only at the lines given.
    auto seen_exit = [&](const std::vector<std::string>& lines) {
      for (const auto& line : lines) {
        json::object obj = ObjectOfLine(line);
        if (ReadyIs(obj, "False", "WorkloadExited") && Int(obj, "status.restartCount", 0) == crash)
          return true;
      }
      return false;
    };
    ASSERT_TRUE(watch.WaitFor(seen_exit))
        << "no Ready=False WorkloadExited with restartCount " << crash << "\n"
        << gantryd_->Log();
    // What it said while down: why, the restart, the last log lines.
    for (const auto& e : watch.objects()) {
      json::object obj =
          At(e, "object").is_object() ? At(e, "object").get_object() : json::object{};
      if (!ReadyIs(obj, "False", "WorkloadExited") || Int(obj, "status.restartCount", 0) != crash)
        continue;
      EXPECT_EQ(Str(obj, "status.phase"), "Success");
      EXPECT_EQ(Str(obj, "status.reason"), "WorkloadExited");
      const std::string msg = Str(obj, "status.message");
      EXPECT_NE(msg.find("the workload was killed by signal 9"), std::string::npos) << msg;
      EXPECT_NE(msg.find("restart " + std::to_string(crash) + " in "), std::string::npos) << msg;
      EXPECT_NE(msg.find("workload web starts with GPUs [" + gpus + "]"), std::string::npos)
          << "the last log lines: " << msg;
      break;
    }
    // Back up: a new process, Ready again, same GPUs and port.
    json::object up = WaitInstance(
        "web",
        [&](const json::object& i) {
          return ReadyIs(i, "True", "Running") && Int(i, "status.restartCount", 0) == crash &&
                 DriverPid(i) != pid && Alive(DriverPid(i));
        },
        "ready again after crash " + std::to_string(crash));
    EXPECT_EQ(Str(up, "status.phase"), "Success");
    EXPECT_EQ(JoinStrings(At(up, "status.gpus")), gpus);
    EXPECT_FALSE(Alive(pid));
    auto [status, body] = HttpGet(port);
    EXPECT_EQ(status, 200);
    EXPECT_TRUE(Contains(body, "hello from web")) << ::testing::PrintToString(body);
  }
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 1);
}

TEST_F(LocalDriverTest, CrashUnderNeverEndsFailedAndItsGroupIsGone) {
  CreateLocalTemplate("job", /*http=*/false, json::object{{"restartPolicy", "Never"}});
  CreateLocalProfile("job-1gpu", "job", Gpu(1));
  api().CreateInstance("default", "once", "job-1gpu");
  Deploy("once");
  json::object o = WaitPhase("once", "Success");
  const int pid = DriverPid(o);
  ASSERT_GT(pid, 0);
  // The shell and its child (tail) in the workload's group.
  ASSERT_TRUE(WaitWorkloadChild(pid));

  ASSERT_TRUE(local_test::KillWorkload(pid));
  json::object failed = WaitPhase("once", "Failed");
  EXPECT_EQ(Str(failed, "status.reason"), "WorkloadExited");
  EXPECT_EQ(Str(failed, "status.message")
                .rfind("the workload was killed by signal 9 (SIGKILL) (restartPolicy Never); last "
                       "log lines:\n"
                       "workload once starts with GPUs [",
                       0),
            0u)
      << Str(failed, "status.message");
  EXPECT_TRUE(ReadyIs(failed, "False", "WorkloadExited")) << json::serialize(failed);
  EXPECT_EQ(Int(failed, "status.restartCount", 0), 0);
  // Like a container: when the main process goes, the group goes (the child too).
  WaitNoProcesses(pid, dir());
  EXPECT_TRUE(Str(failed, "status.outputs.pid") == std::to_string(pid));

  // Failed, it still holds its GPU (held until a destroy succeeds: docs/drivers.md).
  json::object node = GetNode(api());
  EXPECT_EQ(Int(node, "status.allocated.h100"), 1) << json::serialize(node);
  // A destroy frees it.
  ASSERT_EQ(Action("once", "destroy").status, 202);
  WaitPhase("once", "NotDeployed");
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 0);
}

TEST_F(LocalDriverTest, DestroyLeavesNoProcessAndFreesTheGpus) {
  CreateLocalTemplate("nb", /*http=*/true);
  CreateLocalTemplate("job", /*http=*/false);
  CreateLocalProfile("nb-1gpu", "nb", Gpu(1));
  CreateLocalProfile("job-2gpu", "job", Gpu(2));
  api().CreateInstance("default", "web", "nb-1gpu");
  api().CreateInstance("default", "train", "job-2gpu");
  Deploy("web");
  Deploy("train");
  json::object web = WaitPhase("web", "Success");
  json::object train = WaitPhase("train", "Success");
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 3);
  const int web_pid = DriverPid(web), train_pid = DriverPid(train);
  const int port = PortOf(Str(web, "status.outputs.endpoint"));
  ASSERT_GT(web_pid, 0);
  ASSERT_GT(train_pid, 0);
  ASSERT_TRUE(WaitWorkloadChild(train_pid));

  ASSERT_EQ(Action("train", "destroy").status, 202);
  json::object gone = WaitPhase("train", "NotDeployed");
  // Destroy ends only once /proc shows nothing of the group: no polling needed here.
  EXPECT_EQ(ProcessesInGroup(train_pid), std::vector<int>{});
  EXPECT_FALSE(Alive(train_pid));
  EXPECT_TRUE(At(gone, "status.gpus").is_null()) << json::serialize(gone);
  EXPECT_TRUE(At(gone, "status.outputs").is_null()) << json::serialize(gone);
  EXPECT_TRUE(At(gone, "status.driverState").is_null()) << json::serialize(gone);
  json::object node = GetNode(api());
  EXPECT_EQ(Int(node, "status.allocated.h100"), 1) << json::serialize(node);
  for (const auto& [index, owner] : Assignments(node))
    EXPECT_TRUE(owner.empty() || owner == "default/web") << index << " " << owner;

  ASSERT_EQ(Action("web", "destroy").status, 202);
  WaitPhase("web", "NotDeployed");
  EXPECT_EQ(ProcessesInGroup(web_pid), std::vector<int>{});
  EXPECT_EQ(local_test::LiveProcessesWith(dir()), std::vector<int>{})
      << "a process of this test's workloads is left";
  node = GetNode(api());
  EXPECT_EQ(Int(node, "status.allocated.h100"), 0) << json::serialize(node);
  for (const auto& [index, owner] : Assignments(node)) EXPECT_EQ(owner, "") << index;
  // The port is free again: nothing listens on it.
  EXPECT_TRUE(PollUntil([&] {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool refused = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0;
    ::close(fd);
    return refused;
  }));
}

TEST_F(LocalDriverTest, DeletingADeployedInstanceStopsItsWorkloadAndFreesTheGpus) {
  CreateLocalTemplate("job", /*http=*/false);
  CreateLocalProfile("job-2gpu", "job", Gpu(2));
  api().CreateInstance("default", "gone", "job-2gpu");
  Deploy("gone");
  const int pid = DriverPid(WaitPhase("gone", "Success"));
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitWorkloadChild(pid));
  Resp del = api().Delete(NsPath("default", "computeinstances", "gone"));
  EXPECT_TRUE(del.status == 200 || del.status == 202) << del.status << " " << del.raw;
  WaitGone("gone");
  WaitNoProcesses(pid, dir());
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 0);
}

TEST_F(LocalDriverTest, DestroyKillsAWorkloadThatIgnoresSigtermAfterTheGrace) {
  CreateLocalTemplate("stubborn", /*http=*/false, {}, "default", "stubborn");
  CreateLocalProfile("stubborn-1gpu", "stubborn", Gpu(1));
  api().CreateInstance("default", "mule", "stubborn-1gpu");
  Deploy("mule");
  const int pid = DriverPid(WaitPhase("mule", "Success"));
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitWorkloadChild(pid));
  // Both ignore SIGTERM (bit 15 of SigIgn).
  for (int member : ProcessesInGroup(pid)) {
    std::string status = ReadFile("/proc/" + std::to_string(member) + "/status");
    size_t at = status.find("SigIgn:");
    ASSERT_NE(at, std::string::npos);
    uint64_t ignored = std::stoull(status.substr(at + 7), nullptr, 16);
    EXPECT_TRUE(ignored & (1ull << (SIGTERM - 1))) << member << ": " << status.substr(at, 30);
  }
  ASSERT_EQ(Action("mule", "destroy").status, 202);
  WaitPhase("mule", "NotDeployed");
  // The destroy run's log tells the story: SIGTERM, the grace, SIGKILL.
  Resp log = api().Get(NsPath("default", "runs", "mule-2") + "/log");
  EXPECT_NE(log.raw.find("stopping workload pid " + std::to_string(pid) +
                         " (SIGTERM, then SIGKILL after 10s)"),
            std::string::npos)
      << log.raw;
  EXPECT_NE(log.raw.find("workload stopped"), std::string::npos) << log.raw;
  EXPECT_EQ(ProcessesInGroup(pid), std::vector<int>{});
  EXPECT_EQ(local_test::LiveProcessesWith(dir()), std::vector<int>{});
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 0);
}

TEST_F(LocalDriverTest, Kill9OfGantrydReadoptsRunningWorkloads) {
  CreateLocalTemplate("nb", /*http=*/true);
  CreateLocalTemplate("job", /*http=*/false);
  CreateLocalProfile("nb-1gpu", "nb", Gpu(1));
  CreateLocalProfile("job-2gpu", "job", Gpu(2));
  api().CreateInstance("default", "web", "nb-1gpu");
  api().CreateInstance("default", "train", "job-2gpu");
  Deploy("web");
  Deploy("train");
  json::object web = WaitPhase("web", "Success");
  json::object train = WaitPhase("train", "Success");
  const int web_pid = DriverPid(web), train_pid = DriverPid(train);
  const int port = PortOf(Str(web, "status.outputs.endpoint"));
  ASSERT_GT(web_pid, 0);
  ASSERT_GT(train_pid, 0);
  auto node_before = Assignments(GetNode(api()));

  gantryd_->Kill9();
  // The workloads live in their own sessions: they outlive gantryd.
  EXPECT_TRUE(Alive(web_pid));
  EXPECT_TRUE(Alive(train_pid));
  ASSERT_TRUE(gantryd_->Restart().ok()) << gantryd_->Log();
  Reconnect();

  for (const auto& [name, pid, before] :
       {std::tuple{"web", web_pid, web}, std::tuple{"train", train_pid, train}}) {
    SCOPED_TRACE(name);
    json::object o = Get(name);
    EXPECT_EQ(Str(o, "status.phase"), "Success") << json::serialize(o);
    EXPECT_EQ(DriverPid(o), pid);
    EXPECT_EQ(Str(o, "status.outputs.pid"), std::to_string(pid));
    EXPECT_EQ(At(o, "status.gpus"), At(before, "status.gpus"));
    EXPECT_TRUE(Alive(pid));
  }
  EXPECT_TRUE(gantryd_->WaitForLog("adopted the workload of instance default/web"))
      << gantryd_->Log();
  EXPECT_EQ(Assignments(GetNode(api())), node_before) << "the same GPUs, held by the same";
  auto [status, body] = HttpGet(port);
  EXPECT_EQ(status, 200);

  // Still supervised: a crash of the adopted workload is restarted (it is not gantryd's
  // child any more, so its exit code is unknown).
  ASSERT_TRUE(local_test::KillWorkload(web_pid));
  json::object up = WaitInstance(
      "web",
      [&](const json::object& i) {
        return ReadyIs(i, "True", "Running") && Int(i, "status.restartCount", 0) == 1 &&
               DriverPid(i) != web_pid && Alive(DriverPid(i));
      },
      "restarted after the adopted workload crashed");
  const int web_pid2 = DriverPid(up);

  // A destroy still kills the adopted workload (and the restarted one) and frees the GPUs.
  ASSERT_EQ(Action("train", "destroy").status, 202);
  ASSERT_EQ(Action("web", "destroy").status, 202);
  WaitPhase("train", "NotDeployed");
  WaitPhase("web", "NotDeployed");
  EXPECT_EQ(ProcessesInGroup(train_pid), std::vector<int>{});
  EXPECT_EQ(ProcessesInGroup(web_pid2), std::vector<int>{});
  EXPECT_FALSE(Alive(train_pid));
  EXPECT_EQ(local_test::LiveProcessesWith(dir()), std::vector<int>{});
  EXPECT_EQ(Int(GetNode(api()), "status.allocated.h100"), 0);
}

TEST_F(LocalDriverTest, WorkloadThatDiedWhileGantrydWasDownIsLost) {
  CreateLocalTemplate("job", /*http=*/false);
  CreateLocalProfile("job-1gpu", "job", Gpu(1));
  api().CreateInstance("default", "train", "job-1gpu");
  api().CreateInstance("default", "other", "job-1gpu");
  Deploy("train");
  Deploy("other");
  const int pid = DriverPid(WaitPhase("train", "Success"));
  const int other_pid = DriverPid(WaitPhase("other", "Success"));
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitWorkloadChild(pid));

  gantryd_->Kill9();
  ASSERT_TRUE(local_test::KillWorkload(
      pid, /*group=*/true));  // the whole workload, while nobody supervises it
  ASSERT_TRUE(PollUntil([&] { return ProcessesInGroup(pid).empty(); }));
  ASSERT_TRUE(gantryd_->Restart().ok()) << gantryd_->Log();
  Reconnect();

  json::object lost = Get("train");
  EXPECT_EQ(Str(lost, "status.phase"), "Failed") << json::serialize(lost);
  EXPECT_EQ(Str(lost, "status.reason"), "WorkloadLost");
  EXPECT_EQ(Str(lost, "status.message"),
            "the workload was gone when gantryd restarted (pid " + std::to_string(pid) + ")");
  EXPECT_TRUE(ReadyIs(lost, "False", "WorkloadLost")) << json::serialize(lost);
  // The other one was re-adopted.
  json::object kept = Get("other");
  EXPECT_EQ(Str(kept, "status.phase"), "Success") << json::serialize(kept);
  EXPECT_EQ(DriverPid(kept), other_pid);

  // Destroying the lost instance frees its GPU; nothing of it runs.
  ASSERT_EQ(Action("train", "destroy").status, 202);
  WaitPhase("train", "NotDeployed");
  EXPECT_EQ(ProcessesInGroup(pid), std::vector<int>{});
  json::object node = GetNode(api());
  EXPECT_EQ(Int(node, "status.allocated.h100"), 1) << json::serialize(node);
  ASSERT_EQ(Action("other", "destroy").status, 202);
  WaitPhase("other", "NotDeployed");
  EXPECT_EQ(local_test::LiveProcessesWith(dir()), std::vector<int>{});
}

}  // namespace
}  // namespace gantry::testing
