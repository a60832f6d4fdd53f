// The one place an absl::Status becomes an HTTP answer: a Kubernetes `Status` object
// (kind Status, apiVersion v1, status Failure, message, reason, code, details.causes).
#pragma once

#include "absl/status/status.h"
#include "api/http_types.h"

namespace gantry::api {

Response ErrorResponse(const absl::Status& status);

// A 200 Status{status: Success} body, used where Kubernetes answers one.
Response SuccessStatus(std::string_view message);

}  // namespace gantry::api
