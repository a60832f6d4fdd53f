// Manifest formats for the CLI: YAML or JSON text in, JSON objects out; JSON back to YAML or
// indented JSON for `-o yaml` / `-o json`.
//
// YAML plain scalars are typed by the YAML 1.2 core schema (true/false, integers, floats,
// null/~/empty); quoted scalars always stay strings, so `nodes: "12"` is the string "12" and
// `nodes: 12` the integer 12. The text is untrusted: every defect is a Status, never a crash.
//
// Thread-safety: free functions, no state.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gantry::client {

// Nesting deeper than this is refused (deep input must not exhaust the stack).
inline constexpr int kMaxDocumentDepth = 64;

// Parses one or more documents ("---"-separated YAML, or one JSON value). Empty documents are
// skipped. A document of kind `...List` with `items` (a Kubernetes List) contributes its items;
// a JSON array of objects contributes its elements.
// Errors (INVALID_ARGUMENT): syntax errors ("line 3, column 7: ..."; 1-based), a document that
// is not a mapping ("document 2 (line 5): expected a mapping (an API object), got a sequence"),
// non-scalar or duplicate mapping keys, nesting deeper than kMaxDocumentDepth, text that is
// not valid UTF-8.
absl::StatusOr<std::vector<boost::json::object>> YamlToJsonObjects(std::string_view text);

// Block-style YAML ("key: value", two-space indent, sequences as "- "), ending in "\n".
// Strings that a YAML reader would take for something else ("true", "123", "", "a: b",
// leading/trailing spaces, ...) are double-quoted, so YamlToJsonObjects(JsonToYaml(v)) gives v
// back. Multi-line strings use literal blocks ("|" / "|-") where that is exact.
std::string JsonToYaml(const boost::json::value& value);

// Indented JSON (`indent` spaces per level) ending in "\n", as `kubectl -o json` prints it.
std::string PrettyJson(const boost::json::value& value, int indent = 4);

// True when `s` would be read back from a plain (unquoted) YAML scalar as something other than
// the same string. Exposed for tests.
bool YamlNeedsQuotes(std::string_view s);

}  // namespace gantry::client
