// The Authenticator's single sign-on part (authenticator.h, SsoLogin): what an OIDC provider
// said about a user, recorded on their User the way directory_login.cc records LDAP's (one
// way: ApplyDirectory), then a session; and the re-check of that user through the refresh
// token their last login left (OidcGrant), which RecheckDirectory calls for SSO users.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "auth/authenticator.h"
#include "auth/credentials.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"

namespace gantry::auth {
namespace {

namespace json = boost::json;
using model::GetString;
using TimePoint = std::chrono::system_clock::time_point;

// The refresh token is sealed for the User it belongs to: a grant left by a deleted user
// never unseals for a new user of the same name.
std::string GrantContext(const std::string& user, const std::string& user_uid) {
  return SealContext(kOidcGrant, "", user, user_uid, "refreshToken");
}

DirectoryEntry EntryOf(const SsoIdentity& who) {
  return DirectoryEntry{"", who.display_name, who.email, who.groups};
}

}  // namespace

absl::StatusOr<LoginResult> Authenticator::SsoLogin(const OidcProvider::Finished& login,
                                                    std::string_view source, bool open_session) {
  const SsoIdentity& who = login.identity;
  const std::string allowed_group = options_.sso ? options_.sso->options().allowed_group : "";
  auto existing = store_.Get("User", "", who.user);
  if (!existing.ok() && !absl::IsNotFound(existing.status())) return existing.status();
  if (existing.ok() && GetString(*existing, "spec.source") != kSourceOidc)
    return UnauthorizedError("user \"" + who.user +
                             "\" exists in Gantry and does not log in by single sign-on; log "
                             "in with their password, or ask an administrator");
  ASSIGN_OR_RETURN(std::string refusal,
                   ApplyDirectory(who.user, EntryOf(who), kSourceOidc, allowed_group));
  if (!refusal.empty()) return UnauthorizedError(refusal);
  ASSIGN_OR_RETURN(json::object user, store_.Get("User", "", who.user));
  RETURN_IF_ERROR(KeepGrant(user, login.grant));
  {
    // After ApplyDirectory's commit, whose OnCommit dropped the entry: this login is a check.
    std::lock_guard lock(cache_mu_);
    directory_due_[who.user] = login.grant.refresh_token.empty()
                                   ? TimePoint::max()
                                   : clock_.Now() + options_.sso->options().recheck;
  }
  ASSIGN_OR_RETURN(Subject subject, SubjectFor(who.user));
  if (!open_session) {
    LoginResult out;
    out.identity.subject = std::move(subject);
    return out;
  }
  return OpenSession(std::move(subject), source);
}

absl::Status Authenticator::KeepGrant(const json::object& user, const SsoGrant& grant) {
  const std::string name = GetString(user, "metadata.name");
  auto current = store_.Get(kOidcGrant, "", name);
  if (!current.ok() && !absl::IsNotFound(current.status())) return current.status();
  if (grant.refresh_token.empty() || options_.secrets == nullptr) {
    if (!current.ok()) return absl::OkStatus();
    auto deleted =
        store_.Commit({store::Write{store::Write::Op::kDelete, kOidcGrant, *current, 0, 0}});
    return deleted.ok() || absl::IsNotFound(deleted.status()) ? absl::OkStatus() : deleted.status();
  }
  const std::string uid = GetString(user, "metadata.uid");
  json::object record{
      {"kind", kOidcGrant},
      {"metadata", json::object{{"name", name}, {"namespace", ""}}},
      {"spec", json::object{{"userUid", uid},
                            {"refreshToken",
                             options_.secrets->Seal(grant.refresh_token, GrantContext(name, uid))},
                            {"subject", grant.subject},
                            {"nonce", grant.nonce}}},
      {"status", json::object{{"checkedAt", Now()}}}};
  // Replaced whatever its resourceVersion: the newest login's grant is the one to keep.
  auto op = current.ok() ? store::Write::Op::kUpdate : store::Write::Op::kCreate;
  auto kept = store_.Commit({store::Write{op, kOidcGrant, std::move(record), 0, 0}});
  return kept.status();
}

absl::StatusOr<TimePoint> Authenticator::RecheckSso(const json::object& user) {
  const std::string name = GetString(user, "metadata.name");
  const auto now = clock_.Now();
  const auto retry = now + std::min(options_.sso->options().recheck, kRetryUnreachable);
  auto grant = store_.Get(kOidcGrant, "", name);
  if (absl::IsNotFound(grant.status())) return TimePoint::max();  // nothing to ask with
  RETURN_IF_ERROR(grant.status());
  if (auto checked = ParseTimestamp(GetString(*grant, "status.checkedAt"));
      checked && *checked + options_.sso->options().recheck > now)
    return *checked + options_.sso->options().recheck;
  // Claim this check, so that one request on one replica refreshes the grant (a provider that
  // rotates refresh tokens may revoke them all when one is used twice).
  json::object claimed = *grant;
  model::EnsureObject(claimed, "status");
  claimed["status"].as_object()["checkedAt"] = Now();
  const int64_t rv = std::stoll(GetString(*grant, "metadata.resourceVersion", "0"));
  auto claim = store_.Commit({store::Write{store::Write::Op::kUpdate, kOidcGrant, claimed, rv, 0}});
  if (absl::IsAborted(claim.status()) || absl::IsNotFound(claim.status()))
    return retry;  // another request is asking, or a login replaced the grant
  RETURN_IF_ERROR(claim.status());

  const std::string uid = GetString(user, "metadata.uid");
  auto token =
      options_.secrets->Unseal(GetString(*grant, "spec.refreshToken"), GrantContext(name, uid));
  if (!token.ok() || GetString(*grant, "spec.userUid") != uid) {
    spdlog::warn(
        "OIDC: the grant kept for user {} is not theirs (an earlier user of that name?); "
        "it is dropped, and they are re-checked at their next SSO login",
        name);
    (void)store_.Commit({store::Write{store::Write::Op::kDelete, kOidcGrant, claimed, 0, 0}});
    return TimePoint::max();
  }
  auto refreshed = options_.sso->Refresh(
      {*token, GetString(*grant, "spec.subject"), GetString(*grant, "spec.nonce")});
  const std::string& allowed_group = options_.sso->options().allowed_group;
  if (absl::IsNotFound(refreshed.status())) {
    spdlog::info("OIDC: {}: user {} is refused from now on",
                 std::string(refreshed.status().message()), name);
    RETURN_IF_ERROR(ApplyDirectory(name, std::nullopt, kSourceOidc, allowed_group).status());
    (void)store_.Commit({store::Write{store::Write::Op::kDelete, kOidcGrant, claimed, 0, 0}});
    return TimePoint::max();
  }
  if (!refreshed.ok()) {
    spdlog::warn("OIDC: cannot re-check user {} ({}); their access stays as it was", name,
                 std::string(refreshed.status().message()));
    return retry;
  }
  if (refreshed->identity) {
    // The provider now names the subject differently: the grant no longer speaks for `name`.
    std::optional<DirectoryEntry> entry;
    if (refreshed->identity->user == name) entry = EntryOf(*refreshed->identity);
    RETURN_IF_ERROR(ApplyDirectory(name, entry, kSourceOidc, allowed_group).status());
  }
  if (!refreshed->refresh_token.empty()) {  // rotated: only the new one works from now on
    auto rotated = store_.Get(kOidcGrant, "", name);
    if (rotated.ok()) {
      (*rotated)["spec"].as_object()["refreshToken"] =
          options_.secrets->Seal(refreshed->refresh_token, GrantContext(name, uid));
      const int64_t at = std::stoll(GetString(*rotated, "metadata.resourceVersion", "0"));
      (void)store_.Commit(
          {store::Write{store::Write::Op::kUpdate, kOidcGrant, *std::move(rotated), at, 0}});
    }
  }
  return now + options_.sso->options().recheck;
}

}  // namespace gantry::auth
