// OidcProvider: gantryd as an OpenID Connect relying party (gantryd --oidc-issuer; issue 21;
// docs/sso.md). The authorization code flow with PKCE (S256), state and nonce:
//
//   Begin     a fresh state, nonce and PKCE verifier, kept here (in memory, 10 minutes, used
//             once); returns the provider's authorization URL. The router also puts the state
//             in a cookie, so that a callback is only accepted from the browser that began.
//   Finish    the callback's code and state: the state must be one Begin issued, unused, and
//             equal to the cookie's; the code is exchanged at the token endpoint (client
//             secret by HTTP Basic, the PKCE verifier); the ID token is verified
//             (oidc_token.h) against the provider's JWKS, fetched again once when the token
//             names an unknown kid (the provider rotated its keys); the claims configured
//             (--oidc-username-claim, ...) become an SsoIdentity. The token endpoint's
//             refresh token (with scope offline_access, or where the provider gives one
//             anyway) is kept as the login's SsoGrant.
//   Refresh   later (Authenticator, every --oidc-recheck): grant_type=refresh_token with the
//             grant, so the provider says again whether the user may still sign in and what
//             their groups are now (a new ID token, checked as at the login, with the same
//             sub). A provider that refuses the grant (the user deleted or disabled there,
//             the grant revoked or expired) is NOT_FOUND.
//
// Discovery (/.well-known/openid-configuration under the issuer, whose "issuer" must equal
// --oidc-issuer) happens at the first login and again after a failure, so gantryd starts
// while its provider is down. The provider is reached with gantry's HTTP client (http://, or
// https:// checked against --oidc-ca-file or the system's CAs).
//
// Errors: UNAUTHENTICATED with a message for a person for everything a login can get wrong
// (state unknown, used or not this browser's; the provider refusing the code or gantryd's
// client secret; an ID token that fails a check); UNAVAILABLE when the provider cannot be
// reached or answers nonsense. No secret, code or token is ever put in a message or logged.
//
// Thread-safety: safe from any thread (the pending logins and discovered metadata are under
// a mutex; HTTP calls are made outside it, each on its own connection).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "auth/oidc_token.h"
#include "common/clock.h"

namespace gantry::auth {

struct OidcOptions {
  std::string issuer;         // --oidc-issuer, exactly as the provider's "issuer"
  std::string client_id;      // --oidc-client-id
  std::string client_secret;  // read from --oidc-client-secret-file
  std::string redirect_url;   // --oidc-redirect-url: https://gantry.example.com/auth/oidc/callback
  std::string scopes = "openid profile email groups";
  std::string username_claim = "preferred_username";
  std::string name_claim = "name";
  std::string email_claim = "email";
  std::string groups_claim = "groups";
  std::string allowed_group;  // --oidc-allowed-group: only its members may log in
  std::string ca_file;        // --oidc-ca-file
  // --oidc-timeout: each call to the provider (discovery, token, keys) is answered within
  // this long or fails, so a provider that hangs holds a login for no longer.
  std::chrono::seconds timeout{10};
  // --oidc-recheck: how stale what the provider said about a user may get before one of their
  // requests refreshes their grant (Authenticator; 0: every request).
  std::chrono::seconds recheck{5 * 60};
  std::chrono::seconds pending_ttl{10 * 60};
};

// What an identity source (the provider; the LDAP directory, directory_login.cc) may copy
// into a User, at most: the longest display name, email or group name, and the most groups.
inline constexpr size_t kMaxIdentityText = 256;
inline constexpr size_t kMaxIdentityGroups = 256;

// Who the provider says logged in.
struct SsoIdentity {
  std::string user;  // the username claim, as the User's name
  std::string display_name;
  std::string email;
  std::vector<std::string> groups;  // sorted
};

// What a login leaves for re-asking the provider later: its refresh token ("" when the
// provider gave none), the ID token's sub and the login's nonce (a refreshed ID token must
// name the same sub and may repeat only that nonce). The refresh token is a credential: it is
// kept sealed (auth/authenticator.h, OidcGrant) and never logged.
struct SsoGrant {
  std::string refresh_token;
  std::string subject;
  std::string nonce;
};

class OidcProvider {
 public:
  OidcProvider(OidcOptions options, const Clock& clock);

  struct Started {
    std::string authorization_url;
    std::string state;
  };
  // `for_cli`: the login was begun by `gantry login --sso` (Finish says so again).
  absl::StatusOr<Started> Begin(bool for_cli);

  struct Finished {
    SsoIdentity identity;
    SsoGrant grant;
    bool for_cli = false;
  };
  // `cookie_state`: the state cookie the browser sent ("" when none).
  absl::StatusOr<Finished> Finish(const std::string& code, const std::string& state,
                                  const std::string& cookie_state);

  struct Refreshed {
    std::optional<SsoIdentity> identity;  // nullopt: the provider sent no new ID token
    std::string refresh_token;            // a new one when the provider rotates them, else ""
  };
  // Asks the provider about `grant`'s user again. NOT_FOUND (with the provider's error code in
  // the message) when it refuses the grant or names another subject; UNAVAILABLE when it
  // cannot be reached or answers nonsense; UNAUTHENTICATED when it refuses gantryd's client
  // credentials or its ID token fails a check.
  absl::StatusOr<Refreshed> Refresh(const SsoGrant& grant);

  const OidcOptions& options() const { return options_; }

 private:
  struct Pending {
    std::string nonce;
    std::string verifier;
    bool for_cli = false;
    std::chrono::system_clock::time_point expires;
  };
  struct Metadata {
    std::string authorization_endpoint;
    std::string token_endpoint;
    std::string jwks_uri;
  };
  absl::StatusOr<Metadata> Discovered();
  absl::StatusOr<Pending> TakePending(const std::string& state, const std::string& cookie_state);
  struct TokenAnswer {
    int status = 0;
    boost::json::object body;
  };
  // POSTs `form` to the token endpoint with gantryd's client credentials (HTTP Basic).
  // UNAUTHENTICATED when the provider refuses those credentials.
  absl::StatusOr<TokenAnswer> PostToken(const Metadata& m, const std::string& form);
  struct CodeTokens {
    std::string id_token;
    std::string refresh_token;  // "" when none
  };
  absl::StatusOr<CodeTokens> ExchangeCode(const Metadata& m, const std::string& code,
                                          const std::string& verifier);
  // The key set; fetched again when `unknown_kid` is not "" (a token named a kid it lacks).
  absl::StatusOr<std::shared_ptr<const OidcKeySet>> Keys(const Metadata& m,
                                                         const std::string& unknown_kid);
  // `refreshed`: from a refresh, so the nonce may be absent (oidc_token.h).
  absl::StatusOr<boost::json::object> Verify(const Metadata& m, const std::string& id_token,
                                             const std::string& nonce, bool refreshed);
  absl::StatusOr<SsoIdentity> IdentityFrom(const boost::json::object& claims) const;

  const OidcOptions options_;
  const Clock& clock_;
  std::mutex mu_;
  std::map<std::string, Pending> pending_ ABSL_GUARDED_BY(mu_);  // by state
  std::unique_ptr<Metadata> metadata_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const OidcKeySet> keys_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_fetch_ ABSL_GUARDED_BY(mu_);
  std::string missing_kid_ ABSL_GUARDED_BY(mu_);  // the unknown kid of the last fetch
};

}  // namespace gantry::auth
