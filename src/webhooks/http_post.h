// HttpPost: one POST to a webhook receiver with a deadline, and the signature it carries.
// Beast stays inside http_post.cc. Plain http:// only for now: an https:// receiver fails
// the attempt with a message saying so (docs/webhooks.md, "Not yet").
//
// Before connecting, the receiver's host is resolved and, unless AllowPrivate(), refused when
// any address is loopback, link-local or private (webhook_spec.h): the check a URL with a
// public-looking name would otherwise get around.
//
// Thread-safety: free functions; each call uses its own io_context and socket.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "webhooks/webhook_spec.h"

namespace gantry::webhooks {

// "sha256=" + lower-case hex HMAC-SHA256 of `body` keyed with `secret`.
std::string Signature(std::string_view secret, std::string_view body);

// POSTs `body` and returns the HTTP status; UNAVAILABLE (refused, reset, private address) or
// DEADLINE_EXCEEDED (no complete answer within `timeout`) otherwise.
absl::StatusOr<int> HttpPost(const Receiver& to, std::string_view body,
                             const std::map<std::string, std::string>& headers,
                             std::chrono::milliseconds timeout);

}  // namespace gantry::webhooks
