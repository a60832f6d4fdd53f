// The Slurm driver's template configuration (a template's spec.slurm), parsed and checked,
// and the sbatch command line it turns into. Every refusal is a FAILED_PRECONDITION whose
// message names the field, e.g.
//   spec.slurm.nodes must be at least 1 (got 0)
//
//   slurm:
//     slurmConf: /etc/slurm/clusters/a/slurm.conf  # the cluster: SLURM_CONF for every command
//                                                   # (default: gantryd's SLURM_CONF or Slurm's)
//     partition: gpu                                # --partition (default: the cluster's)
//     account: ml                                   # --account
//     qos: high                                     # --qos
//     timeLimit: "1-00:00:00"                        # --time, in Slurm's formats
//     nodes: 2                                      # --nodes (default 1)
//     script: |                                     # the batch script (starts with #!) ...
//       #!/bin/bash
//       srun python train.py
//     command: ["python3", "train.py"]              # ... or one command (--wrap), not both
//     env: {KEY: value}                             # added to the job's environment
//     workingDir: /shared/runs                      # --chdir (default: the instance's state dir)
//     timeoutSeconds: 86400                         # how long a deploy waits for RUNNING
//
// GPUs come from the compute profile: resources.gpu {type, count} is per node and becomes
// --gres=gpu:TYPE:COUNT (--gres=gpu:COUNT without a type).
//
// Thread-safety: plain functions over values.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "absl/status/statusor.h"
#include "drivers/common/config_problems.h"
#include "drivers/common/sandbox.h"

namespace gantry::drivers::slurm {

struct SlurmConfig {
  std::string slurm_conf;  // "" = the environment's / Slurm's default
  std::string partition, account, qos, time_limit;
  int nodes = 1;
  std::string script;                // either script ...
  std::vector<std::string> command;  // ... or command
  std::vector<std::pair<std::string, std::string>> env;
  std::string working_dir;           // "" = the instance's state directory
};

// Parses and validates spec.slurm; unknown fields are refused (a typo would otherwise be
// silently ignored).
absl::StatusOr<SlurmConfig> ParseSlurmConfig(const boost::json::object& config);
// The same check recording every problem (prefix "spec.slurm") instead of stopping at the
// first: what SlurmDriver::ValidateConfig reports at save time. The returned config is only
// meaningful when no problem was recorded.
SlurmConfig CheckSlurmConfig(const boost::json::object& config, ConfigProblems* problems);

// The OpenAPI v3 schema of spec.slurm (what ParseSlurmConfig accepts).
boost::json::object SlurmConfigSchema();

// The --gres value for a profile's spec.resources: "gpu:h100:4", "gpu:4", or "" when it asks
// for no GPU. FAILED_PRECONDITION for a GPU type Slurm could not take.
absl::StatusOr<std::string> GresForResources(const boost::json::object& resources);

// What sbatch gets: its arguments (after "sbatch") and the script on stdin ("" with --wrap).
struct SbatchCall {
  std::vector<std::string> args;
  std::string stdin_script;
};

// `job_name` is <project>.<instance>; `comment` the job comment (the instance's labels);
// `working_dir` the resolved directory; `gres` from GresForResources; `run_as` (gantryd is
// root) adds --uid and --gid so slurmd runs the job as that user instead of root.
SbatchCall BuildSbatch(const SlurmConfig& config, const std::string& job_name,
                       const std::string& comment, const std::string& working_dir,
                       const std::string& gres, const WorkloadUser* run_as = nullptr);

// `s` quoted for sh: 'it'"'"'s'.
std::string ShellQuote(std::string_view s);

}  // namespace gantry::drivers::slurm
