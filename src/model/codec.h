// JSON codec for API objects: turns untrusted request bytes into a JSON object and checks it
// against the kind's schema (model/schema.h). Never asserts; every defect is a Status.
//
// Thread-safety: free functions, no state.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gantry::model {

// Maximum nesting depth accepted in a body; deeper input is refused, not recursed into.
inline constexpr int kMaxJsonDepth = 64;

// Parses `body` as one JSON object. Errors (INVALID_ARGUMENT / 400 BadRequest): empty body,
// malformed JSON (message names line/offset), a value that is not an object, invalid UTF-8,
// nesting deeper than kMaxJsonDepth.
absl::StatusOr<boost::json::object> ParseObjectJson(std::string_view body);

// Parses `body` as one JSON value of any type, with the same limits and errors as
// ParseObjectJson (a JSON Patch body is a list).
absl::StatusOr<boost::json::value> ParseJsonValue(std::string_view body);

// Parses an object the store kept. Never fails on the UTF-8 of its bytes: an object stored
// before every write was checked (common/utf8.h) comes back with U+FFFD in place of invalid
// sequences, so it can still be read, listed and deleted. INTERNAL for text that is not JSON.
// A JSON number (int64, uint64 or double) as a double; nullopt for anything else and for a
// double that is not finite.
std::optional<double> AsNumber(const boost::json::value& v);

absl::StatusOr<boost::json::object> ParseStoredObject(std::string_view text,
                                                      boost::json::storage_ptr storage = {});

// Serialises compactly.
std::string ToJson(const boost::json::value& v);

// RFC 7386 JSON merge patch: applies `patch` to `target` in place (null deletes a key,
// objects merge recursively, anything else replaces).
void ApplyMergePatch(boost::json::value& target, const boost::json::value& patch);

// Looks up a dotted path ("spec.profileRef.name") in `obj`; nullptr when absent.
const boost::json::value* FindPath(const boost::json::object& obj, std::string_view dotted);
// The string at `dotted`, or `fallback` when absent or not a string.
std::string GetString(const boost::json::object& obj, std::string_view dotted,
                      std::string_view fallback = "");
// The integer at `dotted`, or `fallback`.
int64_t GetInt(const boost::json::object& obj, std::string_view dotted, int64_t fallback = 0);
// True when the value at `dotted` is present and the boolean true.
bool GetBool(const boost::json::object& obj, std::string_view dotted);
// metadata.labels as a map (non-string values skipped), for label selectors.
std::map<std::string, std::string> LabelsOf(const boost::json::object& obj);
// The object at `dotted`, creating empty objects along the way (replacing non-objects).
boost::json::object& EnsureObject(boost::json::object& obj, std::string_view dotted);

}  // namespace gantry::model
