#include "cli/approve.h"

#include <boost/json.hpp>
#include <ostream>

#include "cli/kinds.h"
#include "cli/table.h"
#include "client/kube_status.h"

namespace gantry::cli {

namespace json = boost::json;

bool PrintApproval(CommandContext& ctx, const std::string& object, const std::string& action,
                   const json::object& instance) {
  const std::string reason = FieldText(instance, "status.reason");
  const std::string state = FieldText(instance, "status.approval.state");
  if (reason == "PendingApproval" && state == "Pending") {
    *ctx.out << object << " " << action
             << " waits for approval: " << FieldText(instance, "status.message") << "\n";
    return true;
  }
  if (action == "cancel" && state == "Withdrawn" && reason == "Canceled") {
    *ctx.out << object << " approval request withdrawn: " << FieldText(instance, "status.message")
             << "\n";
    return true;
  }
  return false;
}

int RunAnswer(CommandContext& ctx, const AnswerOptions& options) {
  const std::string path =
      ObjectPath(KindFromObjectKind("ComputeInstance"), ctx.settings.project, options.name) + "/" +
      options.verb;
  json::object body;
  if (!options.message.empty()) body["message"] = options.message;
  auto res = ctx.api->Send("POST", path, json::serialize(body));
  if (!res.ok()) {
    PrintError(ctx, res.status());
    return kExitError;
  }
  if (absl::Status s = client::StatusFromResponse(*res); !s.ok()) {
    PrintError(ctx, s);
    return kExitError;
  }
  auto instance = ParseObject(*res);
  if (!instance.ok()) {
    PrintError(ctx, instance.status());
    return kExitError;
  }
  const std::string object = "computeinstance/" + options.name;
  const std::string what = FieldText(*instance, "status.approval.action") + " of " +
                           FieldText(*instance, "status.approval.gpus") + " GPUs requested by " +
                           FieldText(*instance, "status.approval.requestedBy");
  if (options.verb == "approve")
    *ctx.out << object << " approved (" << what << "); "
             << FieldText(*instance, "status.approval.action") << " run "
             << FieldText(*instance, "status.lastRunRef.name") << " queued\n";
  else
    *ctx.out << object << " rejected: " << FieldText(*instance, "status.message") << "\n";
  return kExitOk;
}

}  // namespace gantry::cli
