// Real processes: python3 -m http.server on 127.0.0.1 and small /bin/sh scripts.
#include "drivers/local/local_driver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "common/fake_clock.h"
#include "drivers/common/fake_process_launcher.h"
#include "drivers/common/proc_info.h"
#include "drivers/common/process.h"
#include "drivers/local/readiness_probe.h"

namespace gantry::drivers::local {
namespace {

namespace json = boost::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr auto kDeadline = seconds(60);  // generous: only reached when something is broken

class FakeContext : public RunContext {
 public:
  void Log(std::string_view line) override {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.emplace_back(line);
  }
  bool Canceled() const override { return canceled_.load(); }
  void SaveDriverState(const json::object& state) override {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = state;
  }
  json::object state() {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
  }
  std::string log() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& l : lines_) out += l + "\n";
    return out;
  }
  std::atomic<bool> canceled_{false};

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
  json::object state_;
};

class Events : public WorkloadObserver {
 public:
  void OnWorkloadEvent(const WorkloadEvent& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(e);
    cv_.notify_all();
  }
  // Waits until `pred` holds for the events so far; false after kDeadline.
  bool WaitFor(const std::function<bool(const std::vector<WorkloadEvent>&)>& pred) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kDeadline, [&] { return pred(events_); });
  }
  std::vector<WorkloadEvent> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<WorkloadEvent> events_;
};

int Count(const std::vector<WorkloadEvent>& events, WorkloadEvent::Kind kind) {
  int n = 0;
  for (const auto& e : events) n += e.kind == kind;
  return n;
}

bool GroupGone(int pgid) { return ProcessGroupMembers(pgid).empty(); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class LocalDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* base = std::getenv("TEST_TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/gantry-local-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    options_.stop_grace = seconds(2);
    options_.poll_interval = milliseconds(20);
    options_.backoff_initial = milliseconds(50);
    options_.backoff_max = milliseconds(400);
  }
  void TearDown() override {
    // Whatever a failed test left running goes.
    for (int pgid : started_)
      if (!GroupGone(pgid)) ::kill(-pgid, SIGKILL);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  DeployRequest Request(const std::string& name, json::object config,
                        std::vector<std::string> gpus = {}) {
    DeployRequest r;
    r.action = "apply";
    r.run_name = name + "-1";
    r.run_uid = "run-" + name;
    r.instance = json::object{{"name", name}, {"project", "team"}, {"uid", "uid-" + name}};
    r.config = std::move(config);
    r.state_dir = dir_ + "/" + name;
    r.timeout = seconds(120);
    r.gpu_indices = std::move(gpus);
    return r;
  }

  // python3 -m http.server on 127.0.0.1 with HTTP readiness.
  json::object HttpServer(std::string_view policy = "OnFailure") {
    return json::object{
        {"command", json::array{"python3", "-m", "http.server", "--bind", "127.0.0.1"}},
        {"args", json::array{"${GANTRY_PORT_HTTP}"}},
        {"ports", json::array{json::object{{"name", "http"}}}},
        {"readiness", json::object{{"httpPath", "/"}, {"timeoutSeconds", 60}}},
        {"restartPolicy", policy}};
  }

  std::string Script(const std::string& name, const std::string& body) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }

  int Pid(const json::object& outputs) {
    int pid = std::stoi(std::string(outputs.at("pid").as_string()));
    started_.push_back(pid);
    return pid;
  }

  std::string dir_;
  LocalDriverOptions options_;
  std::vector<int> started_;
};

