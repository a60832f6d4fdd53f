// ConfigProblems: what is wrong with a template's driver configuration (its spec.<driver>),
// collected by the driver's one parser so that a save (Driver::ValidateConfig) and a deploy
// (the parser's Status) refuse exactly the same things with the same words.
//
// Each problem has a field relative to the configuration ("command", "ports[0].name",
// "readiness.port") and the sentence a deploy shows, which names the full field
// ("spec.local.ports[0].name must be a string, not a number"). A deploy refuses with the
// first problem as FAILED_PRECONDITION; a save gets every problem as a FieldCause whose
// message is that sentence without its leading field name (the API prefixes the field).
//
// The helpers below build the OpenAPI v3 schema pieces a driver's ConfigSchema returns.
//
// Thread-safety: a value type; one parse owns one ConfigProblems.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/errors.h"

namespace gantry::drivers {

class ConfigProblems {
 public:
  // `prefix`: where the configuration sits in a template, e.g. "spec.local".
  explicit ConfigProblems(std::string prefix) : prefix_(std::move(prefix)) {}

  const std::string& prefix() const { return prefix_; }
  // prefix() + "." + field: the full name a message starts with.
  std::string Full(std::string_view field) const;

  // Records one problem. `message` is the whole sentence as a deploy shows it; `type` the
  // FieldCause type (FieldValueInvalid, FieldValueRequired, FieldValueNotSupported, ...).
  void Add(std::string field, std::string message, std::string type = "FieldValueInvalid");

  bool ok() const { return problems_.empty(); }
  size_t size() const { return problems_.size(); }
  // OK, or FAILED_PRECONDITION with the first problem's sentence (what a deploy says).
  absl::Status FirstAsStatus() const;
  // Appends every problem as a FieldCause with the relative field.
  void AppendCauses(std::vector<FieldCause>* causes) const;

 private:
  const std::string prefix_;
  std::vector<FieldCause> problems_;  // message = the whole sentence
};

// OpenAPI v3 schema pieces: {"type": type, "description": description}.
boost::json::object SchemaOf(std::string_view type, std::string_view description);
// An array of strings.
boost::json::object StringListSchema(std::string_view description);
// An object of NAME: value; the values take `value_schema`.
boost::json::object MapSchema(std::string_view description, boost::json::object value_schema);
// An object with these properties and required names; unknown properties are refused.
boost::json::object ObjectSchema(std::string_view description, boost::json::object properties,
                                 std::vector<std::string> required = {});

}  // namespace gantry::drivers
