#include "drivers/container/container_run.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "common/json_member.h"

namespace gantry::drivers::container {

namespace json = boost::json;

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

namespace {

std::string Sanitize(std::string_view s) {
  std::string out;
  for (char c : s)
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::tolower(static_cast<unsigned char>(c)))
               : '-';
  return out;
}

// GANTRY_VAR_<NAME>: upper-cased, other characters as '_'.
std::string VarEnvName(std::string_view name) {
  std::string out = "GANTRY_VAR_";
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
  return out;
}

// The environment gantry sets (it wins over the template's).
std::map<std::string, std::string> GantryEnv(const ContainerConfig& c, const DeployRequest& r,
                                             const std::map<std::string, int>& ports,
                                             bool use_cdi) {
  std::map<std::string, std::string> env;
  const std::string gpus = Join(r.gpu_indices, ",");
  if (!use_cdi) env["NVIDIA_VISIBLE_DEVICES"] = r.gpu_indices.empty() ? "void" : gpus;
  env["GANTRY_GPUS"] = gpus;
  if (!r.gpu_uuids.empty()) env["GANTRY_GPU_UUIDS"] = Join(r.gpu_uuids, ",");
  env["GANTRY_INSTANCE"] = StringMember(r.instance, "name");
  env["GANTRY_PROJECT"] = StringMember(r.instance, "project");
  for (const auto& [k, v] : r.variables) env[VarEnvName(k)] = v;
  for (const auto& [k, v] : ComputeEnvironment(r)) env[k] = v;
  for (size_t i = 0; i < c.ports.size(); ++i) {
    auto it = ports.find(c.ports[i].name);
    if (it == ports.end()) continue;
    env[local::PortEnvName(c.ports[i].name)] = std::to_string(it->second);
    if (i == 0) env["PORT"] = std::to_string(it->second);
  }
  return env;
}

std::vector<std::string> LimitArgs(const json::object& resources) {
  std::vector<std::string> out;
  auto number = [&](const char* key) {
    const json::value* v = resources.if_contains(key);
    return v && v->is_number() ? v->to_number<double>() : 0.0;
  };
  if (double cpu = number("cpu"); cpu > 0 && std::isfinite(cpu)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", cpu);
    out.insert(out.end(), {"--cpus", buf});
  }
  if (double gib = number("memoryGiB"); gib > 0 && std::isfinite(gib) && gib < 1e6)
    out.insert(out.end(),
               {"--memory", std::to_string(static_cast<long long>(std::ceil(gib * 1024))) + "m"});
  return out;
}

// The rlimits given explicitly (runc cannot raise them on some hosts), at most ours.
std::vector<std::string> UlimitArgs(const ContainerDriverOptions& o) {
  auto limit = [](int resource, long long want) {
    rlimit rl{};
    if (::getrlimit(resource, &rl) == 0 && rl.rlim_max != RLIM_INFINITY)
      want = std::min<long long>(want, static_cast<long long>(rl.rlim_max));
    return std::to_string(want) + ":" + std::to_string(want);
  };
  return {"--ulimit", "nofile=" + limit(RLIMIT_NOFILE, o.ulimit_nofile), "--ulimit",
          "nproc=" + limit(RLIMIT_NPROC, o.ulimit_nproc)};
}

// Environment variables that steer podman (or what it runs: conmon, the runtime).
bool PodmanReads(const std::string& name) {
  static const char* const kNames[] = {
      "PATH", "HOME",    "LANG", "LANGUAGE", "TZ", "TMPDIR", "CUDA_VISIBLE_DEVICES",
      "USER", "LOGNAME", "SHELL"};
  static const char* const kPrefixes[] = {
      "LC_", "XDG_", "CONTAINERS_", "PODMAN_", "BUILDAH_", "STORAGE_", "REGISTRY_", "DBUS_", "LD_"};
  for (const char* n : kNames)
    if (name == n) return true;
  for (const char* p : kPrefixes)
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

void Append(std::vector<std::string>* out, std::vector<std::string> more) {
  out->insert(out->end(), std::make_move_iterator(more.begin()),
              std::make_move_iterator(more.end()));
}

// Everything before the image: identity, isolation, limits, GPUs, ports, volumes, env.
std::vector<std::string> RunOptions(const ContainerConfig& c, const DeployRequest& r,
                                    const ContainerDriverOptions& o,
                                    const std::map<std::string, int>& ports, bool use_cdi,
                                    const std::vector<std::string>& env_names) {
  const std::string uid = StringMember(r.instance, "uid");
  std::vector<std::string> a = {"run",
                                "-d",
                                "--name",
                                ContainerName(r),
                                "--init",
                                "--label",
                                "gantry.instance=" + uid,
                                "--label",
                                "gantry.project=" + StringMember(r.instance, "project"),
                                "--label",
                                "gantry.name=" + StringMember(r.instance, "name"),
                                "--label",
                                "gantry.owner=" + o.owner,
                                "--pull",
                                "never",
                                "--log-driver",
                                "k8s-file",
                                "--log-opt",
                                "path=" + r.state_dir + "/" + kLogFile};
  if (!o.runtime.empty()) Append(&a, {"--runtime", o.runtime});
  Append(&a, UlimitArgs(o));
  if (::geteuid() == 0 && o.userns_base > 0) {
    const std::string map = "0:" + std::to_string(o.userns_base) + ":65536";
    Append(&a, {"--uidmap", map, "--gidmap", map});
  }
  Append(&a, LimitArgs(r.resources));
  if (use_cdi)
    for (const auto& g : r.gpu_indices) Append(&a, {"--device", "nvidia.com/gpu=" + g});
  for (const auto& p : c.ports)
    if (auto it = ports.find(p.name); it != ports.end())
      Append(&a, {"-p", o.publish_address + ":" + std::to_string(it->second) + ":" +
                            std::to_string(p.container_port)});
  for (const auto& v : c.volumes) Append(&a, {"-v", VolumeName(r, v.name) + ":" + v.mount_path});
  for (const auto& name : env_names) Append(&a, {"-e", name});
  return a;
}

}  // namespace

std::string ContainerName(const DeployRequest& r) {
  std::string uid = StringMember(r.instance, "uid");
  if (!uid.empty()) return "gantry-" + Sanitize(uid);
  return "gantry-" + Sanitize(StringMember(r.instance, "project")) + "-" +
         Sanitize(StringMember(r.instance, "name"));
}

std::string VolumeName(const DeployRequest& r, const std::string& volume) {
  return ContainerName(r) + "-" + volume;
}

absl::StatusOr<RunCommand> BuildRun(const ContainerConfig& c, const DeployRequest& r,
                                    const ContainerDriverOptions& options,
                                    const std::map<std::string, int>& ports, bool use_cdi) {
  const std::map<std::string, std::string> gantry = GantryEnv(c, r, ports, use_cdi);
  // ${VAR}: the instance's variables by name, then what gantry sets, then the template's env.
  std::map<std::string, std::string> scope(r.variables.begin(), r.variables.end());
  for (const auto& [k, v] : gantry) scope[k] = v;
  RunCommand run;
  for (const auto& [k, v] : c.env) {
    auto value = local::ExpandVariables(v, scope, "spec.container.env." + k);
    if (!value.ok()) return value.status();
    run.env[k] = *value;
    if (!gantry.count(k)) scope[k] = *value;
  }
  for (const auto& [k, v] : gantry) run.env[k] = v;
  auto expand = [&](const std::string& text, const std::string& field, std::string* out) {
    auto value = local::ExpandVariables(text, scope, "spec.container." + field);
    if (value.ok()) *out = *value;
    return value.status();
  };
  if (auto s = expand(c.image, "image", &run.image); !s.ok()) return s;
  std::vector<std::string> command(c.command.size()), args(c.args.size());
  for (size_t i = 0; i < c.command.size(); ++i)
    if (auto s = expand(c.command[i], "command[" + std::to_string(i) + "]", &command[i]); !s.ok())
      return s;
  for (size_t i = 0; i < c.args.size(); ++i)
    if (auto s = expand(c.args[i], "args[" + std::to_string(i) + "]", &args[i]); !s.ok()) return s;
  std::string working_dir;
  if (auto s = expand(c.working_dir, "workingDir", &working_dir); !s.ok()) return s;

  // Names podman itself reads (PATH, HOME, XDG_*, ...) go on its command line as NAME=VALUE:
  // in podman's environment they would change how podman runs.
  std::vector<std::string> names;
  for (auto it = run.env.begin(); it != run.env.end();) {
    if (!PodmanReads(it->first)) {
      names.push_back((it++)->first);
      continue;
    }
    names.push_back(it->first + "=" + it->second);
    it = run.env.erase(it);
  }
  run.args = RunOptions(c, r, options, ports, use_cdi, names);
  if (!working_dir.empty()) Append(&run.args, {"-w", working_dir});
  if (!command.empty())
    Append(&run.args, {"--entrypoint", json::serialize(json::value_from(command))});
  run.args.push_back(run.image);
  Append(&run.args, args);
  run.workload = command;
  Append(&run.workload, args);
  return run;
}

json::object RunOutputs(const ContainerConfig& c, const std::string& advertise_host,
                        const std::map<std::string, int>& ports, const std::string& container,
                        const std::vector<std::string>& gpus) {
  json::object outputs;
  if (!c.ports.empty() && ports.count(c.ports[0].name)) {
    std::string host = advertise_host;
    if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
    const std::string& first = c.ports[0].name;
    const local::Readiness& ready = c.readiness;
    std::string path =
        ready.kind == local::Readiness::Kind::kHttp && ready.port == first ? ready.http_path : "/";
    outputs["endpoint"] = "http://" + host + ":" + std::to_string(ports.at(first)) + path;
  }
  outputs["container"] = container;
  outputs["gpus"] = Join(gpus, ",");
  json::object port_obj;
  for (const auto& [name, port] : ports) port_obj[name] = port;
  outputs["ports"] = json::serialize(port_obj);
  return outputs;
}

json::object StateJson(const std::string& container, const std::string& id,
                       const std::map<std::string, int>& ports,
                       const std::vector<std::string>& gpus) {
  json::object port_obj;
  for (const auto& [name, port] : ports) port_obj[name] = port;
  json::array gpu_arr;
  for (const auto& g : gpus) gpu_arr.emplace_back(g);
  return json::object{{"container", container}, {"id", id}, {"ports", port_obj}, {"gpus", gpu_arr}};
}

std::map<std::string, int> StatePorts(const json::object& state) {
  std::map<std::string, int> out;
  if (const json::value* p = state.if_contains("ports"); p && p->is_object())
    for (const auto& kv : p->get_object())
      if (kv.value().is_int64())
        out[std::string(kv.key())] = static_cast<int>(kv.value().get_int64());
  return out;
}

namespace {

// "2026-12-02T04:38:34.1+00:00 stdout F message" -> "message".
std::string Message(std::string_view line) {
  size_t at = 0;
  for (int field = 0; field < 3 && at != std::string_view::npos; ++field) {
    at = line.find(' ', at);
    if (at != std::string_view::npos) ++at;
  }
  return at == std::string_view::npos ? std::string() : std::string(line.substr(at));
}

}  // namespace

void LogFollower::Poll(RunContext& context) {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  in.seekg(pos_);
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  pos_ += static_cast<off_t>(chunk.size());
  partial_ += chunk;
  size_t nl;
  while ((nl = partial_.find('\n')) != std::string::npos) {
    std::string message = Message(std::string_view(partial_).substr(0, nl));
    partial_.erase(0, nl + 1);
    context.Log(message);
    seen_.push_back(std::move(message));
    if (seen_.size() > 100) seen_.erase(seen_.begin());
  }
}

std::string LogFollower::Tail(size_t n) const {
  std::vector<std::string> last(seen_.end() - std::min(n, seen_.size()), seen_.end());
  return Join(last, "\n");
}

off_t FileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

std::string LogTail(const std::string& path, size_t n) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(Message(line));
    if (lines.size() > n) lines.erase(lines.begin());
  }
  return Join(lines, "\n");
}

}  // namespace gantry::drivers::container
