// The exec driver: runs a template's program with `apply` or `destroy` appended.
//
// Contract with the program (docs/drivers.md):
//   - stdin: JSON {"action", "instance": {name, project, uid, labels, annotations, ...},
//     "variables": {...}, "resources": {...}, "previousOutputs": {...}, "run": {name, attempt}}
//   - environment: GANTRY_ACTION, GANTRY_INSTANCE, GANTRY_PROJECT, GANTRY_RUN,
//     GANTRY_OUTPUTS (a file to write outputs to, as one JSON object),
//     GANTRY_STATE_DIR (private to the instance, kept across runs: its workload directory,
//     sandbox.h), GANTRY_LABEL_<KEY>; nothing else of gantryd's environment but the
//     allow-listed ChildEnvironment (PATH, HOME, LANG, LC_*, TZ, CUDA_VISIBLE_DEVICES).
//   - it runs as the sandbox's workload user when gantryd is root; the outputs file must be
//     a regular file of that user (no symlink), at most 1 MiB.
//   - stdout/stderr stream into the run log; exit 0 is success.
//   - apply and destroy must be idempotent: after a crash of gantryd the interrupted run is
//     re-run from the start.
#pragma once

#include <utility>

#include "drivers/common/sandbox.h"
#include "drivers/driver.h"

namespace gantry::drivers::exec {

class ExecDriver final : public Driver {
 public:
  // `sandbox`: who programs run as and where their workload directory is (default: as
  // gantryd, in the state directory).
  explicit ExecDriver(Sandbox sandbox = {}) : sandbox_(std::move(sandbox)) {}
  std::string_view Name() const override { return "exec"; }
  Capabilities Caps() const override { return {.runs_on_gantryd_host = true}; }
  absl::StatusOr<boost::json::object> Apply(const DeployRequest& request,
                                            RunContext& context) override;
  absl::Status Destroy(const DeployRequest& request, RunContext& context) override;
  bool Recover(const boost::json::object& state) override;

 private:
  absl::StatusOr<boost::json::object> Run(const DeployRequest& request, RunContext& context);

  const Sandbox sandbox_;  // constant after construction
};

}  // namespace gantry::drivers::exec
