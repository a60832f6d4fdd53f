// The container driver's template configuration (a template's spec.container), parsed and
// checked. Every refusal is a FAILED_PRECONDITION whose message names the field, e.g.
//   spec.container.ports[0].containerPort must be a whole number from 1 to 65535
//
//   container:
//     image: "${image}"                          # required; ${var} picks a template variable
//     command: ["python3", "-m", "http.server"]  # the entrypoint; default: the image's
//     args: ["${GANTRY_PORT_HTTP}"]              # its arguments; default: the image's CMD
//     env: {KEY: value}                          # values may use ${VAR} too
//     workingDir: /srv                           # inside the container; default: the image's
//     ports: [{name: http, containerPort: 8888}] # published on a host port of gantry's range
//     volumes: [{name: data, mountPath: /data}]  # a named volume per instance, kept by stop
//     readiness: {httpPath: /, port: http, timeoutSeconds: 60}   # or {tcpPort: http}
//     timeoutSeconds: 600                        # the run's timeout (read by the engine)
//
// The fields the local driver has too (command, args, env, ports' names, readiness,
// timeoutSeconds) are checked by the local driver's checker (CheckLocalConfig) with this
// prefix, so both drivers refuse the same mistakes with the same words; ${VAR} expands as
// there (ExpandVariables), from the instance's variables and what gantry sets.
//
// Thread-safety: plain functions over values.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "drivers/common/config_problems.h"
#include "drivers/local/local_config.h"

namespace gantry::drivers::container {

struct ContainerPort {
  std::string name;        // unique; GANTRY_PORT_<NAME> holds the host port
  int container_port = 0;  // 1..65535, the port the workload listens on inside
};

struct ContainerVolume {
  std::string name;        // unique, [a-z0-9][a-z0-9_.-]*, at most 40 characters
  std::string mount_path;  // absolute, inside the container
};

struct ContainerConfig {
  std::string image;                 // not empty (before expansion)
  std::vector<std::string> command;  // empty = the image's entrypoint
  std::vector<std::string> args;     // empty = the image's CMD (when command is empty too)
  std::vector<std::pair<std::string, std::string>> env;  // in the template's order
  std::string working_dir;                               // "" = the image's
  std::vector<ContainerPort> ports;
  std::vector<ContainerVolume> volumes;
  local::Readiness readiness;  // its port is a name from ports
};

// Records every problem (prefix "spec.container"); the returned config is only meaningful
// when none was recorded. Includes an unclosed "${" (CheckVariableSyntax).
ContainerConfig CheckContainerConfig(const boost::json::object& config, ConfigProblems* problems);
// The first problem as FAILED_PRECONDITION, else the config.
absl::StatusOr<ContainerConfig> ParseContainerConfig(const boost::json::object& config);

// The OpenAPI v3 schema of spec.container.
boost::json::object ContainerConfigSchema();

}  // namespace gantry::drivers::container
