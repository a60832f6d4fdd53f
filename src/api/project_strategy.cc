// Projects: Active from creation; deleted only when empty.
#include "api/strategy.h"
#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

class ProjectStrategy : public KindStrategy {
 public:
  explicit ProjectStrategy(StrategyContext& ctx) : ctx_(ctx) {}

  void PrepareForCreate(const Target&, json::object& status) const override {
    status["phase"] = "Active";
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
