// Semantic validation of API objects, beyond the schema's shape checks: Kubernetes name and
// label rules, sharing, template variable declarations, profile variable rules, and the
// resolution of an instance's variable values against its profile and template.
//
// All functions append FieldCauses (field path + message a person understands) rather than
// stopping at the first problem. Pure functions: no I/O, no state, thread-safe.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "common/errors.h"
#include "model/label_selector.h"
#include "model/schema.h"

namespace gantry::model {

// metadata.name (DNS-1123 label, required), labels, annotations.
void ValidateMetadata(const boost::json::object& metadata, std::vector<FieldCause>* causes);

// Kind-specific spec rules that need no other object (sharing, variable declarations,
// driver configuration presence, non-negative resources).
void ValidateSpec(const KindInfo& kind, const boost::json::object& spec,
                  std::vector<FieldCause>* causes);

// A profile's variable rules against the variables its template declares.
void ValidateProfileAgainstTemplate(const boost::json::object& profile_spec,
                                    const boost::json::object& template_spec,
                                    std::vector<FieldCause>* causes);

// One resolved variable, ready for a driver.
struct ResolvedVariable {
  std::string value;
  bool sensitive = false;
};

// Resolves the instance's `spec.variables` against the profile's rules and the template's
// declarations: template default < profile default < instance value. Refuses (as causes at
// `spec.variables.NAME`) unknown variables, values for variables whose override is
// notallowed, values outside a restricted list or an enum, values that do not parse as the
// declared type, and required variables left without a value.
std::map<std::string, ResolvedVariable> ResolveVariables(
    const boost::json::object& template_spec, const boost::json::object& profile_spec,
    const boost::json::object& instance_variables, std::vector<FieldCause>* causes);

// Instance variable values may be written as numbers or booleans in YAML; the API stores
// every value as a string. Rewrites `variables` in place.
void NormalizeVariableValues(boost::json::object& variables);

// A ServiceProfile's spec.computeSelector (matchLabels and matchExpressions, as Kubernetes'
// metav1.LabelSelector) as a selector over compute profile labels; empty selects every one.
LabelSelector ComputeSelector(const boost::json::object& service_profile_spec);
// "gpu=h100,tier in (a,b)": the selector in Kubernetes' text form, for messages.
std::string DescribeSelector(const LabelSelector& selector);

// True when `obj` (a template, profile or instance) is shared with project `ns` by its
// spec.sharing: mode All, or Selected listing `ns`. Absent sharing is None.
bool SharedWith(const boost::json::object& obj, const std::string& ns);

}  // namespace gantry::model
