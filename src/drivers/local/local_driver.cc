#include "drivers/local/local_driver.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>
#include <sstream>

#include "drivers/common/proc_info.h"
#include "drivers/common/process.h"
#include "drivers/common/sandbox.h"
#include "drivers/common/state_file.h"
#include "drivers/local/readiness_probe.h"

namespace gantry::drivers::local {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A workload that stayed up this long starts its backoff and maxRestarts count afresh.
constexpr auto kStableRun = std::chrono::minutes(10);
constexpr int kTailLines = 5;
// After SIGKILL, how long Destroy waits for the group to vanish before giving up.
constexpr auto kKillWait = std::chrono::seconds(10);
constexpr const char* kStateFile = "local-driver.json";
constexpr const char* kLogFile = "workload.log";

std::string Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

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

std::string InstanceKey(const DeployRequest& r) {
  std::string uid = Str(r.instance, "uid");
  return uid.empty() ? Str(r.instance, "project") + "/" + Str(r.instance, "name") : uid;
}

std::string Seconds(milliseconds d) {
  std::ostringstream s;
  if (d.count() % 1000 == 0) s << d.count() / 1000 << "s";
  else s << static_cast<double>(d.count()) / 1000.0 << "s";
  return s.str();
}

const char* SignalName(int sig) {
  switch (sig) {
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGPIPE: return "SIGPIPE";
    default: return nullptr;
  }
}

// "exited with code 3" / "was killed by signal 9 (SIGKILL)"; exit code -1 for signals.
std::string DescribeWait(int wstatus, int* exit_code) {
  if (WIFEXITED(wstatus)) {
    *exit_code = WEXITSTATUS(wstatus);
    return "exited with code " + std::to_string(*exit_code);
  }
  *exit_code = -1;
  int sig = WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0;
  const char* name = SignalName(sig);
  return "was killed by signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : "");
}

// Everything needed to (re)start a workload, prepared from the config once.
struct Launch {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // KEY=VALUE, complete
  std::string working_dir;
  std::string log_path;
  std::optional<WorkloadUser> run_as;
};

// `workload_dir`: WorkloadDir(sandbox, r.state_dir), the workload's GANTRY_STATE_DIR.
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
  gantry["GANTRY_INSTANCE"] = Str(r.instance, "name");
  gantry["GANTRY_PROJECT"] = Str(r.instance, "project");
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
  l.working_dir = c.working_dir.empty() ? workload_dir
                  : c.working_dir[0] == '/' ? c.working_dir
                                            : workload_dir + "/" + c.working_dir;
  // The log stays in the state directory, out of the workload's reach: it gets the open fd.
  l.log_path = r.state_dir + "/" + kLogFile;
  l.run_as = sandbox.user;
  return l;
}

struct Spawned {
  int pid = 0;
  long long start_time = -1;
  off_t log_offset = 0;
};

