#include "drivers/common/process.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

namespace gantry::drivers {
namespace {

using SteadyClock = std::chrono::steady_clock;

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

constexpr size_t kChildStackBytes = 256 * 1024;

// What the child reads after the clone, all prepared by the parent (which waits, CLONE_VFORK).
struct ChildPlan {
  bool new_session = false, die_with_parent = true;
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
  const char* working_dir = nullptr;  // null: inherit
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
  char* const* argv = nullptr;  // argv[0] as given
  char* const* envp = nullptr;
  const char* const* paths = nullptr;  // the files to execve in turn (PATH lookup), null-ended
  char** script_argv = nullptr;        // {"/bin/sh", <path>, argv[1..], null} for ENOEXEC
  const gid_t* groups = nullptr;
  size_t group_count = 0;
  int null_fd = -1, report = -1;
  pid_t parent = 0;
};

// The child shares gantryd's memory and its thread's TLS: it calls no libc function that
// takes a lock, allocates or talks to other threads (glibc's setuid() signals every thread
// of the process to switch them too: here that would be gantryd's threads), and it leaves
// through exit_group (ASan instruments calls to _exit, which is noreturn, and would write a
// warning about the foreign stack into the child's output).
[[noreturn]] __attribute__((no_sanitize_address)) void ChildExit(int code) {
  ::syscall(SYS_exit_group, code);
  __builtin_unreachable();
}

[[noreturn]] __attribute__((no_sanitize_address)) void ChildFail(const ChildPlan& plan,
                                                                 SpawnStage stage, int error) {
  int msg[2] = {static_cast<int>(stage), error};
  (void)!::syscall(SYS_write, plan.report, msg, sizeof msg);
  ChildExit(127);
}

// dup2 (arm64 has only dup3, which refuses from == to).
__attribute__((no_sanitize_address)) void ChildDup(int from, int to) {
#ifdef SYS_dup2
  ::syscall(SYS_dup2, from, to);
#else
  if (from != to) ::syscall(SYS_dup3, from, to, 0);
#endif
}

// Session or group, fds 0-2, every other fd close-on-exec, default signal dispositions,
// empty signal mask (the parent blocked every signal around the clone).
__attribute__((no_sanitize_address)) void ChildSetUpProcess(const ChildPlan& plan) {
  if (plan.new_session) {
    ::syscall(SYS_setsid);
  } else {
    ::syscall(SYS_setpgid, 0, 0);
  }
  ChildDup(plan.stdin_fd >= 0 ? plan.stdin_fd : plan.null_fd, 0);
  ChildDup(plan.stdout_fd >= 0 ? plan.stdout_fd : plan.null_fd, 1);
  ChildDup(plan.stderr_fd >= 0 ? plan.stderr_fd : plan.null_fd, 2);
  ::syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
  // The kernel's struct sigaction on x86-64 and arm64: handler, flags, restorer, mask (64
  // signals). Only SIG_IGN would survive the execve; handlers are reset by it anyway.
  struct {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    unsigned long mask;
  } dfl{SIG_DFL, 0, nullptr, 0};
  for (int sig = 1; sig < 65; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP)
      ::syscall(SYS_rt_sigaction, sig, &dfl, nullptr, sizeof dfl.mask);
  unsigned long none = 0;
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, nullptr, sizeof none);
}

// Groups first, then the gid, then the uid: after setuid nothing else may be changed.
__attribute__((no_sanitize_address)) void ChildDropCredentials(const ChildPlan& plan) {
  if (!plan.switch_user) return;
  if (::syscall(SYS_setgroups, plan.group_count, plan.groups) != 0 ||
      ::syscall(SYS_setgid, plan.gid) != 0 || ::syscall(SYS_setuid, plan.uid) != 0)
    ChildFail(plan, SpawnStage::kCredentials, errno);
  if (::syscall(SYS_setuid, 0) == 0)  // a uid that can be taken back is no drop at all
    ChildFail(plan, SpawnStage::kCredentials, EPERM);
}

// execve of each PATH candidate in turn, as execvpe does: a script without #! runs under
// /bin/sh, EACCES wins over ENOENT, other errors end the search. Returns the errno.
__attribute__((no_sanitize_address)) int ChildExec(const ChildPlan& plan) {
  bool denied = false;
  int error = ENOENT;
  for (const char* const* path = plan.paths; *path; ++path) {
    ::syscall(SYS_execve, *path, plan.argv, plan.envp);
    error = errno;
    if (error == ENOEXEC) {
      plan.script_argv[1] = const_cast<char*>(*path);
      ::syscall(SYS_execve, "/bin/sh", plan.script_argv, plan.envp);
      return errno;
    }
    if (error == EACCES) denied = true;
    if (error != EACCES && error != ENOENT && error != ENOTDIR && error != ESTALE &&
        error != ENODEV && error != ETIMEDOUT)
      return error;
  }
  return denied ? EACCES : error;
}

__attribute__((no_sanitize_address)) int ChildMain(void* arg) {
  const ChildPlan& plan = *static_cast<const ChildPlan*>(arg);
  ChildSetUpProcess(plan);
  ChildDropCredentials(plan);
  // After the user switch: changing credentials clears the parent-death signal (prctl(2)),
  // and an exec script must die with the gantryd that runs it (failover re-runs it).
  if (!plan.new_session && plan.die_with_parent) {
    ::syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (::syscall(SYS_getppid) != plan.parent) ChildExit(127);
  }
  if (plan.working_dir && ::syscall(SYS_chdir, plan.working_dir) != 0)
    ChildFail(plan, SpawnStage::kWorkingDir, errno);
  ChildFail(plan, SpawnStage::kExec, ChildExec(plan));
  return 127;
}

// The files execve tries for `file`, as execvpe looks them up in gantryd's PATH (a name
// with a '/' is used as it is; an empty PATH entry is the working directory).
std::vector<std::string> PathCandidates(const std::string& file) {
  if (file.empty()) return {};
  if (file.find('/') != std::string::npos) return {file};
  const char* env_path = std::getenv("PATH");
  std::string path = env_path ? env_path : "/bin:/usr/bin";
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t colon = path.find(':', start);
    std::string dir = path.substr(start, colon == std::string::npos ? path.npos : colon - start);
    out.push_back(dir.empty() ? file : dir + "/" + file);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
}

// The strings ChildPlan points into, owned by the parent for the time of the clone.
struct PlanStorage {
  std::vector<std::string> argv_strings, env_strings, path_strings;
  std::vector<char*> argv, envp, script_argv;
  std::vector<const char*> paths;
  std::vector<gid_t> groups;
};

ChildPlan Prepare(const ChildSpec& spec, PlanStorage* st) {
  st->argv_strings = spec.argv;
  st->env_strings = spec.env;
  st->path_strings = PathCandidates(spec.argv[0]);
  for (auto& s : st->argv_strings) st->argv.push_back(s.data());
  st->argv.push_back(nullptr);
  for (auto& s : st->env_strings) st->envp.push_back(s.data());
  st->envp.push_back(nullptr);
  for (auto& s : st->path_strings) st->paths.push_back(s.c_str());
  st->paths.push_back(nullptr);
  static char kShell[] = "/bin/sh";
  st->script_argv.push_back(kShell);
  st->script_argv.push_back(nullptr);  // the script, set by the child
  st->script_argv.insert(st->script_argv.end(), st->argv.begin() + 1, st->argv.end());
  if (spec.run_as) st->groups = spec.run_as->groups;
  if (spec.run_as && st->groups.empty()) st->groups.push_back(spec.run_as->gid);
  ChildPlan plan;
  plan.new_session = spec.new_session;
  plan.die_with_parent = spec.die_with_parent;
  plan.stdin_fd = spec.stdin_fd;
  plan.stdout_fd = spec.stdout_fd;
  plan.stderr_fd = spec.stderr_fd;
  plan.working_dir = spec.working_dir.empty() ? nullptr : spec.working_dir.c_str();
  plan.switch_user = spec.run_as.has_value();
  if (spec.run_as) {
    plan.uid = spec.run_as->uid;
    plan.gid = spec.run_as->gid;
  }
  plan.argv = st->argv.data();
  plan.envp = st->envp.data();
  plan.paths = st->paths.data();
  plan.script_argv = st->script_argv.data();
  plan.groups = st->groups.data();
  plan.group_count = st->groups.size();
  plan.parent = ::getpid();
  return plan;
}

// clone(CLONE_VM|CLONE_VFORK) with every signal blocked, so that no handler of gantryd's
// runs on the child's stack before the child has reset them. Returns the pid or -1 (errno).
pid_t CloneChild(ChildPlan& plan) {
  void* stack = ::mmap(nullptr, kChildStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return -1;
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::clone(ChildMain, static_cast<char*>(stack) + kChildStackBytes,
                      CLONE_VM | CLONE_VFORK | SIGCHLD, &plan);
  int e = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ::munmap(stack, kChildStackBytes);
  errno = e;
  return pid;
}

}  // namespace

absl::StatusOr<Spawn> SystemProcessLauncher::Start(const ChildSpec& spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("no program to run");
  PlanStorage storage;
  ChildPlan plan = Prepare(spec, &storage);
  int report[2];
  plan.null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (plan.null_fd < 0 || ::pipe2(report, O_CLOEXEC) != 0) {
    int e = errno;
    if (plan.null_fd >= 0) ::close(plan.null_fd);
    return absl::UnavailableError(std::string("cannot start a process: ") + std::strerror(e));
  }
  plan.report = report[1];
  // Returns once the child has exec'd (the report pipe closed with it) or exited.
  const pid_t pid = CloneChild(plan);
  const int clone_error = errno;
  for (int fd : {plan.null_fd, report[1]}) ::close(fd);
  if (pid < 0) {
    ::close(report[0]);
    return absl::UnavailableError(std::string("clone failed: ") + std::strerror(clone_error));
  }
  if (!spec.new_session) ::setpgid(pid, pid);  // done by the child already; harmless
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

ProcessLauncher& DefaultProcessLauncher() {
  static SystemProcessLauncher launcher;
  return launcher;
}

std::string DescribeSpawnFailure(const ChildSpec& spec, const Spawn& spawn) {
  std::string why = std::strerror(spawn.error);
  switch (spawn.stage) {
    case SpawnStage::kCredentials:
      return "cannot switch to user " + (spec.run_as ? spec.run_as->name : std::string()) + ": " +
             why;
    case SpawnStage::kWorkingDir:
      return "cannot use working directory " + spec.working_dir + ": " + why;
    case SpawnStage::kExec:
      break;
  }
  if (spawn.error == ENOENT && !spec.working_dir.empty())
    why += " (working directory " + spec.working_dir + ")";
  return "cannot run " + spec.argv[0] + ": " + why;
}

namespace {

// A pidfd for `pid` (readable once it exited), or -1 where the kernel has none (< 5.3).
int OpenPidFd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  return -1;
#endif
}

// The pipes of one RunProcess, and the loop that feeds stdin, streams output line by line
// and waits for the child: poll() wakes on output, on stdin room and on the child's exit
// (its pidfd), so a run ends as soon as the program has.
class Supervision {
 public:
  Supervision(const ProcessSpec& spec, const ProcessHooks& hooks, pid_t pid, int in_fd, int out_fd)
      : spec_(spec), hooks_(hooks), pid_(pid), in_fd_(in_fd), out_fd_(out_fd) {
    pid_fd_ = OpenPidFd(pid);
    ::fcntl(in_fd_, F_SETFL, O_NONBLOCK);
    ::fcntl(out_fd_, F_SETFL, O_NONBLOCK);
    if (spec_.stdin_data.empty()) Close(&in_fd_);
  }
  ~Supervision() {
    for (int* fd : {&in_fd_, &out_fd_, &pid_fd_}) Close(fd);
  }

  // Until the child exited (and its output is read) or was killed: DEADLINE_EXCEEDED or
  // CANCELLED then; otherwise its wait status.
  absl::StatusOr<int> Run();

 private:
  static void Close(int* fd) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  bool Reap();
  void CheckStop(SteadyClock::time_point now);
  void Wait(SteadyClock::time_point now);
  void WriteStdin();
  void ReadOutput();
  void FlushLines(bool all);

  const ProcessSpec& spec_;
  const ProcessHooks& hooks_;
  const pid_t pid_;
  int in_fd_, out_fd_, pid_fd_ = -1;
  size_t written_ = 0;
  std::string partial_;
  bool exited_ = false;
  int wstatus_ = 0;
  SteadyClock::time_point deadline_ = SteadyClock::now() + spec_.timeout;
  // When to send SIGKILL after SIGTERM; max() while none is due.
  SteadyClock::time_point kill_at_ = SteadyClock::time_point::max();
  // After the exit: how long output left in the pipe by the program's children is read.
  SteadyClock::time_point drain_until_ = SteadyClock::time_point::max();
  absl::Status stop_reason_;
};

absl::StatusOr<int> Supervision::Run() {
  while (true) {
    if (!exited_ && Reap()) drain_until_ = SteadyClock::now() + std::chrono::milliseconds(200);
    auto now = SteadyClock::now();
    if (exited_ && (out_fd_ < 0 || now >= drain_until_)) break;
    if (!exited_) CheckStop(now);
    Wait(now);
    WriteStdin();
    ReadOutput();
  }
  FlushLines(true);
  // Whatever the program left behind in its group goes with it.
  KillGroup(pid_, SIGKILL);
  if (!stop_reason_.ok()) return stop_reason_;
  return wstatus_;
}

bool Supervision::Reap() {
  pid_t w = ::waitpid(pid_, &wstatus_, WNOHANG);
  if (w != pid_) return false;
  exited_ = true;
  Close(&pid_fd_);
  return true;
}

// The timeout, a cancellation (polled), and SIGKILL once the grace after SIGTERM is over.
void Supervision::CheckStop(SteadyClock::time_point now) {
  if (stop_reason_.ok()) {
    if (now >= deadline_) {
      stop_reason_ = absl::DeadlineExceededError(
          "timed out after " + std::to_string(spec_.timeout.count() / 1000) + "s");
    } else if (hooks_.canceled && hooks_.canceled()) {
      stop_reason_ = absl::CancelledError("canceled");
    }
    if (!stop_reason_.ok()) {
      KillGroup(pid_, SIGTERM);
      kill_at_ = now + spec_.kill_grace;
    }
  }
  if (now >= kill_at_) {
    KillGroup(pid_, SIGKILL);
    kill_at_ = SteadyClock::time_point::max();
  }
}

// Sleeps until output, stdin room, the child's exit or the next time something is due: the
// deadline, the kill, the end of the drain, or the next look at `canceled` (50 ms).
void Supervision::Wait(SteadyClock::time_point now) {
  using std::chrono::milliseconds;
  SteadyClock::time_point until = exited_ ? drain_until_ : std::min({deadline_, kill_at_});
  milliseconds wait = std::chrono::duration_cast<milliseconds>(until - now) + milliseconds(1);
  if (!exited_) wait = std::min(wait, milliseconds(50));
  pollfd fds[3];
  int n = 0;
  if (out_fd_ >= 0) fds[n++] = {out_fd_, POLLIN, 0};
  if (in_fd_ >= 0) fds[n++] = {in_fd_, POLLOUT, 0};
  if (pid_fd_ >= 0 && !exited_) fds[n++] = {pid_fd_, POLLIN, 0};
  // Without a pidfd (old kernels) and no pipe left open, look at the child every millisecond.
  if (pid_fd_ < 0 && !exited_ && n == 0) wait = milliseconds(1);
  ::poll(fds, n, static_cast<int>(std::max<long long>(wait.count(), 0)));
}

void Supervision::WriteStdin() {
  if (in_fd_ < 0) return;
  ssize_t w =
      ::write(in_fd_, spec_.stdin_data.data() + written_, spec_.stdin_data.size() - written_);
  if (w > 0) written_ += static_cast<size_t>(w);
  if ((w < 0 && errno != EAGAIN) || written_ == spec_.stdin_data.size()) Close(&in_fd_);
}

void Supervision::ReadOutput() {
  if (out_fd_ < 0) return;
  char buf[8192];
  while (true) {
    ssize_t r = ::read(out_fd_, buf, sizeof buf);
    if (r > 0) {
      partial_.append(buf, static_cast<size_t>(r));
      FlushLines(false);
      continue;
    }
    if (r == 0) Close(&out_fd_);
    break;
  }
}

void Supervision::FlushLines(bool all) {
  size_t start = 0, nl;
  while ((nl = partial_.find('\n', start)) != std::string::npos) {
    if (hooks_.on_line) hooks_.on_line(std::string_view(partial_).substr(start, nl - start));
    start = nl + 1;
  }
  partial_.erase(0, start);
  if (all && !partial_.empty()) {
    if (hooks_.on_line) hooks_.on_line(partial_);
    partial_.clear();
  }
  if (partial_.size() > 64 * 1024) {  // a line without end: pass it on in pieces
    if (hooks_.on_line) hooks_.on_line(partial_);
    partial_.clear();
  }
}

}  // namespace

absl::StatusOr<ProcessResult> RunProcess(const ProcessSpec& spec, const ProcessHooks& hooks,
                                         ProcessLauncher& launcher) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("no program to run");
  ChildSpec child;
  child.argv = spec.argv;
  child.env = EnvStrings(ChildEnvironment(spec.env, spec.run_as ? &*spec.run_as : nullptr));
  child.working_dir = spec.working_dir;
  child.run_as = spec.run_as;
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) return absl::UnavailableError("pipe failed");
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    ::close(in_pipe[0]);
    ::close(in_pipe[1]);
    return absl::UnavailableError("pipe failed");
  }
  child.stdin_fd = in_pipe[0];
  child.stdout_fd = child.stderr_fd = out_pipe[1];
  auto spawned = launcher.Start(child);
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
  ::signal(SIGPIPE, SIG_IGN);
  Supervision supervision(spec, hooks, pid, in_pipe[1], out_pipe[0]);
  auto wstatus = supervision.Run();
  if (!wstatus.ok()) return wstatus.status();
  ProcessResult result;
  if (WIFEXITED(*wstatus)) result.exit_code = WEXITSTATUS(*wstatus);
  if (WIFSIGNALED(*wstatus)) result.signal = WTERMSIG(*wstatus);
  return result;
}

}  // namespace gantry::drivers
