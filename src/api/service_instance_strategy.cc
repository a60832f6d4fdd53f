// Service instances: the shared instance rules (instance_strategy.h), plus spec.computeRef:
// the compute instance the service runs on exists, is own or shared in, is selected by the
// service profile's computeSelector and changes only before the first deploy; or, absent,
// the compute instance the profile auto-creates (under the compute instances' rules); and
// spec.lifecycle.ttl within the service profile revision's ttl policy, as compute instances
// (ApplyInstanceLifecycle).
#include "api/instance_strategy.h"
#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/ids.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "model/label_selector.h"
#include "model/lifecycle.h"
#include "model/objects.h"
#include "model/profiles.h"
#include "model/validation.h"

namespace gantry::api {
namespace {

namespace json = boost::json;
using model::FindPath;

// Labels an auto-created compute instance with the service it was created for.
constexpr char kCreatedForLabel[] = "paas.gantry.dev/service";

class ServiceInstanceStrategy : public InstanceStrategy {
 public:
  ServiceInstanceStrategy(StrategyContext& ctx, const KindStrategy& compute)
      : InstanceStrategy(ctx), compute_(compute) {}

  void PrepareForUpdate(const Target& t, const json::object& current,
                        json::object& next) const override {
    InstanceStrategy::PrepareForUpdate(t, current, next);
    // Defaulted by the server (auto-create compute): a manifest without it changes nothing.
    if (!FindPath(next, "spec.computeRef") && FindPath(current, "spec.computeRef"))
      next["spec"].as_object()["computeRef"] = ObjectAt(current, "spec.computeRef");
  }

 protected:
  absl::Status AdmitMore(const Target& t, const json::object* current,
                         const json::object& profile_spec, json::object& next,
                         std::vector<store::Write>* writes) const override;

 private:
  // A computeRef the client set: own or shared in, selected by the computeSelector.
  absl::Status CheckCompute(const Target& t, const json::object& profile_spec,
                            const std::string& name, const model::ObjectRef& ref) const;
  // The compute instance the service profile creates for `next` (appended to `writes`).
  absl::Status CreateComputeFor(const Target& t, const json::object& profile_spec,
                                json::object& next, std::vector<store::Write>* writes) const;
  absl::StatusOr<json::object> ComputeFor(const Target& t, const json::object& profile_spec,
                                          const json::object& next, const std::string& cname) const;

