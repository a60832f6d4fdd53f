#include "webhooks/webhook_spec.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/address.hpp>
#include <boost/url/parse.hpp>
#include <set>

#include "absl/strings/ascii.h"

namespace gantry::webhooks {
namespace {

namespace json = boost::json;
namespace ip = boost::asio::ip;

std::atomic<bool> allow_private{false};

bool PrivateV4(const ip::address_v4& a) {
  const uint32_t v = a.to_uint();
  auto in = [v](uint32_t net, int bits) { return (v >> (32 - bits)) == (net >> (32 - bits)); };
  return a.is_loopback() || a.is_unspecified() || a.is_multicast() || in(0x0A000000, 8) ||
         in(0xAC100000, 12) || in(0xC0A80000, 16) || in(0xA9FE0000, 16) ||  // 169.254/16
         in(0x64400000, 10) || in(0x00000000, 8);                           // CGNAT, 0/8
}

}  // namespace

const std::vector<std::string>& EventNames() {
  static const std::vector<std::string> names = {
      "PhaseChanged", "ExpiresSoon",       "IdleSoon",      "StopScheduled",
      "Preempted",    "ApprovalRequested", "BudgetWarning", "BudgetExceeded"};
  return names;
}

void SetAllowPrivate(bool allow) { allow_private = allow; }
bool AllowPrivate() { return allow_private.load(); }

bool IsPrivateAddress(std::string_view text) {
  boost::system::error_code ec;
  ip::address a = ip::make_address(std::string(text), ec);
  if (ec) return false;
  if (a.is_v4()) return PrivateV4(a.to_v4());
  const ip::address_v6 v6 = a.to_v6();
  if (v6.is_v4_mapped()) return PrivateV4(ip::make_address_v4(ip::v4_mapped, v6));
  const auto bytes = v6.to_bytes();
  return v6.is_loopback() || v6.is_unspecified() || v6.is_link_local() || v6.is_multicast() ||
         (bytes[0] & 0xFE) == 0xFC;  // fc00::/7 unique local
}

absl::StatusOr<Receiver> ParseReceiver(std::string_view url) {
  auto u = boost::urls::parse_absolute_uri(url);
  if (!u) return absl::InvalidArgumentError("must be an absolute http:// or https:// URL");
  std::string scheme = absl::AsciiStrToLower(std::string(u->scheme()));
  if (scheme != "http" && scheme != "https")
    return absl::InvalidArgumentError("must be an http:// or https:// URL, not " + scheme + "://");
  if (u->has_userinfo())
    return absl::InvalidArgumentError(
        "must not carry credentials (user:password@): they would be stored and shown in "
        "plain text; the receiver checks X-Gantry-Signature instead");
  Receiver r;
  r.tls = scheme == "https";
  r.host = std::string(u->encoded_host_address());
  if (r.host.size() > 2 && r.host.front() == '[' && r.host.back() == ']')
    r.host = r.host.substr(1, r.host.size() - 2);
  if (r.host.empty()) return absl::InvalidArgumentError("must name a host");
  r.port = u->has_port() ? std::string(u->port()) : (r.tls ? "443" : "80");
  if (u->has_port() && (u->port_number() == 0))
    return absl::InvalidArgumentError("has an invalid port");
  r.target = std::string(u->encoded_path());
  if (r.target.empty()) r.target = "/";
  if (u->has_query()) r.target += "?" + std::string(u->encoded_query());
  return r;
}

void ValidateWebhookSpec(const json::object& spec, std::vector<FieldCause>* causes) {
  const json::value* url = spec.if_contains("url");
  if (url && url->is_string() && !url->get_string().empty()) {
    auto r = ParseReceiver(url->get_string());
    if (!r.ok()) {
      causes->push_back({"spec.url", std::string(r.status().message())});
    } else if (!AllowPrivate() &&
               (IsPrivateAddress(r->host) || absl::AsciiStrToLower(r->host) == "localhost")) {
      causes->push_back({"spec.url", "is a loopback, link-local or private address (" + r->host +
                                         "): such receivers need gantryd --webhook-allow-private"});
    }
  }
  const json::value* events = spec.if_contains("events");
  if (!events || !events->is_array() || events->get_array().empty()) {
    causes->push_back({"spec.events", "Required value: at least one event", "FieldValueRequired"});
    return;
  }
  std::set<std::string> seen;
  const json::array& arr = events->get_array();
  for (size_t i = 0; i < arr.size(); ++i)
    if (arr[i].is_string() && !seen.insert(std::string(arr[i].get_string())).second)
      causes->push_back({"spec.events[" + std::to_string(i) + "]",
                         "Duplicate value: \"" + std::string(arr[i].get_string()) + "\"",
                         "FieldValueDuplicate"});
}

std::string SecretContext(std::string_view kind, std::string_view ns, std::string_view name) {
  return std::string(kind) + "/" + std::string(ns) + "/" + std::string(name) + "/secret";
}

}  // namespace gantry::webhooks
