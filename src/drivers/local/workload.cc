#include "drivers/local/workload.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <sstream>
#include <thread>

#include "common/json_member.h"
#include "drivers/common/proc_info.h"

namespace gantry::drivers::local {

namespace json = boost::json;
using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

long long Int(const json::object& o, std::string_view key, long long fallback) {
  const json::value* v = o.if_contains(key);
  if (!v) return fallback;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<long long>(v->get_uint64());
  if (v->is_double()) return static_cast<long long>(v->get_double());
  return fallback;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? std::string(sep) : "") + parts[i];
  return out;
}

std::string Seconds(milliseconds d) {
  std::ostringstream s;
  if (d.count() % 1000 == 0)
    s << d.count() / 1000 << "s";
  else
    s << static_cast<double>(d.count()) / 1000.0 << "s";
  return s.str();
}

namespace {

const char* SignalName(int sig) {
  switch (sig) {
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGINT:
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGPIPE:
      return "SIGPIPE";
    default:
      return nullptr;
  }
}

}  // namespace

std::string DescribeWait(int wstatus, int* exit_code) {
  if (WIFEXITED(wstatus)) {
    *exit_code = WEXITSTATUS(wstatus);
    return "exited with code " + std::to_string(*exit_code);
  }
  *exit_code = -1;
  int sig = WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0;
  const char* name = SignalName(sig);
  return "was killed by signal " + std::to_string(sig) +
         (name ? std::string(" (") + name + ")" : "");
}

absl::StatusOr<Launch> BuildLaunch(const LocalConfig& c, const DeployRequest& r,
                                   const Sandbox& sandbox, const std::string& workload_dir,
                                   const std::map<std::string, int>& ports,
                                   const std::vector<std::string>& gpus) {
  const WorkloadUser* user = sandbox.user ? &*sandbox.user : nullptr;
  std::map<std::string, std::string> env = ChildEnvironment({}, user);
  // Set by gantry; they win over the template's env so a workload cannot widen its GPUs.
  std::map<std::string, std::string> gantry;
  std::string joined = Join(gpus, ",");
  gantry["CUDA_VISIBLE_DEVICES"] = joined;
  gantry["NVIDIA_VISIBLE_DEVICES"] = gpus.empty() ? "void" : joined;
  // nvidia-smi numbers GPUs in PCI bus order; CUDA by default fastest first.
  gantry["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  gantry["GANTRY_GPUS"] = joined;
  if (!r.gpu_uuids.empty()) gantry["GANTRY_GPU_UUIDS"] = Join(r.gpu_uuids, ",");
  gantry["GANTRY_INSTANCE"] = StringMember(r.instance, "name");
  gantry["GANTRY_PROJECT"] = StringMember(r.instance, "project");
  gantry["GANTRY_STATE_DIR"] = workload_dir;
  for (const auto& [k, v] : ComputeEnvironment(r)) gantry[k] = v;
  for (size_t i = 0; i < c.ports.size(); ++i) {
    auto it = ports.find(c.ports[i]);
    if (it == ports.end()) continue;
    gantry[PortEnvName(c.ports[i])] = std::to_string(it->second);
    if (i == 0) gantry["PORT"] = std::to_string(it->second);
  }
  // The template's env may use ${GANTRY_PORT_HTTP} and the inherited variables (${HOME}).
  std::map<std::string, std::string> base = env;
  for (const auto& [k, v] : gantry) base[k] = v;
  for (const auto& [k, v] : c.env) {
    auto value = ExpandVariables(v, base, "spec.local.env." + k);
    if (!value.ok()) return value.status();
    env[k] = *value;
    if (!gantry.count(k)) base[k] = *value;
  }
  for (const auto& [k, v] : gantry) env[k] = v;

  Launch l;
  for (size_t i = 0; i < c.command.size(); ++i) {
    auto a = ExpandVariables(c.command[i], env, "spec.local.command[" + std::to_string(i) + "]");
    if (!a.ok()) return a.status();
    l.argv.push_back(*a);
  }
  for (size_t i = 0; i < c.args.size(); ++i) {
    auto a = ExpandVariables(c.args[i], env, "spec.local.args[" + std::to_string(i) + "]");
    if (!a.ok()) return a.status();
    l.argv.push_back(*a);
  }
  l.env = EnvStrings(env);
  l.working_dir = c.working_dir.empty()     ? workload_dir
                  : c.working_dir[0] == '/' ? c.working_dir
                                            : workload_dir + "/" + c.working_dir;
  // The log stays in the state directory, out of the workload's reach: it gets the open fd.
  l.log_path = r.state_dir + "/" + kLogFile;
  l.run_as = sandbox.user;
  return l;
}

absl::StatusOr<Spawned> StartWorkload(const Launch& l, ProcessLauncher& launcher) {
  int log_fd = ::open(l.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0)
    return absl::UnavailableError("cannot open " + l.log_path + ": " + std::strerror(errno));
  off_t offset = ::lseek(log_fd, 0, SEEK_END);
  ChildSpec child;
  child.argv = l.argv;
  child.env = l.env;
  child.working_dir = l.working_dir;
  child.stdout_fd = child.stderr_fd = log_fd;
  // Unlike the exec driver there is no PR_SET_PDEATHSIG: the workload must outlive
  // gantryd, which re-adopts it after a restart.
  child.new_session = true;
  child.run_as = l.run_as;
  auto spawned = launcher.Start(child);
  ::close(log_fd);
  if (!spawned.ok()) return spawned.status();
  if (spawned->pid <= 0) {
    std::string why = std::strerror(spawned->error);
    switch (spawned->stage) {
      case SpawnStage::kCredentials:
        return absl::FailedPreconditionError(DescribeSpawnFailure(child, *spawned));
      case SpawnStage::kWorkingDir:
        return absl::FailedPreconditionError("cannot use working directory " + l.working_dir +
                                             " (spec.local.workingDir): " + why);
      case SpawnStage::kExec:
        break;
    }
    return absl::FailedPreconditionError("cannot run " + l.argv[0] +
                                         " (spec.local.command): " + why);
  }
  const int pid = spawned->pid;
  Spawned s;
  s.pid = pid;
  s.start_time = ProcessStartTime(pid);
  s.log_offset = offset < 0 ? 0 : offset;
  return s;
}

namespace {

// Up to `n` last lines of the log written since `offset`.
std::vector<std::string> LogTail(const std::string& path, off_t offset, int n) {
  std::vector<std::string> lines;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return lines;
  struct stat st {};
  ::fstat(fd, &st);
  off_t from = std::max(offset, st.st_size - static_cast<off_t>(32 * 1024));
  std::string data;
  if (st.st_size > from) {
    data.resize(static_cast<size_t>(st.st_size - from));
    ssize_t r = ::pread(fd, data.data(), data.size(), from);
    data.resize(r > 0 ? static_cast<size_t>(r) : 0);
  }
  ::close(fd);
  std::deque<std::string> tail;
  std::istringstream in(data);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line.size() > 300) line = line.substr(0, 300) + "...";
    tail.push_back(line);
    if (static_cast<int>(tail.size()) > n) tail.pop_front();
  }
  return {tail.begin(), tail.end()};
}

}  // namespace

