#include "drivers/container/container_driver.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/json_member.h"
#include "drivers/common/state_file.h"
#include "drivers/container/container_run.h"
#include "drivers/local/readiness_probe.h"

namespace gantry::drivers::container {

namespace json = boost::json;
using std::chrono::milliseconds;

struct ContainerDriver::Outcome {
  absl::Status status;  // podman could not be run (UNAVAILABLE), or ran past its timeout
  int exit_code = -1;
  std::vector<std::string> lines;  // stdout and stderr
  bool ok() const { return status.ok() && exit_code == 0; }
  std::string Text(size_t last = 5) const {
    std::vector<std::string> tail(lines.end() - std::min(last, lines.size()), lines.end());
    return Join(tail, "\n");
  }
  // Podman's words when it failed, else why it could not run.
  std::string Why() const {
    if (!status.ok()) return std::string(status.message());
    // "Error: ..." and what follows it ("1 error occurred:", "* unlinkat ...: busy").
    for (auto it = lines.rbegin(); it != lines.rend(); ++it)
      if (it->rfind("Error: ", 0) == 0) {
        std::string why = it->substr(7);
        for (auto more = it.base(); more != lines.end(); ++more)
          if (!more->empty()) why += " " + *more;
        return why;
      }
    std::string text = Text();
    return text.empty() ? "podman exited with code " + std::to_string(exit_code) : text;
  }
};

ContainerDriverOptions OptionsLike(const local::LocalDriverOptions& local,
                                   const std::string& data_dir) {
  ContainerDriverOptions o;
  o.port_min = local.port_min;
  o.port_max = local.port_max;
  o.advertise_host = local.advertise_host;
  std::error_code ec;
  o.owner = std::filesystem::absolute(data_dir, ec).lexically_normal().string();
  if (const char* runtime = std::getenv("GANTRY_CONTAINER_RUNTIME")) o.runtime = runtime;
  return o;
}

ContainerDriver::ContainerDriver(ContainerDriverOptions options, ProcessLauncher& launcher)
    : options_([&] {
        options.port_min = std::clamp(options.port_min, 1, 65535);
        options.port_max = std::clamp(options.port_max, options.port_min, 65535);
        if (options.poll_interval.count() <= 0) options.poll_interval = milliseconds(100);
        if (options.supervise_interval.count() <= 0)
          options.supervise_interval = milliseconds(2000);
        if (options.owner.empty()) options.owner = "gantryd";
        return options;
      }()),
      launcher_(launcher),
      ports_(options_.port_min, options_.port_max) {
  supervisor_ = std::thread([this] { SupervisorLoop(); });
}

ContainerDriver::~ContainerDriver() { Shutdown(); }

void ContainerDriver::Shutdown() {
  std::call_once(shutdown_once_, [this] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (supervisor_.joinable()) supervisor_.join();
  });
}

void ContainerDriver::ValidateConfig(const json::object& config,
                                     std::vector<FieldCause>* causes) const {
  ConfigProblems problems("spec.container");
  CheckContainerConfig(config, &problems);
  problems.AppendCauses(causes);
}

ContainerDriver::Outcome ContainerDriver::Podman(const std::vector<std::string>& args,
                                                 const std::map<std::string, std::string>& env,
                                                 RunContext* stream) const {
  ProcessSpec spec;
  spec.argv = {options_.podman};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = env;
  spec.timeout = std::chrono::minutes(30);  // a pull of a large image
  Outcome out;
  ProcessHooks hooks;
  hooks.on_line = [&out, stream](std::string_view line) {
    out.lines.emplace_back(line);
    if (out.lines.size() > 200) out.lines.erase(out.lines.begin());
    if (stream) stream->Log(line);
  };
  if (stream) hooks.canceled = [stream] { return stream->Canceled(); };
  auto result = RunProcess(spec, hooks, launcher_);
  if (!result.ok())
    out.status = result.status().code() == absl::StatusCode::kUnavailable
                     ? absl::UnavailableError("cannot run podman (" +
                                              std::string(result.status().message()) +
                                              "): is Podman installed on gantryd's host?")
                     : result.status();
  else
    out.exit_code = result->exit_code;
  return out;
}