// Starts `l` in a new session (it survives gantryd), output appended to the log file.
// FAILED_PRECONDITION when the program or working directory is missing; UNAVAILABLE for
// other system failures.
absl::StatusOr<Spawned> Spawn(const Launch& l) {
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
  auto spawned = SpawnChild(child);
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

std::string TailText(const std::string& path, off_t offset) {
  auto lines = LogTail(path, offset, kTailLines);
  if (lines.empty()) return "";
  return "; last log lines:\n" + Join(lines, "\n");
}

// Streams what the workload writes to its log into the run log while Apply waits.
class LogFollower {
 public:
  LogFollower(std::string path, off_t pos) : path_(std::move(path)), pos_(pos) {}
  void Poll(RunContext& context, bool flush) {
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

 private:
  void Emit(RunContext& context, std::string_view line) {
    constexpr int kMaxLines = 1000;
    if (++lines_ < kMaxLines) context.Log("[workload] " + std::string(line));
    else if (lines_ == kMaxLines) context.Log("[workload] (more output in " + path_ + ")");
  }
  std::string path_;
  off_t pos_;
  std::string partial_;
  int lines_ = 0;
};

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

// Reaps `pid` when it is our own zombie child that started at `start_time`: checking the
// start time first keeps us from reaping an unrelated child that reused the pid.
bool ReapIfOurZombie(int pid, long long start_time, int* wstatus) {
  ProcStat s;
  if (!ReadProcStat(pid, &s) || s.start_time != start_time || s.ppid != ::getpid()) return false;
  if (s.state != 'Z' && s.state != 'X') return false;
  int st = 0;
  if (::waitpid(pid, &st, WNOHANG) != pid) return false;
  if (wstatus) *wstatus = st;
  return true;
}

// For our own child `pid`: when it has exited, kills what it left in its process group
// (before reaping it, so the group id cannot have been reused yet), reaps it and returns
// true with its wait status. ECHILD sets *not_ours.
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

// True when the group led by `pid` may still hold our workload: its leader is that process
// (alive or a zombie), or the leader is gone but members remain (a pid is not reused while
// it names a live process group).
bool GroupIsOurs(int pid, long long start_time) {
  ProcStat s;
  if (ReadProcStat(pid, &s)) return s.start_time == start_time;
  return !ProcessGroupMembers(pid).empty();
}

// SIGTERM to the group, `grace` (cut short when `hurry` says so), SIGKILL, then waits until
// no live process of the group is left.
absl::Status StopGroup(int pid, long long start_time, milliseconds grace, milliseconds poll,
                       const std::function<bool()>& hurry) {
  if (pid <= 0 || !GroupIsOurs(pid, start_time)) return absl::OkStatus();
  ::kill(-pid, SIGTERM);
  auto kill_at = Clock::now() + grace;
  std::optional<Clock::time_point> give_up;
  while (true) {
    ReapIfOurZombie(pid, start_time, nullptr);
    auto members = ProcessGroupMembers(pid);
    if (members.empty()) return absl::OkStatus();
    auto now = Clock::now();
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

}  // namespace

struct LocalDriver::Workload {
  // Constant after registration.
  std::string key, ns, name, uid, state_dir;
  LocalConfig config;
  Launch launch;
  bool can_restart = true;  // false when an adopted workload's launch could not be rebuilt
  std::map<std::string, int> ports;
  std::vector<std::string> gpus;

  // Changed by the supervisor, under LocalDriver::mu_.
  enum class Phase { kStarting, kRunning, kBackoff, kFailed };
  Phase phase = Phase::kRunning;
  int pid = 0;
  long long start_time = -1;
  bool is_child = false;  // waitpid works; otherwise exits are seen through /proc
  off_t log_offset = 0;
  int restart_count = 0;  // all restarts, reported
  int in_a_row = 0;       // restarts since the workload last stayed up kStableRun
  Clock::time_point started_at, ready_deadline, restart_at;
  std::string kill_reason;  // set when the supervisor killed it (not ready in time)
  bool removed = false;     // taken out of supervision by Destroy/Apply

  json::object State() const { return StateJson(pid, start_time, ports, gpus, restart_count); }
};

LocalDriver::LocalDriver(LocalDriverOptions options)
    : options_([&] {
        options.port_min = std::clamp(options.port_min, 1, 65535);
        options.port_max = std::clamp(options.port_max, options.port_min, 65535);
        if (options.poll_interval.count() <= 0) options.poll_interval = milliseconds(100);
        if (options.backoff_initial.count() <= 0) options.backoff_initial = milliseconds(1000);
        options.backoff_max = std::max(options.backoff_max, options.backoff_initial);
        return options;
      }()),
      ports_(options_.port_min, options_.port_max) {
  supervisor_ = std::thread([this] { SupervisorLoop(); });
}

LocalDriver::~LocalDriver() { Shutdown(); }

void LocalDriver::Shutdown() {
  std::call_once(shutdown_once_, [this] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (supervisor_.joinable()) supervisor_.join();
  });
}

void LocalDriver::SetObserver(WorkloadObserver* observer) { observer_.store(observer); }

int LocalDriver::SupervisedPidForTest(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workloads_.find(uid);
  return it == workloads_.end() ? 0 : it->second->pid;
}

absl::Status LocalDriver::StopPrevious(const std::string& key, const std::string& state_dir,
                                       RunContext* context) {
  std::shared_ptr<Workload> w;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = workloads_.find(key); it != workloads_.end()) {
      w = it->second;
      w->removed = true;
      workloads_.erase(it);
    }
  }
  int pid = 0;
  long long start = -1;
  if (w) {
    pid = w->pid;
    start = w->start_time;
  } else {
    json::object state = ReadStateFile(state_dir, kStateFile);
    pid = static_cast<int>(Int(state, "pid", 0));
    start = Int(state, "startTime", -1);
  }
  absl::Status status;
  if (pid > 0 && GroupIsOurs(pid, start)) {
    if (context)
      context->Log("stopping workload pid " + std::to_string(pid) + " (SIGTERM, then SIGKILL after " +
                   std::to_string(options_.stop_grace.count()) + "s)");
    status = StopGroup(pid, start, options_.stop_grace, options_.poll_interval,
                       [context] { return context && context->Canceled(); });
    if (context) context->Log(status.ok() ? "workload stopped" : std::string(status.message()));
  }
  if (status.ok()) {
    ports_.Release(key);
    RemoveStateFile(state_dir, kStateFile);
  }
  return status;
}