TEST_F(LocalDriverTest, HttpReadinessReturnsAnAnsweringEndpoint) {
  LocalDriver driver(options_);
  FakeContext ctx;
  auto r = Request("web", HttpServer());
  auto out = driver.Apply(r, ctx);
  ASSERT_TRUE(out.ok()) << out.status() << "\n" << ctx.log();
  int pid = Pid(*out);
  json::object ports = json::parse(std::string(out->at("ports").as_string())).as_object();
  int port = static_cast<int>(ports.at("http").as_int64());
  EXPECT_EQ(out->at("endpoint").as_string(), "http://127.0.0.1:" + std::to_string(port) + "/");
  EXPECT_EQ(out->at("gpus").as_string(), "");
  EXPECT_GE(port, options_.port_min);
  EXPECT_LE(port, options_.port_max);
  EXPECT_TRUE(ProbeHttp(port, "/", milliseconds(5000)).ok());
  // The saved state lets Recover/Adopt find it again.
  json::object state = ctx.state();
  EXPECT_EQ(state.at("pid").as_int64(), pid);
  EXPECT_EQ(state.at("startTime").as_int64(), ProcessStartTime(pid));
  EXPECT_EQ(state.at("ports").as_object().at("http").as_int64(), port);
  // Its own session, not gantryd's: it survives gantryd.
  EXPECT_EQ(::getsid(pid), pid);
  EXPECT_THAT(ctx.log(), HasSubstr("ready after"));

  FakeContext dctx;
  ASSERT_TRUE(driver.Destroy(r, dctx).ok()) << dctx.log();
  EXPECT_TRUE(GroupGone(pid));
  EXPECT_FALSE(ProbeHttp(port, "/", milliseconds(500)).ok());
}

TEST_F(LocalDriverTest, WorkloadSeesItsGpusAndEnvironment) {
  LocalDriver driver(options_);
  std::string script = Script("env.sh",
                              "env > \"$GANTRY_STATE_DIR/env.txt\"\n"
                              "exec python3 -m http.server --bind 127.0.0.1 \"$PORT\"");
  json::object config{{"command", json::array{script}},
                      {"env", json::object{{"GREETING", "hello-${GANTRY_INSTANCE}"},
                                           {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}}},
                      {"ports", json::array{json::object{{"name", "web"}}}},
                      {"readiness", json::object{{"tcpPort", "web"}}}};
  auto with = Request("gpu", config, {"1", "3"});
  auto without = Request("cpu", config);
  FakeContext c1, c2;
  // gantryd's own credentials are not the workload's (ChildEnvironment's allow-list).
  ::setenv("GANTRY_BOOTSTRAP_TOKEN", "bootstrap-secret-of-gantryd", 1);
  auto o1 = driver.Apply(with, c1);
  ::unsetenv("GANTRY_BOOTSTRAP_TOKEN");
  ASSERT_TRUE(o1.ok()) << o1.status() << "\n" << c1.log();
  Pid(*o1);
  auto o2 = driver.Apply(without, c2);
  ASSERT_TRUE(o2.ok()) << o2.status() << "\n" << c2.log();
  Pid(*o2);
  EXPECT_EQ(o1->at("gpus").as_string(), "1,3");

  // A leading newline: every variable, the first one included, is then "\nKEY=".
  std::string env1 = "\n" + ReadFile(with.state_dir + "/env.txt");
  EXPECT_THAT(env1, Not(HasSubstr("bootstrap-secret-of-gantryd")));
  EXPECT_THAT(env1, HasSubstr("\nCUDA_VISIBLE_DEVICES=1,3\n"));  // the template cannot widen it
  EXPECT_THAT(env1, HasSubstr("\nNVIDIA_VISIBLE_DEVICES=1,3\n"));
  EXPECT_THAT(env1, HasSubstr("\nGANTRY_GPUS=1,3\n"));
  EXPECT_THAT(env1, HasSubstr("\nCUDA_DEVICE_ORDER=PCI_BUS_ID\n"));
  EXPECT_THAT(env1, HasSubstr("\nGANTRY_INSTANCE=gpu\n"));
  EXPECT_THAT(env1, HasSubstr("\nGANTRY_PROJECT=team\n"));
  EXPECT_THAT(env1, HasSubstr("\nGREETING=hello-gpu\n"));
  EXPECT_THAT(env1, HasSubstr("\nGANTRY_PORT_WEB="));
  std::string env2 = "\n" + ReadFile(without.state_dir + "/env.txt");
  EXPECT_THAT(env2, HasSubstr("\nCUDA_VISIBLE_DEVICES=\n"));
  EXPECT_THAT(env2, HasSubstr("\nNVIDIA_VISIBLE_DEVICES=void\n"));

  FakeContext d;
  EXPECT_TRUE(driver.Destroy(with, d).ok());
  EXPECT_TRUE(driver.Destroy(without, d).ok());
}

