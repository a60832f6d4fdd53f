// Sealed fields: where Gantry keeps sensitive values encrypted (common/secrets.h), and the
// rules that keep them secret through every verb.
//
// Sealed values live in exactly three places:
//   - an instance's spec.variables.NAME, for a variable declared sensitive (context
//     SealContext(kind, ns, name, uid, "variables/NAME"));
//   - a template's or profile's spec.variables[i].default, for a sensitive variable
//     (context SealContext(kind, ns, name, "", "defaults/NAME"): revisions are copies of the
//     spec, read by project and name).
//   - a webhook's spec.secret (webhooks::SecretContext), the field a kind names in its
//     KindTraits::sealed_field.
// A string holding a sealed value anywhere else is refused (FindMisplacedSealed), so a patch
// cannot move ciphertext into a label, annotation or display name where it could be read, and
// the associated data makes it useless in another variable or object anyway.
//
// Output never carries ciphertext (RedactSealed), and kubectl's last-applied-configuration
// annotation carries kRedacted for sensitive values (RedactLastApplied): client-side apply
// would otherwise keep the whole manifest, secrets included, in plaintext.
//
// Thread-safety: free functions, no state.
#pragma once

#include <boost/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/errors.h"
#include "common/secrets.h"

namespace gantry::model {

inline constexpr char kLastAppliedAnnotation[] = "kubectl.kubernetes.io/last-applied-configuration";

// The context of variable `var` of instance `obj` (its kind, namespace, name and uid).
std::string VariableContext(const boost::json::object& obj, std::string_view var);
// The context of the default of variable `var` of a template or profile.
std::string DefaultContext(std::string_view kind, std::string_view ns, std::string_view name,
                           std::string_view var);

// Appends a cause for every string of `obj` (metadata and spec) that holds a sealed value
// outside the fields listed above and `sealed_field` (a kind's own secret, as a webhook's
// "spec.secret": its strategy checks that the value there is the stored one).
void FindMisplacedSealed(const boost::json::object& obj, bool is_instance,
                         std::string_view sealed_field, std::vector<FieldCause>* causes);

// Whether `s` holds a sealed value ("sealed:v1:…", "sealed:v2:…"). On an object's JSON text:
// whether it may hold one (a string that merely contains those letters counts too).
bool HoldsSealed(std::string_view s);

// Replaces every sealed value in `v`, wherever it is, with kRedacted; for an API object,
// every sealed value of its spec (the only place one can be).
void RedactSealed(boost::json::value& v);
void RedactSealed(boost::json::object& obj);

// In the last-applied-configuration annotation of `obj` (when there is one and it is JSON),
// replaces the values of the instance variables (is_instance) or the defaults of the
// template/profile variables named in `names` with kRedacted.
void RedactLastApplied(boost::json::object& obj, bool is_instance,
                       const std::set<std::string>& names);

// The names of the sensitive variables a template (or profile rules) declares.
std::set<std::string> SensitiveDeclared(const boost::json::object& spec);

// The names of the variables whose defaults are sealed in `spec`.
std::set<std::string> SealedDefaultNames(const boost::json::object& spec);

// A copy of a template's or profile's spec with its sealed defaults unsealed, for
// ResolveVariables. FAILED_PRECONDITION when one cannot be unsealed (another key).
absl::StatusOr<boost::json::object> UnsealDefaults(const SecretBox& secrets, std::string_view kind,
                                                   std::string_view ns, std::string_view name,
                                                   const boost::json::object& spec);

// Seals, in next's spec, the defaults of the variables named in `sensitive` (declared so by
// the template or by these rules): a default sent as kRedacted or as the stored plaintext
// keeps the stored ciphertext (no new revision for re-applying the same manifest). Causes
// for kRedacted without a stored value and for ciphertext not sealed here.
void SealDefaults(const SecretBox& secrets, std::string_view kind, std::string_view ns,
                  std::string_view name, const std::set<std::string>& sensitive,
                  const boost::json::object* current, boost::json::object& next,
                  std::vector<FieldCause>* causes);

}  // namespace gantry::model
