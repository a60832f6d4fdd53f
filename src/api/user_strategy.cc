// Users: the password goes to the credential store (hashed), never into the User; only an
// org-admin changes spec.orgRole or spec.disabled; the last enabled org-admin stays one.
#include "api/strategy.h"
#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"

namespace gantry::api {
namespace {

namespace json = boost::json;
using model::GetString;

constexpr char kLastOrgAdmin[] =
    " is the last enabled org-admin; make another user org-admin first";

class UserStrategy : public KindStrategy {
 public:
  explicit UserStrategy(StrategyContext& ctx) : ctx_(ctx) {}

  absl::Status Admit(const Target& t, const json::object* current, json::object& next,
                     std::vector<store::Write>* writes) const override {
    RETURN_IF_ERROR(TakePassword(t, current, next, writes));
    const json::object& spec = ObjectAt(next, "spec");
    if (current && GetString(*current, "spec.source") != GetString(spec, "source"))
      return InvalidError(
          kUserKind, GetString(next, "metadata.name"),
          {{"spec.source", "Invalid value: field is immutable", "FieldValueInvalid"}});
    std::string old_role = current ? GetString(*current, "spec.orgRole") : "";
    std::string new_role = GetString(spec, "orgRole");
    bool old_disabled = current && model::GetBool(*current, "spec.disabled");
    bool new_disabled = model::GetBool(next, "spec.disabled");
    if ((old_role != new_role || old_disabled != new_disabled) && !t.caller_is_org_admin)
      return ForbiddenError(
          "users.paas.gantry.dev is forbidden: only an org-admin may change "
          "spec.orgRole or spec.disabled");
    if (current && old_role == "org-admin" && !old_disabled &&
        (new_role != "org-admin" || new_disabled)) {
      ASSIGN_OR_RETURN(int64_t admins, EnabledOrgAdmins(ctx_));
      if (admins <= 1)
        return ConflictError("user " + GetString(next, "metadata.name") + kLastOrgAdmin,
                             "LastOrgAdmin");
    }
    return absl::OkStatus();
  }

  absl::Status ValidateDelete(const Target& t, const json::object& current,
                              std::vector<store::Write>* writes) const override {
    if (GetString(current, "spec.orgRole") == "org-admin" &&
        !model::GetBool(current, "spec.disabled")) {
      ASSIGN_OR_RETURN(int64_t admins, EnabledOrgAdmins(ctx_));
      if (admins <= 1) return ConflictError("user " + t.name + kLastOrgAdmin, "LastOrgAdmin");
    }
    if (ctx_.credentials) {
      ASSIGN_OR_RETURN(auto forget, ctx_.credentials->ForgetWrites(t.name));
      for (auto& w : forget) writes->push_back(std::move(w));
    }
    return absl::OkStatus();
  }

 private:
  // Moves spec.password (and the spec.currentPassword a change of one's own needs) out of
  // `next` into credential writes.
  absl::Status TakePassword(const Target& t, const json::object* current, json::object& next,
                            std::vector<store::Write>* writes) const {
    std::string name = GetString(next, "metadata.name");
    json::object& spec = model::EnsureObject(next, "spec");
    std::string current_password = GetString(spec, "currentPassword");
    bool has_current = spec.erase("currentPassword") > 0;
    const json::value* pw = spec.if_contains("password");
    if (!pw) {
      if (!has_current) return absl::OkStatus();
      return InvalidError(
          kUserKind, name,
          {{"spec.currentPassword", "Forbidden: only with spec.password, to change it",
            "FieldValueForbidden"}});
    }
    std::string password = pw->is_string() ? std::string(pw->get_string()) : "";
    spec.erase("password");
    if (!ctx_.credentials) return BadRequestError("this server does not keep passwords");
    if (current) {
      ASSIGN_OR_RETURN(auto change, ctx_.credentials->PasswordChangeWrites(
                                        {name, password, current_password, t.caller,
                                         t.caller_session, t.caller_source}));
      for (auto& w : change) writes->push_back(std::move(w));
      return absl::OkStatus();
    }
    auto write = ctx_.credentials->PasswordWrite(name, password);
    if (!write.ok())
      return InvalidError(kUserKind, name,
                          {{"spec.password", std::string(write.status().message())}});
    writes->push_back(*std::move(write));
    return absl::OkStatus();
  }

  StrategyContext& ctx_;
};

}  // namespace

std::unique_ptr<KindStrategy> NewUserStrategy(StrategyContext& context) {
  return std::make_unique<UserStrategy>(context);
}

}  // namespace gantry::api