TEST_F(LocalDriverTest, TwoWorkloadsGetDistinctPorts) {
  LocalDriver driver(options_);
  json::object config{
      {"command", json::array{"sleep", "600"}},
      {"ports", json::array{json::object{{"name", "a"}}, json::object{{"name", "b"}}}}};
  auto r1 = Request("one", config), r2 = Request("two", config);
  FakeContext c1, c2;
  auto o1 = driver.Apply(r1, c1);
  auto o2 = driver.Apply(r2, c2);
  ASSERT_TRUE(o1.ok()) << o1.status();
  ASSERT_TRUE(o2.ok()) << o2.status();
  Pid(*o1);
  Pid(*o2);
  std::set<int64_t> ports;
  for (auto* o : {&*o1, &*o2}) {
    json::value parsed = json::parse(std::string(o->at("ports").as_string()));
    for (const auto& kv : parsed.as_object()) ports.insert(kv.value().as_int64());
  }
  EXPECT_EQ(ports.size(), 4u);
  FakeContext d;
  EXPECT_TRUE(driver.Destroy(r1, d).ok());
  EXPECT_TRUE(driver.Destroy(r2, d).ok());
}

TEST_F(LocalDriverTest, ExitBeforeReadyFailsWithLogLines) {
  LocalDriver driver(options_);
  std::string script =
      Script("crash.sh", "echo starting up\necho 'boom: no model file' >&2\nexit 3");
  json::object config{{"command", json::array{script}},
                      {"ports", json::array{json::object{{"name", "http"}}}},
                      {"readiness", json::object{{"httpPath", "/"}}}};
  FakeContext ctx;
  auto out = driver.Apply(Request("crash", config), ctx);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(out.status().message(),
            "the workload exited with code 3 before it was ready; last log lines:\n"
            "starting up\nboom: no model file");
  EXPECT_THAT(ctx.log(), HasSubstr("[workload] boom: no model file"));
}

TEST_F(LocalDriverTest, ReadinessTimeoutStopsTheWorkload) {
  LocalDriver driver(options_);
  json::object config{{"command", json::array{"sleep", "600"}},
                      {"ports", json::array{json::object{{"name", "http"}}}},
                      {"readiness", json::object{{"httpPath", "/health"}, {"timeoutSeconds", 1}}}};
  FakeContext ctx;
  auto out = driver.Apply(Request("slow", config), ctx);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(out.status().message(),
              HasSubstr("the workload was not ready within 1s (GET http://127.0.0.1:"));
  int pid = static_cast<int>(ctx.state().at("pid").as_int64());
  started_.push_back(pid);
  EXPECT_TRUE(GroupGone(pid));
}

TEST_F(LocalDriverTest, CancelWhileWaitingStopsTheWorkload) {
  LocalDriver driver(options_);
  json::object config{{"command", json::array{"sleep", "600"}},
                      {"ports", json::array{json::object{{"name", "http"}}}},
                      {"readiness", json::object{{"tcpPort", "http"}}}};
  FakeContext ctx;
  ctx.canceled_ = true;
  auto out = driver.Apply(Request("cancel", config), ctx);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled);
  int pid = static_cast<int>(ctx.state().at("pid").as_int64());
  started_.push_back(pid);
  EXPECT_TRUE(GroupGone(pid));
}

