// Role bindings: exactly one of spec.user (a user that must exist) and spec.group (a
// directory group: every member the directory reports at login, docs/security.md "LDAP").
#include "api/strategy.h"
#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/projects.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

class RoleBindingStrategy : public KindStrategy {
 public:
  explicit RoleBindingStrategy(StrategyContext& ctx) : ctx_(ctx) {}

  absl::Status Admit(const Target& t, const json::object*, json::object& next,
                     std::vector<store::Write>*) const override {
    ASSIGN_OR_RETURN(const model::RoleBinding binding, model::DecodeRoleBinding(next));
    const std::string& user = binding.user;
    const std::string& group = binding.group;
    const std::string& name = binding.metadata.name;
    if (user.empty() && group.empty())
      return InvalidError(t.kind->kind, name,
                          {{"spec.user", "Required value", "FieldValueRequired"}});
    if (!user.empty() && !group.empty())
      return InvalidError(t.kind->kind, name,
                          {{"spec.group", "Forbidden: a binding names a user or a group, not both",
                            "FieldValueForbidden"}});
    if (!group.empty()) {
      if (group.size() > 256)
        return InvalidError(
            t.kind->kind, name,
            {{"spec.group", "Too long: must have at most 256 bytes", "FieldValueTooLong"}});
      return absl::OkStatus();
    }
    auto u = ctx_.store.Get(kUserKind, "", user);
    if (u.ok()) return absl::OkStatus();
    if (!absl::IsNotFound(u.status())) return u.status();
    return InvalidError(t.kind->kind, name,
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
