// The Authenticator's LDAP part (authenticator.h, "With a directory"): password logins of
// users without a local password, first-login creation of their User, and the periodic
// re-check of what the directory says about them.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "auth/authenticator.h"
#include "auth/credentials.h"
#include "auth/oidc_provider.h"
#include "common/errors.h"
#include "common/ids.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "model/label_selector.h"

namespace gantry::auth {
namespace {

namespace json = boost::json;
using model::GetString;

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return !s.empty() && std::find(v.begin(), v.end(), s) != v.end();
}

// Why what the directory said keeps `user` out ("" when it lets them in).
std::string Refusal(const std::string& user, const std::optional<DirectoryEntry>& entry,
                    const std::string& allowed_group) {
  if (!entry) return "user \"" + user + "\" is no longer in the organisation's directory";
  if (!allowed_group.empty() && !Contains(entry->groups, allowed_group))
    return "user \"" + user +
           "\" is not in the directory group that may use Gantry; ask an administrator to add "
           "you to it";
  return "";
}

// A User's spec and status after what the directory said: display name, email and groups
// from the entry, org-admin from --org-admin-group, and the refusal (if any).
void Merge(const std::optional<DirectoryEntry>& entry, const std::string& refusal,
           const AuthOptions& o, const std::string& source, json::object& spec,
           json::object& status) {
  spec["source"] = source;
  if (entry) {
    if (!entry->display_name.empty())
      spec["displayName"] = entry->display_name.substr(0, kMaxIdentityText);
    if (!entry->email.empty()) spec["email"] = entry->email.substr(0, kMaxIdentityText);
    if (!o.org_admin_group.empty()) {
      if (Contains(entry->groups, o.org_admin_group))
        spec["orgRole"] = "org-admin";
      else if (GetString(spec, "orgRole") == "org-admin")
        spec["orgRole"] = "";
    }
    json::array groups;
    for (const std::string& g : entry->groups)
      if (groups.size() < kMaxIdentityGroups && g.size() <= kMaxIdentityText)
        groups.emplace_back(g);
    status["groups"] = std::move(groups);
  }
  if (refusal.empty())
    status.erase("directoryRefusal");
  else
    status["directoryRefusal"] = refusal;
}

}  // namespace

absl::StatusOr<Subject> Authenticator::DirectoryLogin(std::string_view user,
                                                      std::string_view password,
                                                      const std::string& pair_key,
                                                      const std::string& addr_key) {
  auto refuse = [&](const std::string& message) {
    RecordFailure(pair_key, options_.login_failures);
    RecordFailure(addr_key, options_.login_address_failures);
    return UnauthorizedError(message);
  };
  std::string name(user);
  // A name no User may have is no login (and is never sent to the directory).
  if (model::Dns1123LabelError(name)) return refuse(kInvalidLogin);
  auto existing = store_.Get("User", "", name);
  if (!existing.ok() && !absl::IsNotFound(existing.status())) return existing.status();
  // A local user without a password (tokens only) is not taken over by a directory entry.
  if (existing.ok() && GetString(*existing, "spec.source") != kSourceLdap)
    return refuse(kInvalidLogin);
  auto entry = options_.directory->Authenticate(name, password);
  if (absl::IsUnauthenticated(entry.status())) return refuse(kInvalidLogin);
  RETURN_IF_ERROR(entry.status());
  ASSIGN_OR_RETURN(std::string refusal,
                   ApplyDirectory(name, *std::move(entry), kSourceLdap, options_.allowed_group));
  if (!refusal.empty()) return refuse(refusal);
  {
    // After ApplyDirectory's commit, whose OnCommit dropped the entry.
    std::lock_guard lock(cache_mu_);
    directory_due_[name] = clock_.Now() + options_.directory_recheck;
  }
  ASSIGN_OR_RETURN(Subject subject, SubjectFor(name));
  std::lock_guard lock(mu_);
  failures_.erase(pair_key);
  return subject;
}

absl::StatusOr<std::string> Authenticator::ApplyDirectory(
    const std::string& user, const std::optional<DirectoryEntry>& entry, const std::string& source,
    const std::string& allowed_group) {
  const std::string refusal = Refusal(user, entry, allowed_group);
  absl::Status last;
  for (int attempt = 0; attempt < 2; ++attempt) {  // again after a concurrent change
    auto current = store_.Get("User", "", user);
    if (!current.ok() && !absl::IsNotFound(current.status())) return current.status();
    json::object next;
    if (current.ok()) {
      if (GetString(*current, "spec.source") != source) return std::string(kInvalidLogin);
      next = *current;
    } else {
      if (!refusal.empty()) return refusal;  // never created only to be refused
      next = json::object{{"apiVersion", "paas.gantry.dev/v1"},
                          {"kind", "User"},
                          {"metadata", json::object{{"name", user},
                                                    {"namespace", ""},
                                                    {"uid", NewUid()},
                                                    {"generation", 1},
                                                    {"creationTimestamp", Now()}}}};
    }
    model::EnsureObject(next, "spec");
    model::EnsureObject(next, "status");  // both first: an insertion moves the others
    Merge(entry, refusal, options_, source, next["spec"].as_object(), next["status"].as_object());
    if (current.ok() && next == *current) return refusal;
    if (current.ok() && next["spec"] != (*current)["spec"])
      next["metadata"].as_object()["generation"] =
          model::GetInt(*current, "metadata.generation", 1) + 1;
    int64_t rv =
        current.ok() ? std::stoll(GetString(*current, "metadata.resourceVersion", "0")) : 0;
    store::Write w{current.ok() ? store::Write::Op::kUpdate : store::Write::Op::kCreate, "User",
                   std::move(next), rv, 0};
    auto out = store_.Commit({std::move(w)});
    if (out.ok()) {
      if (!current.ok())
        spdlog::info("created user {} (source {}) at its first login", user, source);
      return refusal;
    }
    last = out.status();
  }
  return last;
}

absl::Status Authenticator::RecheckDirectory(const std::string& user) {
  if ((options_.directory == nullptr && options_.sso == nullptr) || user == kBootstrapUser)
    return absl::OkStatus();
  const auto now = clock_.Now();
  {
    std::lock_guard lock(cache_mu_);
    auto it = directory_due_.find(user);
    if (it != directory_due_.end() && it->second > now) return absl::OkStatus();
  }
  auto obj = store_.Get("User", "", user);
  if (!obj.ok()) return absl::IsNotFound(obj.status()) ? absl::OkStatus() : obj.status();
  auto due = std::chrono::system_clock::time_point::max();  // not a directory user
  const std::string source = GetString(*obj, "spec.source");
  if (source == kSourceOidc && options_.sso != nullptr) {
    ASSIGN_OR_RETURN(due, RecheckSso(*obj));
  } else if (source == kSourceLdap && options_.directory != nullptr) {
    auto entry = options_.directory->Lookup(user);
    if (entry.ok()) {
      RETURN_IF_ERROR(ApplyDirectory(user, *entry, kSourceLdap, options_.allowed_group).status());
      due = now + options_.directory_recheck;
    } else {
      spdlog::warn("LDAP: cannot re-check user {} ({}); their access stays as it was", user,
                   std::string(entry.status().message()));
      due = now + std::min(options_.directory_recheck, kRetryUnreachable);
    }
  }
  std::lock_guard lock(cache_mu_);
  if (directory_due_.size() >= kMaxCached) directory_due_.clear();
  directory_due_[user] = due;
  return absl::OkStatus();
}

}  // namespace gantry::auth
