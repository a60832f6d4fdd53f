// KindStrategy: the rules of one kind of the paas.gantry.dev/v1 API, as the Kubernetes API
// server keeps them in one strategy.go per resource. ResourceService does the generic verbs
// (create, replace, patch, apply, delete, list, watch) for every kind and calls a kind's
// strategy at fixed points of each write:
//
//   create:  PrepareForCreate -> BeforeCreate -> Admit -> commit
//   update:  PrepareForUpdate -> (no-op check) -> ValidateUpdate -> Admit -> commit
//   delete:  ValidateDelete -> commit (or, for Traits().engine_deletes, the engine)
//
// After a create or update is committed, WarningsOnWrite says what the client should be
// told although the write is allowed (Kubernetes' WarningsOnCreate/WarningsOnUpdate): each
// warning is a `Warning: 299 - "..."` header of the answer, which kubectl prints.
//
// A kind without rules of its own (runs, nodes, audit events) gets the defaults below:
// nothing to prepare, admit or refuse. Each kind's strategy lives in its own file
// (api/*_strategy.cc) and is registered by kind name in StrategyRegistry, keyed by the
// names of model/schema.h (the kind's schema); registering a name the schema does not serve
// is logged as a bug at start-up.
//
// Every hook returns OK or the Status the client gets (422 with causes, 403, 409); none
// asserts on its input.
//
// Thread-safety: strategies hold no state of their own; they read the Store and the
// drivers through StrategyContext and may be called from any thread at once. The context's
// `credentials` is set once before serving.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "api/target.h"
#include "auth/authenticator.h"
#include "common/clock.h"
#include "common/secrets.h"
#include "drivers/driver.h"
#include "model/schema.h"
#include "store/store.h"

namespace gantry::api {

// What the strategies read and write through. Owned by ResourceService.
struct StrategyContext {
  store::Store& store;
  const SecretBox& secrets;
  const Clock& clock;
  const drivers::DriverRegistry& drivers;
  // Keeps user passwords; null: passwords are refused (ResourceService::SetCredentials).
  auth::Authenticator* credentials = nullptr;
  // Warn about Project writes whose guarantees sum above the fleet's GPUs
  // (engine/fleet_gpus.h; ResourceService::SetGpuWarnings).
  bool gpu_warnings = false;

  // The clock's time as stored in objects (RFC 3339).
  std::string Now() const;
};

// What the generic code needs to know of a kind beyond its schema.
struct KindTraits {
  // Objects may be shared with other projects (spec.sharing): lists in a project show
  // those shared into it.
  bool sharable = false;
  // spec.variables holds values, some of them sealed secrets (instances).
  bool instance_variables = false;
  // A DELETE is the engine's (teardown before removal): ResourceService's delete hook.
  bool engine_deletes = false;
  // The one field where the kind keeps a sealed secret of its own ("spec.secret" of a
  // webhook), which a patch or apply carries as stored; empty: none.
  std::string_view sealed_field = {};
  // BeforeCreate reads the project the object is created in and answers as a missing
  // project is answered (GetProject, strategy_support.h), so a create does not read it
  // before as well (one store read less, a round trip on PostgreSQL).
  bool create_reads_project = false;
};

class KindStrategy {
 public:
  virtual ~KindStrategy() = default;

  virtual KindTraits Traits() const { return {}; }

  // Fills the server-owned status of a new object (Kubernetes' PrepareForCreate).
  virtual void PrepareForCreate(const Target& t, boost::json::object& status) const {}

  // Carries into an update `next` of `current` what the server keeps although the client
  // did not send it back as stored: secrets sent again in plaintext or redacted, fields the
  // server defaulted. Runs before `next` is compared with `current`, so that re-applying a
  // manifest is no change (PrepareForUpdate).
  virtual void PrepareForUpdate(const Target& t, const boost::json::object& current,
                                boost::json::object& next) const {}

  // Writes a create needs before its references are checked (the instancesPerUser guard);
  // 403 when the create is over a quota.
  virtual absl::Status BeforeCreate(const Target& t, std::vector<store::Write>* writes) const {
    return absl::OkStatus();
  }

  // Whether `current` may be changed at all (instances: not while a run is in flight).
  virtual absl::Status ValidateUpdate(const boost::json::object& current) const {
    return absl::OkStatus();
  }

  // The rules that need other objects or the drivers, for a create (`current` null) or an
  // update: references that must exist and be shared, driver configuration, sealing of
  // secrets, revisions pinned or recorded. May fill server-owned fields of `next` and
  // append writes to commit with it.
  virtual absl::Status Admit(const Target& t, const boost::json::object* current,
                             boost::json::object& next, std::vector<store::Write>* writes) const {
    return absl::OkStatus();
  }

  // What a client that wrote `written` (as committed) should be told, in words a person
  // reads; none by default. Never refuses: the write happened.
  virtual std::vector<std::string> WarningsOnWrite(const Target& t,
                                                   const boost::json::object& written) const {
    return {};
  }

  // 409 while something still uses `current` (profiles of a template, a project's objects,
  // the last org-admin); else OK, with the writes that go with the deletion appended.
  virtual absl::Status ValidateDelete(const Target& t, const boost::json::object& current,
                                      std::vector<store::Write>* writes) const {
    return absl::OkStatus();
  }
};

// The strategy of every kind, by kind name. Built once; read-only afterwards.
class StrategyRegistry {
 public:
  // Registers the strategy of every kind that has rules; `context` must outlive it.
  explicit StrategyRegistry(StrategyContext& context);

  // The kind's strategy, or the default one for kinds without rules.
  const KindStrategy& For(const model::KindInfo& kind) const;

 private:
  void Register(const std::string& kind, std::unique_ptr<KindStrategy> strategy);

  std::map<std::string, std::unique_ptr<KindStrategy>, std::less<>> by_kind_;
  KindStrategy default_;
};

// The strategies, one per file (api/<kind>_strategy.cc).
std::unique_ptr<KindStrategy> NewProjectStrategy(StrategyContext& context);
std::unique_ptr<KindStrategy> NewUserStrategy(StrategyContext& context);
std::unique_ptr<KindStrategy> NewRoleBindingStrategy(StrategyContext& context);
std::unique_ptr<KindStrategy> NewTemplateStrategy(StrategyContext& context);
std::unique_ptr<KindStrategy> NewComputeProfileStrategy(StrategyContext& context);
std::unique_ptr<KindStrategy> NewServiceProfileStrategy(StrategyContext& context);
std::unique_ptr<KindStrategy> NewComputeInstanceStrategy(StrategyContext& context);
std::unique_ptr<KindStrategy> NewRateCardStrategy(StrategyContext& context);
// A service instance may auto-create its compute instance, under `compute`'s rules.
std::unique_ptr<KindStrategy> NewServiceInstanceStrategy(StrategyContext& context,
                                                         const KindStrategy& compute);

}  // namespace gantry::api