void LocalDriver::ValidateConfig(const json::object& config,
                                 std::vector<FieldCause>* causes) const {
  ConfigProblems problems("spec.local");
  CheckLocalConfig(config, &problems);
  problems.AppendCauses(causes);
}

absl::StatusOr<json::object> LocalDriver::Apply(const DeployRequest& request, RunContext& context) {
  auto config = ParseLocalConfig(request.config);
  if (!config.ok()) return config.status();
  if (request.state_dir.empty())
    return absl::InvalidArgumentError("the local driver needs the instance's state directory");
  const std::string key = InstanceKey(request);
  std::error_code ec;
  std::filesystem::create_directories(request.state_dir, ec);
  if (ec)
    return absl::UnavailableError("cannot create " + request.state_dir + ": " + ec.message());
  auto workload_dir = PrepareWorkloadDir(options_.sandbox, request.state_dir);
  if (!workload_dir.ok()) return workload_dir.status();

  if (auto s = StopPrevious(key, request.state_dir, &context); !s.ok()) return s;

  auto ports = ports_.Allocate(key, config->ports);
  if (!ports.ok()) return ports.status();
  for (const auto& name : config->ports)
    context.Log("port " + name + ": " + std::to_string(ports->at(name)) + " (" +
                PortEnvName(name) + ")");
  const std::vector<std::string>& gpus = request.gpu_indices;
  auto launch = BuildLaunch(*config, request, options_.sandbox, *workload_dir, *ports, gpus);
  if (!launch.ok()) {
    ports_.Release(key);
    return launch.status();
  }
  context.Log("starting " + Join(launch->argv, " ") + " in " + launch->working_dir +
              (gpus.empty() ? " without GPUs" : " on GPUs " + Join(gpus, ",")));
  auto spawned = Spawn(*launch);
  if (!spawned.ok()) {
    ports_.Release(key);
    context.Log(std::string(spawned.status().message()));
    return spawned.status();
  }
  const int pid = spawned->pid;
  json::object state = StateJson(pid, spawned->start_time, *ports, gpus, 0);
  context.SaveDriverState(state);
  WriteStateFile(request.state_dir, kStateFile, state);
  context.Log("started pid " + std::to_string(pid) + "; output goes to " + launch->log_path);

  LogFollower follower(launch->log_path, spawned->log_offset);
  auto fail = [&](absl::Status s) {
    follower.Poll(context, true);
    context.Log(std::string(s.message()));
    (void)StopGroup(pid, spawned->start_time, options_.stop_grace, options_.poll_interval,
                    [&context] { return context.Canceled(); });
    ports_.Release(key);
    RemoveStateFile(request.state_dir, kStateFile);
    return s;
  };

  const Readiness& ready = config->readiness;
  const auto began = Clock::now();
  if (ready.kind != Readiness::Kind::kNone) {
    const int port = ports->at(ready.port);
    const auto timeout = std::min<milliseconds>(ready.timeout, request.timeout);
    const auto deadline = began + timeout;
    const std::string target = ready.kind == Readiness::Kind::kHttp
                                   ? "GET http://127.0.0.1:" + std::to_string(port) + ready.http_path
                                   : "TCP 127.0.0.1:" + std::to_string(port);
    context.Log("waiting for " + target + " to answer (up to " + Seconds(timeout) + ")");
    std::string last_why = "not checked yet";
    while (true) {
      follower.Poll(context, false);
      int wstatus = 0;
      if (ChildExited(pid, &wstatus, nullptr)) {
        follower.Poll(context, true);
        int code = 0;
        std::string how = DescribeWait(wstatus, &code);
        ports_.Release(key);
        RemoveStateFile(request.state_dir, kStateFile);
        return absl::AbortedError("the workload " + how + " before it was ready" +
                                  TailText(launch->log_path, spawned->log_offset));
      }
      if (context.Canceled())
        return fail(absl::CancelledError("canceled while waiting for the workload to be ready"));
      auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      auto probe_timeout = std::clamp(left, milliseconds(1), milliseconds(1000));
      absl::Status probe = ready.kind == Readiness::Kind::kHttp
                               ? ProbeHttp(port, ready.http_path, probe_timeout)
                               : ProbeTcp(port, probe_timeout);
      if (probe.ok()) break;
      last_why = std::string(probe.message());
      if (Clock::now() >= deadline)
        return fail(absl::DeadlineExceededError(
            "the workload was not ready within " + Seconds(timeout) + " (" + target + ": " +
            last_why + ")" + TailText(launch->log_path, spawned->log_offset)));
      std::this_thread::sleep_for(options_.poll_interval);
    }
    follower.Poll(context, false);
    context.Log("ready after " +
                Seconds(std::chrono::duration_cast<milliseconds>(Clock::now() - began)));
  } else {
    context.Log("no readiness check: the workload counts as ready once started");
  }

  auto w = std::make_shared<Workload>();
  w->key = key;
  w->ns = Str(request.instance, "project");
  w->name = Str(request.instance, "name");
  w->uid = Str(request.instance, "uid");
  w->state_dir = request.state_dir;
  w->config = *config;
  w->launch = *launch;
  w->ports = *ports;
  w->gpus = gpus;
  w->pid = pid;
  w->start_time = spawned->start_time;
  w->is_child = true;
  w->log_offset = spawned->log_offset;
  w->started_at = began;
  w->phase = Workload::Phase::kRunning;
  {
    std::lock_guard<std::mutex> lock(mu_);
    workloads_[key] = w;
  }

  json::object outputs;
  if (!config->ports.empty()) {
    std::string host = options_.advertise_host;
    if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
    const std::string& first = config->ports[0];
    std::string path = ready.kind == Readiness::Kind::kHttp && ready.port == first
                           ? ready.http_path
                           : "/";
    outputs["endpoint"] = "http://" + host + ":" + std::to_string(ports->at(first)) + path;
  }
  outputs["pid"] = std::to_string(pid);
  outputs["gpus"] = Join(gpus, ",");
  json::object port_obj;
  for (const auto& [name, port] : *ports) port_obj[name] = port;
  outputs["ports"] = json::serialize(port_obj);
  return outputs;
}

