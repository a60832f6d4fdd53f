// ResourceService: the verbs of the paas.gantry.dev/v1 resources (create, get, list,
// replace, merge-patch, delete, revisions, watch) with the rules of API.md and the seed:
// server-set metadata, immutable names, unknown-field refusal, profile revisions pinned by
// instances, profileRef changes only before the first deploy, references that must exist
// and be shared, and deletes that never orphan what still uses an object.
//
// Every method returns the JSON body of a 2xx answer or a Status that api/status_http turns
// into a Kubernetes Status. No method asserts on its input.
//
// Thread-safety: safe from any thread; all state is in the Store.
#pragma once

#include <map>
#include <set>
#include <string>

#include <boost/json.hpp>

#include "absl/status/statusor.h"
#include "api/http_types.h"
#include "api/query_params.h"
#include "api/watch_hub.h"
#include "auth/authenticator.h"
#include "common/clock.h"
#include "common/secrets.h"
#include "model/managed_fields.h"
#include "model/schema.h"
#include "store/store.h"

namespace gantry::api {

// Where a request points: the kind, the project (empty for cluster scope or all projects)
// and the object name (empty for collections).
struct Target {
  const model::KindInfo* kind = nullptr;
  std::string ns;
  bool all_namespaces = false;
  std::string name;
  // Who asks (already authorized by the router): recorded as an instance's creator, counted
  // by instancesPerUser, and checked for the fields only an org-admin may change.
  std::string caller;
  bool caller_is_org_admin = false;
  // The caller's web session (its Session record, "" for a token) and address: a change of
  // one's own password keeps this session and is rate-limited per address.
  std::string caller_session;
  std::string caller_source;
  // Who writes, in metadata.managedFields: the fieldManager query parameter, else the
  // program name of the User-Agent (set by the router; "unknown" when neither is sent).
  std::string field_manager = "unknown";
  // ?dryRun=All: every check runs (validation, references, lifecycle 409s, conflicts, field
  // managers) and the answer is the object as it would be, but nothing is committed.
  bool dry_run = false;
};

// Decides whether the caller may see an object (lists and watches across projects).
using Visibility = std::function<bool(const boost::json::object& obj)>;

// Called by Delete for a deployed instance: tears it down, then removes the record.
// Provided by the engine; without one such deletes are refused.
// DELETE of a compute or service instance, handed to the engine (engine::Engine::Delete):
// `cascade` asks to destroy and delete the services on a compute instance first;
// *accepted is set when a teardown was queued (202).
using InstanceDeleteHook = std::function<absl::StatusOr<boost::json::object>(
    const Target&, bool cascade, bool* accepted)>;

class ResourceService {
 public:
  ResourceService(store::Store& store, WatchHub& hub, const Clock& clock,
                  const SecretBox& secrets);

  absl::StatusOr<boost::json::object> Create(const Target& t, std::string_view body);
  absl::StatusOr<boost::json::object> Get(const Target& t);
  // A list in a project also holds the objects of other projects shared into it (templates,
  // profiles, instances), marked status.sharedFrom, after the project's own.
  absl::StatusOr<boost::json::object> List(const Target& t, const Query& q);
  absl::StatusOr<boost::json::object> Replace(const Target& t, std::string_view body);
  absl::StatusOr<boost::json::object> MergePatch(const Target& t, std::string_view body);
  // RFC 6902 JSON patch (kubectl patch --type=json), applied to the whole stored object.
  absl::StatusOr<boost::json::object> JsonPatch(const Target& t, std::string_view body);
  // Server-side apply (application/apply-patch+yaml; `body` is YAML or JSON) by
  // t.field_manager: creates the object when absent (*created), else merges the
  // configuration in with the ownership rules of model/managed_fields.h (409 on conflicts
  // unless `force`). Then the same checks and effects as Replace.
  absl::StatusOr<boost::json::object> Apply(const Target& t, std::string_view body, bool force,
                                            bool* created);
  // Returns the deleted object (200), or the object in its teardown state (202).
  absl::StatusOr<boost::json::object> Delete(const Target& t, std::string_view body,
                                             const Query& query, bool* accepted);
  absl::StatusOr<boost::json::object> ListRevisions(const Target& t);
  absl::StatusOr<boost::json::object> GetRevision(const Target& t, std::string_view revision);
  // Opens a watch; the stream gets the history asked for, then live events.
  // `visible` (when set) filters what the stream carries, history and live events alike.
  absl::StatusOr<std::shared_ptr<LineStream>> Watch(const Target& t, const Query& q,
                                                    Visibility visible = nullptr);

  // Moves an instance to its profile's latest revision (and that revision's template
  // revision). 409 while Waiting or InProgress; 422 when its variables no longer fit.
  absl::StatusOr<boost::json::object> Upgrade(const Target& t);

  // Creates the project if it does not exist (start-up bootstrap of "default").
  absl::Status EnsureProject(const std::string& name, const std::string& display_name);

