// Helpers the kind strategies (api/strategy.h) share: references to other objects, sealed
// defaults and revisions of templates and profiles, the variables of instances, and the
// "used by" look-ups of delete checks. One copy of each rule, so the kinds cannot drift.
//
// Thread-safety: plain functions over the Store and SecretBox, both safe from any thread.
#pragma once

#include <boost/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/strategy.h"
// The typed views the strategies decode what they read into.
#include "model/objects.h"
#include "model/profiles.h"
#include "model/projects.h"
#include "model/templates.h"

namespace gantry::api {

inline constexpr char kProjectKind[] = "Project";
inline constexpr char kUserKind[] = "User";
inline constexpr char kRoleBindingKind[] = "RoleBinding";
inline constexpr char kTemplateKind[] = "EnvironmentTemplate";
inline constexpr char kComputeProfileKind[] = "ComputeProfile";
inline constexpr char kServiceProfileKind[] = "ServiceProfile";
inline constexpr char kComputeInstanceKind[] = "ComputeInstance";
inline constexpr char kServiceInstanceKind[] = "ServiceInstance";

// The object at `path` of `obj`, or an empty object when there is none.
const boost::json::object& ObjectAt(const boost::json::object& obj, std::string_view path);

// The project `ns`; NOT_FOUND "project "ns" not found" (what a request in a missing project
// is answered) when there is none.
absl::StatusOr<boost::json::object> GetProject(const StrategyContext& ctx, const std::string& ns);
absl::Status ProjectNotFound(const std::string& ns);

// The object that `spec.<ref>` of an object of `owner_kind` names: it must exist and live in
// t.ns or be shared with it (422 naming spec.<ref>.name or spec.<ref> otherwise).
absl::StatusOr<boost::json::object> ResolveRef(const StrategyContext& ctx, const Target& t,
                                               const std::string& owner_kind,
                                               const std::string& owner_name,
                                               const std::string& ref, const std::string& ref_kind,
                                               const std::string& ref_ns,
                                               const std::string& ref_name);

// Seals the sensitive defaults of a template or profile `next` (model::SealDefaults) and
// redacts them in its last-applied-configuration; 422 for defaults that cannot be kept.
absl::Status SealDefaults(const StrategyContext& ctx, const Target& t,
                          const std::set<std::string>& sensitive,
                          const boost::json::object* current, boost::json::object& next);
// PrepareForUpdate of templates and profiles: defaults sent again in plaintext (or as
// shown, redacted) are the stored sealed ones, so re-applying is no change.
void KeepSealedDefaults(const StrategyContext& ctx, const Target& t,
                        const boost::json::object& current, boost::json::object& next);

// A versioned object's status.revision: a new revision (appended to `writes`) when the
// spec changed. Returns whether it did.
bool RecordRevision(const StrategyContext& ctx, const Target& t, const boost::json::object* current,
                    boost::json::object& next, std::vector<store::Write>* writes);

// Checks the variables of instance `next` against the given revisions (their sensitive
// defaults already unsealed), unsealing the stored secrets kept where they were sealed and
// sealing the values of sensitive variables in `variables` (in place) for `next`.
absl::Status CheckAndSealVariables(const StrategyContext& ctx, const boost::json::object& next,
                                   const boost::json::object& template_spec,
                                   const boost::json::object& profile_spec,
                                   const boost::json::object* current,
                                   boost::json::object& variables);
// The variables whose values are sealed (or about to be: all sensitive).
std::set<std::string> SensitiveNames(const boost::json::object& variables);

// The objects of `user_kind` (any project) whose `ref_field` ("spec.templateRef.name") and
// its sibling namespace name t's object; "NAME", or "PROJECT/NAME" from other projects.
absl::StatusOr<std::vector<std::string>> UsersOf(const StrategyContext& ctx, const Target& t,
                                                 const std::string& user_kind,
                                                 const std::string& ref_field);
// "a, b, c, d, e, and 3 more".
std::string ListNames(const std::vector<std::string>& names);
// "2 compute profiles (a, b)".
std::string Counted(const std::vector<std::string>& names, const std::string& what);

// Org-admins that are not disabled.
absl::StatusOr<int64_t> EnabledOrgAdmins(const StrategyContext& ctx);

}  // namespace gantry::api