absl::Status LocalDriver::Destroy(const DeployRequest& request, RunContext& context) {
  const std::string key = InstanceKey(request);
  bool known;
  {
    std::lock_guard<std::mutex> lock(mu_);
    known = workloads_.count(key) > 0;
  }
  if (!known && Int(ReadStateFile(request.state_dir, kStateFile), "pid", 0) <= 0)
    context.Log("no workload of this instance is running");
  return StopPrevious(key, request.state_dir, &context);
}

bool LocalDriver::Recover(const json::object& state) {
  int pid = static_cast<int>(Int(state, "pid", Int(state, "pgid", 0)));
  long long start = Int(state, "startTime", -1);
  if (pid <= 0 || start < 0 || !GroupIsOurs(pid, start)) return true;
  KillGroupIfAlive(pid, start);
  // Wait for the group to go so a re-run apply finds its ports free again.
  const auto deadline = Clock::now() + kKillWait;
  while (Clock::now() < deadline) {
    ReapIfOurZombie(pid, start, nullptr);
    if (ProcessGroupMembers(pid).empty()) break;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

bool LocalDriver::Adopt(const DeployRequest& request, const json::object& state) {
  const int pid = static_cast<int>(Int(state, "pid", 0));
  const long long start = Int(state, "startTime", -1);
  if (pid <= 0 || start < 0) return false;
  if (!ProcessAlive(pid, start)) {
    ReapIfOurZombie(pid, start, nullptr);
    return false;
  }
  auto w = std::make_shared<Workload>();
  w->key = InstanceKey(request);
  w->ns = Str(request.instance, "project");
  w->name = Str(request.instance, "name");
  w->uid = Str(request.instance, "uid");
  w->state_dir = request.state_dir;
  if (const json::value* p = state.if_contains("ports"); p && p->is_object())
    for (const auto& kv : p->get_object())
      if (kv.value().is_int64()) w->ports[std::string(kv.key())] = static_cast<int>(kv.value().get_int64());
  w->gpus = request.gpu_indices;
  if (w->gpus.empty())
    if (const json::value* g = state.if_contains("gpus"); g && g->is_array())
      for (const auto& e : g->get_array())
        if (e.is_string()) w->gpus.emplace_back(e.get_string());
  // The template may have changed since the workload started: when it no longer makes
  // sense, keep watching the running process but report its exit instead of restarting.
  auto config = ParseLocalConfig(request.config);
  if (config.ok()) {
    w->config = *config;
    for (const auto& name : w->config.ports)
      if (!w->ports.count(name)) w->can_restart = false;
    if (w->can_restart) {
      auto launch = BuildLaunch(w->config, request, options_.sandbox,
                                WorkloadDir(options_.sandbox, request.state_dir), w->ports,
                                w->gpus);
      if (launch.ok()) w->launch = *launch;
      else w->can_restart = false;
    }
  } else {
    w->can_restart = false;
  }
  if (!w->can_restart) w->config.restart_policy = RestartPolicy::kNever;
  w->launch.log_path = request.state_dir + "/" + kLogFile;
  w->pid = pid;
  w->start_time = start;
  ProcStat s;
  w->is_child = ReadProcStat(pid, &s) && s.ppid == ::getpid();
  w->log_offset = 0;
  w->restart_count = static_cast<int>(Int(state, "restartCount", 0));
  w->started_at = Clock::now();
  w->phase = Workload::Phase::kRunning;
  ports_.Release(w->key);
  ports_.Reserve(w->key, w->ports);
  WriteStateFile(w->state_dir, kStateFile, w->State());
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = workloads_.find(w->key); it != workloads_.end()) it->second->removed = true;
  workloads_[w->key] = w;
  return true;
}

void LocalDriver::SupervisorLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, options_.poll_interval, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    Tick();
    lock.lock();
  }
}