bool ContainerDriver::HasCdiSpec() const {
  std::error_code ec;
  for (const auto& dir : options_.cdi_dirs)
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      if (text.str().find("nvidia.com/gpu") != std::string::npos) return true;
    }
  return false;
}

std::string ContainerDriver::ContainerState(const std::string& container) const {
  Outcome o = Podman(
      {"container", "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", container});
  if (!o.ok() || o.lines.empty()) return "";
  std::string state = o.lines.back();
  return state.rfind("running ", 0) == 0 ? "running" : state;
}

absl::Status ContainerDriver::RemoveContainer(const std::string& container,
                                              RunContext* context) const {
  // `podman rm` can lose a race with the cleanup Podman runs when a container exits
  // ("removing ... root filesystem: ... device or resource busy"): look again and retry.
  Outcome o;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    o = Podman({"rm", "-f", "-i", "-t", std::to_string(options_.stop_grace.count()), container});
    if (o.ok()) {
      // -i: no output when there was no such container; its id or name when removed.
      if (context && !o.lines.empty()) context->Log("removed container " + container);
      return absl::OkStatus();
    }
    if (ContainerState(container).empty()) return absl::OkStatus();
    if (context) context->Log("podman rm failed (" + o.Why() + "); trying again");
    std::this_thread::sleep_for(milliseconds(500 * attempt));
  }
  return absl::UnavailableError("podman rm " + container + " failed: " + o.Why());
}

absl::Status ContainerDriver::EnsureImage(const std::string& image, RunContext& context) const {
  Outcome exists = Podman({"image", "exists", image});
  if (!exists.status.ok()) return exists.status;
  if (exists.exit_code == 0) {
    context.Log("image " + image + " is present");
    return absl::OkStatus();
  }
  context.Log("pulling image " + image);
  Outcome pull = Podman({"pull", "-q", image}, {}, &context);
  if (!pull.status.ok()) return pull.status;
  if (pull.exit_code != 0)
    return absl::FailedPreconditionError(
        "the image " + image + " is not on this host and cannot be pulled: " + pull.Why());
  return absl::OkStatus();
}

absl::Status ContainerDriver::EnsureVolumes(const ContainerConfig& c,
                                            const DeployRequest& r) const {
  for (const auto& v : c.volumes) {
    const std::string name = VolumeName(r, v.name);
    if (Podman({"volume", "exists", name}).ok()) continue;
    Outcome o =
        Podman({"volume", "create", "--label", "gantry.instance=" + StringMember(r.instance, "uid"),
                "--label", "gantry.owner=" + options_.owner, name});
    if (!o.ok()) return absl::UnavailableError("cannot create volume " + name + ": " + o.Why());
  }
  return absl::OkStatus();
}

