// The README's run command followed as a newcomer would (ctest -L slow): `bash scripts/run.sh`
// in a fresh copy of the repository (the committed tree, `git archive HEAD`), so that its
// ./.gantry data directory is new and the examples are loaded on first start. Then: the
// project ml-research and instance my-notebook exist, deploying my-notebook through the API
// serves its page on the endpoint in status.outputs, Ctrl-C (SIGINT to the script's process
// group, as a terminal sends it) stops gantryd.
//
// The copy lives at a fixed place in the build tree (GANTRY_NEWCOMER_DIR) and is made anew
// for every run, build-release included: the test measures what a newcomer waits for, from
// a clean clone to a deployed example instance whose endpoint answers, and prints it (a
// "[newcomer]" line; docs/performance.md). It asserts nothing about time. The packages are
// already installed (the test command installed them); ccache, when warm, makes the build
// short, and the printed ccache hits and misses say how warm it was (GANTRY_NEWCOMER_COLD=1:
// no ccache at all, the build of a fresh machine). The build is done first at a bounded
// parallelism (see SetUp); run.sh then runs its own cmake and ninja as usual.
//
// Workloads outlive gantryd by design (docs/drivers.md, local: "it outlives gantryd"), so
// after the first Ctrl-C the notebook still runs; the test starts the script a second time
// (not a first start: nothing is loaded again), sees the notebook re-adopted, destroys it,
// stops again and then requires that no process of the copy is left.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "local_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using local_test::Alive;
using local_test::GetNode;

// The first build of gantryd in the copy may take this long on a loaded two-core machine.
constexpr int kBuildSeconds = 3600;

using SteadyClock = std::chrono::steady_clock;

double SecondsBetween(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Live processes started from the copy: their working directory is in it, or their command
// line names it (the notebook: python3 COPY/examples/workloads/notebook.py).
std::vector<int> ProcessesOf(const std::string& root) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    int pid = std::stoi(name);
    if (pid == ::getpid() || !Alive(pid)) continue;
    std::error_code e2;
    std::string cwd = fs::read_symlink(entry.path() / "cwd", e2).string();
    std::string cmdline = Slurp((entry.path() / "cmdline").string());
    if ((!e2 && (cwd == root || cwd.rfind(root + "/", 0) == 0)) ||
        cmdline.find(root) != std::string::npos)
      out.push_back(pid);
  }
  return out;
}

// The gantryd a script started (its binary in the copy's build-release), or 0.
int GantrydOf(const std::string& root) {
  for (int pid : ProcessesOf(root)) {
    std::error_code ec;
    std::string exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
    if (!ec && exe == root + "/build-release/src/app/gantryd") return pid;
  }
  return 0;
}

class RunScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::weakly_canonical(GANTRY_NEWCOMER_DIR).string();
    fs::create_directories(root_);
    // Fresh: a clean clone has no build directory either (ccache keeps repeats short).
    for (const auto& entry : fs::directory_iterator(root_)) fs::remove_all(entry.path());
    clone_started_ = SteadyClock::now();
    std::string copy = "git -C '" + std::string(GANTRY_SOURCE_DIR) +
                       "' archive --format=tar HEAD | tar -x -C '" + root_ + "'";
    ASSERT_EQ(std::system(copy.c_str()), 0) << copy;
    ASSERT_TRUE(fs::exists(root_ + "/scripts/run.sh"));
    ASSERT_FALSE(fs::exists(root_ + "/.gantry"));
    copied_ = SteadyClock::now();
    // run.sh builds with ninja's default parallelism (CPUs + 2); on a shared machine the test
    // builds first with the same configuration and ccache settings at -j$GANTRY_TEST_JOBS
    // (default 2), so that run.sh's own cmake and ninja run too but find everything up to
    // date. ccache's counters for this build go to ccache-stats.log.
    const char* jobs_env = std::getenv("GANTRY_TEST_JOBS");
    std::string jobs = jobs_env && *jobs_env ? jobs_env : "2";
    if (const char* cold = std::getenv("GANTRY_NEWCOMER_COLD"); cold && std::string(cold) == "1")
      ::setenv("CCACHE_DISABLE", "1", 1);  // inherited by run.sh too
    std::string prebuild = "cd '" + root_ + "' && export CCACHE_BASEDIR='" + root_ +
                           "' CCACHE_NOHASHDIR=true CCACHE_STATSLOG='" + root_ +
                           "/ccache-stats.log' && bash scripts/configure-release.sh > prebuild.log "
                           "2>&1 && ninja -j" +
                           jobs +
                           " -C build-release gantryd gantry >> "
                           "prebuild.log 2>&1";
    ASSERT_EQ(std::system(prebuild.c_str()), 0) << Slurp(root_ + "/prebuild.log");
    built_ = SteadyClock::now();
    port_ = FreePort();
    ASSERT_GT(port_, 0);
    do tls_port_ = FreePort();
    while (tls_port_ == port_);
    ASSERT_GT(tls_port_, 0);
  }

  void TearDown() override {
    if (script_ > 0) Stop();
    // Whatever a failed test left running in the copy, by pid.
    for (int pid : ProcessesOf(root_)) ::kill(pid, SIGKILL);
  }

  // Starts `bash scripts/run.sh` in the copy, in its own process group (like a terminal's
  // foreground job), output to run-N.log.
  void Start() {
    log_ = root_ + "/run-" + std::to_string(++starts_) + ".log";
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      int devnull = ::open("/dev/null", O_RDONLY);
      ::dup2(devnull, 0);
      if (::chdir(root_.c_str()) != 0) ::_exit(126);
      std::string listen = "127.0.0.1:" + std::to_string(port_);
      ::setenv("GANTRY_LISTEN", listen.c_str(), 1);
      std::string tls_listen = "127.0.0.1:" + std::to_string(tls_port_);
      ::setenv("GANTRY_TLS_LISTEN", tls_listen.c_str(), 1);
      ::unsetenv("GANTRY_GPUS");
      ::unsetenv("GANTRY_ADMIN_PASSWORD");
      // The harness's Api authenticates with the bootstrap token; the CLI that run.sh logs
      // in writes its config under this copy, not the real home.
      ::setenv("GANTRY_BOOTSTRAP_TOKEN", kBootstrapToken, 1);
      ::setenv("HOME", root_.c_str(), 1);
      ::execlp("bash", "bash", "scripts/run.sh", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::setpgid(pid, pid);  // no race with the child's own setpgid: either wins
    script_ = pid;
  }

  // True once the script printed its banner (gantryd ready, examples loaded on a first start);
  // false when the script ended first or the deadline passed.
  bool WaitBanner() {
    bool ok = PollUntil(
        [&] {
          if (ScriptEnded()) return true;
          return Slurp(log_).find("Gantry is running on") != std::string::npos;
        },
        kBuildSeconds);
    return ok && !ScriptEnded();
  }

  bool ScriptEnded() {
    if (script_ <= 0) return true;
    int status = 0;
    pid_t r = ::waitpid(script_, &status, WNOHANG);
    if (r == script_) {
      exit_status_ = status;
      script_ = -1;
      return true;
    }
    return false;
  }

  // Ctrl-C: SIGINT to the script's process group; waits for the script to end.
  bool Stop() {
    if (script_ <= 0) return true;
    ::kill(-script_, SIGINT);
    return PollUntil([&] { return ScriptEnded(); });
  }

  std::string Log() const { return Slurp(log_); }

  // ccache's hits and misses during the prebuild, e.g. "312 hits, 0 misses" (or "no ccache").
  std::string CcacheCounts() const {
    const char* disabled = std::getenv("CCACHE_DISABLE");
    if (disabled && *disabled) return "ccache disabled";
    std::ifstream in(root_ + "/ccache-stats.log");
    if (!in) return "no ccache";
    int hits = 0, misses = 0;
    for (std::string line; std::getline(in, line);) {
      if (line == "direct_cache_hit" || line == "preprocessed_cache_hit") ++hits;
      if (line == "cache_miss") ++misses;
    }
    return "ccache " + std::to_string(hits) + " hits, " + std::to_string(misses) + " misses";
  }

  // The lines of run.sh's first log that report its steps ("... done (N s)", "packages (run):
  // ...", "loaded N objects").
  std::string StepLines(const std::string& out) const {
    std::istringstream in(out);
    std::string steps;
    for (std::string line; std::getline(in, line);)
      if (line.find(" ... done (") != std::string::npos ||
          line.find("packages (run):") != std::string::npos ||
          line.find("  loaded ") != std::string::npos)
        steps += "[newcomer]   run.sh: " + line + "\n";
    return steps;
  }

  // Prints what a newcomer waited for, from the clean copy to the endpoint answering, and
  // records it as a test property (newcomer_seconds in ctest's XML output).
  void ReportNewcomerTime(SteadyClock::time_point started, SteadyClock::time_point banner,
                          SteadyClock::time_point answered, const std::string& out) {
    const double total = SecondsBetween(clone_started_, answered);
    std::printf(
        "[newcomer] clean clone -> deployed my-notebook whose endpoint answers: %.0f s "
        "(packages already installed)\n"
        "[newcomer]   copy of the tree %.1f s; build of gantryd and the CLI %.0f s (%s); "
        "run.sh to its banner %.0f s; deploy to the endpoint answering %.1f s\n%s",
        total, SecondsBetween(clone_started_, copied_), SecondsBetween(copied_, built_),
        CcacheCounts().c_str(), SecondsBetween(started, banner), SecondsBetween(banner, answered),
        StepLines(out).c_str());
    // .ci/run installs the run command's packages as its first step and passes that step's
    // summary line: on a machine with a fresh package state it is what a newcomer adds.
    if (const char* ci = std::getenv("GANTRY_CI_RUN_PACKAGES"); ci && *ci) {
      int count = 0, seconds = 0;
      if (std::sscanf(ci, "packages (run): installed %d in %d s", &count, &seconds) == 2)
        std::printf(
            "[newcomer]   this CI run's package step installed the run command's %d "
            "packages in %d s: with them, %.0f s from a fresh package state\n",
            count, seconds, total + seconds);
      else
        std::printf("[newcomer]   this CI run's package step: %s (no fresh package state)\n", ci);
    }
    std::fflush(stdout);
    RecordProperty("newcomer_seconds", static_cast<int>(total + 0.5));
  }

  SteadyClock::time_point clone_started_, copied_, built_;

  std::string root_;
  std::string log_;
  int port_ = 0;
  int tls_port_ = 0;
  int starts_ = 0;
  pid_t script_ = -1;
  int exit_status_ = 0;
};

