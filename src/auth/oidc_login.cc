// The Authenticator's single sign-on part (authenticator.h, SsoLogin): what an OIDC provider
// said about a user, recorded on their User the way directory_login.cc records LDAP's (one
// way: ApplyDirectory), then a session.
#include <spdlog/spdlog.h>

#include "auth/authenticator.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"

namespace gantry::auth {

absl::StatusOr<LoginResult> Authenticator::SsoLogin(const SsoIdentity& who,
                                                    const std::string& allowed_group,
                                                    std::string_view source, bool open_session) {
  auto existing = store_.Get("User", "", who.user);
  if (!existing.ok() && !absl::IsNotFound(existing.status())) return existing.status();
  if (existing.ok() && model::GetString(*existing, "spec.source") != kSourceOidc)
    return UnauthorizedError("user \"" + who.user +
                             "\" exists in Gantry and does not log in by single sign-on; log "
                             "in with their password, or ask an administrator");
  DirectoryEntry entry{"", who.display_name, who.email, who.groups};
  ASSIGN_OR_RETURN(std::string refusal,
                   ApplyDirectory(who.user, entry, kSourceOidc, allowed_group));
  if (!refusal.empty()) return UnauthorizedError(refusal);
  ASSIGN_OR_RETURN(Subject subject, SubjectFor(who.user));
  if (!open_session) {
    LoginResult out;
    out.identity.subject = std::move(subject);
    return out;
  }
  return OpenSession(std::move(subject), source);
}

}  // namespace gantry::auth