  const KindStrategy& compute_;
};

absl::Status ServiceInstanceStrategy::AdmitMore(const Target& t, const json::object* current,
                                                const json::object& profile_spec,
                                                json::object& next,
                                                std::vector<store::Write>* writes) const {
  const bool lifecycle_changed =
      !current || ObjectAt(*current, "spec.lifecycle") != ObjectAt(next, "spec.lifecycle");
  RETURN_IF_ERROR(
      ApplyInstanceLifecycle(kServiceInstanceKind, profile_spec, lifecycle_changed, next));
  ASSIGN_OR_RETURN(model::Instance service, model::DecodeInstance(next));
  std::optional<model::Instance> was;
  if (current) {
    ASSIGN_OR_RETURN(was, model::DecodeInstance(*current));
  }
  const std::string& name = service.metadata.name;
  json::object& spec = model::EnsureObject(next, "spec");
  if (service.compute_name.empty()) {
    if (was && !was->compute_name.empty()) {
      // Set by the server (auto-create) or before: a client leaving it out keeps it, as
      // Kubernetes keeps defaulted fields.
      spec["computeRef"] = ObjectAt(*current, "spec.computeRef");
      return absl::OkStatus();
    }
    model::ProfileSpec profile = model::DecodeProfileSpec(profile_spec, service.profile_ns);
    if (!profile.auto_create_compute)
      return InvalidError(kServiceInstanceKind, name,
                          {{"spec.computeRef.name",
                            "Required value: name the compute instance the service runs on (the "
                            "service profile does not create one)",
                            "FieldValueRequired"}});
    return CreateComputeFor(t, profile_spec, next, writes);
  }
  const model::ObjectRef compute{service.compute_ns, service.compute_name};
  if (was && model::ObjectRef{was->compute_ns, was->compute_name} == compute)
    return absl::OkStatus();
  if (was && model::WasEverDeployed(*current))
    return InvalidError(kServiceInstanceKind, name,
                        {{"spec.computeRef",
                          "Forbidden: the compute instance can only be changed before the service "
                          "is first deployed",
                          "FieldValueForbidden"}});
  if (was) model::EnsureObject(next, "status").erase("computeCreated");
  return CheckCompute(t, profile_spec, name, compute);
}

absl::Status ServiceInstanceStrategy::CheckCompute(const Target& t,
                                                   const json::object& profile_spec,
                                                   const std::string& name,
                                                   const model::ObjectRef& ref) const {
  ASSIGN_OR_RETURN(json::object stored,
                   ResolveRef(ctx_, t, kServiceInstanceKind, name, "computeRef",
                              kComputeInstanceKind, ref.ns, ref.name));
  // The service runs only on compute whose profile its computeSelector selects.
  model::LabelSelector selector = model::ComputeSelector(profile_spec);
  if (selector.Empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(model::Instance compute, model::DecodeInstance(stored));
  auto cprofile = ctx_.store.Get(kComputeProfileKind, compute.profile_ns, compute.profile_name);
  std::map<std::string, std::string> labels;
  if (cprofile.ok()) labels = model::LabelsOf(*cprofile);
  if (selector.Matches(labels)) return absl::OkStatus();
  return InvalidError(
      kServiceInstanceKind, name,
      {{"spec.computeRef",
        "compute instance " + ref.name + " runs compute profile " + compute.profile_name +
            ", which the service profile's computeSelector (" + model::DescribeSelector(selector) +
            ") does not select",
        "FieldValueInvalid"}});
}

absl::StatusOr<json::object> ServiceInstanceStrategy::ComputeFor(const Target& t,
                                                                 const json::object& profile_spec,
                                                                 const json::object& next,
                                                                 const std::string& cname) const {
  ASSIGN_OR_RETURN(model::Instance service, model::DecodeInstance(next));
  const std::string& name = service.metadata.name;
  const std::string& display = service.display_name.empty() ? name : service.display_name;
  json::object compute_spec{
      {"displayName", display + " (compute)"},
      {"description", "Created for service instance " + name + "; deleted with it."},
      {"profileRef", ObjectAt(profile_spec, "autoCreateCompute.profileRef")}};
  json::object vars = model::DecodeProfileSpec(profile_spec, t.ns).auto_create_compute->variables;
  model::NormalizeVariableValues(vars);
  if (!vars.empty()) compute_spec["variables"] = std::move(vars);
  json::object status;
  compute_.PrepareForCreate(t, status);
  return json::object{
      {"apiVersion", model::kApiVersion},
      {"kind", kComputeInstanceKind},
      {"metadata", json::object{{"name", cname},
                                {"namespace", t.ns},
                                {"uid", NewUid()},
                                {"generation", 1},
                                {"creationTimestamp", ctx_.Now()},
                                {"labels", json::object{{kCreatedForLabel, name}}}}},
      {"spec", std::move(compute_spec)},
      {"status", std::move(status)}};
}

absl::Status ServiceInstanceStrategy::CreateComputeFor(const Target& t,
                                                       const json::object& profile_spec,
                                                       json::object& next,
                                                       std::vector<store::Write>* writes) const {
  ASSIGN_OR_RETURN(model::ObjectMeta meta, model::DecodeObjectMeta(next));
  const std::string& name = meta.name;
  const std::string suffix = "-compute";
  if (name.size() + suffix.size() > 63)
    return InvalidError(kServiceInstanceKind, name,
                        {{"metadata.name",
                          "Too long: the service profile creates a compute instance named "
                          "NAME-compute, so the name may have at most 55 characters",
                          "FieldValueTooLong"}});
  std::string cname = name + suffix;
  if (ctx_.store.Get(kComputeInstanceKind, t.ns, cname).ok())
    return ConflictError("service instance " + name + " would create compute instance " + cname +
                             ", which already exists; name a compute instance in "
                             "spec.computeRef or choose another name",
                         "AlreadyExists");
  ASSIGN_OR_RETURN(json::object compute, ComputeFor(t, profile_spec, next, cname));
  Target ct = t;
  ct.kind = model::FindKindByName(kComputeInstanceKind);
  ct.name = cname;
  // The compute instance counts against instancesPerUser like one created directly.
  RETURN_IF_ERROR(compute_.BeforeCreate(ct, writes));
  if (absl::Status checked = compute_.Admit(ct, nullptr, compute, writes); !checked.ok()) {
    // Say that it is about the compute instance the profile would create.
    return InvalidError(kServiceInstanceKind, name,
                        {{"spec.profileRef",
                          "the service profile's autoCreateCompute cannot create compute "
                          "instance " +
                              cname + ": " + std::string(checked.message())}});
  }
  writes->push_back({store::Write::Op::kCreate, kComputeInstanceKind, std::move(compute), 0, 0});
  model::EnsureObject(next, "spec")["computeRef"] = json::object{{"name", cname}};
  model::EnsureObject(next, "status")["computeCreated"] = true;
  return absl::OkStatus();
}

}  // namespace

std::unique_ptr<KindStrategy> NewServiceInstanceStrategy(StrategyContext& context,
                                                         const KindStrategy& compute) {
  return std::make_unique<ServiceInstanceStrategy>(context, compute);
}

}  // namespace gantry::api
