// Store: durable storage of API objects, their revisions and the event history that watch
// resumes from. The one seam between Gantry's logic and its database (STYLE.md #1):
// sqlite/ is the embedded default; postgres/ comes next behind the same interface.
//
// Model: every object is a JSON document keyed by (kind, namespace, name); cluster-scoped
// kinds use namespace "". Every committed change gets the next value of one global,
// strictly increasing resourceVersion and one event row, in the same transaction, so a
// watcher that resumes from resourceVersion N sees exactly the changes after N.
//
// Thread-safety: every method may be called from any thread concurrently. Writes are
// serialised; reads do not wait for writes (WAL). Commit observers are called after the
// transaction is durable, in resourceVersion order, one commit at a time.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/label_selector.h"

namespace gantry::store {

// One operation of a transaction.
struct Write {
  enum class Op {
    kCreate,       // insert; ALREADY_EXISTS (409 AlreadyExists) when the name is taken
    kUpdate,       // replace; NOT_FOUND when absent; 409 Conflict on resourceVersion mismatch
    kDelete,       // remove; NOT_FOUND when absent; 409 Conflict on resourceVersion mismatch
    kPutRevision,  // record an immutable revision of a versioned object
  };
  Op op = Op::kCreate;
  std::string kind;
  // kCreate/kUpdate: the whole object; the store sets metadata.resourceVersion.
  // kDelete: needs metadata.namespace and metadata.name.
  // kPutRevision: the object whose spec is recorded; `revision` says which.
  boost::json::object object;
  // kUpdate/kDelete: when non-zero, the change applies only if the stored object still has
  // this resourceVersion.
  int64_t expected_resource_version = 0;
  int64_t revision = 0;  // kPutRevision only
};

// A write a caller adds to the commit another component makes for it, made from the object
// as that commit writes it (for a delete: as it was): the request's audit record
// (api::Router::AuditInWrite) in the commit of a create, an update, an apply, a delete
// (api::ResourceService) or of a queued run (engine::Engine::Queue), so that one transaction
// holds both. `committed` is set once a commit holding it succeeded (a no-op update or a dry
// run commits nothing).
struct AlsoCommit {
  std::function<Write(const boost::json::object& written)> make;
  bool committed = false;
};

// A committed change, as watchers see it.
struct Event {
  int64_t resource_version = 0;
  std::string type;  // ADDED, MODIFIED, DELETED
  std::string kind;
  std::string ns;
  std::string name;
  boost::json::object object;  // for DELETED: the last state, with the delete's resourceVersion
};

struct FieldFilter {
  // metadata.name, metadata.namespace, status.phase, spec.profileRef.name,
  // spec.templateRef.name, spec.instanceRef.name (indexed columns), or any other
  // dot-separated path of string fields in the object (spec.user, status.createdBy: read
  // from the stored JSON, unindexed). Absent fields compare as "".
  std::string field;
  bool equals = true;
  std::string value;
};

// Names one object.
struct ObjectKey {
  std::string kind;
  std::string ns;
  std::string name;
};

struct ListOptions {
  std::string kind;
  std::optional<std::string> ns;  // nullopt: every project
  model::LabelSelector labels;
  std::vector<FieldFilter> fields;
  std::string search;  // case-insensitive substring of name, displayName, description
  int64_t limit = 0;   // 0: no limit
  std::string continue_token;
  bool oldest_first = false;  // the run queue reads first-come-first-served
  // Where the listed objects are allocated (default: the heap). A large scan that decodes
  // and drops them (the usage ledger) passes a boost::json::monotonic_resource.
  boost::json::storage_ptr storage;
};

// How hard a commit must be flushed before it returns. Writes a client is told about are
// durable; the engine's bookkeeping between them (claims, leases, driver state) may be
// relaxed: it survives a crash of gantryd (WAL) but not a power loss, after which recovery
// runs the affected runs again.
enum class Durability { kDurable, kRelaxed };

// What a store's group commit did so far (for tests and diagnostics): both stores queue
// concurrent Commit calls and commit them in batches.
struct GroupCommitStats {
  int64_t transactions = 0;  // batches committed
  int64_t calls = 0;         // Commit calls committed by them
  int64_t waiting = 0;       // Commit calls queued now, the one being committed included
};

struct ListResult {
  std::vector<boost::json::object> items;  // newest first
  int64_t resource_version = 0;            // the store's resourceVersion when listed
  std::string continue_token;              // empty on the last page
};

struct Revision {
  int64_t revision = 0;
  std::string created;  // RFC 3339
  boost::json::object spec;
};

class Store {
 public:
  virtual ~Store() = default;

  // The object, or NOT_FOUND ("computeinstances \"x\" not found").
  virtual absl::StatusOr<boost::json::object> Get(const std::string& kind, const std::string& ns,
                                                  const std::string& name) = 0;

  // The object as JSON text, for an answer that sends it unchanged (a GET): what Get returns,
  // serialised. Errors as Get. A store that keeps the text returns it without parsing
  // (valid UTF-8, as Get scrubs it); this default serialises Get's object.
  virtual absl::StatusOr<std::string> GetText(const std::string& kind, const std::string& ns,
                                              const std::string& name);

  // The objects of `keys` that exist (a missing one is left out, an error is the first
  // failed read's), in no particular order: one query where Get would take one each (the
  // dispatcher reads the instance of every queued run once per pass). This default calls
  // Get for each key; a store whose reads cost a round trip answers in one.
  virtual absl::StatusOr<std::vector<boost::json::object>> GetMany(
      const std::vector<ObjectKey>& keys);

  // A page of objects, newest first. INVALID_ARGUMENT for a malformed continue token.
  virtual absl::StatusOr<ListResult> List(const ListOptions& options) = 0;

  // Applies every write or none. Returns the stored objects (with their new
  // resourceVersion) in the order of `writes` (kPutRevision yields an empty object).
  // UNAVAILABLE once the database failed in a way that leaves its state unknown: such a
  // failure is sticky (STYLE.md #5) and every later write is refused.
  virtual absl::StatusOr<std::vector<boost::json::object>> Commit(
      std::vector<Write> writes, Durability durability = Durability::kDurable) = 0;

  // Events with resourceVersion > `after`, oldest first, at most `max` of them.
  // OUT_OF_RANGE (410 Expired) when events after `after` were already compacted away.
  virtual absl::StatusOr<std::vector<Event>> EventsSince(int64_t after, size_t max) = 0;

  // The highest resourceVersion committed.
  virtual int64_t CurrentResourceVersion() = 0;

  // Revisions of a versioned object, newest first / one of them.
  virtual absl::StatusOr<std::vector<Revision>> ListRevisions(const std::string& kind,
                                                              const std::string& ns,
                                                              const std::string& name) = 0;
  virtual absl::StatusOr<Revision> GetRevision(const std::string& kind, const std::string& ns,
                                               const std::string& name, int64_t revision) = 0;

  // Counts objects of `kind` in `ns` (all projects when nullopt) matching `fields`.
  virtual absl::StatusOr<int64_t> Count(const std::string& kind, std::optional<std::string> ns,
                                        const std::vector<FieldFilter>& fields) = 0;

  // Registers the function called with the events of each commit. Set once at start-up,
  // before any write.
  virtual void SetCommitObserver(std::function<void(const std::vector<Event>&)> observer) = 0;

  // OK when the database answers a trivial query (for /readyz).
  virtual absl::Status Ping() = 0;
};

}  // namespace gantry::store
