// JSON codec for API objects: turns untrusted request bytes into a JSON object and checks it
// against the kind's schema (model/schema.h). Never asserts; every defect is a Status.
//
// Thread-safety: free functions, no state.
#pragma once

#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "absl/status/statusor.h"

namespace gantry::model {

// Maximum nesting depth accepted in a body; deeper input is refused, not recursed into.
inline constexpr int kMaxJsonDepth = 64;

// Parses `body` as one JSON object. Errors (INVALID_ARGUMENT / 400 BadRequest): empty body,
// malformed JSON (message names line/offset), a value that is not an object, invalid UTF-8,
// nesting deeper than kMaxJsonDepth, duplicate keys.
absl::StatusOr<boost::json::object> ParseObjectJson(std::string_view body);

// Serialises compactly.
std::string ToJson(const boost::json::value& v);

}  // namespace gantry::model
