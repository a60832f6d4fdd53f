// Projects: Active from creation; deleted only when empty.
#include "api/strategy.h"
#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "engine/fleet_gpus.h"
#include "model/budget.h"
#include "model/codec.h"
#include "model/scheduling.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

class ProjectStrategy : public KindStrategy {
 public:
  explicit ProjectStrategy(StrategyContext& ctx) : ctx_(ctx) {}

  void PrepareForCreate(const Target&, json::object& status) const override {
    status["phase"] = "Active";
  }

  // spec.quota.guaranteedGpus (model/scheduling.h) and spec.budget (model/budget.h): 422
  // naming the field.
  absl::Status Admit(const Target& t, const json::object*, json::object& next,
                     std::vector<store::Write>*) const override {
    std::vector<FieldCause> causes;
    const json::value* spec = next.if_contains("spec");
    if (spec && spec->is_object()) {
      model::ValidateGuarantees(spec->get_object(), &causes);
      model::ValidateBudget(spec->get_object(), &causes);
    }
    if (causes.empty()) return absl::OkStatus();
    return InvalidError(t.kind->kind, model::GetString(next, "metadata.name"), std::move(causes));
  }

  // Guarantees summed over the projects above the fleet's GPUs of a type this project is
  // guaranteed (model::OvercommittedGuarantees, engine::FleetGpus): allowed, and said.
  std::vector<std::string> WarningsOnWrite(const Target&,
                                           const json::object& written) const override {
    std::map<std::string, int64_t> own = model::DecodeGuaranteedGpus(written);
    if (!ctx_.gpu_warnings || own.empty()) return {};
    store::ListOptions q;
    q.kind = "Project";
    auto projects = ctx_.store.List(q);
    auto fleet = engine::FleetGpus(ctx_.store, ctx_.clock.Now());
    // A warning is not worth failing a write that happened.
    if (!projects.ok() || !fleet.ok()) return {};
    model::GuaranteesByProject guarantees = model::GuaranteesOf(projects->items);
    guarantees[model::GetString(written, "metadata.name")] = own;
    std::string words =
        model::OvercommitWords(own, model::OvercommittedGuarantees(guarantees, *fleet));
    if (words.empty()) return {};
    return {"spec.quota.guaranteedGpus: " + words};
  }

  absl::Status ValidateDelete(const Target& t, const json::object&,
                              std::vector<store::Write>*) const override {
    std::string contents;
    for (const auto& k : model::AllKinds()) {
      if (!k.namespaced) continue;
      ASSIGN_OR_RETURN(int64_t n, ctx_.store.Count(k.kind, t.name, {}));
      if (n > 0) contents += (contents.empty() ? "" : ", ") + std::to_string(n) + " " + k.plural;
    }
    if (!contents.empty())
      return ConflictError(
          "project " + t.name + " is not empty (" + contents + "); delete what is in it first",
          "ProjectNotEmpty");
    return absl::OkStatus();
  }

 private:
  StrategyContext& ctx_;
};

}  // namespace

std::unique_ptr<KindStrategy> NewProjectStrategy(StrategyContext& context) {
  return std::make_unique<ProjectStrategy>(context);
}

}  // namespace gantry::api
