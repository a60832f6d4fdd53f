#include "drivers/local/local_driver.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include "common/json_member.h"
#include "drivers/common/proc_info.h"
#include "drivers/common/state_file.h"
#include "drivers/local/readiness_probe.h"
#include "drivers/local/workload.h"

namespace gantry::drivers::local {

namespace json = boost::json;
using std::chrono::milliseconds;

namespace {

const Clock& SystemSteadyClock() {
  static const SystemClock clock;
  return clock;
}

}  // namespace

LocalDriver::LocalDriver(LocalDriverOptions options)
    : LocalDriver(std::move(options), SystemSteadyClock(), DefaultProcessLauncher()) {}

LocalDriver::LocalDriver(LocalDriverOptions options, const Clock& clock, ProcessLauncher& launcher)
    : options_([&] {
        options.port_min = std::clamp(options.port_min, 1, 65535);
        options.port_max = std::clamp(options.port_max, options.port_min, 65535);
        if (options.poll_interval.count() <= 0) options.poll_interval = milliseconds(100);
        if (options.backoff_initial.count() <= 0) options.backoff_initial = milliseconds(1000);
        options.backoff_max = std::max(options.backoff_max, options.backoff_initial);
        return options;
      }()),
      clock_(clock),
      launcher_(launcher),
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
                                       RunContext* context,
                                       std::optional<std::chrono::seconds> grace_override) {
  const std::chrono::seconds grace = grace_override.value_or(options_.stop_grace);
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
      context->Log("stopping workload pid " + std::to_string(pid) +
                   " (SIGTERM, then SIGKILL after " + std::to_string(grace.count()) + "s)");
    status = StopGroup(pid, start, grace, options_.poll_interval,
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
  LocalConfig parsed = CheckLocalConfig(config, &problems);
  // A deploy expands ${VAR} after it stopped the previous workload: what it would refuse
  // there whatever the environment is refused at save time too.
  if (problems.ok()) CheckVariableSyntax(parsed, &problems);
  problems.AppendCauses(causes);
}

namespace {

// {endpoint (with the first port), pid, gpus, ports}.
json::object ApplyOutputs(const LocalConfig& config, const std::string& advertise_host,
                          const std::map<std::string, int>& ports, int pid,
                          const std::vector<std::string>& gpus) {
  json::object outputs;
  if (!config.ports.empty()) {
    std::string host = advertise_host;
    if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
    const std::string& first = config.ports[0];
    const Readiness& ready = config.readiness;
    std::string path =
        ready.kind == Readiness::Kind::kHttp && ready.port == first ? ready.http_path : "/";
    outputs["endpoint"] = "http://" + host + ":" + std::to_string(ports.at(first)) + path;
  }
  outputs["pid"] = std::to_string(pid);
  outputs["gpus"] = Join(gpus, ",");
  json::object port_obj;
  for (const auto& [name, port] : ports) port_obj[name] = port;
  outputs["ports"] = json::serialize(port_obj);
  return outputs;
}

}  // namespace

absl::StatusOr<json::object> LocalDriver::Apply(const DeployRequest& request, RunContext& context) {
  auto config = ParseLocalConfig(request.config);
  if (!config.ok()) return config.status();
  if (request.state_dir.empty())
    return absl::InvalidArgumentError("the local driver needs the instance's state directory");
  const std::string key = InstanceKey(request);
  std::error_code ec;
  std::filesystem::create_directories(request.state_dir, ec);
  if (ec) return absl::UnavailableError("cannot create " + request.state_dir + ": " + ec.message());
  auto workload_dir = PrepareWorkloadDir(options_.sandbox, request.state_dir);
  if (!workload_dir.ok()) return workload_dir.status();

  if (auto s = StopPrevious(key, request.state_dir, &context); !s.ok()) return s;

  auto ports = ports_.Allocate(key, config->ports);
  if (!ports.ok()) return ports.status();
  for (const auto& name : config->ports)
    context.Log("port " + name + ": " + std::to_string(ports->at(name)) + " (" + PortEnvName(name) +
                ")");
  const std::vector<std::string>& gpus = request.gpu_indices;
  auto launch = BuildLaunch(*config, request, options_.sandbox, *workload_dir, *ports, gpus);
  if (!launch.ok()) {
    ports_.Release(key);
    return launch.status();
  }
  context.Log("starting " + Join(launch->argv, " ") + " in " + launch->working_dir +
              (gpus.empty() ? " without GPUs" : " on GPUs " + Join(gpus, ",")));
  auto spawned = StartWorkload(*launch, launcher_);
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
  const auto began = clock_.SteadyNow();
  const Readiness& ready = config->readiness;
  const int port = ready.kind == Readiness::Kind::kNone ? 0 : ports->at(ready.port);
  bool exited = false;
  absl::Status readiness =
      AwaitReady(*config, request, port, *spawned, *launch, follower, context, &exited);
  if (!readiness.ok()) {
    if (!exited) {
      follower.Poll(context, true);
      context.Log(std::string(readiness.message()));
      (void)StopGroup(pid, spawned->start_time, options_.stop_grace, options_.poll_interval,
                      [&context] { return context.Canceled(); });
    }
    ports_.Release(key);
    RemoveStateFile(request.state_dir, kStateFile);
    return readiness;
  }
  Supervise(request, *config, *launch, *ports, *spawned, began);
  return ApplyOutputs(*config, options_.advertise_host, *ports, pid, gpus);
}

absl::Status LocalDriver::AwaitReady(const LocalConfig& config, const DeployRequest& request,
                                     int port, const Spawned& spawned, const Launch& launch,
                                     LogFollower& follower, RunContext& context, bool* exited) {
  const Readiness& ready = config.readiness;
  if (ready.kind == Readiness::Kind::kNone) {
    context.Log("no readiness check: the workload counts as ready once started");
    return absl::OkStatus();
  }
  const auto began = clock_.SteadyNow();
  const auto timeout = std::min<milliseconds>(ready.timeout, request.timeout);
  const auto deadline = began + timeout;
  const std::string target = ready.kind == Readiness::Kind::kHttp
                                 ? "GET http://127.0.0.1:" + std::to_string(port) + ready.http_path
                                 : "TCP 127.0.0.1:" + std::to_string(port);
  context.Log("waiting for " + target + " to answer (up to " + Seconds(timeout) + ")");
  while (true) {
    follower.Poll(context, false);
    int wstatus = 0;
    if (ChildExited(spawned.pid, &wstatus, nullptr)) {
      follower.Poll(context, true);
      *exited = true;
      int code = 0;
      std::string how = DescribeWait(wstatus, &code);
      return absl::AbortedError("the workload " + how + " before it was ready" +
                                TailText(launch.log_path, spawned.log_offset));
    }
    if (context.Canceled())
      return absl::CancelledError("canceled while waiting for the workload to be ready");
    auto left = std::chrono::duration_cast<milliseconds>(deadline - clock_.SteadyNow());
    auto probe_timeout = std::clamp(left, milliseconds(1), milliseconds(1000));
    absl::Status probe = ready.kind == Readiness::Kind::kHttp
                             ? ProbeHttp(port, ready.http_path, probe_timeout)
                             : ProbeTcp(port, probe_timeout);
    if (probe.ok()) break;
    if (clock_.SteadyNow() >= deadline)
      return absl::DeadlineExceededError("the workload was not ready within " + Seconds(timeout) +
                                         " (" + target + ": " + std::string(probe.message()) + ")" +
                                         TailText(launch.log_path, spawned.log_offset));
    std::this_thread::sleep_for(options_.poll_interval);
  }
  follower.Poll(context, false);
  context.Log("ready after " +
              Seconds(std::chrono::duration_cast<milliseconds>(clock_.SteadyNow() - began)));
  return absl::OkStatus();
}

void LocalDriver::Supervise(const DeployRequest& request, const LocalConfig& config,
                            const Launch& launch, const std::map<std::string, int>& ports,
                            const Spawned& spawned,
                            std::chrono::steady_clock::time_point started_at) {
  auto w = std::make_shared<Workload>();
  w->key = InstanceKey(request);
  w->ns = StringMember(request.instance, "project");
  w->name = StringMember(request.instance, "name");
  w->uid = StringMember(request.instance, "uid");
  w->state_dir = request.state_dir;
  w->config = config;
  w->launch = launch;
  w->ports = ports;
  w->gpus = request.gpu_indices;
  w->pid = spawned.pid;
  w->start_time = spawned.start_time;
  w->is_child = true;
  w->log_offset = spawned.log_offset;
  w->started_at = started_at;
  w->phase = Workload::Phase::kRunning;
  std::lock_guard<std::mutex> lock(mu_);
  workloads_[w->key] = w;
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

absl::Status LocalDriver::Stop(const DeployRequest& request, RunContext& context) {
  if (!request.stop_grace) return Destroy(request, context);
  // A preemption: its grace period instead of the configured one.
  return StopPrevious(InstanceKey(request), request.state_dir, &context, *request.stop_grace);
}

absl::StatusOr<json::object> LocalDriver::Start(const DeployRequest& request, RunContext& context) {
  return Apply(request, context);
}

bool LocalDriver::Recover(const json::object& state) {
  int pid = static_cast<int>(Int(state, "pid", Int(state, "pgid", 0)));
  long long start = Int(state, "startTime", -1);
  if (pid <= 0 || start < 0 || !GroupIsOurs(pid, start)) return true;
  KillGroupIfAlive(pid, start);
  // Wait for the group to go so a re-run apply finds its ports free again.
  const auto deadline = std::chrono::steady_clock::now() + kKillWait;
  while (std::chrono::steady_clock::now() < deadline) {
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
  w->ns = StringMember(request.instance, "project");
  w->name = StringMember(request.instance, "name");
  w->uid = StringMember(request.instance, "uid");
  w->state_dir = request.state_dir;
  if (const json::value* p = state.if_contains("ports"); p && p->is_object())
    for (const auto& kv : p->get_object())
      if (kv.value().is_int64())
        w->ports[std::string(kv.key())] = static_cast<int>(kv.value().get_int64());
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
      auto launch =
          BuildLaunch(w->config, request, options_.sandbox,
                      WorkloadDir(options_.sandbox, request.state_dir), w->ports, w->gpus);
      if (launch.ok())
        w->launch = *launch;
      else
        w->can_restart = false;
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
  w->started_at = clock_.SteadyNow();
  w->phase = Workload::Phase::kRunning;
  ports_.Release(w->key);
  ports_.Reserve(w->key, w->ports);
  WriteStateFile(w->state_dir, kStateFile, w->State());
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = workloads_.find(w->key); it != workloads_.end()) it->second->removed = true;
  workloads_[w->key] = w;
  return true;
}

}  // namespace gantry::drivers::local
