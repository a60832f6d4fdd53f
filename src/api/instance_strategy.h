// InstanceStrategy: the rules compute and service instances share. An instance pins the
// revision of its profile (and of that profile's template) when it is created or
// re-pointed, and only before its first deploy; its variables must fit those revisions,
// and sensitive ones are kept sealed; it changes only when no run is in flight; its delete
// is the engine's (teardown first). The kinds add their own rules
// (compute_instance_strategy.cc, service_instance_strategy.cc).
//
// Thread-safety: as every KindStrategy (strategy.h).
#pragma once

#include "api/strategy.h"

namespace gantry::api {

// The specs of the profile and template revisions an instance is checked against, their
// sensitive defaults unsealed.
struct PlainSpecs {
  boost::json::object profile, tmpl;
};

class InstanceStrategy : public KindStrategy {
 public:
  explicit InstanceStrategy(StrategyContext& ctx) : ctx_(ctx) {}

  KindTraits Traits() const override {
    return {.sharable = true, .instance_variables = true, .engine_deletes = true};
  }
  void PrepareForCreate(const Target& t, boost::json::object& status) const override;
  void PrepareForUpdate(const Target& t, const boost::json::object& current,
                        boost::json::object& next) const override;
  absl::Status ValidateUpdate(const boost::json::object& current) const override;
  absl::Status Admit(const Target& t, const boost::json::object* current, boost::json::object& next,
                     std::vector<store::Write>* writes) const override;

 protected:
  // What the kind checks beyond the shared rules, given the pinned profile revision's spec.
  virtual absl::Status AdmitMore(const Target& t, const boost::json::object* current,
                                 const boost::json::object& profile_spec, boost::json::object& next,
                                 std::vector<store::Write>* writes) const {
    return absl::OkStatus();
  }

  StrategyContext& ctx_;

 private:
  // Pins status.profileRevision/templateRevision of `next` when its profileRef is new and
  // returns the specs of the pinned revisions (engine::ResolvePinned), their sensitive
  // defaults unsealed.
  absl::StatusOr<PlainSpecs> PinRevisions(const Target& t, const boost::json::object* current,
                                          boost::json::object& next) const;
};

// Keeps "nothing to deploy" true when an update of `current` changed only spec.lifecycle (a
// ttl extended, a schedule opted out of): those act through the lifecycle controller, never
// through a deploy. metadata.generation still grows on every spec change, as in Kubernetes;
// status.deployedGeneration of `next` follows it when it equalled `current`'s generation.
// Anything else changed, or an instance already behind, keeps its deployedGeneration.
void FollowDeployedGeneration(const boost::json::object& current, boost::json::object& next);

// spec.lifecycle of instance `next` against the lifecycle policy of `profile_spec` (the
// profile revision it pins): 422 naming the field (a ttl over the maximum names the maximum,
// model::ValidateInstanceLifecycle), each message after `context` (e.g. why it is checked). With
// `recompute`, a running instance's status.expiresAt becomes its startedAt plus the effective ttl
// (removed without one). Used on every save of a compute instance (recompute when spec.lifecycle
// changed) and on upgrade (always: the new revision's policy applies); on service instances
// likewise (their profiles set a ttl only).
absl::Status ApplyInstanceLifecycle(const std::string& kind,
                                    const boost::json::object& profile_spec, bool recompute,
                                    boost::json::object& next, std::string_view context = "");

// The profile kind of an instance kind ("ComputeProfile" for "ComputeInstance").
const char* ProfileKindOf(const std::string& instance_kind);

// The instance `current` of `t` moved to its profile's latest revision (and that revision's
// template revision), its variables checked and sealed again; `current` itself when it is
// on them already. 409 while a run is in flight or when the profile is gone; 422 when its
// variables no longer fit.
absl::StatusOr<boost::json::object> UpgradedInstance(const StrategyContext& ctx, const Target& t,
                                                     const boost::json::object& current);

}  // namespace gantry::api
