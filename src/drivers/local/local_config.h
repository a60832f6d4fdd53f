// The local driver's template configuration (a template's spec.local), parsed and checked.
// Every refusal is a FAILED_PRECONDITION whose message names the field, e.g.
//   spec.local.restartPolicy must be one of Always, OnFailure, Never (got "always")
//
//   local:
//     command: ["python3", "-m", "http.server"]   # required
//     args: ["${GANTRY_PORT_HTTP}"]               # ${VAR} expands from the workload env
//     env: {KEY: value}                           # values may use ${VAR} too
//     workingDir: /srv/x                          # default: the instance's state directory
//     ports: [{name: http}]                       # GANTRY_PORT_HTTP, and PORT for the first
//     readiness: {httpPath: /, port: http, timeoutSeconds: 60}   # or {tcpPort: http}
//     restartPolicy: Always | OnFailure | Never   # default OnFailure
//     maxRestarts: 5                              # restarts in a row, then CrashLoopBackOff
//     timeoutSeconds: 600                         # the run's timeout (read by the engine)
//
// Thread-safety: plain functions over values.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "absl/status/statusor.h"
#include "drivers/common/config_problems.h"

namespace gantry::drivers::local {

enum class RestartPolicy { kAlways, kOnFailure, kNever };

std::string_view RestartPolicyName(RestartPolicy policy);

struct Readiness {
  enum class Kind { kNone, kHttp, kTcp };
  Kind kind = Kind::kNone;
  std::string http_path;  // starts with '/', for kHttp
  std::string port;       // a name from LocalConfig::ports; the first port when omitted
  std::chrono::seconds timeout{60};
};

struct LocalConfig {
  std::vector<std::string> command;  // not empty
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // in the template's order
  std::string working_dir;           // "" = the instance's state directory
  std::vector<std::string> ports;    // port names, unique (also once upper-cased)
  Readiness readiness;
  RestartPolicy restart_policy = RestartPolicy::kOnFailure;
  int max_restarts = 5;
};

// Parses and validates spec.local. FAILED_PRECONDITION naming the field on any mistake,
// including unknown fields (a typo would otherwise be silently ignored).
absl::StatusOr<LocalConfig> ParseLocalConfig(const boost::json::object& config);
// The same check recording every problem (prefix "spec.local") instead of stopping at the
// first: what LocalDriver::ValidateConfig reports at save time. The returned config is only
// meaningful when no problem was recorded.
LocalConfig CheckLocalConfig(const boost::json::object& config, ConfigProblems* problems);

// The OpenAPI v3 schema of spec.local (what ParseLocalConfig accepts).
boost::json::object LocalConfigSchema();

// The environment variable that carries port `name`: GANTRY_PORT_<NAME>, upper-cased, with
// every character other than a letter or digit turned into '_'.
std::string PortEnvName(std::string_view name);

// Expands ${VAR} in `text` from `env`; "$${" stands for a literal "${". FAILED_PRECONDITION
// naming `field` when a variable is not set or a "${" is not closed.
absl::StatusOr<std::string> ExpandVariables(std::string_view text,
                                            const std::map<std::string, std::string>& env,
                                            std::string_view field);

}  // namespace gantry::drivers::local
