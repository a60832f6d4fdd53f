// The `gantry` CLI against the real gantryd and its deploy engine: the real binaries, a real
// exec template whose scripts this test writes, real runs and logs.
//
// Synchronisation (STYLE.md #12): nothing sleeps to let time pass. `gantry ... --wait` itself
// blocks on the server's watch until the run ends; the one test that needs a run to be in
// progress waits for a file its script writes and releases it with another file. Assertions
// are about outputs and exit codes, never about how long anything took.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gantryd_test.h"

#ifndef GANTRY_PATH
#error "GANTRY_PATH must name the gantry binary"
#endif

namespace gantry::testing {
namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CliEngineTest : public GantrydTest {
 protected:
  std::vector<std::string> Args() override { return {"--workers", "2"}; }

  void SetUp() override {
    GantrydTest::SetUp();
    if (HasFatalFailure()) return;
    char tmpl[] = "/tmp/gantry_cli_engine_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::chmod(tmpl, 0777);  // as root, gantryd's scripts run as its workload user
    // A config of our own: whatever the developer's ~/.config/gantry says does not leak in.
    WriteFile("config.yaml", "project: cli-e2e\n");
  }

  void TearDown() override {
    for (pid_t pid : background_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    GantrydTest::TearDown();
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  std::string Path(const std::string& file) const { return dir_ + "/" + file; }

  void WriteFile(const std::string& file, const std::string& text, bool executable = false) {
    std::ofstream(Path(file)) << text;
    if (executable) chmod(Path(file).c_str(), 0755);
  }

  // Starts `gantry --server URL ARGS...` with stdout/stderr going to files; returns its pid.
  pid_t Spawn(const std::vector<std::string>& args, const std::string& tag) {
    std::vector<std::string> argv = {GANTRY_PATH, "--server", gantryd_->base_url()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string out = Path(tag + ".out"), err = Path(tag + ".err");
    std::string config = "GANTRY_CONFIG=" + Path("config.yaml");
    std::string home = "HOME=" + dir_;
    std::string token = std::string("GANTRY_TOKEN=") + kBootstrapToken;
    pid_t pid = fork();
    if (pid == 0) {
      int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int n = open("/dev/null", O_RDONLY);
      if (o < 0 || e < 0 || n < 0) _exit(127);
      dup2(n, 0);
      dup2(o, 1);
      dup2(e, 2);
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      char* envp[] = {config.data(), home.data(), token.data(), nullptr};
      execve(cargv[0], cargv.data(), envp);
      _exit(127);
    }
    return pid;
  }

  Result Collect(pid_t pid, const std::string& tag) {
    Result r;
    int status = 0;
    if (waitpid(pid, &status, 0) == pid && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    r.out = Slurp(Path(tag + ".out"));
    r.err = Slurp(Path(tag + ".err"));
    return r;
  }

  // Runs gantry to completion.
  Result Gantry(const std::vector<std::string>& args) {
    std::string tag = "cmd" + std::to_string(++commands_);
    std::string line = "$ gantry";
    for (const auto& a : args) line += " " + a;
    std::cerr << line << std::endl;  // what ran, for reading a failure
    Result r = Collect(Spawn(args, tag), tag);
    std::cerr << "  exit " << r.exit_code << std::endl;
    return r;
  }

  // Polls for a file a script writes (the condition this test waits on), with a deadline
  // that only bounds a failure.
  bool WaitFile(const std::string& file) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!fs::exists(Path(file))) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  // Polls until `file` (a background command's output) contains `text`; the deadline only
  // bounds a failure.
  bool WaitText(const std::string& file, const std::string& text) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!absl::StrContains(Slurp(Path(file)), text)) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  // Writes the scripts and applies a project, templates, profiles and instances with the CLI.
  //   good  — prints three lines, writes outputs, exits 0 (apply and destroy)
  //   bad   — prints two lines and exits 3
  //   slow  — writes started-RUN, waits for the file `release`, then succeeds
  void ApplyFixtures() {
    WriteFile("good.sh",
              "#!/bin/sh\n"
              "/bin/cat > /dev/null\n"
              "echo \"good: $1 of $GANTRY_INSTANCE starting\"\n"
              "echo \"good: run $GANTRY_RUN\"\n"
              "echo '{\"endpoint\": \"http://good.example:8080\"}' > \"$GANTRY_OUTPUTS\"\n"
              "echo \"good: $1 done\"\n",
              true);
    WriteFile("bad.sh",
              "#!/bin/sh\n"
              "/bin/cat > /dev/null\n"
              "echo \"bad: $1 starting\"\n"
              "echo \"bad: the disk is on fire\" >&2\n"
              "exit 3\n",
              true);
    WriteFile("slow.sh",
              "#!/bin/sh\n"
              "/bin/cat > /dev/null\n"
              "echo \"slow: $1 waiting\"\n"
              "echo > \"" +
                  Path("started-") +
                  "$GANTRY_RUN\"\n"
                  "while [ ! -e \"" +
                  Path("release") +
                  "\" ]; do /bin/sleep 0.05; done\n"
                  "echo \"slow: $1 done\"\n",
              true);
    std::string m =
        "apiVersion: paas.gantry.dev/v1\nkind: Project\nmetadata: {name: cli-e2e}\n"
        "spec: {displayName: CLI end to end}\n";
    for (const char* s : {"good", "bad", "slow"}) {
      absl::StrAppend(&m, "---\napiVersion: paas.gantry.dev/v1\nkind: EnvironmentTemplate\n",
                      "metadata: {name: ", s, "-tmpl, namespace: cli-e2e}\n",
                      "spec:\n  driver: exec\n  exec: {command: [\"/bin/sh\", \"", Path(s),
                      ".sh\"], timeoutSeconds: 300}\n");
      absl::StrAppend(&m, "---\napiVersion: paas.gantry.dev/v1\nkind: ComputeProfile\n",
                      "metadata: {name: ", s, "-prof, namespace: cli-e2e}\n",
                      "spec: {templateRef: {name: ", s, "-tmpl}, resources: {cpu: 1}}\n");
      absl::StrAppend(&m, "---\napiVersion: paas.gantry.dev/v1\nkind: ComputeInstance\n",
                      "metadata: {name: ", s, ", namespace: cli-e2e}\n", "spec: {displayName: ", s,
                      " one, profileRef: {name: ", s, "-prof}}\n");
    }
    WriteFile("manifests.yaml", m);
    Result r = Gantry({"apply", "-f", Path("manifests.yaml")});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << gantryd_->Log();
  }

  std::string dir_;
  int commands_ = 0;
  std::vector<pid_t> background_;
};

TEST_F(CliEngineTest, DeployWaitLogsFailureDestroyAndRuns) {
  ASSERT_NO_FATAL_FAILURE(ApplyFixtures());

  // A deploy that succeeds: every phase on the way, exit 0.
  Result r = Gantry({"deploy", "good", "--wait"});
  EXPECT_EQ(r.exit_code, 0) << r.err << gantryd_->Log();
  EXPECT_EQ(r.out,
            "computeinstance/good deploy queued (run good-1)\nWaiting\nIn Progress\nSuccess\n");
  EXPECT_EQ(r.err, "");

  // Its log, by instance and by run name.
  r = Gantry({"logs", "good"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out,
                                "good: apply of good starting\ngood: run good-1\n"
                                "good: apply done\n"))
      << r.out;
  Result by_run = Gantry({"logs", "good-1"});
  EXPECT_EQ(by_run.exit_code, 0) << by_run.err;
  EXPECT_EQ(by_run.out, r.out);
  // Following a run that has ended prints the whole log and returns.
  Result followed = Gantry({"logs", "good", "-f"});
  EXPECT_EQ(followed.exit_code, 0) << followed.err;
  EXPECT_EQ(followed.out, r.out);

  // A deploy that fails: exit 1 with the reason and the script's last words.
  r = Gantry({"deploy", "bad", "--wait", "--timeout", "5m"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out, "computeinstance/bad deploy queued (run bad-1)\nWaiting\nIn Progress\nFailed\n");
  EXPECT_TRUE(absl::StartsWith(r.err, "error: DriverError: deploy run bad-1 failed: ")) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "the disk is on fire")) << r.err;
  r = Gantry({"logs", "bad"});
  EXPECT_TRUE(absl::StrContains(r.out, "bad: apply starting\n")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "bad: the disk is on fire\n")) << r.out;

  // Destroy and wait: Not Deployed, exit 0; a second destroy is refused as the server says.
  r = Gantry({"destroy", "good", "--wait"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "computeinstance/good destroy queued (run good-2)\nWaiting\nIn Progress\nNot Deployed\n");
  r = Gantry({"destroy", "good"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: instance good is Not Deployed; there is nothing to destroy\n");

  // Every run in a table.
  r = Gantry({"get", "runs"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines;
  for (absl::string_view l : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
    lines.push_back(std::string(l.data(), l.size()));
  }
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_TRUE(absl::StartsWith(lines[0],
                               "NAME    INSTANCE  ACTION   STATUS     ATTEMPT  STARTED  "
                               "DURATION  REASON"))
      << r.out;
  auto row_with = [&](const std::string& run) {
    for (const auto& l : lines)
      if (absl::StartsWith(l, run + " ")) return l;
    return std::string();
  };
  EXPECT_TRUE(absl::StartsWith(row_with("good-1"), "good-1  good      deploy   Succeeded  1 "))
      << r.out;
  EXPECT_TRUE(absl::StartsWith(row_with("good-2"), "good-2  good      destroy  Succeeded  1 "))
      << r.out;
  EXPECT_TRUE(absl::StartsWith(row_with("bad-1"), "bad-1   bad       deploy   Failed     1 "))
      << r.out;
  EXPECT_TRUE(absl::EndsWith(row_with("bad-1"), "DriverError")) << r.out;
  r = Gantry({"get", "runs", "-l", "paas.gantry.dev/instance=good", "-o", "name"});
  // In the server's order (newest first today); the set is what matters here.
  std::vector<std::string> names;
  for (absl::string_view l : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
    names.push_back(std::string(l.data(), l.size()));
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"run/good-1", "run/good-2"})) << r.out << r.err;

  // The instances' table keeps the seed's columns, in the seed's order, with the lifecycle's
  // EXPIRES and GPU% (issue 17) before CREATED as kubectl puts printer columns before AGE.
  r = Gantry({"get", "instances"});
  EXPECT_TRUE(absl::StartsWith(
      r.out, "NAME  DISPLAY NAME  PROFILE    EXPIRES  GPU%    CREATED  STATUS        SHARING\n"))
      << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "Not Deployed")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "Failed")) << r.out;

  // Nothing changed in the profile: upgrade says so.
  r = Gantry({"upgrade", "good"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "computeinstance/good is already at the latest revision (profile revision 1)\n");
}

TEST_F(CliEngineTest, RefusalsWhileInProgressAndFollowingALiveLog) {
  ASSERT_NO_FATAL_FAILURE(ApplyFixtures());
  Result r = Gantry({"deploy", "slow"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "computeinstance/slow deploy queued (run slow-1)\n");
  ASSERT_TRUE(WaitFile("started-slow-1")) << gantryd_->Log();

  // In Progress: deploy, destroy and cancel are refused with the server's words, exit 1.
  r = Gantry({"deploy", "slow"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "error: instance slow is In Progress (deploy run slow-1); it cannot be "
            "deployed until the run ends\n");
  r = Gantry({"destroy", "slow", "--wait"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "error: instance slow is In Progress (deploy run slow-1); it cannot be "
            "destroyed until the run ends\n");
  r = Gantry({"cancel", "slow"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "error: instance slow is In Progress (deploy run slow-1); it cannot be "
            "canceled until the run ends\n");

  // A waiting deploy and a log follower, both blocked on the live run; then release it.
  pid_t waiter = Spawn({"logs", "slow", "-f"}, "follow");
  background_.push_back(waiter);
  WriteFile("release", "");
  Result followed = Collect(waiter, "follow");
  background_.clear();
  EXPECT_EQ(followed.exit_code, 0) << followed.err;
  EXPECT_TRUE(absl::StrContains(followed.out, "slow: apply waiting\nslow: apply done\n"))
      << followed.out;
  EXPECT_TRUE(absl::StrContains(followed.out, "gantry: run succeeded")) << followed.out;

  // The run has ended (the follow returned at its end): --wait on a new deploy works from
  // Success too, and the release file lets it through at once.
  r = Gantry({"deploy", "slow", "--wait"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::EndsWith(r.out, "Success\n")) << r.out;

  // Unknown names.
  r = Gantry({"logs", "ghost"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: no run or computeinstance named \"ghost\" in project \"cli-e2e\"\n");
  r = Gantry({"deploy", "ghost", "--wait"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(absl::StartsWith(r.err, "error: ")) << r.err;
}

// Service instances (si/NAME) through the CLI: a service deployed onto a compute instance that
// is not deployed waits (ComputeNotReady) and goes on by itself once the compute is Success;
// the compute cannot be destroyed or deleted under it without --cascade.
TEST_F(CliEngineTest, ServiceInstanceWaitsForItsComputeAndCascade) {
  ASSERT_NO_FATAL_FAILURE(ApplyFixtures());
  WriteFile(
      "services.yaml",
      "apiVersion: paas.gantry.dev/v1\nkind: ServiceProfile\n"
      "metadata: {name: nb-prof, namespace: cli-e2e}\n"
      "spec: {serviceType: notebook, templateRef: {name: good-tmpl}}\n"
      "---\napiVersion: paas.gantry.dev/v1\nkind: ServiceInstance\n"
      "metadata: {name: nb, namespace: cli-e2e}\n"
      "spec: {displayName: Notebook, profileRef: {name: nb-prof}, computeRef: {name: slow}}\n");
  Result r = Gantry({"apply", "-f", Path("services.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "serviceprofile/nb-prof created\nserviceinstance/nb created\n");

  // The compute instance is Not Deployed: the service's deploy waits for it.
  pid_t waiter = Spawn({"deploy", "si/nb", "--wait"}, "svc-deploy");
  background_.push_back(waiter);
  ASSERT_TRUE(WaitText("svc-deploy.out", "Waiting\n")) << Slurp(Path("svc-deploy.err"));
  r = Gantry({"get", "sp"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StartsWith(r.out,
                               "NAME     DISPLAY NAME  TYPE      TEMPLATE   REVISION  AGE\n"
                               "nb-prof  <none>        notebook  good-tmpl  1 "))
      << r.out;

  // Deploy the compute instance; its run holds until released. The service then deploys by
  // itself and the waiting CLI ends with Success.
  r = Gantry({"deploy", "slow"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitFile("started-slow-1")) << gantryd_->Log();
  r = Gantry({"get", "si", "-o", "wide"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "nb    Notebook      nb-prof  slow     Waiting")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "ComputeNotReady")) << r.out;
  WriteFile("release", "");
  Result deployed = Collect(waiter, "svc-deploy");
  background_.clear();
  EXPECT_EQ(deployed.exit_code, 0) << deployed.err;
  EXPECT_TRUE(absl::StartsWith(deployed.out, "serviceinstance/nb deploy queued (run "))
      << deployed.out;
  EXPECT_TRUE(absl::EndsWith(deployed.out, "Success\n")) << deployed.out;
  r = Gantry({"logs", "si/nb"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "good: apply of nb starting")) << r.out;

  // The compute instance cannot go from under its service, unless asked to cascade.
  r = Gantry({"delete", "ci", "slow"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "1 service instance runs on it")) << r.err;
  r = Gantry({"destroy", "slow"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "1 service instance runs on it")) << r.err;
  r = Gantry({"destroy", "slow", "--cascade", "--wait"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::EndsWith(r.out, "Not Deployed\n")) << r.out;
  r = Gantry({"get", "si", "nb"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "Not Deployed")) << r.out;
  r = Gantry({"delete", "ci", "slow", "--cascade"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "computeinstance/slow deleted\n");
}

// gantry stop / start (issue 17 item 1): --wait ends on Stopped / Success; refusals as the
// server words them.
TEST_F(CliEngineTest, StopAndStartWaitAndRefusals) {
  ASSERT_NO_FATAL_FAILURE(ApplyFixtures());
  WriteFile("nb.yaml",
            "apiVersion: paas.gantry.dev/v1\nkind: EnvironmentTemplate\n"
            "metadata: {name: nb-tmpl, namespace: cli-e2e}\n"
            "spec:\n  driver: exec\n  exec: {command: [\"/bin/sh\", \"" +
                Path("good.sh") +
                "\"], actions: [apply, destroy, stop, start]}\n"
                "---\napiVersion: paas.gantry.dev/v1\nkind: ComputeProfile\n"
                "metadata: {name: nb-prof, namespace: cli-e2e}\n"
                "spec: {templateRef: {name: nb-tmpl}}\n"
                "---\napiVersion: paas.gantry.dev/v1\nkind: ComputeInstance\n"
                "metadata: {name: nb, namespace: cli-e2e}\n"
                "spec: {profileRef: {name: nb-prof}}\n");
  Result r = Gantry({"apply", "-f", Path("nb.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = Gantry({"stop", "nb"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: instance nb is Not Deployed; nothing is running to stop\n");
  ASSERT_EQ(Gantry({"deploy", "nb", "--wait"}).exit_code, 0);

  r = Gantry({"stop", "nb", "--wait"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(absl::StartsWith(r.out, "computeinstance/nb stop queued (run nb-2)\n")) << r.out;
  EXPECT_TRUE(absl::EndsWith(r.out, "\nStopped\n")) << r.out;
  r = Gantry({"stop", "ci/nb"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: instance nb is Stopped; nothing is running to stop\n");
  r = Gantry({"deploy", "nb"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(absl::StartsWith(r.err, "error: instance nb is Stopped; start it")) << r.err;
  r = Gantry({"logs", "nb-2"});
  EXPECT_TRUE(absl::StrContains(r.out, "good: stop of nb starting\n")) << r.out;

  r = Gantry({"start", "nb", "--wait"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(absl::StartsWith(r.out, "computeinstance/nb start queued (run nb-3)\n")) << r.out;
  EXPECT_TRUE(absl::EndsWith(r.out, "\nSuccess\n")) << r.out;
  r = Gantry({"start", "nb"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: instance nb is Success; only a Stopped instance can be started\n");

  // A template whose script does not list stop and start: refused, with the reason.
  ASSERT_EQ(Gantry({"deploy", "good", "--wait"}).exit_code, 0);
  r = Gantry({"stop", "good"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "error: compute instance good cannot be stopped: its template's spec.exec.actions "
            "does not list both stop and start (the program is called only with the actions it "
            "lists)\n");
}

// `gantry upgrade` to a profile revision whose ttl max is below the instance's ttl: refused
// naming spec.lifecycle.ttl and the new max; within it the upgrade goes through.
TEST_F(CliEngineTest, UpgradeRechecksTheTtlAgainstTheNewRevision) {
  ASSERT_NO_FATAL_FAILURE(ApplyFixtures());
  const std::string tmpl =
      "apiVersion: paas.gantry.dev/v1\nkind: EnvironmentTemplate\n"
      "metadata: {name: ttl-tmpl, namespace: cli-e2e}\n"
      "spec:\n  driver: exec\n  exec: {command: [\"/bin/sh\", \"" +
      Path("good.sh") + "\"]}\n";
  auto profile = [&](const std::string& max) {
    return "---\napiVersion: paas.gantry.dev/v1\nkind: ComputeProfile\n"
           "metadata: {name: ttl-prof, namespace: cli-e2e}\n"
           "spec: {templateRef: {name: ttl-tmpl}, lifecycle: {ttl: {default: 8h, max: " +
           max + "}}}\n";
  };
  WriteFile("ttl.yaml", tmpl + profile("72h") +
                            "---\napiVersion: paas.gantry.dev/v1\nkind: ComputeInstance\n"
                            "metadata: {name: ttl-nb, namespace: cli-e2e}\n"
                            "spec: {profileRef: {name: ttl-prof}, lifecycle: {ttl: 48h}}\n");
  Result r = Gantry({"apply", "-f", Path("ttl.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_EQ(Gantry({"deploy", "ttl-nb", "--wait"}).exit_code, 0);
  WriteFile("ttl2.yaml", tmpl + profile("24h"));
  r = Gantry({"apply", "-f", Path("ttl2.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  r = Gantry({"upgrade", "ttl-nb"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.err,
            "error: ComputeInstance \"ttl-nb\" is invalid: spec.lifecycle.ttl: upgrading to "
            "revision 2 of profile ttl-prof: ttl 48h is over the profile's maximum 24h; ask for at "
            "most that (an admin sets the maximum in the profile's spec.lifecycle.ttl.max)\n");

  // Within the new max: upgraded.
  WriteFile("ttl3.yaml",
            "apiVersion: paas.gantry.dev/v1\nkind: ComputeInstance\n"
            "metadata: {name: ttl-nb, namespace: cli-e2e}\n"
            "spec: {profileRef: {name: ttl-prof}, lifecycle: {ttl: 12h}}\n");
  r = Gantry({"apply", "-f", Path("ttl3.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = Gantry({"upgrade", "ttl-nb"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "computeinstance/ttl-nb upgraded to profile revision 2 (was 1); `gantry deploy "
            "ttl-nb` applies it\n");
}

// Approval gates (docs/approvals.md): deploy prints that it waits, reject and approve answer
// (an org-admin may answer their own request), cancel withdraws a pending start.
TEST_F(CliEngineTest, ApproveRejectAndWithdrawAPendingRequest) {
  ApplyFixtures();
  WriteFile("gated.yaml",
            "apiVersion: paas.gantry.dev/v1\nkind: ComputeProfile\n"
            "metadata: {name: gated-prof, namespace: cli-e2e}\n"
            "spec: {templateRef: {name: good-tmpl}, resources: {gpu: {count: 8}},\n"
            "       approval: {required: true, whenGpusAtLeast: 8}}\n---\n"
            "apiVersion: paas.gantry.dev/v1\nkind: ComputeInstance\n"
            "metadata: {name: gated, namespace: cli-e2e}\n"
            "spec: {profileRef: {name: gated-prof}}\n---\n"
            "apiVersion: paas.gantry.dev/v1\nkind: Webhook\n"
            "metadata: {name: chat, namespace: cli-e2e}\n"
            "spec: {url: \"https://hooks.example.invalid/gantry\", events: [ApprovalRequested],\n"
            "       secret: a-long-random-secret}\n");
  Result r = Gantry({"apply", "-f", Path("gated.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = Gantry({"deploy", "gated", "--wait"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out,
                                "computeinstance/gated deploy waits for approval: deploy of 8 "
                                "GPUs requested by system:bootstrap"))
      << r.out;
  // The request's webhook delivery is in the hook's history.
  r = Gantry({"webhooks", "deliveries", "chat"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "ApprovalRequested")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "chat")) << r.out;
  r = Gantry({"reject", "gated", "-m", "not this week"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out,
                                "computeinstance/gated rejected: deploy of 8 GPUs requested by "
                                "system:bootstrap was rejected by system:bootstrap: not this week"))
      << r.out;
  r = Gantry({"reject", "gated"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "has no pending approval request")) << r.err;
  ASSERT_EQ(Gantry({"deploy", "gated"}).exit_code, 0);
  r = Gantry({"cancel", "gated"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out,
                                "computeinstance/gated approval request withdrawn: deploy of 8 "
                                "GPUs requested by system:bootstrap was canceled by "
                                "system:bootstrap before it was answered"))
      << r.out;
  ASSERT_EQ(Gantry({"deploy", "gated"}).exit_code, 0);
  r = Gantry({"approve", "gated", "-m", "ok"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out,
                                "computeinstance/gated approved (deploy of 8 GPUs requested by "
                                "system:bootstrap); deploy run gated-1 queued"))
      << r.out;
  r = Gantry({"describe", "ci", "gated"});
  EXPECT_TRUE(absl::StrContains(r.out, "system:bootstrap")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "ApprovalRequested")) << r.out;
  r = Gantry({"deploy", "good"});
  r = Gantry({"approve", "good"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "no pending approval request")) << r.err;
}

}  // namespace
}  // namespace gantry::testing