WorkloadEvent LocalDriver::MakeEvent(const Workload& w, WorkloadEvent::Kind kind,
                                     std::string reason, std::string message) {
  WorkloadEvent e;
  e.kind = kind;
  e.ns = w.ns;
  e.name = w.name;
  e.instance_uid = w.uid;
  e.restart_count = w.restart_count;
  e.reason = std::move(reason);
  e.message = std::move(message);
  e.driver_state = w.State();
  return e;
}

void LocalDriver::HandleExit(Workload& w, int exit_code, const std::string& how,
                             std::vector<WorkloadEvent>& events) {
  const auto now = Clock::now();
  const std::string tail = TailText(w.launch.log_path, w.log_offset);
  const RestartPolicy policy = w.config.restart_policy;
  const bool clean = exit_code == 0;
  const bool restart = policy == RestartPolicy::kAlways ||
                       (policy == RestartPolicy::kOnFailure && !clean);
  if (!restart) {
    w.phase = Workload::Phase::kFailed;
    std::string why = !w.can_restart ? " (not restarted: the template no longer fits it)"
                      : policy == RestartPolicy::kNever ? " (restartPolicy Never)"
                                                         : " (restartPolicy OnFailure restarts only failures)";
    events.push_back(MakeEvent(w, WorkloadEvent::Kind::kFailed, "WorkloadExited",
                               "the workload " + how + why + tail));
  } else {
    if (now - w.started_at >= kStableRun) w.in_a_row = 0;
    if (w.in_a_row >= w.config.max_restarts) {
      w.phase = Workload::Phase::kFailed;
      events.push_back(MakeEvent(
          w, WorkloadEvent::Kind::kFailed, "CrashLoopBackOff",
          "the workload " + how + " after " + std::to_string(w.in_a_row) +
              " restarts in a row (maxRestarts " + std::to_string(w.config.max_restarts) +
              "); not restarting it again" + tail));
    } else {
      ++w.in_a_row;
      ++w.restart_count;
      auto delay = options_.backoff_initial;
      for (int i = 1; i < w.in_a_row && delay < options_.backoff_max; ++i) delay *= 2;
      delay = std::min(delay, options_.backoff_max);
      w.restart_at = now + delay;
      w.phase = Workload::Phase::kBackoff;
      events.push_back(MakeEvent(w, WorkloadEvent::Kind::kRestarting, "WorkloadExited",
                                 "the workload " + how + "; restart " +
                                     std::to_string(w.restart_count) + " in " + Seconds(delay) +
                                     tail));
    }
  }
  WriteStateFile(w.state_dir, kStateFile, w.State());
}

