// UTF-8 checks for what reaches storage: every stored string must be valid UTF-8 (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF), because JSON readers (ours,
// kubectl's, browsers') refuse anything else, and an object they cannot read cannot be
// deleted either.
//
// Thread-safety: free functions, no state.
#pragma once

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace gantry {

bool IsValidUtf8(std::string_view s);

// The length (1 to 4) of the valid UTF-8 sequence that starts at s[i], or 0 when none does.
// Precondition: i < s.size().
size_t Utf8SequenceLength(std::string_view s, size_t i);

// `s` with each invalid sequence replaced by U+FFFD (the replacement character).
std::string ScrubUtf8(std::string_view s);

// The JSON path ("metadata.managedFields[0].manager") of the first key or string of `v`
// that is not valid UTF-8, or nullopt when all are.
std::optional<std::string> FindInvalidUtf8(const boost::json::value& v,
                                           const std::string& path = "");

std::optional<std::string> FindInvalidUtf8(const boost::json::object& o,
                                           const std::string& path = "");

// Replaces invalid sequences in every key and string of `v`, in place.
void ScrubUtf8(boost::json::value& v);

}  // namespace gantry