  void SetInstanceDeleteHook(InstanceDeleteHook hook) { delete_instance_ = std::move(hook); }
  // Keeps user passwords (spec.password of Users is hashed there, never stored in the User)
  // and forgets a deleted user's credentials. Without one, passwords are refused.
  void SetCredentials(auth::Authenticator* credentials) { credentials_ = credentials; }

 private:
  absl::Status CheckProjectExists(const std::string& ns);
  // Validates a client-sent object for `t` and returns its causes (422) or OK.
  absl::Status ValidateIncoming(const Target& t, boost::json::object& obj, bool for_create);
  // Kind-specific rules needing other objects; fills server-owned status fields of `next`
  // (profile/template revisions pinned) and appends revision writes.
  absl::Status CheckReferences(const Target& t, const boost::json::object* current,
                               boost::json::object& next, std::vector<store::Write>* writes);
  // The object `spec.<ref>` of an object of `owner_kind` names: it must exist and live in
  // t.ns or be shared with it (422 naming spec.<ref>.name or spec.<ref> otherwise).
  absl::StatusOr<boost::json::object> ResolveRef(const Target& t, const std::string& owner_kind,
                                                 const std::string& owner_name,
                                                 const std::string& ref,
                                                 const std::string& ref_kind,
                                                 const std::string& ref_ns,
                                                 const std::string& ref_name);
  // 403 unless an org-admin writes a template whose driver runs on the host (local, exec),
  // or changes one that did.
  absl::Status CheckHostDriverWrite(const Target& t, const boost::json::object* current,
                                    const boost::json::object& next);
  // Project.spec.quota.instancesPerUser for a compute instance t.caller creates: 403 when
  // they have as many already; else appends a write that guards the count (a rewrite of the
  // project at the resourceVersion counted at, so a racing create conflicts and retries).
  absl::Status CheckInstanceQuota(const Target& t, std::vector<store::Write>* writes);
  // Seals the sensitive defaults of a template or profile `next` (model::SealDefaults) and
  // redacts them in its last-applied-configuration; 422 for defaults that cannot be kept.
  absl::Status SealDefaults(const Target& t, const std::set<std::string>& sensitive,
                            const boost::json::object* current, boost::json::object& next);
  // A service profile's autoCreateCompute: the compute profile exists, is shared with the
  // project, matches the computeSelector, and accepts the variables.
  absl::Status CheckAutoCreateCompute(const Target& t, const boost::json::object& next);
  // A service instance's spec.computeRef: exists, own or shared in, selected by the service
  // profile's computeSelector, changed only before the first deploy; or, absent, the compute
  // instance the profile auto-creates (appended to `writes`).
  absl::Status CheckComputeRef(const Target& t, const boost::json::object* current,
                               const boost::json::object& profile_spec, boost::json::object& next,
                               std::vector<store::Write>* writes);
  absl::Status CreateComputeFor(const Target& t, const boost::json::object& profile_spec,
                                boost::json::object& next, std::vector<store::Write>* writes);
  // What an Apply passes down to CreateObject/UpdateFrom: the applied fields.
  struct ApplyInfo {
    model::FieldSet fields;
    bool force = false;
  };
  absl::StatusOr<boost::json::object> CreateObject(const Target& t, boost::json::object incoming,
                                                   const ApplyInfo* apply);
  absl::StatusOr<boost::json::object> UpdateFrom(const Target& t, boost::json::object incoming,
                                                 int64_t expected_rv,
                                                 const ApplyInfo* apply = nullptr);
  // Sets next's metadata.managedFields for a write of `incoming` by t.field_manager
  // (an Update, or an Apply when `apply` is set); 409 on apply conflicts, 422 for
  // managedFields sent that cannot be read.
  absl::Status RecordManagers(const Target& t, const boost::json::object* current,
                              const boost::json::object& incoming, boost::json::object& next,
                              const ApplyInfo* apply);
  absl::StatusOr<store::ListOptions> ListOptionsFor(const Target& t, const Query& q);
  std::string Now() const;
  // Checks the variables of instance `next` against the given revisions (their sensitive
  // defaults already unsealed), unsealing the stored secrets kept where they were sealed and
  // sealing the values of sensitive variables in `variables` (in place) for `next`.
  absl::Status CheckAndSealVariables(const boost::json::object& next,
                                     const boost::json::object& template_spec,
                                     const boost::json::object& profile_spec,
                                     const boost::json::object* current,
                                     boost::json::object& variables);

  store::Store& store_;
  WatchHub& hub_;
  const Clock& clock_;
  const SecretBox& secrets_;
  // Objects of other projects shared into t.ns, matching the list's selectors.
  absl::StatusOr<std::vector<boost::json::object>> SharedInto(const Target& t,
                                                              const store::ListOptions& opts);
  // Rules of User writes: password to credentials, org-admin-only fields, the last org-admin.
  absl::Status CheckUserWrite(const Target& t, const boost::json::object* current,
                              boost::json::object& next, std::vector<store::Write>* writes);
  absl::StatusOr<int64_t> EnabledOrgAdmins();

  InstanceDeleteHook delete_instance_;
  auth::Authenticator* credentials_ = nullptr;
};

}  // namespace gantry::api
