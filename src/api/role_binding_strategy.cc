// Role bindings: the user they bind must exist.
#include "api/strategy.h"
#include "api/strategy_support.h"
#include "common/errors.h"
#include "model/codec.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

class RoleBindingStrategy : public KindStrategy {
 public:
  explicit RoleBindingStrategy(StrategyContext& ctx) : ctx_(ctx) {}

  absl::Status Admit(const Target& t, const json::object*, json::object& next,
                     std::vector<store::Write>*) const override {
    std::string user = model::GetString(next, "spec.user");
    auto u = ctx_.store.Get(kUserKind, "", user);
    if (u.ok()) return absl::OkStatus();
    if (!absl::IsNotFound(u.status())) return u.status();
    return InvalidError(t.kind->kind, model::GetString(next, "metadata.name"),
                        {{"spec.user", "user \"" + user + "\" not found", "FieldValueNotFound"}});
  }

 private:
  StrategyContext& ctx_;
};

}  // namespace

std::unique_ptr<KindStrategy> NewRoleBindingStrategy(StrategyContext& context) {
  return std::make_unique<RoleBindingStrategy>(context);
}

}  // namespace gantry::api
