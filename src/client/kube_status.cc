#include "client/kube_status.h"

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/absl_compat.h"
#include "common/errors.h"

namespace gantry::client {
namespace {

namespace json = boost::json;

std::string StringAt(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return "";
  return std::string(v->get_string());
}

// A status with the right canonical code and gantry payloads (reason, HTTP code, causes)
// for `http_code`; its message is replaced afterwards by the server's.
absl::Status Template(int http_code, const std::string& reason, const std::string& kind,
                      const std::string& name, std::vector<FieldCause> causes) {
  switch (http_code) {
    case 400:
      return BadRequestError("");
    case 401:
      return absl::UnauthenticatedError("");
    case 403:
      return absl::PermissionDeniedError("");
    case 404:
      return NotFoundError("");
    case 405:
      return MethodNotAllowedError("");
    case 409:
      if (reason == "AlreadyExists") return AlreadyExistsError("");
      return ConflictError("", reason.empty() ? "Conflict" : reason);
    case 410:
      return ExpiredError("");
    case 413:
      return TooLargeError("");
    case 415:
      return UnsupportedMediaTypeError("");
    case 422:
      return InvalidError(kind, name, std::move(causes));
    case 429:
      return absl::ResourceExhaustedError("");
    case 503:
      return absl::UnavailableError("");
    case 504:
      return absl::DeadlineExceededError("");
    default:
      break;
  }
  if (http_code >= 500) return absl::InternalError("");
  if (http_code >= 400) return absl::InvalidArgumentError("");
  return absl::UnknownError("");
}

}  // namespace

absl::Status StatusFromBody(int http_code, std::string_view body) {
  if (http_code >= 200 && http_code < 300) return absl::OkStatus();
  std::string message, reason, kind, name;
  std::vector<FieldCause> causes;
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (!ec && v.is_object() && StringAt(v.get_object(), "kind") == "Status") {
    const json::object& o = v.get_object();
    message = StringAt(o, "message");
    reason = StringAt(o, "reason");
    if (const json::value* d = o.if_contains("details"); d && d->is_object()) {
      kind = StringAt(d->get_object(), "kind");
      name = StringAt(d->get_object(), "name");
      if (const json::value* cs = d->get_object().if_contains("causes"); cs && cs->is_array()) {
        for (const json::value& c : cs->get_array()) {
          if (!c.is_object()) continue;
          FieldCause fc{StringAt(c.get_object(), "field"), StringAt(c.get_object(), "message")};
          if (std::string t = StringAt(c.get_object(), "reason"); !t.empty()) fc.type = t;
          causes.push_back(std::move(fc));
        }
      }
    }
  }
  if (message.empty()) {
    std::string snippet(absl::StripAsciiWhitespace(Sv(body.substr(0, 200))));
    message = snippet.empty()
                  ? absl::StrCat("the server answered HTTP ", http_code, " without a message")
                  : absl::StrCat("the server answered HTTP ", http_code, ": ", snippet);
  }
  absl::Status tmpl = Template(http_code, reason, kind, name, std::move(causes));
  absl::Status out(tmpl.code(), message);
  tmpl.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

absl::Status StatusFromResponse(const HttpResponse& response) {
  return StatusFromBody(response.status, response.body);
}

}  // namespace gantry::client
