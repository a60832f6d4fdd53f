// `gantry deploy|destroy|stop|start|cancel|upgrade [KIND/]NAME` and `gantry logs [KIND/]NAME
// [-f]`: the
// lifecycle actions of a ComputeInstance or (si/NAME) a ServiceInstance (API.md's lifecycle
// table) and the logs of their runs. `destroy --cascade` destroys a compute instance's
// service instances first (POST …/destroy?cascade=true).
//
// deploy, destroy, stop and start POST the action (202: the instance, Waiting, with
// status.lastRunRef naming the queued run) and print "computeinstance/NAME deploy queued (run
// NAME-3)". With
// --wait they then watch the instance (GET …?watch=true&fieldSelector=metadata.name=NAME,
// resumed from the last resourceVersion seen when the stream drops or the server ends it;
// a fresh watch when the server says that resourceVersion expired) and print each phase as
// it changes ("Waiting", "In Progress", "Success") until the run ends. Exit status: 0 when
// the deploy or start ended Success / the destroy ended Not Deployed / the stop ended
// Stopped, 1 when it failed (reason and
// message printed), was canceled, or the wait timed out. A refusal (409 …) is printed as the
// server worded it and exits 1.
//
// Waiting never busy-polls: it blocks in the watch stream, whose server-side timeoutSeconds is
// the time left before --timeout. Only a broken connection is retried after a pause (backoff
// 250 ms doubling to 5 s; kMaxReconnects in a row without progress gives up).
//
// Thread-safety: free functions; all I/O goes through the CommandContext.
#pragma once

#include <string>

#include "absl/time/time.h"
#include "cli/context.h"

namespace gantry::cli {

// Consecutive failed (re)connections a wait or a follow tolerates before it gives up.
inline constexpr int kMaxReconnects = 8;

// NAME is a compute instance; KIND/NAME names the kind: ci/NAME or si/NAME (a service
// instance; any alias of either kind works).
struct ActionOptions {
  std::string action;    // "deploy", "destroy", "stop", "start", "cancel"
  std::string name;      // NAME or KIND/NAME
  bool cascade = false;  // destroy of a compute instance: ?cascade=true (its services first)
  bool wait = false;
  std::string timeout;  // "" (none), "90s", "5m", "1h30m", or plain seconds "120"
};
int RunAction(CommandContext& ctx, const ActionOptions& options);

struct UpgradeOptions {
  std::string name;
};
// POST …/upgrade; prints "computeinstance/NAME upgraded to profile revision 5 (was 4)" or
// "computeinstance/NAME is already at profile revision 4".
int RunUpgrade(CommandContext& ctx, const UpgradeOptions& options);

struct LogsOptions {
  std::string name;  // a run, or an instance (then its status.lastRunRef)
  bool follow = false;
};
// Prints the run's log. With follow, streams new lines until the run ends (reconnecting on a
// dropped stream without repeating lines already printed).
int RunLogsCommand(CommandContext& ctx, const LogsOptions& options);

// "90s", "5m", "1h30m" (Go/absl syntax) or a plain number of seconds; > 0.
// INVALID_ARGUMENT otherwise.
absl::StatusOr<absl::Duration> ParseTimeout(const std::string& text);

}  // namespace gantry::cli
