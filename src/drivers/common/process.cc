#include "drivers/common/process.h"

#include <fcntl.h>
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

extern char** environ;

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

absl::StatusOr<ProcessResult> RunProcess(const ProcessSpec& spec, const ProcessHooks& hooks) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("no program to run");
  // Everything the child needs is prepared before fork: only async-signal-safe calls after.
  std::vector<std::string> env_strings;
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : spec.env) merged[k] = v;
  for (const auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) return absl::UnavailableError("pipe failed");
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    ::close(in_pipe[0]); ::close(in_pipe[1]);
    return absl::UnavailableError("pipe failed");
  }
  // err_pipe reports an exec failure (errno) from the child; closed by a successful exec.
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]}) ::close(fd);
    return absl::UnavailableError("pipe failed");
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      ::close(fd);
    return absl::UnavailableError(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(out_pipe[1], 2);
    ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    ::fcntl(err_pipe[1], F_SETFD, FD_CLOEXEC);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (!spec.working_dir.empty() && ::chdir(spec.working_dir.c_str()) != 0) {
      int e = errno;
      (void)!::write(err_pipe[1], &e, sizeof e);
      ::_exit(127);
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    int e = errno;
    (void)!::write(err_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also in the parent, so killpg works before the child runs
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  int exec_errno = 0;
  ssize_t got = ::read(err_pipe[0], &exec_errno, sizeof exec_errno);
  ::close(err_pipe[0]);
  if (got == sizeof exec_errno) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    ::waitpid(pid, nullptr, 0);
    std::string what = spec.working_dir.empty() || exec_errno != ENOENT
                           ? std::strerror(exec_errno)
                           : std::string(std::strerror(exec_errno)) + " (working directory " +
                                 spec.working_dir + ")";
    return absl::UnavailableError("cannot run " + spec.argv[0] + ": " + what);
  }
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
  std::optional<Clock::time_point> kill_at;
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
    if (!exited && kill_at && now >= *kill_at) {
      KillGroup(pid, SIGKILL);
      kill_at.reset();
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