absl::Status ContainerDriver::AwaitReady(const ContainerConfig& c, const DeployRequest& r, int port,
                                         const std::string& container, RunContext& context) const {
  using local::Readiness;
  const Readiness& ready = c.readiness;
  const std::string log_path = r.state_dir + "/" + kLogFile;
  LogFollower follower(log_path, 0);
  const auto began = std::chrono::steady_clock::now();
  const auto timeout = ready.kind == Readiness::Kind::kNone
                           ? milliseconds(0)
                           : std::min<milliseconds>(ready.timeout, r.timeout);
  const std::string target = ready.kind == Readiness::Kind::kHttp
                                 ? "GET http://127.0.0.1:" + std::to_string(port) + ready.http_path
                                 : "TCP 127.0.0.1:" + std::to_string(port);
  if (ready.kind != Readiness::Kind::kNone)
    context.Log("waiting for " + target + " to answer (up to " +
                std::to_string(timeout.count() / 1000) + "s)");
  while (true) {
    follower.Poll(context);
    // The probe first: a container that answers runs (one podman call less per deploy).
    absl::Status probe = ready.kind == Readiness::Kind::kHttp
                             ? local::ProbeHttp(port, ready.http_path, milliseconds(1000))
                         : ready.kind == Readiness::Kind::kTcp
                             ? local::ProbeTcp(port, milliseconds(1000))
                             : absl::UnavailableError("no readiness check");
    if (probe.ok()) break;
    std::string state = ContainerState(container);
    if (state != "running") {
      follower.Poll(context);
      // "exited 4" or "stopped 4" (exited, Podman's cleanup not done yet), "paused 0" ...
      const size_t space = state.find(' ');
      const std::string status = state.substr(0, space);
      std::string how = state.empty() ? "is gone"
                        : status == "exited" || status == "stopped"
                            ? "exited with code " + state.substr(space + 1)
                            : "is " + status;
      return absl::AbortedError(
          "the container " + how + " before it was ready" +
          (follower.Tail(5).empty() ? std::string() : "; last log lines:\n" + follower.Tail(5)));
    }
    if (ready.kind == Readiness::Kind::kNone) {
      context.Log("no readiness check: the container counts as ready once running");
      return absl::OkStatus();
    }
    if (context.Canceled())
      return absl::CancelledError("canceled while waiting for the container to be ready");
    if (std::chrono::steady_clock::now() - began >= timeout)
      return absl::DeadlineExceededError("the container was not ready within " +
                                         std::to_string(timeout.count() / 1000) + "s (" + target +
                                         ": " + std::string(probe.message()) + ")");
    std::this_thread::sleep_for(options_.poll_interval);
  }
  follower.Poll(context);
  auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - began);
  context.Log("ready after " + std::to_string(took.count()) + "ms");
  return absl::OkStatus();
}

absl::StatusOr<std::string> ContainerDriver::StartContainer(
    const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
    const std::string& image, const std::string& container, RunContext& context) const {
  // `podman run --pull never` first: the common case costs one podman call. The image
  // missing or a container of that name left (a crash before its state was saved, or the
  // instance's running one on a redeploy) are handled when podman says so.
  Outcome o = Podman(args, env);
  for (int attempt = 0; attempt < 2 && !o.ok() && o.status.ok(); ++attempt) {
    const std::string why = o.Why();
    absl::Status fixed;
    if (why.find("image not known") != std::string::npos)
      fixed = EnsureImage(image, context);
    else if (why.find("is already in use") != std::string::npos)
      fixed = RemoveContainer(container, &context);
    else
      break;
    if (!fixed.ok()) return fixed;
    o = Podman(args, env);
  }
  if (!o.status.ok()) return o.status;
  if (o.exit_code != 0) return absl::FailedPreconditionError("podman run failed: " + o.Why());
  return o.lines.empty() ? std::string() : o.lines.back();  // the container's id
}

