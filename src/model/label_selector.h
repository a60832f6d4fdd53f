// Label and field selectors with Kubernetes syntax, and the name/label validation rules of
// Kubernetes (DNS-1123 labels, qualified label keys, label values).
//
// Label selector grammar (apimachinery labels.Parse): comma-separated requirements, all of
// which must hold:  key=value, key==value, key!=value, key in (a,b), key notin (a,b),
// key (exists), !key (does not exist). Whitespace around tokens is ignored.
// Field selector grammar: comma-separated field=value, field==value, field!=value over a fixed
// set of supported field paths.
//
// Thread-safety: values are immutable after parsing; free functions keep no state.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gantry::model {

enum class SelectorOp { kEquals, kNotEquals, kIn, kNotIn, kExists, kDoesNotExist };

struct Requirement {
  std::string key;
  SelectorOp op = SelectorOp::kEquals;
  // One value for kEquals/kNotEquals, one or more for kIn/kNotIn, none for the existence ops.
  std::vector<std::string> values;
};

struct LabelSelector {
  std::vector<Requirement> requirements;  // all must hold; empty selects everything

  bool Empty() const { return requirements.empty(); }
  // True when `labels` satisfies every requirement. kNotEquals/kNotIn hold for a missing key,
  // as in Kubernetes.
  bool Matches(const std::map<std::string, std::string>& labels) const;
};

// Parses `text`. Errors are INVALID_ARGUMENT (BadRequest) with a message that quotes the
// offending part, e.g. `unable to parse requirement: found '=', expected: identifier`
// or `invalid label key "-x": ...`. Keys and values are validated with the functions below.
// Where this differs from Kubernetes (see label_selector.cc): `key in ()` / `key notin ()` are
// refused rather than read as {""}, and the gt/lt operators (`key>1`) are not supported.
// Requirements come back sorted by key, values sorted and de-duplicated, as Kubernetes does.
absl::StatusOr<LabelSelector> ParseLabelSelector(std::string_view text);

struct FieldRequirement {
  std::string field;   // e.g. "status.phase"
  bool equals = true;  // false for !=
  std::string value;
};

// Parses a field selector; a field not in `supported` is refused with
// `field label not supported: <field>` (INVALID_ARGUMENT, as Kubernetes answers 400).
// Values may escape ',', '=' and '\\' with a backslash; terms come back sorted by their text.
absl::StatusOr<std::vector<FieldRequirement>> ParseFieldSelector(
    std::string_view text, const std::vector<std::string>& supported);

// Validation helpers. Each returns std::nullopt when valid, else the message Kubernetes
// uses (e.g. "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or
// '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc')").
std::optional<std::string> Dns1123LabelError(std::string_view name);
std::optional<std::string> LabelKeyError(std::string_view key);      // [prefix/]name
std::optional<std::string> LabelValueError(std::string_view value);  // may be empty
// Annotation keys follow the label key rules; annotation values are free text.

}  // namespace gantry::model
