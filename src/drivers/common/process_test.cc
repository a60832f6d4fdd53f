// The system ProcessLauncher and RunProcess with real programs: what the child gets (its own
// process group, reset signals, stdin, PATH lookup) and how a failed start is reported.
#include "drivers/common/process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gantry::drivers {
namespace {

using ::testing::HasSubstr;

struct Output {
  absl::StatusOr<ProcessResult> result;
  std::vector<std::string> lines;
  int pid = 0;
};

Output RunAndCollect(ProcessSpec spec, std::function<bool()> canceled = nullptr) {
  Output out;
  ProcessHooks hooks;
  hooks.on_line = [&](std::string_view line) { out.lines.emplace_back(line); };
  hooks.on_started = [&](int pid, long long) { out.pid = pid; };
  hooks.canceled = std::move(canceled);
  out.result = RunProcess(spec, hooks);
  return out;
}

// The value of "Key:" in /proc/self/status as the child printed it.
std::string StatusField(const std::vector<std::string>& lines, const std::string& key) {
  for (const auto& l : lines)
    if (l.rfind(key + ":", 0) == 0) {
      std::string v = l.substr(key.size() + 1);
      return v.substr(v.find_first_not_of(" \t"));
    }
  return "?";
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = "/tmp/gantry-process-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string File(const std::string& name, const std::string& text, mode_t mode) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  std::string dir_;
};

TEST(ProcessTest, StreamsOutputAndFeedsStdin) {
  ProcessSpec spec;
  spec.argv = {"cat"};  // looked up in PATH
  spec.stdin_data = "one\ntwo";
  Output out = RunAndCollect(spec);
  ASSERT_TRUE(out.result.ok()) << out.result.status();
  EXPECT_EQ(out.result->exit_code, 0);
  EXPECT_EQ(out.lines, (std::vector<std::string>{"one", "two"}));
}

TEST(ProcessTest, ChildHasItsOwnGroupAndDefaultSignals) {
  // gantryd ignores SIGPIPE (RunProcess does) and may block signals in its threads.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  ::pthread_sigmask(SIG_BLOCK, &block, &old);
  struct sigaction ignore {
  }, old_usr2{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGUSR2, &ignore, &old_usr2);
  ProcessSpec spec;
  spec.argv = {"cat", "/proc/self/status"};
  Output out = RunAndCollect(spec);
  ::sigaction(SIGUSR2, &old_usr2, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(out.result.ok()) << out.result.status();
  EXPECT_EQ(StatusField(out.lines, "SigBlk"), "0000000000000000");
  EXPECT_EQ(StatusField(out.lines, "SigIgn"), "0000000000000000");
  EXPECT_EQ(StatusField(out.lines, "NSpgid"), std::to_string(out.pid));
  EXPECT_NE(StatusField(out.lines, "NSsid"), std::to_string(out.pid));  // no session
}

TEST_F(TempDir, FindsProgramsAndRunsScriptsWithoutAnInterpreterLine) {
  File("plain", "echo from sh \"$1\"\n", 0755);  // no #!: execve says ENOEXEC, sh runs it
  ProcessSpec spec;
  spec.argv = {dir_ + "/plain", "arg"};
  Output out = RunAndCollect(spec);
  ASSERT_TRUE(out.result.ok()) << out.result.status();
  EXPECT_EQ(out.lines, (std::vector<std::string>{"from sh arg"}));
}

TEST_F(TempDir, FailedStartsSayWhichStageFailed) {
  SystemProcessLauncher launcher;
  ChildSpec spec;
  spec.argv = {"gantry-no-such-program"};
  auto missing = launcher.Start(spec);
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(missing->pid, -1);
  EXPECT_EQ(missing->stage, SpawnStage::kExec);
  EXPECT_EQ(missing->error, ENOENT);
  EXPECT_EQ(DescribeSpawnFailure(spec, *missing),
            "cannot run gantry-no-such-program: No such file or directory");

  spec.argv = {File("data", "x", 0644)};  // not executable
  auto denied = launcher.Start(spec);
  ASSERT_TRUE(denied.ok());
  EXPECT_EQ(denied->stage, SpawnStage::kExec);
  EXPECT_EQ(denied->error, EACCES);

  spec.argv = {"true"};
  spec.working_dir = dir_ + "/gone";
  auto no_dir = launcher.Start(spec);
  ASSERT_TRUE(no_dir.ok());
  EXPECT_EQ(no_dir->stage, SpawnStage::kWorkingDir);
  EXPECT_EQ(DescribeSpawnFailure(spec, *no_dir),
            "cannot use working directory " + dir_ + "/gone: No such file or directory");

  ProcessSpec run;
  run.argv = {"gantry-no-such-program"};
  EXPECT_EQ(RunAndCollect(run).result.status(),
            absl::UnavailableError("cannot run gantry-no-such-program: No such file or "
                                   "directory"));
}

TEST(ProcessTest, TimeoutAndCancelKillTheGroup) {
  ProcessSpec spec;
  spec.argv = {"sleep", "30"};
  spec.timeout = std::chrono::milliseconds(200);
  spec.kill_grace = std::chrono::milliseconds(100);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(RunAndCollect(spec).result.status().code(), absl::StatusCode::kDeadlineExceeded);
  spec.timeout = std::chrono::seconds(30);
  EXPECT_EQ(RunAndCollect(spec, [] { return true; }).result.status(),
            absl::CancelledError("canceled"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(ProcessTest, ManyShortRunsAreReapedAsTheyExit) {
  ProcessSpec spec;
  spec.argv = {"true"};
  for (int i = 0; i < 50; ++i) {
    Output out = RunAndCollect(spec);
    ASSERT_TRUE(out.result.ok()) << out.result.status();
    EXPECT_EQ(out.result->exit_code, 0);
    // Reaped: the pid no longer names a child of ours.
    EXPECT_EQ(::waitpid(out.pid, nullptr, WNOHANG), -1);
  }
}

}  // namespace
}  // namespace gantry::drivers
