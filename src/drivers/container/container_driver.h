// The container driver: runs an instance's workload as one Podman container on this host,
// from an image, with the GPUs the engine assigned to it, isolated from gantryd.
//
// Apply allocates one host port per spec.container.ports entry from gantry's port range,
// creates the instance's named volumes and runs the container detached (`podman run -d
// --pull never`, through the ProcessLauncher). When Podman says the image is not known it is
// pulled (a missing image fails with Podman's own words) and when the name is taken (what
// this instance ran before) that container is removed (its volumes stay), then it runs again:
//   name gantry-<instance uid>, labels gantry.instance=<uid>, gantry.project, gantry.name and
//   gantry.owner=<options.owner> (the gantryd it belongs to); --runtime options.runtime (runc:
//   crun fails on hybrid cgroup layouts) with explicit --ulimit nofile/nproc; --init (a
//   PID 1 that forwards signals, so a stop is quick); as root a user namespace
//   (--uidmap/--gidmap 0:options.userns_base:65536): root in the container is an unprivileged
//   user on the host; rootless Podman otherwise. No host path is mounted and the container
//   gets only the environment below, never gantryd's.
//   GPUs: by CDI (--device nvidia.com/gpu=<index>) when a CDI spec for nvidia.com/gpu exists
//   (options.cdi_dirs), else NVIDIA_VISIBLE_DEVICES=<indices> ("void" when none);
//   GANTRY_GPUS (and GANTRY_GPU_UUIDS) either way. The profile's resources.cpu and
//   resources.memoryGiB become --cpus and --memory.
//   Env: spec.container.env, then GANTRY_INSTANCE, GANTRY_PROJECT, GANTRY_PORT_<NAME> (the
//   host port) and PORT for the first, GANTRY_VAR_<NAME> per variable, ComputeEnvironment.
//   ${VAR} in image, command, args, env values and workingDir expands from the instance's
//   variables by name and those values. Values reach podman through its environment
//   (`-e NAME`), not its command line.
//   Ports: published on options.publish_address; status.outputs.endpoint is
//   http://ADVERTISE_HOST:HOSTPORT/ (the readiness path when it probes the first port).
//   Output: Podman's k8s-file log in STATE_DIR/workload.log, streamed into the run log while
//   Apply waits for readiness (as the local driver: HTTP or TCP on 127.0.0.1:HOSTPORT).
// Destroy removes the container and every volume labelled with the instance. Stop removes
// the container (`podman rm -f -t GRACE`: SIGTERM, then SIGKILL after the grace; GPUs and
// ports released) and keeps its volumes; Start is Apply: a new container on those volumes,
// on the GPUs and host ports given now. A stopped container is not `podman start`ed again:
// rootful Podman 4 can leave the DNAT rule of the container's previous address in place, and
// its published port then leads nowhere after the restart (podman#23832, #27516; seen in CI
// as a readiness timeout). Kubernetes and Coder do the same: what is kept is the volumes.
//
// Supervision: one thread lists this gantryd's containers (`podman ps -a`, label
// gantry.owner) every options.supervise_interval and reports a supervised container that
// exited as kFailed (WorkloadExited, with its exit code and last log lines). Podman does not
// restart it (no restart policy in spec.container yet). Adopt after a gantryd restart finds
// the container by name and label and resumes supervising it when it runs; Recover removes
// the container an interrupted run left.
//
// Driver state (RunContext, and STATE_DIR/container-driver.json): {container, id, ports:
// {name: hostPort}, gpus: [...]}.
//
// Thread-safety: Apply/Destroy/Stop/Start/Recover/Adopt may run concurrently for different
// instances (the engine never runs two at once for the same instance).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "drivers/common/process.h"
#include "drivers/container/container_config.h"
#include "drivers/driver.h"
#include "drivers/local/local_driver.h"
#include "drivers/local/port_allocator.h"