TEST_F(LocalDriverTest, AlwaysRestartsAfterKillAndCounts) {
  LocalDriver driver(options_);
  Events events;
  driver.SetObserver(&events);
  FakeContext ctx;
  auto r = Request("always", HttpServer("Always"));
  auto out = driver.Apply(r, ctx);
  ASSERT_TRUE(out.ok()) << out.status() << "\n" << ctx.log();
  int pid = Pid(*out);
  int port = static_cast<int>(
      json::parse(std::string(out->at("ports").as_string())).as_object().at("http").as_int64());

  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(
      events.WaitFor([](const auto& e) { return Count(e, WorkloadEvent::Kind::kRunning) >= 1; }));
  auto e = events.events();
  ASSERT_GE(e.size(), 2u);
  EXPECT_EQ(e[0].kind, WorkloadEvent::Kind::kRestarting);
  EXPECT_EQ(e[0].reason, "WorkloadExited");
  EXPECT_EQ(e[0].restart_count, 1);
  EXPECT_EQ(e[0].ns, "team");
  EXPECT_EQ(e[0].name, "always");
  EXPECT_EQ(e[0].instance_uid, "uid-always");
  EXPECT_THAT(e[0].message,
              HasSubstr("the workload was killed by signal 9 (SIGKILL); restart 1 in"));
  EXPECT_EQ(e[1].kind, WorkloadEvent::Kind::kRunning);
  EXPECT_EQ(e[1].restart_count, 1);
  int pid2 = static_cast<int>(e[1].driver_state.at("pid").as_int64());
  started_.push_back(pid2);
  EXPECT_NE(pid2, pid);
  EXPECT_EQ(e[1].driver_state.at("ports").as_object().at("http").as_int64(), port);
  EXPECT_EQ(driver.SupervisedPidForTest("uid-always"), pid2);
  EXPECT_TRUE(ProbeHttp(port, "/", milliseconds(5000)).ok());  // ready again, same port

  ASSERT_EQ(::kill(pid2, SIGKILL), 0);
  ASSERT_TRUE(
      events.WaitFor([](const auto& e) { return Count(e, WorkloadEvent::Kind::kRunning) >= 2; }));
  e = events.events();
  EXPECT_EQ(e.back().restart_count, 2);
  int pid3 = static_cast<int>(e.back().driver_state.at("pid").as_int64());
  started_.push_back(pid3);

  FakeContext d;
  ASSERT_TRUE(driver.Destroy(r, d).ok());
  EXPECT_TRUE(GroupGone(pid3));
  EXPECT_EQ(driver.SupervisedPidForTest("uid-always"), 0);
}

TEST_F(LocalDriverTest, NeverReportsFailed) {
  LocalDriver driver(options_);
  Events events;
  driver.SetObserver(&events);
  FakeContext ctx;
  std::string script = Script("never.sh", "echo serving\nexec sleep 600");
  auto r =
      Request("never", json::object{{"command", json::array{script}}, {"restartPolicy", "Never"}});
  auto out = driver.Apply(r, ctx);
  ASSERT_TRUE(out.ok()) << out.status();
  int pid = Pid(*out);
  // The script has printed before it execs sleep; wait for that line so the tail is stable.
  auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (ReadFile(r.state_dir + "/workload.log").empty() &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(events.WaitFor([](const auto& e) { return !e.empty(); }));
  auto e = events.events();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].kind, WorkloadEvent::Kind::kFailed);
  EXPECT_EQ(e[0].reason, "WorkloadExited");
  EXPECT_EQ(e[0].restart_count, 0);
  EXPECT_EQ(e[0].message,
            "the workload was killed by signal 9 (SIGKILL) (restartPolicy Never); last log lines:\n"
            "serving");
  FakeContext d;
  EXPECT_TRUE(driver.Destroy(r, d).ok());
}

TEST_F(LocalDriverTest, MaxRestartsEndsInCrashLoopBackOff) {
  LocalDriver driver(options_);
  Events events;
  driver.SetObserver(&events);
  FakeContext ctx;
  std::string script = Script("flaky.sh", "echo 'CUDA error: out of memory'\nexit 2");
  auto r = Request("flaky", json::object{{"command", json::array{script}}, {"maxRestarts", 2}});
  auto out = driver.Apply(r, ctx);
  ASSERT_TRUE(out.ok()) << out.status();
  Pid(*out);
  ASSERT_TRUE(
      events.WaitFor([](const auto& e) { return Count(e, WorkloadEvent::Kind::kFailed) >= 1; }));
  auto e = events.events();
  EXPECT_EQ(Count(e, WorkloadEvent::Kind::kRestarting), 2);
  EXPECT_EQ(e.back().kind, WorkloadEvent::Kind::kFailed);
  EXPECT_EQ(e.back().reason, "CrashLoopBackOff");
  EXPECT_EQ(e.back().restart_count, 2);
  EXPECT_EQ(e.back().message,
            "the workload exited with code 2 after 2 restarts in a row (maxRestarts 2); not "
            "restarting it again; last log lines:\nCUDA error: out of memory");
  for (const auto& ev : e) {
    if (ev.kind == WorkloadEvent::Kind::kRestarting) {
      EXPECT_THAT(ev.message, HasSubstr("exited with code 2; restart"));
    }
  }
  FakeContext d;
  EXPECT_TRUE(driver.Destroy(r, d).ok());
}

