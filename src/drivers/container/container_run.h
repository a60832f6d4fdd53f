// The parts of the container driver that turn a template's spec.container and a deploy
// request into a `podman run` command line and its environment, and read Podman's log:
// pure functions, internal to the driver (container_driver.cc).
//
//   ContainerName   gantry-<instance uid>: the one container of an instance
//   BuildRun        the podman arguments and the environment podman passes on (`-e NAME`)
//   RunOutputs      status.outputs {endpoint, container, gpus, ports}
//   LogFollower     streams Podman's k8s-file log into the run log
//
// Thread-safety: the functions are reentrant; a LogFollower belongs to one Apply.
#pragma once

#include <sys/types.h>

#include <boost/json.hpp>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "drivers/container/container_config.h"
#include "drivers/container/container_driver.h"
#include "drivers/driver.h"

namespace gantry::drivers::container {

inline constexpr const char* kStateFile = "container-driver.json";
inline constexpr const char* kLogFile = "workload.log";

std::string Join(const std::vector<std::string>& parts, std::string_view sep);
// gantry-<uid>, else gantry-<project>-<name> (lower-cased, other characters as '-').
std::string ContainerName(const DeployRequest& r);
std::string VolumeName(const DeployRequest& r, const std::string& volume);

struct RunCommand {
  std::vector<std::string> args;           // after "podman"
  std::map<std::string, std::string> env;  // podman's environment: the container's values
  std::string image;                       // expanded
  std::vector<std::string> workload;       // expanded entrypoint + args, for the run log
};

// FAILED_PRECONDITION naming the field when a ${VAR} cannot be expanded.
absl::StatusOr<RunCommand> BuildRun(const ContainerConfig& c, const DeployRequest& r,
                                    const ContainerDriverOptions& options,
                                    const std::map<std::string, int>& ports, bool use_cdi);

// {endpoint (first port), container, gpus, ports (JSON of name: host port)}.
boost::json::object RunOutputs(const ContainerConfig& c, const std::string& advertise_host,
                               const std::map<std::string, int>& ports,
                               const std::string& container, const std::vector<std::string>& gpus);

// The driver state {container, id, ports, gpus}, and its ports back (Adopt).
boost::json::object StateJson(const std::string& container, const std::string& id,
                              const std::map<std::string, int>& ports,
                              const std::vector<std::string>& gpus);
std::map<std::string, int> StatePorts(const boost::json::object& state);

// Follows Podman's k8s-file log ("TIME STREAM F|P MESSAGE" per line) from `pos`.
class LogFollower {
 public:
  LogFollower(std::string path, off_t pos) : path_(std::move(path)), pos_(pos) {}
  // Logs the messages of the complete lines written since the last call.
  void Poll(RunContext& context);
  // The last `n` messages written since the follower started, joined by '\n'.
  std::string Tail(size_t n) const;

 private:
  std::string path_;
  off_t pos_;
  std::string partial_;
  std::vector<std::string> seen_;
};

// The size of `path` (0 when missing): where a follower of a new run starts.
off_t FileSize(const std::string& path);
// The last `n` messages of the log at `path`, joined by '\n'.
std::string LogTail(const std::string& path, size_t n);

}  // namespace gantry::drivers::container
