// Users: the password goes to the credential store (hashed), never into the User; only an
// org-admin changes spec.orgRole or spec.disabled; the last enabled org-admin stays one.
#include "api/strategy.h"
#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "model/projects.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

constexpr char kLastOrgAdmin[] =
    " is the last enabled org-admin; make another user org-admin first";

class UserStrategy : public KindStrategy {
 public:
  explicit UserStrategy(StrategyContext& ctx) : ctx_(ctx) {}

  absl::Status Admit(const Target& t, const json::object* current, json::object& next,
                     std::vector<store::Write>* writes) const override {
    RETURN_IF_ERROR(TakePassword(t, current, next, writes));
    ASSIGN_OR_RETURN(const model::User user, model::DecodeUser(next));
    model::User was;  // a new user: a member, enabled, local
    if (current) {
      ASSIGN_OR_RETURN(was, model::DecodeUser(*current));
    }
    if (current && was.source != user.source)
      return InvalidError(
          kUserKind, user.metadata.name,
          {{"spec.source", "Invalid value: field is immutable", "FieldValueInvalid"}});
    if (current && !was.source.empty()) RETURN_IF_ERROR(KeepDirectoryFields(*current, next));
    if ((was.org_role != user.org_role || was.disabled != user.disabled) && !t.caller_is_org_admin)
      return ForbiddenError(
          "users.paas.gantry.dev is forbidden: only an org-admin may change "
          "spec.orgRole or spec.disabled");
    if (current && was.EnabledOrgAdmin() && !user.EnabledOrgAdmin()) {
      ASSIGN_OR_RETURN(int64_t admins, EnabledOrgAdmins(ctx_));
      if (admins <= 1)
        return ConflictError("user " + user.metadata.name + kLastOrgAdmin, "LastOrgAdmin");
    }
    return absl::OkStatus();
  }

  absl::Status ValidateDelete(const Target& t, const json::object& current,
                              std::vector<store::Write>* writes) const override {
    ASSIGN_OR_RETURN(const model::User user, model::DecodeUser(current));
    if (user.EnabledOrgAdmin()) {
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
  // A directory user's display name and email come from the directory at each login (the
  // next one would overwrite a local edit): a change here is refused, naming the field.
  static absl::Status KeepDirectoryFields(const json::object& current, const json::object& next) {
    std::vector<FieldCause> causes;
    for (const char* field : {"displayName", "email"}) {
      const std::string path = std::string("spec.") + field;
      if (model::GetString(current, path) == model::GetString(next, path)) continue;
      causes.push_back({path,
                        "Invalid value: set by the directory (spec.source " +
                            model::GetString(current, "spec.source") +
                            ") at each login; change it there",
                        "FieldValueInvalid"});
    }
    if (causes.empty()) return absl::OkStatus();
    return InvalidError(kUserKind, model::GetString(current, "metadata.name"), std::move(causes));
  }

  // Moves spec.password (and the spec.currentPassword a change of one's own needs) out of
  // `next` into credential writes.
  absl::Status TakePassword(const Target& t, const json::object* current, json::object& next,
                            std::vector<store::Write>* writes) const {
    ASSIGN_OR_RETURN(const model::ObjectMeta meta, model::DecodeObjectMeta(next));
    const std::string& name = meta.name;
    json::object& spec = model::EnsureObject(next, "spec");
    // Request fields the User does not keep: read here, at the edge, and removed.
    const json::value* cp = spec.if_contains("currentPassword");
    std::string current_password = cp && cp->is_string() ? std::string(cp->get_string()) : "";
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
