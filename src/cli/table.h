// Plain-text output helpers for `gantry get`: aligned tables the way kubectl prints them, ages
// ("5m", "3h", "2d"), and field lookup in API objects by dotted path.
//
// Thread-safety: Table is a value type (not shared); the free functions have no state.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"

namespace gantry::cli {

// Columns separated by two spaces, each as wide as its widest cell (counted in UTF-8 code
// points), no trailing spaces, headers upper-cased.
class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  void AddRow(std::vector<std::string> cells);  // missing cells print empty
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// kubectl's short duration: "0s" .. "59s", "1m" .. "59m", "1h" .. "23h", "1d" .. "364d", "1y".
// Negative durations (clock skew) print "0s".
std::string ShortDuration(absl::Duration d);
// kubectl's HumanDuration (what the server's Table and kubectl print): "90s", "2m30s",
// "133m", "4h13m", "30h", "3d4h", "400d", "2y10d"; negative durations print "0s".
std::string HumanDuration(absl::Duration d);
// Age of an RFC 3339 timestamp at `now`; "<unknown>" when it does not parse.
std::string FormatAge(std::string_view rfc3339, absl::Time now);
std::optional<absl::Time> ParseTimestamp(std::string_view rfc3339);

// status.phase in the seed's words: NotDeployed → "Not Deployed", InProgress → "In Progress";
// others as they are; "" → "<none>".
std::string PhaseWords(std::string_view phase);
// spec.sharing → "None", "All", "Selected(n)".
std::string SharingSummary(const boost::json::object& object);

// The value at a dotted path ("spec.profileRef.name"), nullptr when absent.
const boost::json::value* Lookup(const boost::json::object& object, std::string_view path);
// Text of a scalar at a path: strings as they are, numbers and booleans printed, "" otherwise.
std::string FieldText(const boost::json::object& object, std::string_view path);
// Text of a scalar value (strings unquoted); compact JSON for objects and arrays.
std::string ScalarText(const boost::json::value& v);

}  // namespace gantry::cli