absl::StatusOr<json::object> ContainerDriver::Run(const ContainerConfig& c, const DeployRequest& r,
                                                  RunContext& context) {
  const std::string uid = StringMember(r.instance, "uid"), container = ContainerName(r);
  std::vector<std::string> names;
  for (const auto& p : c.ports) names.push_back(p.name);
  auto ports = ports_.Allocate(uid, names);
  if (!ports.ok()) return ports.status();
  const bool cdi = HasCdiSpec();
  auto run = BuildRun(c, r, options_, *ports, cdi);
  absl::Status s = run.ok() ? EnsureVolumes(c, r) : run.status();
  if (!s.ok()) {
    ports_.Release(uid);
    return s;
  }
  for (const auto& p : c.ports)
    context.Log("port " + p.name + ": host " + std::to_string(ports->at(p.name)) + " -> " +
                std::to_string(p.container_port));
  context.Log("starting container " + container + " from " + run->image +
              (run->workload.empty() ? "" : " running " + Join(run->workload, " ")) +
              (r.gpu_indices.empty() ? " without GPUs"
                                     : " on GPUs " + Join(r.gpu_indices, ",") +
                                           (cdi ? " (CDI)" : " (NVIDIA_VISIBLE_DEVICES)")));
  std::error_code ec;
  std::filesystem::remove(r.state_dir + "/" + kLogFile, ec);
  auto started = StartContainer(run->args, run->env, run->image, container, context);
  if (!started.ok()) {
    ports_.Release(uid);
    (void)RemoveContainer(container, nullptr);
    return started.status();
  }
  json::object state = StateJson(container, *started, *ports, r.gpu_indices);
  context.SaveDriverState(state);
  WriteStateFile(r.state_dir, kStateFile, state);
  const int port =
      c.readiness.kind == local::Readiness::Kind::kNone ? 0 : ports->at(c.readiness.port);
  if (absl::Status ready = AwaitReady(c, r, port, container, context); !ready.ok()) {
    context.Log(std::string(ready.message()));
    (void)RemoveContainer(container, &context);
    ports_.Release(uid);
    RemoveStateFile(r.state_dir, kStateFile);
    return ready;
  }
  Watch(r, state);
  return RunOutputs(c, options_.advertise_host, *ports, container, r.gpu_indices);
}

absl::StatusOr<json::object> ContainerDriver::Apply(const DeployRequest& request,
                                                    RunContext& context) {
  auto config = ParseContainerConfig(request.config);
  if (!config.ok()) return config.status();
  if (request.state_dir.empty() || StringMember(request.instance, "uid").empty())
    return absl::InvalidArgumentError(
        "the container driver needs the instance's uid and state "
        "directory");
  std::error_code ec;
  std::filesystem::create_directories(request.state_dir, ec);
  if (ec) return absl::UnavailableError("cannot create " + request.state_dir + ": " + ec.message());
  // What this instance ran before is removed when `podman run` finds its name taken.
  Unwatch(ContainerName(request));
  ports_.Release(StringMember(request.instance, "uid"));
  return Run(*config, request, context);
}

absl::Status ContainerDriver::Destroy(const DeployRequest& request, RunContext& context) {
  const std::string container = ContainerName(request), uid = StringMember(request.instance, "uid");
  Unwatch(container);
  if (absl::Status s = RemoveContainer(container, &context); !s.ok()) return s;
  Outcome volumes = Podman({"volume", "ls", "-q", "--filter", "label=gantry.instance=" + uid});
  if (!volumes.ok()) return absl::UnavailableError("podman volume ls failed: " + volumes.Why());
  for (const auto& v : volumes.lines) {
    if (v.empty()) continue;
    context.Log("removing volume " + v);
    Outcome rm = Podman({"volume", "rm", "-f", v});
    if (!rm.ok()) return absl::UnavailableError("podman volume rm " + v + " failed: " + rm.Why());
  }
  ports_.Release(uid);
  RemoveStateFile(request.state_dir, kStateFile);
  return absl::OkStatus();
}

absl::Status ContainerDriver::Stop(const DeployRequest& request, RunContext& context) {
  // The container goes, its volumes stay: Start runs a new one on them (see the header for
  // why a stopped container is not started again).
  const std::string container = ContainerName(request);
  Unwatch(container);
  context.Log("stopping container " + container + " (its volumes are kept)");
  if (absl::Status s = RemoveContainer(container, &context); !s.ok()) return s;
  ports_.Release(StringMember(request.instance, "uid"));
  RemoveStateFile(request.state_dir, kStateFile);
  return absl::OkStatus();
}

absl::StatusOr<json::object> ContainerDriver::Start(const DeployRequest& request,
                                                    RunContext& context) {
  context.Log("a new container on the instance's volumes");
  return Apply(request, context);
}

