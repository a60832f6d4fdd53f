// ResourceService: the verbs of the paas.gantry.dev/v1 resources (create, get, list,
// replace, merge-patch, delete, revisions, watch) with the rules of API.md and the seed:
// server-set metadata, immutable names, unknown-field refusal, profile revisions pinned by
// instances, profileRef changes only before the first deploy, references that must exist
// and be shared, and deletes that never orphan what still uses an object. The rules of each
// kind are its strategy's (api/strategy.h); this class does what every kind shares.
//
// Every method returns the JSON body of a 2xx answer or a Status that api/status_http turns
// into a Kubernetes Status. No method asserts on its input.
//
// Thread-safety: safe from any thread; all state is in the Store.
#pragma once

#include <algorithm>
#include <boost/json.hpp>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "api/http_types.h"
#include "api/query_params.h"
#include "api/strategy.h"
#include "api/target.h"
#include "api/watch_hub.h"
#include "auth/authenticator.h"
#include "common/clock.h"
#include "common/secrets.h"
#include "drivers/driver.h"
#include "model/managed_fields.h"
#include "model/schema.h"
#include "store/store.h"

namespace gantry::api {

// Decides whether the caller may see an object (lists and watches across projects).
using Visibility = std::function<bool(const boost::json::object& obj)>;

// Called by Delete for a deployed instance: tears it down, then removes the record.
// Provided by the engine; without one such deletes are refused.
// DELETE of a compute or service instance, handed to the engine (engine::Engine::Delete):
// `cascade` asks to destroy and delete the services on a compute instance first;
// *accepted is set when a teardown was queued (202).
using InstanceDeleteHook =
    std::function<absl::StatusOr<boost::json::object>(const Target&, bool cascade, bool* accepted)>;

class ResourceService {
 public:
  // `drivers` check the driver configuration of templates when they are saved and say
  // which drivers run programs on gantryd's host (Capabilities); all must outlive this.
  ResourceService(store::Store& store, WatchHub& hub, const Clock& clock, const SecretBox& secrets,
                  const drivers::DriverRegistry& drivers);

  // The store and clock the objects live in and are stamped by (computed reads such as
  // usage reports, api/usage_reports.cc).
  store::Store& store() const { return store_; }
  const Clock& clock() const { return context_.clock; }

  // `also` (store::AlsoCommit): a write committed with the object's, the request's audit record.
  absl::StatusOr<boost::json::object> Create(const Target& t, std::string_view body,
                                             store::AlsoCommit* also = nullptr);
  absl::StatusOr<boost::json::object> Get(const Target& t);
  // The object as its stored JSON text (store::Store::GetText), errors as Get.
  absl::StatusOr<std::string> GetText(const Target& t);
  // A list in a project also holds the objects of other projects shared into it (templates,
  // profiles, instances), marked status.sharedFrom, after the project's own.
  absl::StatusOr<boost::json::object> List(const Target& t, const Query& q);
  absl::StatusOr<boost::json::object> Replace(const Target& t, std::string_view body,
                                              store::AlsoCommit* also = nullptr);
  absl::StatusOr<boost::json::object> MergePatch(const Target& t, std::string_view body,
                                                 store::AlsoCommit* also = nullptr);
  // RFC 6902 JSON patch (kubectl patch --type=json), applied to the whole stored object.
  absl::StatusOr<boost::json::object> JsonPatch(const Target& t, std::string_view body,
                                                store::AlsoCommit* also = nullptr);
  // Server-side apply (application/apply-patch+yaml; `body` is YAML or JSON) by
  // t.field_manager: creates the object when absent (*created), else merges the
  // configuration in with the ownership rules of model/managed_fields.h (409 on conflicts
  // unless `force`). Then the same checks and effects as Replace.
  absl::StatusOr<boost::json::object> Apply(const Target& t, std::string_view body, bool force,
                                            bool* created, store::AlsoCommit* also = nullptr);
  // Returns the deleted object (200), or the object in its teardown state (202). `also` is
  // committed with a delete the store makes at once (not with a compute instance's, which
  // the engine tears down).
  absl::StatusOr<boost::json::object> Delete(const Target& t, std::string_view body,
                                             const Query& query, bool* accepted,
                                             store::AlsoCommit* also = nullptr);
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
  void SetCredentials(auth::Authenticator* credentials) { context_.credentials = credentials; }
  // A Project write whose guarantees sum above the fleet's GPUs (every replica's host,
  // engine/fleet_gpus.h) is warned about (KindStrategy::WarningsOnWrite). Before serving.
  void SetGpuWarnings(bool on) { context_.gpu_warnings = on; }
  // What the client that wrote `written` (create, replace, patch, apply) should be told.
  std::vector<std::string> WarningsOnWrite(const Target& t,
                                           const boost::json::object& written) const {
    return StrategyOf(t).WarningsOnWrite(t, written);
  }