std::string TailText(const std::string& path, off_t offset) {
  auto lines = LogTail(path, offset, kTailLines);
  if (lines.empty()) return "";
  return "; last log lines:\n" + Join(lines, "\n");
}

void LogFollower::Poll(RunContext& context, bool flush) {
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[16 * 1024];
  ssize_t r;
  while ((r = ::pread(fd, buf, sizeof buf, pos_)) > 0) {
    pos_ += r;
    partial_.append(buf, static_cast<size_t>(r));
  }
  ::close(fd);
  size_t start = 0, nl;
  while ((nl = partial_.find('\n', start)) != std::string::npos) {
    Emit(context, std::string_view(partial_).substr(start, nl - start));
    start = nl + 1;
  }
  partial_.erase(0, start);
  if (flush && !partial_.empty()) {
    Emit(context, partial_);
    partial_.clear();
  }
}

void LogFollower::Emit(RunContext& context, std::string_view line) {
  constexpr int kMaxLines = 1000;
  if (++lines_ < kMaxLines)
    context.Log("[workload] " + std::string(line));
  else if (lines_ == kMaxLines)
    context.Log("[workload] (more output in " + path_ + ")");
}

json::object StateJson(int pid, long long start_time, const std::map<std::string, int>& ports,
                       const std::vector<std::string>& gpus, int restart_count) {
  json::object p;
  for (const auto& [name, port] : ports) p[name] = port;
  json::array g;
  for (const auto& i : gpus) g.emplace_back(i);
  return json::object{{"pid", pid},
                      {"startTime", start_time},
                      {"ports", std::move(p)},
                      {"gpus", std::move(g)},
                      {"restartCount", restart_count}};
}

bool ReapIfOurZombie(int pid, long long start_time, int* wstatus) {
  ProcStat s;
  if (!ReadProcStat(pid, &s) || s.start_time != start_time || s.ppid != ::getpid()) return false;
  if (s.state != 'Z' && s.state != 'X') return false;
  int st = 0;
  if (::waitpid(pid, &st, WNOHANG) != pid) return false;
  if (wstatus) *wstatus = st;
  return true;
}

bool ChildExited(int pid, int* wstatus, bool* not_ours) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == ECHILD && not_ours) *not_ours = true;
    return false;
  }
  if (info.si_pid != pid) return false;  // still running
  ::kill(-pid, SIGKILL);  // like a container: when the main process goes, its group goes
  return ::waitpid(pid, wstatus, 0) == pid;
}

bool GroupIsOurs(int pid, long long start_time) {
  ProcStat s;
  if (ReadProcStat(pid, &s)) return s.start_time == start_time;
  return !ProcessGroupMembers(pid).empty();
}

absl::Status StopGroup(int pid, long long start_time, milliseconds grace, milliseconds poll,
                       const std::function<bool()>& hurry) {
  if (pid <= 0 || !GroupIsOurs(pid, start_time)) return absl::OkStatus();
  ::kill(-pid, SIGTERM);
  auto kill_at = SteadyClock::now() + grace;
  std::optional<SteadyClock::time_point> give_up;
  while (true) {
    ReapIfOurZombie(pid, start_time, nullptr);
    auto members = ProcessGroupMembers(pid);
    if (members.empty()) return absl::OkStatus();
    auto now = SteadyClock::now();
    if (!give_up && (now >= kill_at || (hurry && hurry()))) {
      ::kill(-pid, SIGKILL);
      give_up = now + kKillWait;
    }
    if (give_up && now >= *give_up) {
      std::vector<std::string> ids;
      for (int m : members) ids.push_back(std::to_string(m));
      return absl::UnavailableError("processes of the workload's group " + std::to_string(pid) +
                                    " survived SIGKILL: " + Join(ids, ", "));
    }
    std::this_thread::sleep_for(std::min(poll, milliseconds(50)));
  }
}

}  // namespace gantry::drivers::local