TEST_F(RunScriptTest, NewcomerRunsTheScriptDeploysTheNotebookAndOpensItsEndpoint) {
  const auto started = SteadyClock::now();
  Start();
  ASSERT_TRUE(WaitBanner()) << "run.sh did not come up; its output:\n" << Log();
  const auto banner = SteadyClock::now();
  std::string out = Log();
  EXPECT_NE(out.find("first start: loading examples/"), std::string::npos) << out;
  const std::string server = "http://127.0.0.1:" + std::to_string(port_);
  EXPECT_NE(out.find("Gantry is running on " + server), std::string::npos) << out;
  const int gantryd = GantrydOf(root_);
  ASSERT_GT(gantryd, 0) << "no gantryd of the copy in /proc";

  Api api(server);
  ASSERT_TRUE(api.Healthy());
  // The banner tells how to log in, and that password works (the CLI was logged in with it).
  const std::string password = Slurp(root_ + "/.gantry/admin-password");
  ASSERT_GE(password.size(), 16u);
  EXPECT_NE(out.find("user admin, password " + password.substr(0, password.find('\n'))),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("Logged in to " + server + " as admin"), std::string::npos) << out;
  {
    client::HttpClient raw(server);
    auto login = raw.Send(
        "POST", "/auth/login",
        json::serialize(json::object{{"username", "admin"},
                                     {"password", password.substr(0, password.find('\n'))}}));
    ASSERT_TRUE(login.ok());
    EXPECT_EQ(login->status, 200) << login->body;
  }
  // The examples were loaded.
  Resp project = api.Get(ClusterPath("projects", "ml-research"));
  EXPECT_EQ(project.status, 200) << project.raw;
  Resp nb = api.Get(NsPath("ml-research", "computeinstances", "my-notebook"));
  ASSERT_EQ(nb.status, 200) << nb.raw;
  EXPECT_EQ(Str(nb.obj(), "status.phase"), "NotDeployed") << nb.raw;
  Resp instances = api.Get(NsPath("ml-research", "computeinstances"));
  const size_t instance_count = instances.names().size();
  EXPECT_GE(instance_count, 2u) << instances.raw;
  // Without nvidia-smi the script configures demo GPUs.
  json::object node = GetNode(api);
  if (std::system("command -v nvidia-smi >/dev/null 2>&1") != 0) {
    EXPECT_EQ(Str(node, "status.gpuSource"), "configured") << json::serialize(node);
    EXPECT_EQ(Int(node, "status.capacity.demo-gpu"), 4) << json::serialize(node);
  }

  // Deploy my-notebook through the API and open its endpoint.
  Resp deploy = api.Post(NsPath("ml-research", "computeinstances", "my-notebook") + "/deploy",
                         json::object{});
  ASSERT_EQ(deploy.status, 202) << deploy.raw;
  json::object o;
  ASSERT_TRUE(PollUntil([&] {
    o = api.Get(NsPath("ml-research", "computeinstances", "my-notebook")).obj();
    std::string phase = Str(o, "status.phase");
    return phase == "Success" || phase == "Failed";
  })) << json::serialize(o);
  ASSERT_EQ(Str(o, "status.phase"), "Success") << json::serialize(o) << "\n" << Log();
  const std::string endpoint = Str(o, "status.outputs.endpoint");
  // Workloads are published on their own host name (--advertise-host, default localhost), so
  // the UI's session cookie (set for 127.0.0.1) never reaches them (docs/security.md).
  const std::string prefix = "http://localhost:";
  ASSERT_EQ(endpoint.rfind(prefix, 0), 0u) << endpoint;
  const int port = std::atoi(endpoint.c_str() + prefix.size());
  ASSERT_EQ(endpoint, prefix + std::to_string(port) + "/");
  const std::string gpus = Str(o, "status.outputs.gpus");
  EXPECT_FALSE(gpus.empty()) << json::serialize(o);
  std::string page;
  {
    LineStreamReader get(port, "/");
    ASSERT_TRUE(get.WaitDone());
    EXPECT_EQ(get.http_status(), 200);
    for (const auto& l : get.lines()) page += l + "\n";
  }
  ReportNewcomerTime(started, banner, SteadyClock::now(), out);
  EXPECT_NE(page.find("<h1>my-notebook</h1>"), std::string::npos) << page;
  EXPECT_NE(page.find("<p>Project: ml-research</p>"), std::string::npos) << page;
  EXPECT_NE(page.find("CUDA_VISIBLE_DEVICES=" + gpus), std::string::npos) << page;
  const int notebook = static_cast<int>(Int(o, "status.driverState.pid", 0));
  ASSERT_GT(notebook, 0);
  EXPECT_TRUE(Alive(notebook));

  // Ctrl-C: gantryd stops. The notebook outlives it (by design, re-adopted on the next start).
  ASSERT_TRUE(Stop()) << "run.sh did not end after SIGINT:\n" << Log();
  EXPECT_TRUE(PollUntil([&] { return !Alive(gantryd); })) << "gantryd still runs";
  EXPECT_EQ(GantrydOf(root_), 0);
  EXPECT_TRUE(Alive(notebook));

  // The second start: nothing is loaded again, the notebook is re-adopted.
  Start();
  ASSERT_TRUE(WaitBanner()) << Log();
  EXPECT_EQ(Log().find("first start"), std::string::npos) << Log();
  const int gantryd2 = GantrydOf(root_);
  ASSERT_GT(gantryd2, 0);
  Api api2(server);
  o = api2.Get(NsPath("ml-research", "computeinstances", "my-notebook")).obj();
  EXPECT_EQ(Str(o, "status.phase"), "Success") << json::serialize(o);
  EXPECT_EQ(Int(o, "status.driverState.pid", 0), notebook);
  EXPECT_EQ(api2.Get(NsPath("ml-research", "computeinstances")).names().size(), instance_count);
  {
    LineStreamReader get(port, "/");
    ASSERT_TRUE(get.WaitDone());
    EXPECT_EQ(get.http_status(), 200);
  }

  // Destroy it, stop again: nothing of the copy is left running.
  Resp destroy = api2.Post(NsPath("ml-research", "computeinstances", "my-notebook") + "/destroy",
                           json::object{});
  ASSERT_EQ(destroy.status, 202) << destroy.raw;
  ASSERT_TRUE(PollUntil([&] {
    o = api2.Get(NsPath("ml-research", "computeinstances", "my-notebook")).obj();
    return Str(o, "status.phase") == "NotDeployed";
  })) << json::serialize(o);
  EXPECT_FALSE(Alive(notebook));
  ASSERT_TRUE(Stop()) << Log();
  EXPECT_TRUE(WIFEXITED(exit_status_) || WIFSIGNALED(exit_status_));
  EXPECT_TRUE(PollUntil([&] { return !Alive(gantryd2); })) << "gantryd still runs";
  std::vector<int> left;
  EXPECT_TRUE(PollUntil([&] {
    left = ProcessesOf(root_);
    return left.empty();
  })) << "processes of the copy left: "
      << ::testing::PrintToString(left);
}

}  // namespace
}  // namespace gantry::testing