void LocalDriver::Restart(Workload& w, std::vector<WorkloadEvent>& events) {
  auto spawned = Spawn(w.launch);
  const auto now = Clock::now();
  w.started_at = now;
  w.kill_reason.clear();
  if (!spawned.ok()) {
    HandleExit(w, 127, "could not be restarted: " + std::string(spawned.status().message()), events);
    return;
  }
  w.pid = spawned->pid;
  w.start_time = spawned->start_time;
  w.is_child = true;
  w.log_offset = spawned->log_offset;
  WriteStateFile(w.state_dir, kStateFile, w.State());
  if (w.config.readiness.kind == Readiness::Kind::kNone) {
    w.phase = Workload::Phase::kRunning;
    events.push_back(MakeEvent(w, WorkloadEvent::Kind::kRunning, "Running",
                               "the workload was restarted (restart " +
                                   std::to_string(w.restart_count) + ") and is running"));
  } else {
    w.phase = Workload::Phase::kStarting;
    w.ready_deadline = now + w.config.readiness.timeout;
  }
}

void LocalDriver::Tick() {
  std::vector<WorkloadEvent> events;
  struct Probe {
    std::shared_ptr<Workload> w;
    int pid, port;
    Readiness readiness;
  };
  std::vector<Probe> probes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = Clock::now();
    for (auto& [key, wp] : workloads_) {
      Workload& w = *wp;
      switch (w.phase) {
        case Workload::Phase::kRunning:
        case Workload::Phase::kStarting: {
          bool exited = false;
          int wstatus = 0;
          bool known = false;
          if (w.is_child) {
            bool not_ours = false;
            exited = known = ChildExited(w.pid, &wstatus, &not_ours);
            if (not_ours) w.is_child = false;  // then /proc tells
          }
          if (!exited && !w.is_child && !ProcessAlive(w.pid, w.start_time)) {
            exited = true;
            // Not our child: its parent reaps it. The group may still hold its children.
            if (GroupIsOurs(w.pid, w.start_time)) ::kill(-w.pid, SIGKILL);
            known = ReapIfOurZombie(w.pid, w.start_time, &wstatus);
          }
          if (exited) {
            int code = -1;
            std::string how = known ? DescribeWait(wstatus, &code)
                                    : "exited (its exit code is unknown: it was started before "
                                      "gantryd restarted)";
            if (!w.kill_reason.empty()) how = w.kill_reason + " and was killed";
            HandleExit(w, code, how, events);
          } else if (w.phase == Workload::Phase::kStarting) {
            if (now >= w.ready_deadline) {
              w.kill_reason = "was not ready within " +
                              Seconds(std::chrono::duration_cast<milliseconds>(
                                  w.config.readiness.timeout)) +
                              " of its restart";
              ::kill(-w.pid, SIGKILL);
            } else if (auto it = w.ports.find(w.config.readiness.port); it != w.ports.end()) {
              probes.push_back({wp, w.pid, it->second, w.config.readiness});
            }
          }
          break;
        }
        case Workload::Phase::kBackoff:
          if (now >= w.restart_at) Restart(w, events);
          break;
        case Workload::Phase::kFailed:
          break;
      }
    }
  }
  // Probes run unlocked: they may take up to a second each.
  for (auto& p : probes) {
    absl::Status s = p.readiness.kind == Readiness::Kind::kHttp
                         ? ProbeHttp(p.port, p.readiness.http_path, milliseconds(1000))
                         : ProbeTcp(p.port, milliseconds(1000));
    if (!s.ok()) continue;
    std::lock_guard<std::mutex> lock(mu_);
    Workload& w = *p.w;
    if (w.removed || w.phase != Workload::Phase::kStarting || w.pid != p.pid) continue;
    w.phase = Workload::Phase::kRunning;
    events.push_back(MakeEvent(w, WorkloadEvent::Kind::kRunning, "Running",
                               "the workload was restarted (restart " +
                                   std::to_string(w.restart_count) + ") and is ready"));
  }
  if (WorkloadObserver* o = observer_.load())
    for (const auto& e : events) o->OnWorkloadEvent(e);
}

}  // namespace gantry::drivers::local