TEST_F(LocalDriverTest, OnFailureDoesNotRestartACleanExit) {
  LocalDriver driver(options_);
  Events events;
  driver.SetObserver(&events);
  FakeContext ctx;
  auto r = Request("batch", json::object{{"command", json::array{"sh", "-c", "echo done"}}});
  auto out = driver.Apply(r, ctx);
  ASSERT_TRUE(out.ok()) << out.status();
  Pid(*out);
  ASSERT_TRUE(events.WaitFor([](const auto& e) { return !e.empty(); }));
  auto e = events.events();
  EXPECT_EQ(e[0].kind, WorkloadEvent::Kind::kFailed);
  EXPECT_EQ(e[0].reason, "WorkloadExited");
  EXPECT_THAT(e[0].message,
              HasSubstr("exited with code 0 (restartPolicy OnFailure restarts only failures)"));
}

TEST_F(LocalDriverTest, DestroyLeavesNoProcessOfTheGroup) {
  options_.stop_grace = seconds(1);
  LocalDriver driver(options_);
  // Ignores SIGTERM (and so do its children): Destroy must escalate to SIGKILL.
  std::string script =
      Script("stubborn.sh", "trap '' TERM\nsleep 600 &\nsleep 600 &\necho up\nwait");
  auto r = Request("stubborn", json::object{{"command", json::array{script}}});
  FakeContext ctx;
  auto out = driver.Apply(r, ctx);
  ASSERT_TRUE(out.ok()) << out.status();
  int pid = Pid(*out);
  auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (ProcessGroupMembers(pid).size() < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(ProcessGroupMembers(pid).size(), 3u);

  FakeContext d;
  ASSERT_TRUE(driver.Destroy(r, d).ok()) << d.log();
  EXPECT_TRUE(GroupGone(pid));
  EXPECT_FALSE(std::filesystem::exists(r.state_dir + "/local-driver.json"));
  EXPECT_THAT(d.log(), HasSubstr("stopping workload pid " + std::to_string(pid)));
  // Idempotent.
  FakeContext again;
  EXPECT_TRUE(driver.Destroy(r, again).ok());
  EXPECT_THAT(again.log(), HasSubstr("no workload of this instance is running"));
}

TEST_F(LocalDriverTest, ApplyAgainReplacesTheWorkload) {
  LocalDriver driver(options_);
  auto r = Request("again", HttpServer());
  FakeContext c1, c2;
  auto o1 = driver.Apply(r, c1);
  ASSERT_TRUE(o1.ok()) << o1.status();
  int pid1 = Pid(*o1);
  auto o2 = driver.Apply(r, c2);
  ASSERT_TRUE(o2.ok()) << o2.status();
  int pid2 = Pid(*o2);
  EXPECT_NE(pid1, pid2);
  EXPECT_TRUE(GroupGone(pid1));
  FakeContext d;
  EXPECT_TRUE(driver.Destroy(r, d).ok());
  EXPECT_TRUE(GroupGone(pid2));
}

TEST_F(LocalDriverTest, AnotherDriverAdoptsAfterShutdown) {
  auto r = Request("adopt", HttpServer("Always"));
  json::object state;
  int pid;
  {
    LocalDriver first(options_);
    FakeContext ctx;
    auto out = first.Apply(r, ctx);
    ASSERT_TRUE(out.ok()) << out.status();
    pid = Pid(*out);
    state = ctx.state();
    first.Shutdown();
  }  // gantryd "restarts": the workload keeps running
  ASSERT_TRUE(ProcessAlive(pid, state.at("startTime").as_int64()));

  LocalDriver second(options_);
  Events events;
  second.SetObserver(&events);
  ASSERT_TRUE(second.Adopt(r, state));
  EXPECT_EQ(second.SupervisedPidForTest("uid-adopt"), pid);
  // Its exits now follow the restart policy.
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(
      events.WaitFor([](const auto& e) { return Count(e, WorkloadEvent::Kind::kRunning) >= 1; }));
  int pid2 = second.SupervisedPidForTest("uid-adopt");
  started_.push_back(pid2);
  EXPECT_NE(pid2, pid);
  EXPECT_EQ(events.events()[0].restart_count, 1);
  FakeContext d;
  ASSERT_TRUE(second.Destroy(r, d).ok());
  EXPECT_TRUE(GroupGone(pid2));
}

// A workload that is not a child of this process (as after a real gantryd restart): exits
// are seen through /proc.
TEST_F(LocalDriverTest, AdoptsAProcessThatIsNotItsChild) {
  int port = 0;
  {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    ::close(fd);
  }
  auto r = Request("orphan", HttpServer("Always"));
  std::filesystem::create_directories(r.state_dir);
  // python starts the server in a new session and exits: the server is reparented.
  std::string pid_file = dir_ + "/orphan.pid";
  std::string cmd =
      "python3 -c \"import subprocess,sys; p=subprocess.Popen(['python3','-m','http.server',"
      "'--bind','127.0.0.1','" +
      std::to_string(port) +
      "'], start_new_session=True, "
      "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); open('" +
      pid_file + "','w').write(str(p.pid))\"";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  int pid = std::stoi(ReadFile(pid_file));
  started_.push_back(pid);
  ProcStat s;
  ASSERT_TRUE(ReadProcStat(pid, &s));
  ASSERT_NE(s.ppid, ::getpid());
  json::object state{{"pid", pid},
                     {"startTime", s.start_time},
                     {"ports", json::object{{"http", port}}},
                     {"gpus", json::array{}},
                     {"restartCount", 4}};

  LocalDriver driver(options_);
  Events events;
  driver.SetObserver(&events);
  ASSERT_TRUE(driver.Adopt(r, state));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(
      events.WaitFor([](const auto& e) { return Count(e, WorkloadEvent::Kind::kRunning) >= 1; }));
  auto e = events.events();
  EXPECT_EQ(e[0].kind, WorkloadEvent::Kind::kRestarting);
  EXPECT_EQ(e[0].restart_count, 5);
  EXPECT_THAT(e[0].message, HasSubstr("exit code is unknown"));
  int pid2 = driver.SupervisedPidForTest("uid-orphan");
  started_.push_back(pid2);
  EXPECT_TRUE(ProbeHttp(port, "/", milliseconds(5000)).ok());  // restarted on the same port
  FakeContext d;
  ASSERT_TRUE(driver.Destroy(r, d).ok());
  EXPECT_TRUE(GroupGone(pid2));
}

TEST_F(LocalDriverTest, AdoptOfAGoneProcessReturnsFalse) {
  LocalDriver driver(options_);
  auto r = Request("gone", HttpServer());
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  long long start = ProcessStartTime(child);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(driver.Adopt(r, json::object{{"pid", child}, {"startTime", start}}));
  // A live pid with another start time is someone else.
  EXPECT_FALSE(driver.Adopt(r, json::object{{"pid", ::getpid()}, {"startTime", 1}}));
  EXPECT_FALSE(driver.Adopt(r, json::object{}));
  EXPECT_EQ(driver.SupervisedPidForTest("uid-gone"), 0);
}

TEST_F(LocalDriverTest, RecoverKillsTheInterruptedWorkload) {
  LocalDriver driver(options_);
  auto r = Request("recover", json::object{{"command", json::array{"sleep", "600"}}});
  FakeContext ctx;
  auto out = driver.Apply(r, ctx);
  ASSERT_TRUE(out.ok()) << out.status();
  int pid = Pid(*out);
  driver.Shutdown();
  LocalDriver after(options_);
  EXPECT_TRUE(after.Recover(ctx.state()));
  EXPECT_TRUE(GroupGone(pid));
  EXPECT_TRUE(after.Recover(ctx.state()));  // nothing left: still safe
}

TEST_F(LocalDriverTest, BadConfigAndMissingProgram) {
  LocalDriver driver(options_);
  FakeContext ctx;
  auto out = driver.Apply(Request("bad", json::object{{"command", json::array{"sleep"}},
                                                      {"restartPolicy", "Sometimes"}}),
                          ctx);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(out.status().message(),
            "spec.local.restartPolicy must be one of Always, OnFailure, Never (got Sometimes)");
  out = driver.Apply(
      Request("missing", json::object{{"command", json::array{"no-such-program-x"}}}), ctx);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(out.status().message(),
            "cannot run no-such-program-x (spec.local.command): No such file or directory");
  out = driver.Apply(Request("var", json::object{{"command", json::array{"sleep"}},
                                                 {"args", json::array{"${GANTRY_PORT_HTTP}"}}}),
                     ctx);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(out.status().message(),
            "spec.local.args[0]: ${GANTRY_PORT_HTTP} is not set in the workload's environment");
}

// The restart backoff and the 10-minute stable-run reset of the restart count follow the
// injected clock: with a FakeClock, ten minutes of stable running pass without waiting.
TEST_F(LocalDriverTest, RestartCountResetsAfterTenMinutesOfStableRunning) {
  FakeClock clock;
  LocalDriver driver(options_, clock, DefaultProcessLauncher());
  Events events;
  driver.SetObserver(&events);
  FakeContext ctx;
  const std::string stop = dir_ + "/stop";
  // Runs until the test creates `stop`, then takes it away and fails.
  std::string script = Script("steady.sh", "while [ ! -e " + stop +
                                               " ]; do sleep 0.01; done\n"
                                               "rm -f " +
                                               stop + "\nexit 3");
  auto r = Request("steady", json::object{{"command", json::array{script}},
                                          {"restartPolicy", "Always"},
                                          {"maxRestarts", 1}});
  auto out = driver.Apply(r, ctx);
  ASSERT_TRUE(out.ok()) << out.status();
  Pid(*out);
  auto crash = [&] { std::ofstream(stop) << "x"; };
  auto count = [&](WorkloadEvent::Kind kind, int n) {
    return events.WaitFor([&](const auto& e) { return Count(e, kind) >= n; });
  };

  crash();  // the first restart in a row, after the initial backoff of fake time
  ASSERT_TRUE(count(WorkloadEvent::Kind::kRestarting, 1));
  EXPECT_THAT(events.events().back().message, HasSubstr("exited with code 3; restart 1 in 0.05s"));
  clock.Advance(milliseconds(49));
  std::this_thread::sleep_for(milliseconds(100));  // a few supervisor ticks: not yet
  EXPECT_EQ(Count(events.events(), WorkloadEvent::Kind::kRunning), 0);
  clock.Advance(milliseconds(1));
  ASSERT_TRUE(count(WorkloadEvent::Kind::kRunning, 1));

  clock.Advance(std::chrono::minutes(10));  // stable: the count starts afresh
  crash();
  ASSERT_TRUE(count(WorkloadEvent::Kind::kRestarting, 2));
  EXPECT_THAT(events.events().back().message, HasSubstr("exited with code 3; restart 2 in 0.05s"));
  EXPECT_EQ(events.events().back().restart_count, 2);
  clock.Advance(milliseconds(50));
  ASSERT_TRUE(count(WorkloadEvent::Kind::kRunning, 2));

  crash();  // within ten minutes of the restart: maxRestarts 1 is used up
  ASSERT_TRUE(count(WorkloadEvent::Kind::kFailed, 1));
  WorkloadEvent last = events.events().back();
  EXPECT_EQ(last.reason, "CrashLoopBackOff");
  EXPECT_THAT(last.message, HasSubstr("after 1 restarts in a row (maxRestarts 1)"));
  EXPECT_EQ(last.restart_count, 2);
  FakeContext d;
  EXPECT_TRUE(driver.Destroy(r, d).ok());
}

// The driver starts workloads through the launcher it is given.
TEST_F(LocalDriverTest, StartsWorkloadsThroughTheInjectedLauncher) {
  FakeClock clock;
  FakeProcessLauncher launcher;
  launcher.FailWith(absl::UnavailableError("no more processes"));
  LocalDriver driver(options_, clock, launcher);
  FakeContext ctx;
  auto r = Request("nolaunch", json::object{{"command", json::array{"sleep", "60"}}});
  auto out = driver.Apply(r, ctx);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status(), absl::UnavailableError("no more processes"));
  ASSERT_EQ(launcher.started().size(), 1u);
  EXPECT_EQ(launcher.started()[0].argv, (std::vector<std::string>{"sleep", "60"}));
  EXPECT_TRUE(launcher.started()[0].new_session);  // it outlives gantryd
}

}  // namespace
}  // namespace gantry::drivers::local
