// Field ownership (metadata.managedFields) and server-side apply, with Kubernetes semantics
// (structured-merge-diff), for the paas.gantry.dev kinds.
//
// What is tracked: metadata.labels, metadata.annotations and spec; the rest of metadata is
// server-owned and status is written by the server only. Objects (maps and structs alike)
// are granular: each key is its own field. Lists are atomic (x-kubernetes-list-type:
// atomic): a list is one field, owned and replaced as a whole. A field is therefore a leaf:
// a scalar, a list, or an empty object.
//
// Every write records who changed what: an Update (create, PUT, merge patch, JSON patch)
// gives its manager the fields it added or changed and takes them from every other manager,
// without conflicts; an Apply gives its manager exactly the fields of the applied
// configuration, and refuses (409) to change a field another manager owns unless forced.
// Fields an applier stops applying are removed from the object unless another manager owns
// them too.
//
// Pure functions: no I/O, no clock (the caller passes the time). Thread-safety: free
// functions, no state.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gantry::model {

inline constexpr char kOperationApply[] = "Apply";
inline constexpr char kOperationUpdate[] = "Update";
// The manager Kubernetes credits with the fields of an object that had no managedFields
// when it is first applied to.
inline constexpr char kBeforeFirstApply[] = "before-first-apply";

// A field: the object keys leading to it from the top ("spec", "resources", "gpu", "count").
using FieldPath = std::vector<std::string>;
using FieldSet = std::set<FieldPath>;

// ".spec.resources.gpu.count", as Kubernetes prints a path in conflicts.
std::string PathString(const FieldPath& path);

// The tracked part of `obj`: {metadata: {labels, annotations}, spec}, whichever are present.
boost::json::object TrackedFields(const boost::json::object& obj);

// The fields (leaves) of `obj`, with their values. Nulls are skipped (not set).
std::map<FieldPath, const boost::json::value*> Leaves(const boost::json::object& obj);
FieldSet LeafSet(const boost::json::object& obj);

// FieldsV1: {"f:spec": {"f:displayName": {}, "f:resources": {".": {}, ...}}}. "." marks a
// node that is itself a member as well as the parent of members.
boost::json::object EncodeFieldsV1(const FieldSet& set);
// Errors (INVALID_ARGUMENT, message without a field path): a key other than "." or "f:NAME"
// ("k:", "v:" and "i:" address list items; lists are atomic here), a value not an object.
absl::StatusOr<FieldSet> DecodeFieldsV1(const boost::json::value& v);

struct ManagerEntry {
  std::string manager;
  std::string operation;  // kOperationApply or kOperationUpdate
  std::string api_version;
  std::string time;  // RFC 3339
  FieldSet fields;
};
using Managers = std::vector<ManagerEntry>;

// Decodes metadata.managedFields (an array of ManagedFieldsEntry). An entry without a
// manager and without fields (`[{}]`, Kubernetes' way to reset them) is dropped. Errors
// (INVALID_ARGUMENT) name the entry: "managedFields[1].fieldsV1: ...".
absl::StatusOr<Managers> DecodeManagedFields(const boost::json::value& v);
// Entries sorted as Kubernetes sorts them: Apply before Update, then by time, then manager.
// Entries without fields are left out.
boost::json::array EncodeManagedFields(const Managers& managers);

// The managers of a stored object (its metadata.managedFields; none when absent).
absl::StatusOr<Managers> ManagersOf(const boost::json::object& obj);

// Drops from obj's metadata.managedFields the fields obj no longer has (what the server
// removed after recording the write, such as a User's spec.password, which goes to the
// credential store), and the entries left without fields.
absl::Status ForgetAbsentFields(boost::json::object& obj);

// What a write changes in the tracked fields.
struct FieldChange {
  FieldSet added, modified, removed;
  FieldSet present;  // every field of the new object
};
FieldChange CompareFields(const boost::json::object& old_obj, const boost::json::object& new_obj);

// An Update by `manager`: it gains every added or modified field; other managers lose them;
// nobody keeps a removed field. The manager's entry gets `now` when the write changed
// something or its fields changed; untouched entries keep their time.
void RecordUpdate(Managers& managers, const FieldChange& change, const std::string& manager,
                  const std::string& api_version, const std::string& now);

// An Apply by `manager` of a configuration whose fields are `applied`. A field another
// manager owns that the apply adds or modifies is a conflict: without `force` the result is
// a 409 Conflict (reason Conflict, causes of type FieldManagerConflict, Kubernetes'
// "Apply failed with N conflict(s): ..." message) and `managers` is unchanged; with `force`
// the others lose those fields. The applier's Apply entry then holds exactly the applied
// fields that exist.
absl::Status RecordApply(Managers& managers, const FieldChange& change, const FieldSet& applied,
                         const std::string& manager, const std::string& api_version,
                         const std::string& now, bool force);

// The live object with an applied configuration merged in: labels, annotations and spec
// merged key by key (objects) with the configuration's values replacing scalars and lists.
// Nulls in the configuration are not applied. Everything else is the live object's.
boost::json::object MergeApplied(const boost::json::object& live,
                                 const boost::json::object& config);

// The fields an applier applied last time (its Apply entry) but not now, that no other
// manager owns and that nothing applied now lies under or above: what the apply removes.
FieldSet FieldsToPrune(const Managers& managers, const std::string& manager,
                       const FieldSet& applied);

// Removes each field of `paths` from `obj`, then the objects the removal left empty (never
// the top-level metadata or spec).
void RemoveFields(boost::json::object& obj, const FieldSet& paths);

}  // namespace gantry::model
