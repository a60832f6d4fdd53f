// Errors as product output.
//
// Every refusal in Gantry is an absl::Status whose canonical code picks the retry policy
// (STYLE.md #3) and whose payload carries what the Kubernetes `Status` body needs: the
// CamelCase `reason` (AlreadyExists, Conflict, Invalid, ...) and, for 422, the field causes.
// The API edge turns a Status into an HTTP answer in exactly one function (api/status_http).
//
// Thread-safety: free functions, no state.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace gantry {

// One entry of a Kubernetes Status `details.causes`.
struct FieldCause {
  std::string field;    // JSON path as Kubernetes writes it: "spec.variables[0].name"
  std::string message;  // what is wrong, for a person
  std::string type = "FieldValueInvalid";  // FieldValueRequired, FieldValueNotSupported, ...
};

// 400: the request itself cannot be understood (malformed JSON, bad query parameter).
absl::Status BadRequestError(std::string_view message);
// 422: well-formed, but fields are invalid. `kind`/`name` name the object for the message.
absl::Status InvalidError(std::string_view kind, std::string_view name,
                          std::vector<FieldCause> causes);
// 404 NotFound.
absl::Status NotFoundError(std::string_view message);
// 409 AlreadyExists.
absl::Status AlreadyExistsError(std::string_view message);
// 409 Conflict with a reason (Conflict by default; lifecycle refusals use their own).
// 409 Conflict, ABORTED: a test-and-set lost (a resourceVersion precondition, a concurrent
// writer). The caller should retry higher up (read again, decide again); retry loops test
// absl::IsAborted, never the reason string.
absl::Status VersionConflictError(std::string_view message);
absl::Status ConflictError(std::string_view message, std::string_view reason = "Conflict");
// 409 Conflict carrying causes: a server-side apply that would change fields other managers
// own (one cause per field, type FieldManagerConflict).
absl::Status ApplyConflictError(std::string_view message, std::vector<FieldCause> causes);
// 422 Invalid without field causes or details: a request that is well-formed but cannot be
// carried out (a JSON patch operation that fails).
absl::Status UnprocessableError(std::string_view message);
// 413 RequestEntityTooLarge.
absl::Status TooLargeError(std::string_view message);
// 410 Expired: a watch or continue token refers to history that is gone.
absl::Status ExpiredError(std::string_view message);
// 405 MethodNotAllowed.
absl::Status MethodNotAllowedError(std::string_view message);
// 415 UnsupportedMediaType.
absl::Status UnsupportedMediaTypeError(std::string_view message);
// 401 Unauthorized: no credentials, or credentials that are wrong, expired or revoked.
absl::Status UnauthorizedError(std::string_view message);
// 403 Forbidden: the caller is known but may not do this; the message names the permission.
absl::Status ForbiddenError(std::string_view message);
// 429 TooManyRequests (login attempts).
absl::Status TooManyRequestsError(std::string_view message);

// The Kubernetes reason of `status` ("NotFound", "Invalid", ...), derived from the code when
// no explicit reason was attached.
std::string ReasonOf(const absl::Status& status);
// HTTP code Kubernetes would use for `status`.
int HttpCodeOf(const absl::Status& status);
// The causes attached by InvalidError, empty otherwise.
std::vector<FieldCause> CausesOf(const absl::Status& status);
// The `details.kind`/`details.name` attached by InvalidError ("" when absent).
std::string DetailKindOf(const absl::Status& status);
std::string DetailNameOf(const absl::Status& status);

}  // namespace gantry
