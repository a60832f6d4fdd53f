// Turning gantryd's error answers (Kubernetes `Status` bodies) back into absl::Status.
//
// The result carries the server's message verbatim and, through common/errors.h, its reason,
// HTTP code and field causes: ReasonOf / HttpCodeOf / CausesOf give back what the server said.
//
// Thread-safety: free functions, no state.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "client/http_client.h"

namespace gantry::client {

// `http_code` is the HTTP status; `body` should be a Status object:
//   {"kind":"Status","code":409,"reason":"Conflict","message":"...",
//    "details":{"name":"x","kind":"computeinstances","causes":[{"field":"...","message":"..."}]}}
// A body that is not a Status (a proxy's HTML page, empty) still gives an error whose message
// names the HTTP code and the start of the body. Returns OK for 2xx codes.
absl::Status StatusFromBody(int http_code, std::string_view body);
absl::Status StatusFromResponse(const HttpResponse& response);

}  // namespace gantry::client