namespace gantry::drivers::container {

struct ContainerDriverOptions {
  std::string podman = "podman";    // looked up in PATH
  std::string runtime = "runc";     // --runtime; "" = Podman's default
  int ulimit_nofile = 65536;        // --ulimit nofile=N:N (at most gantryd's own hard limit)
  int ulimit_nproc = 4096;          // --ulimit nproc=N:N
  long long userns_base = 1000000;  // as root: container uid/gid 0 is this host id; 0 = none
  std::vector<std::string> cdi_dirs = {"/etc/cdi", "/var/run/cdi"};
  int port_min = 20000;
  int port_max = 29999;
  std::string advertise_host = "127.0.0.1";
  std::string publish_address = "0.0.0.0";  // where host ports listen
  std::string owner;  // label gantry.owner: which gantryd (its data directory)
  std::chrono::seconds stop_grace{10};
  std::chrono::milliseconds poll_interval{100};
  std::chrono::milliseconds supervise_interval{2000};
};

// gantryd's options: the local driver's port range and advertised host (both drivers take
// ports from the range; the allocators skip ports in use), owner = the absolute data
// directory, and GANTRY_CONTAINER_RUNTIME (default runc) as the runtime.
ContainerDriverOptions OptionsLike(const local::LocalDriverOptions& local,
                                   const std::string& data_dir);

class ContainerDriver final : public Driver {
 public:
  // Starts the supervision thread. `launcher` runs podman; it must outlive the driver.
  ContainerDriver(ContainerDriverOptions options, ProcessLauncher& launcher);
  ~ContainerDriver() override;  // Shutdown(); containers keep running
  ContainerDriver(const ContainerDriver&) = delete;
  ContainerDriver& operator=(const ContainerDriver&) = delete;

  std::string_view Name() const override { return "container"; }
  // Not runs_on_gantryd_host: the workload runs in a user namespace without host paths.
  Capabilities Caps() const override {
    return {.host_bound = true, .long_running = true, .stop_start = true, .gpu_metrics = true};
  }
  void ValidateConfig(const boost::json::object& config,
                      std::vector<FieldCause>* causes) const override;
  boost::json::object ConfigSchema() const override { return ContainerConfigSchema(); }

  // FAILED_PRECONDITION for a bad spec.container or an image Podman cannot find or pull
  // (its words); UNAVAILABLE when podman cannot run; RESOURCE_EXHAUSTED when no port is
  // free; ABORTED when the container exits before it is ready; DEADLINE_EXCEEDED when it is
  // not ready in time; CANCELLED. On every error the container is removed, ports freed.
  absl::StatusOr<boost::json::object> Apply(const DeployRequest& request,
                                            RunContext& context) override;
  absl::Status Destroy(const DeployRequest& request, RunContext& context) override;
  absl::Status Stop(const DeployRequest& request, RunContext& context) override;
  absl::StatusOr<boost::json::object> Start(const DeployRequest& request,
                                            RunContext& context) override;
  bool Recover(const boost::json::object& state) override;
  void SetObserver(WorkloadObserver* observer) override { observer_.store(observer); }
  bool Adopt(const DeployRequest& request, const boost::json::object& state) override;
  void Shutdown() override;

 private:
  struct Supervised {
    std::string ns, name, uid, log_path;
    boost::json::object state;
    uint64_t watch = 0;  // which Watch: a stop and start between two looks is a new one
  };
  struct Outcome;  // of one podman call (container_driver.cc)

  // Runs `podman ARGS` with `env` set for it; collects its output lines.
  Outcome Podman(const std::vector<std::string>& args,
                 const std::map<std::string, std::string>& env = {},
                 RunContext* stream = nullptr) const;
  absl::Status EnsureImage(const std::string& image, RunContext& context) const;
  // podman run ARGS; pulls a missing image and removes a container of that name, then runs
  // again. The new container's id.
  absl::StatusOr<std::string> StartContainer(const std::vector<std::string>& args,
                                             const std::map<std::string, std::string>& env,
                                             const std::string& image, const std::string& container,
                                             RunContext& context) const;
  absl::Status EnsureVolumes(const ContainerConfig& c, const DeployRequest& r) const;
  // podman rm -f; OK when there was nothing.
  absl::Status RemoveContainer(const std::string& container, RunContext* context) const;
  absl::Status AwaitReady(const ContainerConfig& c, const DeployRequest& r, int port,
                          const std::string& container, RunContext& context) const;
  // "running", "exited 3", ... or "" when there is no such container.
  std::string ContainerState(const std::string& container) const;
  absl::StatusOr<boost::json::object> Run(const ContainerConfig& c, const DeployRequest& r,
                                          RunContext& context);
  void Watch(const DeployRequest& r, boost::json::object state);
  void Unwatch(const std::string& uid);
  void SupervisorLoop();
  bool HasCdiSpec() const;

  const ContainerDriverOptions options_;
  ProcessLauncher& launcher_;
  local::PortAllocator ports_;  // thread-safe itself
  std::atomic<WorkloadObserver*> observer_{nullptr};

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, Supervised> watched_ ABSL_GUARDED_BY(mu_);  // by container name
  uint64_t watches_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread supervisor_;
  std::once_flag shutdown_once_;
};

}  // namespace gantry::drivers::container
