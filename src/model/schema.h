// The kinds of the paas.gantry.dev/v1 API and their field schemas.
//
// One schema per kind drives three things so they cannot drift apart: refusal of unknown
// fields and wrong types (422 naming the field), the OpenAPI v3 document (api/openapi), and
// the list of field selectors a kind supports. Semantic rules (names, label syntax, variable
// rules) live in validation.h; lifecycle rules in lifecycle.h.
//
// Thread-safety: the kind table is built once, on first use, and immutable afterwards.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/errors.h"

namespace gantry::model {

inline constexpr char kGroup[] = "paas.gantry.dev";
inline constexpr char kVersion[] = "v1";
inline constexpr char kApiVersion[] = "paas.gantry.dev/v1";

enum class FieldType {
  kString,
  kInteger,
  kNumber,
  kBoolean,
  kObject,     // fixed set of children; unknown keys refused
  kArray,      // children[0] is the element schema
  kStringMap,  // free keys, string values (labels, env)
  kScalarMap,  // free keys, string/number/bool values (instance variables)
  kFreeObject  // driver-specific configuration, checked by the driver, not here
};

struct Field {
  std::string name;
  FieldType type = FieldType::kString;
  std::string description;
  bool required = false;
  std::vector<std::string> enum_values;  // for kString: the allowed values
  std::vector<Field> children;
};

struct KindInfo {
  std::string kind;      // ComputeInstance
  std::string plural;    // computeinstances
  std::string singular;  // computeinstance
  std::vector<std::string> short_names;
  bool namespaced = true;
  bool versioned = false;  // spec changes make immutable revisions
  bool read_only = false;  // no writes through the API (runs)
  Field spec;
  Field status;
  std::vector<std::string> field_selectors;  // beyond metadata.name / metadata.namespace

  std::string ListKind() const { return kind + "List"; }
};

// Every kind served, in the order they should be applied (projects first).
const std::vector<KindInfo>& AllKinds();
// nullptr when unknown.
const KindInfo* FindKindByPlural(std::string_view plural);
const KindInfo* FindKindByName(std::string_view kind);

// Checks `obj` (a whole object as sent by a client) against the kind's schema: apiVersion,
// kind, metadata fields, spec. `status` is accepted in any shape and ignored by the caller.
// Appends one FieldCause per problem; never stops at the first.
void CheckSchema(const KindInfo& kind, const boost::json::object& obj,
                 std::vector<FieldCause>* causes);

// Checks `value` against `field` at `path` (used by CheckSchema and by tests).
void CheckField(const Field& field, const boost::json::value& value, const std::string& path,
                std::vector<FieldCause>* causes);

}  // namespace gantry::model
