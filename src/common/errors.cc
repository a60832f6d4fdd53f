#include "common/errors.h"

#include <optional>

#include "absl/strings/cord.h"

namespace gantry {
namespace {

constexpr char kReasonUrl[] = "gantry.dev/reason";
constexpr char kCausesUrl[] = "gantry.dev/causes";
constexpr char kHttpUrl[] = "gantry.dev/http";
constexpr char kDetailKindUrl[] = "gantry.dev/kind";
constexpr char kDetailNameUrl[] = "gantry.dev/name";

// Debian's Abseil has its own string_view type (not std::string_view): convert explicitly.
absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

absl::Status WithReason(absl::Status s, std::string_view reason, int http = 0) {
  s.SetPayload(kReasonUrl, absl::Cord(Sv(reason)));
  if (http != 0) s.SetPayload(kHttpUrl, absl::Cord(std::to_string(http)));
  return s;
}

std::optional<std::string> Payload(const absl::Status& s, std::string_view url) {
  auto p = s.GetPayload(Sv(url));
  if (!p) return std::nullopt;
  return std::string(*p);
}

// Causes are stored as records separated by \x1e, fields by \x1f: no escaping needed since
// neither byte can appear in a JSON path or in the messages we write.
std::string EncodeCauses(const std::vector<FieldCause>& causes) {
  std::string out;
  for (const auto& c : causes) {
    if (!out.empty()) out += '\x1e';
    out += c.field + '\x1f' + c.message + '\x1f' + c.type;
  }
  return out;
}

}  // namespace

absl::Status BadRequestError(std::string_view message) {
  return WithReason(absl::InvalidArgumentError(Sv(message)), "BadRequest", 400);
}

absl::Status InvalidError(std::string_view kind, std::string_view name,
                          std::vector<FieldCause> causes) {
  std::string msg = std::string(kind) + " \"" + std::string(name) + "\" is invalid: ";
  for (size_t i = 0; i < causes.size(); ++i) {
    if (i) msg += ", ";
    msg += causes[i].field.empty() ? causes[i].message : causes[i].field + ": " + causes[i].message;
  }
  absl::Status s = WithReason(absl::InvalidArgumentError(msg), "Invalid", 422);
  s.SetPayload(kCausesUrl, absl::Cord(EncodeCauses(causes)));
  s.SetPayload(kDetailKindUrl, absl::Cord(Sv(kind)));
  s.SetPayload(kDetailNameUrl, absl::Cord(Sv(name)));
  return s;
}

absl::Status NotFoundError(std::string_view message) {
  return WithReason(absl::NotFoundError(Sv(message)), "NotFound", 404);
}
absl::Status AlreadyExistsError(std::string_view message) {
  return WithReason(absl::AlreadyExistsError(Sv(message)), "AlreadyExists", 409);
}
absl::Status VersionConflictError(std::string_view message) {
  return WithReason(absl::AbortedError(Sv(message)), "Conflict", 409);
}
absl::Status ConflictError(std::string_view message, std::string_view reason) {
  return WithReason(absl::FailedPreconditionError(Sv(message)), reason, 409);
}
absl::Status ApplyConflictError(std::string_view message, std::vector<FieldCause> causes) {
  absl::Status s = ConflictError(message);
  s.SetPayload(kCausesUrl, absl::Cord(EncodeCauses(causes)));
  return s;
}
absl::Status UnprocessableError(std::string_view message) {
  return WithReason(absl::InvalidArgumentError(Sv(message)), "Invalid", 422);
}
absl::Status TooLargeError(std::string_view message) {
  return WithReason(absl::ResourceExhaustedError(Sv(message)), "RequestEntityTooLarge", 413);
}
absl::Status ExpiredError(std::string_view message) {
  return WithReason(absl::OutOfRangeError(Sv(message)), "Expired", 410);
}
absl::Status MethodNotAllowedError(std::string_view message) {
  return WithReason(absl::UnimplementedError(Sv(message)), "MethodNotAllowed", 405);
}
absl::Status UnsupportedMediaTypeError(std::string_view message) {
  return WithReason(absl::InvalidArgumentError(Sv(message)), "UnsupportedMediaType", 415);
}

absl::Status UnauthorizedError(std::string_view message) {
  return WithReason(absl::UnauthenticatedError(Sv(message)), "Unauthorized", 401);
}

absl::Status ForbiddenError(std::string_view message) {
  return WithReason(absl::PermissionDeniedError(Sv(message)), "Forbidden", 403);
}

absl::Status TooManyRequestsError(std::string_view message) {
  return WithReason(absl::ResourceExhaustedError(Sv(message)), "TooManyRequests", 429);
}

std::string ReasonOf(const absl::Status& status) {
  if (auto r = Payload(status, kReasonUrl)) return *r;
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return "";
    case absl::StatusCode::kInvalidArgument:
      return "BadRequest";
    case absl::StatusCode::kNotFound:
      return "NotFound";
    case absl::StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kFailedPrecondition:
      return "Conflict";
    case absl::StatusCode::kPermissionDenied:
      return "Forbidden";
    case absl::StatusCode::kUnauthenticated:
      return "Unauthorized";
    case absl::StatusCode::kResourceExhausted:
      return "TooManyRequests";
    case absl::StatusCode::kOutOfRange:
      return "Expired";
    case absl::StatusCode::kUnimplemented:
      return "MethodNotAllowed";
    case absl::StatusCode::kUnavailable:
      return "ServiceUnavailable";
    case absl::StatusCode::kDeadlineExceeded:
      return "Timeout";
    default:
      return "InternalError";
  }
}

int HttpCodeOf(const absl::Status& status) {
  if (auto h = Payload(status, kHttpUrl)) return std::stoi(*h);
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kFailedPrecondition:
      return 409;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kOutOfRange:
      return 410;
    case absl::StatusCode::kUnimplemented:
      return 405;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

std::vector<FieldCause> CausesOf(const absl::Status& status) {
  std::vector<FieldCause> out;
  auto p = Payload(status, kCausesUrl);
  if (!p || p->empty()) return out;
  size_t start = 0;
  while (start <= p->size()) {
    size_t end = p->find('\x1e', start);
    if (end == std::string::npos) end = p->size();
    std::string rec = p->substr(start, end - start);
    FieldCause c;
    size_t a = rec.find('\x1f');
    size_t b = a == std::string::npos ? std::string::npos : rec.find('\x1f', a + 1);
    c.field = rec.substr(0, a);
    if (a != std::string::npos)
      c.message = rec.substr(a + 1, b == std::string::npos ? b : b - a - 1);
    if (b != std::string::npos) c.type = rec.substr(b + 1);
    out.push_back(std::move(c));
    start = end + 1;
  }
  return out;
}

std::string DetailKindOf(const absl::Status& status) {
  return Payload(status, kDetailKindUrl).value_or("");
}
std::string DetailNameOf(const absl::Status& status) {
  return Payload(status, kDetailNameUrl).value_or("");
}

}  // namespace gantry
