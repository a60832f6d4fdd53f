#include "api/query_params.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "common/errors.h"

namespace gantry::api {
namespace {

const std::string* Find(const Query& q, const std::string& key) {
  auto it = q.find(key);
  return it == q.end() ? nullptr : &it->second;
}

bool IsDecimal(const std::string& s) {
  return !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
}

FieldCause Forbidden(const std::string& field, const std::string& message) {
  return {field, "Forbidden: " + message, "FieldValueForbidden"};
}

FieldCause NotSupported(const std::string& field, const std::string& value,
                        const std::string& supported) {
  return {field,
          "Unsupported value: \"" + value.substr(0, 64) + "\": supported values: " + supported,
          "FieldValueNotSupported"};
}

// ValidateListOptions' rules for a list, in its words.
void CheckListCombination(const Query& q, const std::string& match, std::vector<FieldCause>& out) {
  const std::string* rv = Find(q, "resourceVersion");
  const std::string* cont = Find(q, "continue");
  if (!match.empty()) {
    if (!rv || rv->empty())
      out.push_back(Forbidden("resourceVersionMatch",
                              "resourceVersionMatch is forbidden unless resourceVersion is "
                              "provided"));
    if (cont && !cont->empty())
      out.push_back(Forbidden("resourceVersionMatch",
                              "resourceVersionMatch is forbidden when continue is provided"));
    if (match != "Exact" && match != "NotOlderThan")
      out.push_back(
          NotSupported("resourceVersionMatch", match, "\"Exact\", \"NotOlderThan\", \"\""));
    if (match == "Exact" && rv && *rv == "0")
      out.push_back(Forbidden("resourceVersionMatch",
                              "resourceVersionMatch \"exact\" is forbidden for resourceVersion "
                              "\"0\""));
  }
  if (Find(q, "sendInitialEvents"))
    out.push_back(Forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
}

// The same for a watch (validateWatchOptions).
void CheckWatchCombination(const Query& q, const std::string& match, std::vector<FieldCause>& out) {
  const bool initial = Find(q, "sendInitialEvents") != nullptr;
  if (initial) {
    if (match != "NotOlderThan")
      out.push_back(Forbidden("resourceVersionMatch",
                              "sendInitialEvents requires setting resourceVersionMatch to "
                              "NotOlderThan"));
    if (QueryBool(q, "sendInitialEvents") && !QueryBool(q, "allowWatchBookmarks"))
      out.push_back(Forbidden("allowWatchBookmarks",
                              "sendInitialEvents requires setting allowWatchBookmarks to true"));
  }
  if (!match.empty()) {
    if (!initial)
      out.push_back(Forbidden("resourceVersionMatch",
                              "resourceVersionMatch is forbidden for watch unless "
                              "sendInitialEvents is provided"));
    if (match != "NotOlderThan")
      out.push_back(NotSupported("resourceVersionMatch", match, "\"NotOlderThan\""));
  }
}

}  // namespace

bool QueryBool(const Query& q, const std::string& key) {
  const std::string* v = Find(q, key);
  if (!v) return false;
  return !(*v == "0" || absl::AsciiStrToLower(*v) == "false");
}

absl::StatusOr<int64_t> QueryNonNegative(const Query& q, const std::string& key) {
  const std::string* v = Find(q, key);
  if (!v || v->empty()) return 0;
  if (!IsDecimal(*v))
    return BadRequestError(key + " must be a non-negative integer, not \"" + v->substr(0, 64) +
                           "\"");
  return std::stoll(*v);
}

absl::StatusOr<VersionOptions> ParseVersionOptions(const Query& q, bool watch) {
  VersionOptions out;
  if (const std::string* rv = Find(q, "resourceVersion"); rv && !rv->empty()) {
    if (!IsDecimal(*rv))
      return BadRequestError("resourceVersion \"" + rv->substr(0, 64) + "\" is not valid");
    out.resource_version = std::stoll(*rv);
  }
  const std::string* match = Find(q, "resourceVersionMatch");
  std::string m = match ? *match : "";
  std::vector<FieldCause> causes;
  if (watch)
    CheckWatchCombination(q, m, causes);
  else
    CheckListCombination(q, m, causes);
  if (!causes.empty()) return InvalidError("ListOptions.meta.k8s.io", "", std::move(causes));
  if (m == "Exact") out.match = VersionOptions::Match::kExact;
  if (m == "NotOlderThan") out.match = VersionOptions::Match::kNotOlderThan;
  if (Find(q, "sendInitialEvents")) out.send_initial_events = QueryBool(q, "sendInitialEvents");
  out.allow_bookmarks = QueryBool(q, "allowWatchBookmarks");
  return out;
}

absl::Status CheckListVersion(const VersionOptions& want, int64_t current) {
  if (!want.resource_version || *want.resource_version == 0) return absl::OkStatus();
  const int64_t rv = *want.resource_version;
  if (rv > current)
    // Kubernetes waits for its cache and then answers 504; gantryd answers no input with a
    // 5xx (API.md), and a 410 makes clients do what helps here: list again from scratch.
    return ExpiredError("Too large resource version: " + std::to_string(rv) + ", current: " +
                        std::to_string(current) + ": list again without resourceVersion");
  if (want.match == VersionOptions::Match::kExact && rv != current)
    return ExpiredError("too old resource version: " + std::to_string(rv) + " (" +
                        std::to_string(current) +
                        "): gantryd lists only the current state; "
                        "list again without resourceVersionMatch=Exact");
  return absl::OkStatus();
}

}  // namespace gantry::api
