// `gantry approve NAME [-m MESSAGE]` and `gantry reject NAME [-m MESSAGE]`: the answers to a
// compute instance's pending approval request (API.md "Notifications and approvals";
// docs/approvals.md). They POST …/approve or …/reject with {"message": …} and print
//   computeinstance/train approved (deploy of 8 GPUs requested by alice); deploy run train-1 queued
//   computeinstance/train rejected: deploy of 8 GPUs requested by alice was rejected by pam: …
// Exit 0, or 1 with the server's words (403: who may answer; 409: nothing pending).
//
// PrintApproval is what deploy, start and cancel print when the answer is about a request
// rather than a run: "computeinstance/train deploy waits for approval: …".
//
// Thread-safety: free functions; all I/O goes through the CommandContext.
#pragma once

#include <boost/json/object.hpp>
#include <string>

#include "cli/context.h"

namespace gantry::cli {

struct AnswerOptions {
  std::string verb;  // "approve" or "reject"
  std::string name;  // a compute instance
  std::string message;
};
int RunAnswer(CommandContext& ctx, const AnswerOptions& options);

// When `instance` (the answer to POST …/ACTION) waits for approval, or its request was just
// withdrawn, prints that for `object` ("computeinstance/NAME") and returns true.
bool PrintApproval(CommandContext& ctx, const std::string& object, const std::string& action,
                   const boost::json::object& instance);

}  // namespace gantry::cli
