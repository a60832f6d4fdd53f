// The exec driver: runs a template's program with the run's action (`apply`, `destroy`, and
// `stop`/`start` when the template lists them in spec.exec.actions) appended.
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
//   - apply, destroy, stop and start must be idempotent: after a crash of gantryd the
//     interrupted run is re-run from the start.
//   - stop and start are called only when spec.exec.actions lists both (the program says it
//     knows them); otherwise CanStop refuses, and a stop is a 409 that names the field.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "drivers/common/config_problems.h"
#include "drivers/common/process.h"
#include "drivers/common/sandbox.h"
#include "drivers/driver.h"

namespace gantry::drivers::exec {

// A template's spec.exec, as a run reads it:
//   exec:
//     command: ["/opt/deploy.sh"]   # required; `apply` or `destroy` is appended
//     workingDir: /srv/x            # default: gantryd's working directory
//     env: {KEY: value}             # non-string values as JSON writes them
//     timeoutSeconds: 600           # the run's timeout (read by the engine)
//     actions: [apply, destroy, stop, start]   # what the program implements; default
//                                              # apply and destroy (always called)
// Lenient as it always was: non-string items of command are skipped, other fields ignored.
struct ExecConfig {
  std::vector<std::string> command;  // not empty once checked
  std::string working_dir;
  std::map<std::string, std::string> env;
  std::vector<std::string> actions;  // spec.exec.actions; empty: apply and destroy
  bool Lists(std::string_view action) const;
};
// Records "the template's spec.exec.command is empty" (field "command") when no string is
// left in command, and each entry of actions that is not one of apply, destroy, stop, start
// (or repeats one): what a deploy refuses.
ExecConfig CheckExecConfig(const boost::json::object& config, ConfigProblems* problems);
// The OpenAPI v3 schema of spec.exec.
boost::json::object ExecConfigSchema();

class ExecDriver final : public Driver {
 public:
  // `sandbox`: who programs run as and where their workload directory is (default: as
  // gantryd, in the state directory). `launcher` starts them; it must outlive the driver.
  explicit ExecDriver(Sandbox sandbox = {}, ProcessLauncher& launcher = DefaultProcessLauncher())
      : sandbox_(std::move(sandbox)), launcher_(launcher) {}
  std::string_view Name() const override { return "exec"; }
  // stop_start: as the template says (CanStop).
  Capabilities Caps() const override { return {.runs_on_gantryd_host = true, .stop_start = true}; }
  // What a run would refuse (CheckExecConfig).
  void ValidateConfig(const boost::json::object& config,
                      std::vector<FieldCause>* causes) const override;
  boost::json::object ConfigSchema() const override { return ExecConfigSchema(); }
  absl::StatusOr<boost::json::object> Apply(const DeployRequest& request,
                                            RunContext& context) override;
  absl::Status Destroy(const DeployRequest& request, RunContext& context) override;
  // OK when spec.exec.actions lists both stop and start; else why not, naming the field.
  absl::Status CanStop(const boost::json::object& config) const override;
  absl::Status Stop(const DeployRequest& request, RunContext& context) override;
  absl::StatusOr<boost::json::object> Start(const DeployRequest& request,
                                            RunContext& context) override;
  bool Recover(const boost::json::object& state) override;

 private:
  absl::StatusOr<boost::json::object> Run(const DeployRequest& request, RunContext& context);

  // Constant after construction.
  const Sandbox sandbox_;
  ProcessLauncher& launcher_;
};

}  // namespace gantry::drivers::exec