bool ContainerDriver::Recover(const json::object& state) {
  const std::string container = StringMember(state, "container");
  if (container.rfind("gantry-", 0) == 0) (void)RemoveContainer(container, nullptr);
  return true;
}

bool ContainerDriver::Adopt(const DeployRequest& request, const json::object& state) {
  const std::string container = ContainerName(request);
  if (StringMember(state, "container") != container) return false;
  Outcome label = Podman({"container", "inspect", "--format",
                          "{{index .Config.Labels \"gantry.instance\"}}", container});
  if (!label.ok() || label.lines.empty() ||
      label.lines.back() != StringMember(request.instance, "uid"))
    return false;
  if (ContainerState(container) != "running") return false;
  const std::string uid = StringMember(request.instance, "uid");
  ports_.Release(uid);
  ports_.Reserve(uid, StatePorts(state));
  Watch(request, state);
  return true;
}

void ContainerDriver::Watch(const DeployRequest& r, json::object state) {
  Supervised s{StringMember(r.instance, "project"), StringMember(r.instance, "name"),
               StringMember(r.instance, "uid"), r.state_dir + "/" + kLogFile, std::move(state)};
  std::lock_guard<std::mutex> lock(mu_);
  s.watch = ++watches_;
  watched_[ContainerName(r)] = std::move(s);
}

void ContainerDriver::Unwatch(const std::string& container) {
  std::lock_guard<std::mutex> lock(mu_);
  watched_.erase(container);
}

void ContainerDriver::SupervisorLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, options_.supervise_interval);
    if (stopping_ || watched_.empty()) continue;
    // Only what was watched before the listing: a container started meanwhile is not in it.
    std::map<std::string, uint64_t> before;
    for (const auto& [name, w] : watched_) before[name] = w.watch;
    lock.unlock();
    // Name, state and exit code of each of this gantryd's containers.
    Outcome ps = Podman(
        {"ps", "-a", "--filter", "label=gantry.owner=" + options_.owner, "--format", "json"});
    std::map<std::string, std::pair<std::string, std::string>> seen;
    boost::system::error_code ec;
    json::value listed = json::parse(Join(ps.lines, "\n"), ec);
    if (!ec && listed.is_array())
      for (const auto& c : listed.get_array()) {
        if (!c.is_object()) continue;
        const json::object& o = c.get_object();
        const json::value* names = o.if_contains("Names");
        const json::value* code = o.if_contains("ExitCode");
        if (!names || !names->is_array() || names->get_array().empty() ||
            !names->get_array()[0].is_string())
          continue;
        seen[std::string(names->get_array()[0].get_string())] = {
            StringMember(o, "State"),
            code && code->is_int64() ? std::to_string(code->get_int64()) : "?"};
      }
    if (ec) ps.exit_code = -1;
    std::vector<WorkloadEvent> events;
    lock.lock();
    if (!ps.ok()) continue;
    for (const auto& [name, watch] : before) {
      auto it = watched_.find(name);
      if (it == watched_.end() || it->second.watch != watch) continue;
      auto found = seen.find(it->first);
      if (found != seen.end() && found->second.first == "running") continue;
      WorkloadEvent e;
      e.kind = WorkloadEvent::Kind::kFailed;
      e.ns = it->second.ns;
      e.name = it->second.name;
      e.instance_uid = it->second.uid;
      e.driver_state = it->second.state;
      e.reason = found == seen.end() ? "WorkloadLost" : "WorkloadExited";
      std::string tail = LogTail(it->second.log_path, 5);
      e.message = found == seen.end() ? "the container " + it->first + " is gone"
                                      : "the container exited with code " + found->second.second +
                                            (tail.empty() ? "" : "; last log lines:\n" + tail);
      events.push_back(std::move(e));
      watched_.erase(it);
    }
    lock.unlock();
    if (WorkloadObserver* o = observer_.load())
      for (const auto& e : events) o->OnWorkloadEvent(e);
    lock.lock();
  }
}

}  // namespace gantry::drivers::container
