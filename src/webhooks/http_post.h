// HttpPost: one POST to a webhook receiver with a deadline, and the signature it carries.
// Beast stays inside http_post.cc. An https:// receiver (TLS 1.2 or later) must present a
// certificate that chains to the CAs of SetReceiverTrust (--webhook-ca-file; the system's by
// default) and names the URL's host; else the attempt fails saying why.
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

// The certificate authorities https:// receivers must chain to: the PEM file `ca_file`, or
// the system's when it is empty. Call once at start-up, before any HttpPost (without a call:
// the system's). INVALID_ARGUMENT naming the file when it cannot be loaded.
absl::Status SetReceiverTrust(const std::string& ca_file);

// "sha256=" + lower-case hex HMAC-SHA256 of `body` keyed with `secret`.
std::string Signature(std::string_view secret, std::string_view body);

// POSTs `body` and returns the HTTP status; UNAVAILABLE (refused, reset, private address, a
// TLS handshake or certificate that fails) or DEADLINE_EXCEEDED (no complete answer within
// `timeout`: connecting, the handshake, the request and the answer together) otherwise.
absl::StatusOr<int> HttpPost(const Receiver& to, std::string_view body,
                             const std::map<std::string, std::string>& headers,
                             std::chrono::milliseconds timeout);

}  // namespace gantry::webhooks
