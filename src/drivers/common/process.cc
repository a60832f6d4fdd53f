#include "drivers/common/process.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

namespace gantry::drivers {
namespace {

using Clock = std::chrono::steady_clock;

void KillGroup(int pgid, int sig) {
  if (pgid > 0) ::kill(-pgid, sig);
}

}  // namespace

long long ProcessStartTime(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return -1;
  // The command name (field 2) may hold spaces and parentheses: skip to the last ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  // Fields 3..21, then 22 is starttime.
  for (int i = 3; i <= 21; ++i)
    if (!(rest >> field)) return -1;
  long long start = -1;
  rest >> start;
  return start;
}

bool KillGroupIfAlive(int pgid, long long start_time) {
  if (pgid <= 0) return false;
  long long now = ProcessStartTime(pgid);
  if (now >= 0 && now != start_time) return false;  // pid reused by an unrelated process
  return ::kill(-pgid, SIGKILL) == 0;
}

namespace {

// In the child, after fork: only async-signal-safe calls. Reports {stage, errno} on
// `report` and exits 127 when something fails before the program runs.
[[noreturn]] void ChildMain(const ChildSpec& spec, char* const* argv, char* const* envp,
                            const gid_t* groups, size_t group_count, int null_fd, int report,
                            pid_t parent) {
  auto fail = [report](SpawnStage stage) {
    int msg[2] = {static_cast<int>(stage), errno};
    (void)!::write(report, msg, sizeof msg);
    ::_exit(127);
  };
  if (spec.new_session) {
    ::setsid();
  } else {
    ::setpgid(0, 0);
  }
  ::dup2(spec.stdin_fd >= 0 ? spec.stdin_fd : null_fd, 0);
  ::dup2(spec.stdout_fd >= 0 ? spec.stdout_fd : null_fd, 1);
  ::dup2(spec.stderr_fd >= 0 ? spec.stderr_fd : null_fd, 2);
  ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Groups first, then the gid, then the uid: after setuid nothing else may be changed.
  if (spec.run_as) {
    if (::setgroups(group_count, groups) != 0 || ::setgid(spec.run_as->gid) != 0 ||
        ::setuid(spec.run_as->uid) != 0)
      fail(SpawnStage::kCredentials);
    if (::setuid(0) == 0) {  // a uid that can be taken back is no drop at all
      errno = EPERM;
      fail(SpawnStage::kCredentials);
    }
  }
  // After the user switch: changing credentials clears the parent-death signal (prctl(2)),
  // and an exec script must die with the gantryd that runs it (failover re-runs it).
  if (!spec.new_session && spec.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
  }
  if (!spec.working_dir.empty() && ::chdir(spec.working_dir.c_str()) != 0)
    fail(SpawnStage::kWorkingDir);
  ::execvpe(argv[0], argv, envp);
  fail(SpawnStage::kExec);
  ::_exit(127);
}

}  // namespace

absl::StatusOr<Spawn> SpawnChild(const ChildSpec& spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("no program to run");
  // Everything the child needs is prepared before fork: only async-signal-safe calls after.
  std::vector<std::string> argv_strings = spec.argv, env_strings = spec.env;
  std::vector<char*> argv, envp;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<gid_t> groups;
  if (spec.run_as) groups = spec.run_as->groups;
  if (spec.run_as && groups.empty()) groups.push_back(spec.run_as->gid);

  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  int report[2];
  if (null_fd < 0 || ::pipe2(report, O_CLOEXEC) != 0) {
    int e = errno;
    if (null_fd >= 0) ::close(null_fd);
    return absl::UnavailableError(std::string("cannot start a process: ") + std::strerror(e));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    for (int fd : {null_fd, report[0], report[1]}) ::close(fd);
    return absl::UnavailableError(std::string("fork failed: ") + std::strerror(e));
  }
  if (pid == 0)
    ChildMain(spec, argv.data(), envp.data(), groups.data(), groups.size(), null_fd, report[1],
              parent);
  if (!spec.new_session) ::setpgid(pid, pid);  // also here, so killpg works at once
  ::close(report[1]);
  ::close(null_fd);
  int msg[2] = {0, 0};
  ssize_t got;
  do got = ::read(report[0], msg, sizeof msg);
  while (got < 0 && errno == EINTR);
  ::close(report[0]);
  Spawn spawn;
  if (got != sizeof msg) {
    spawn.pid = pid;
    return spawn;
  }
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  spawn.stage = static_cast<SpawnStage>(msg[0]);
  spawn.error = msg[1];
  return spawn;
}

std::string DescribeSpawnFailure(const ChildSpec& spec, const Spawn& spawn) {
  std::string why = std::strerror(spawn.error);
  switch (spawn.stage) {
    case SpawnStage::kCredentials:
      return "cannot switch to user " + (spec.run_as ? spec.run_as->name : std::string()) +
             ": " + why;
    case SpawnStage::kWorkingDir:
      return "cannot use working directory " + spec.working_dir + ": " + why;
    case SpawnStage::kExec:
      break;
  }
  if (spawn.error == ENOENT && !spec.working_dir.empty())
    why += " (working directory " + spec.working_dir + ")";
  return "cannot run " + spec.argv[0] + ": " + why;
}

absl::StatusOr<ProcessResult> RunProcess(const ProcessSpec& spec, const ProcessHooks& hooks) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("no program to run");
  ChildSpec child;
  child.argv = spec.argv;
  child.env = EnvStrings(ChildEnvironment(spec.env, spec.run_as ? &*spec.run_as : nullptr));
  child.working_dir = spec.working_dir;
  child.run_as = spec.run_as;
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) return absl::UnavailableError("pipe failed");
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    ::close(in_pipe[0]); ::close(in_pipe[1]);
    return absl::UnavailableError("pipe failed");
  }
  child.stdin_fd = in_pipe[0];
  child.stdout_fd = child.stderr_fd = out_pipe[1];
  auto spawned = SpawnChild(child);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  if (!spawned.ok() || spawned->pid <= 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    if (!spawned.ok()) return spawned.status();
    return absl::UnavailableError(DescribeSpawnFailure(child, *spawned));
  }
  const pid_t pid = spawned->pid;
  if (hooks.on_started) hooks.on_started(pid, ProcessStartTime(pid));

  ::fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
  ::fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  ::signal(SIGPIPE, SIG_IGN);
  size_t written = 0;
  int in_fd = in_pipe[1];
  if (spec.stdin_data.empty()) {
    ::close(in_fd);
    in_fd = -1;
  }
  int out_fd = out_pipe[0];
  std::string partial;
  auto flush_lines = [&](bool all) {
    size_t start = 0, nl;
    while ((nl = partial.find('\n', start)) != std::string::npos) {
      if (hooks.on_line) hooks.on_line(std::string_view(partial).substr(start, nl - start));
      start = nl + 1;
    }
    partial.erase(0, start);
    if (all && !partial.empty()) {
      if (hooks.on_line) hooks.on_line(partial);
      partial.clear();
    }
    if (partial.size() > 64 * 1024) {  // a line without end: pass it on in pieces
      if (hooks.on_line) hooks.on_line(partial);
      partial.clear();
    }
  };

  const auto deadline = Clock::now() + spec.timeout;
  // When to send SIGKILL after SIGTERM; max() while none is due. (A plain time point, not an
  // optional: g++ 12 at -O2 warns that the optional's value may be used uninitialized.)
  Clock::time_point kill_at = Clock::time_point::max();
  std::optional<Clock::time_point> drain_until;
  absl::Status stop_reason;
  int wstatus = 0;
  bool exited = false;
  while (true) {
    if (!exited) {
      pid_t w = ::waitpid(pid, &wstatus, WNOHANG);
      if (w == pid) {
        exited = true;
        drain_until = Clock::now() + std::chrono::milliseconds(200);
      }
    }
    if (exited && (out_fd < 0 || Clock::now() >= *drain_until)) break;
    auto now = Clock::now();
    if (!exited && stop_reason.ok()) {
      if (now >= deadline) {
        stop_reason = absl::DeadlineExceededError(
            "timed out after " + std::to_string(spec.timeout.count() / 1000) + "s");
      } else if (hooks.canceled && hooks.canceled()) {
        stop_reason = absl::CancelledError("canceled");
      }
      if (!stop_reason.ok()) {
        KillGroup(pid, SIGTERM);
        kill_at = now + spec.kill_grace;
      }
    }
    if (!exited && now >= kill_at) {
      KillGroup(pid, SIGKILL);
      kill_at = Clock::time_point::max();
    }
    pollfd fds[2];
    int n = 0;
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    // With no pipe left open (the program closed them and is about to exit) poll would just
    // sleep: look at the child again after a millisecond instead of 50.
    ::poll(fds, n, n > 0 ? 50 : 1);
    if (in_fd >= 0) {
      ssize_t w = ::write(in_fd, spec.stdin_data.data() + written, spec.stdin_data.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if ((w < 0 && errno != EAGAIN) || written == spec.stdin_data.size()) {
        ::close(in_fd);
        in_fd = -1;
      }
    }
    if (out_fd >= 0) {
      char buf[8192];
      while (true) {
        ssize_t r = ::read(out_fd, buf, sizeof buf);
        if (r > 0) {
          partial.append(buf, static_cast<size_t>(r));
          flush_lines(false);
          continue;
        }
        if (r == 0) {
          ::close(out_fd);
          out_fd = -1;
        }
        break;
      }
    }
  }
  flush_lines(true);
  if (in_fd >= 0) ::close(in_fd);
  if (out_fd >= 0) ::close(out_fd);
  // Whatever the program left behind in its group goes with it.
  KillGroup(pid, SIGKILL);
  if (!stop_reason.ok()) return stop_reason;
  ProcessResult result;
  if (WIFEXITED(wstatus)) result.exit_code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) result.signal = WTERMSIG(wstatus);
  return result;
}

}  // namespace gantry::drivers