  // How many objects a list without a limit (sent as it is read, api/router_responses.h
  // StreamedList) and a watch's initial events read from the store at a time (gantryd
  // --list-page-size). At least 1; set before serving.
  void SetPageSize(int64_t objects) { page_size_ = std::max<int64_t>(objects, 1); }
  int64_t PageSize() const { return page_size_; }

  // The drivers (for the OpenAPI document's driver configuration schemas).
  const drivers::DriverRegistry& Drivers() const { return context_.drivers; }

 private:
  absl::Status CheckProjectExists(const std::string& ns);
  // The rules of t's kind (api/strategy.h).
  const KindStrategy& StrategyOf(const Target& t) const;
  // Validates a client-sent object for `t` and returns its causes (422) or OK.
  // The error of a failed read of t: "project not found" when t's project is missing too,
  // else `read` itself.
  absl::Status NotFoundIn(const Target& t, absl::Status read);
  absl::Status ValidateIncoming(const Target& t, boost::json::object& obj, bool for_create);
  // What an Apply passes down to CreateObject/UpdateFrom: the applied fields.
  struct ApplyInfo {
    model::FieldSet fields;
    bool force = false;
  };
  absl::StatusOr<boost::json::object> CreateObject(const Target& t, boost::json::object incoming,
                                                   const ApplyInfo* apply,
                                                   store::AlsoCommit* also = nullptr);
  absl::StatusOr<boost::json::object> UpdateFrom(const Target& t, boost::json::object incoming,
                                                 int64_t expected_rv,
                                                 const ApplyInfo* apply = nullptr,
                                                 store::AlsoCommit* also = nullptr);
  // Sets next's metadata.managedFields for a write of `incoming` by t.field_manager
  // (an Update, or an Apply when `apply` is set); 409 on apply conflicts, 422 for
  // managedFields sent that cannot be read.
  absl::Status RecordManagers(const Target& t, const boost::json::object* current,
                              const boost::json::object& incoming, boost::json::object& next,
                              const ApplyInfo* apply);
  absl::StatusOr<store::ListOptions> ListOptionsFor(const Target& t, const Query& q);
  // Objects of other projects shared into t.ns, matching the list's selectors.
  absl::StatusOr<std::vector<boost::json::object>> SharedInto(const Target& t,
                                                              const store::ListOptions& opts);

  // A watch's initial events after the first page, pushed a page at a time as the
  // transport asks for them (LineStream::SetRefill); the last page starts `sub`.
  void StreamInitialEvents(const std::shared_ptr<LineStream>& stream,
                           const std::shared_ptr<WatchHub::Subscription>& sub,
                           store::ListOptions next, int64_t after, bool end_bookmark,
                           Visibility visible);
  // Pushes the page's objects as ADDED events; ends the initial events (the bookmark that
  // closes sendInitialEvents, then live events after `after`) when it is the last page.
  void PushInitialPage(LineStream& stream, const std::shared_ptr<WatchHub::Subscription>& sub,
                       const store::ListResult& page, int64_t after, bool end_bookmark,
                       const Visibility& visible);

  store::Store& store_;
  WatchHub& hub_;
  int64_t page_size_ = 500;
  StrategyContext context_;
  StrategyRegistry strategies_;  // after context_, which it holds on to
  InstanceDeleteHook delete_instance_;
};

}  // namespace gantry::api
