// Webhook rules shared by the API (saving a Webhook or ClusterWebhook) and the delivery
// worker (sending to one): which receivers are acceptable, where the secret is sealed, and
// which events exist. API.md "Notifications and approvals"; docs/webhooks.md.
//
// A receiver on a loopback, link-local, private (RFC 1918, fc00::/7) or unspecified address
// is refused unless gantryd runs with --webhook-allow-private: otherwise a project admin
// could make gantryd probe internal services. The check is made twice: on save for an IP
// literal or "localhost" in the URL (422), and on every send for the addresses the host name
// resolves to (a name that later points inside fails that delivery attempt).
//
// Thread-safety: free functions; SetAllowPrivate is called once at start-up, before serving,
// and AllowPrivate may then be read from any thread.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/errors.h"

namespace gantry::webhooks {

inline constexpr char kWebhookKind[] = "Webhook";
inline constexpr char kClusterWebhookKind[] = "ClusterWebhook";
inline constexpr char kDeliveryKind[] = "WebhookDelivery";

// The event names a webhook may subscribe to (the schema's enum of spec.events).
const std::vector<std::string>& EventNames();

// gantryd --webhook-allow-private.
void SetAllowPrivate(bool allow);
bool AllowPrivate();

// True for loopback, link-local, private, unique-local, unspecified and multicast addresses
// (`ip` as text: "127.0.0.1", "::1"); false for public ones and for text that is no address.
bool IsPrivateAddress(std::string_view ip);

// A parsed receiver URL.
struct Receiver {
  bool tls = false;
  std::string host;    // without brackets
  std::string port;    // "80"/"443" when absent
  std::string target;  // path and query, "/" when empty
};
// The receiver of `url`, or INVALID_ARGUMENT saying what is wrong with it (not http(s),
// credentials in it, no host, a fragment).
absl::StatusOr<Receiver> ParseReceiver(std::string_view url);

// The rules of spec beyond the schema's types: the URL (ParseReceiver, and a private IP
// literal or localhost without AllowPrivate), at least one event, each named once.
// Appends one cause per problem (fields "spec.url", "spec.events[i]").
void ValidateWebhookSpec(const boost::json::object& spec, std::vector<FieldCause>* causes);

// The SecretBox context of a webhook's spec.secret: kind, project ("" for a ClusterWebhook)
// and name, so that the ciphertext is useless in another object.
std::string SecretContext(std::string_view kind, std::string_view ns, std::string_view name);

}  // namespace gantry::webhooks
