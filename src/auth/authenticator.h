// Authenticator: who is asking. Resolves an API token (`Authorization: Bearer`), a web
// session cookie, or the bootstrap token into a Subject with every role it holds; logs users
// in and out; issues, lists and revokes API tokens; keeps user passwords.
//
// What is stored (kinds internal to the store, never served by the API):
//   UserCredential  name = user; spec.passwordHash (argon2id)
//   ApiToken        name = "tok-" + hash prefix; spec.user, hash, description, expiresAt,
//                   lastUsed (written at most once a minute: the record's only update)
//   Session         name = "ses-" + hash prefix; spec.user, hash, csrf, expiresAt, lastSeen,
//                   source (the address it was opened from)
//   OidcGrant       name = user; spec.userUid, refreshToken (sealed for that User's uid),
//                   subject, nonce: what the user's last SSO login left for re-checks;
//                   status.checkedAt, the last refresh begun (oidc_login.cc)
// Secrets themselves are never stored (credentials.h). A revoked token or a deleted session is
// a deleted record, so the next request with it fails at once.
//
// With a directory (AuthOptions::directory, gantryd --ldap-url; directory_login.cc): a
// password login of a user with no local password is checked against LDAP. Such a user is
// created on first login (spec.source "ldap", no local password); the directory's groups are
// recorded in status.groups at every login and re-check, and RoleBindings naming a group
// (spec.group) apply to the members. Every `directory_recheck` at most, a request of an LDAP
// user asks the directory again; a user gone from it (or from the allowed group) gets
// status.directoryRefusal, and every session and token of theirs is refused until a login
// succeeds again. A local user with a local password never depends on the directory.
//
// With single sign-on (AuthOptions::sso, gantryd --oidc-issuer; oidc_login.cc) the same
// holds for users the provider created (spec.source "oidc"): every --oidc-recheck at most, a
// request of theirs refreshes their last login's grant at the provider (the refresh token it
// gave, kept sealed), which says again whether they may sign in and what their groups are.
// A provider that refuses the grant gets them status.directoryRefusal. Without a refresh
// token (the provider gave none: ask for scope offline_access) nothing is re-checked.
//
// Thread-safety: safe from any thread (state is in the Store, plus the login limiter, which
// has its own mutex).
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "auth/authorize.h"
#include "auth/ldap_directory.h"
#include "auth/oidc_provider.h"
#include "common/clock.h"
#include "common/secrets.h"
#include "store/store.h"

namespace gantry::auth {

inline constexpr char kUserCredential[] = "UserCredential";
inline constexpr char kApiToken[] = "ApiToken";
inline constexpr char kSession[] = "Session";
inline constexpr char kOidcGrant[] = "OidcGrant";
inline constexpr char kSessionCookie[] = "gantry_session";
inline constexpr char kCsrfHeader[] = "X-Gantry-CSRF";
inline constexpr char kBootstrapUser[] = "system:bootstrap";

// The value of cookie `name` in a Cookie header ("a=1; gantry_session=x"), "" when absent.
std::string CookieValue(std::string_view header, std::string_view name);

struct AuthOptions {
  std::chrono::seconds session_idle{30 * 60};
  std::chrono::seconds session_max{12 * 3600};
  // GANTRY_BOOTSTRAP_TOKEN: when set (16 characters or more), requests bearing it act as
  // org-admin "system:bootstrap". Kept in memory only.
  std::string bootstrap_token;
  // Failed logins allowed within `login_window` per (user name, source address) pair, and per
  // source address whatever the user names. A correct password from an address that has not
  // failed is never refused, however often others guessed wrong.
  int login_failures = 5;
  int login_address_failures = 20;
  std::chrono::seconds login_window{5 * 60};
  // LDAP logins (gantryd --ldap-url): null for local users only. Not owned; outlives this.
  const LdapDirectory* directory = nullptr;
  // --ldap-allowed-group: when set, only its members may log in (and keep their access).
  std::string allowed_group;
  // --org-admin-group: its members get orgRole org-admin; an LDAP user who leaves it loses it.
  std::string org_admin_group;
  // --ldap-recheck: how stale what the directory said about a user may get before one of their
  // requests asks again (0: every request).
  std::chrono::seconds directory_recheck{5 * 60};
  // Single sign-on (gantryd --oidc-issuer): null without. Not owned; outlives this.
  OidcProvider* sso = nullptr;
  // Seals the refresh tokens of SSO logins (OidcGrant); required with `sso`. Not owned.
  const SecretBox* secrets = nullptr;
};

// The User spec.source of users the directory created, and of those single sign-on created.
inline constexpr char kSourceLdap[] = "ldap";
inline constexpr char kSourceOidc[] = "oidc";

struct Identity {
  Subject subject;
  bool via_session = false;
  std::string session;  // Session record name, when via_session
  std::string csrf;     // the session's CSRF token, when via_session
};

struct LoginResult {
  Identity identity;
  std::string cookie_value;  // the session secret for Set-Cookie
  std::string expires_at;    // RFC 3339
};

class Authenticator {
 public:
  Authenticator(store::Store& store, const Clock& clock, AuthOptions options);

  // From the request's Authorization and Cookie headers (a bearer token wins). 401 when both
  // are absent, or the credential is unknown, expired, revoked, or its user is disabled.
  absl::StatusOr<Identity> Authenticate(std::string_view authorization,
                                        std::string_view cookie_header);
  // Authenticate again for a stream that is still open (a watch, `logs -f`; see
  // api/stream_guard.h): the same answer as Authenticate would give now, but a session's
  // lastSeen is not updated, so an open stream alone does not keep a session from going idle.
  // Cheap for tokens (the caches below, dropped by OnCommit); one store read for a session.
  absl::StatusOr<Identity> Recheck(std::string_view authorization, std::string_view cookie_header);
  // The subject of a user: org role from the User, project roles from RoleBindings.
  // 401 when the user does not exist or is disabled.
  absl::StatusOr<Subject> SubjectFor(const std::string& user);

  // Checks the password and opens a session. 401 "invalid username or password" (the same
  // words whether the user exists or not); 429 when `user` failed too often from `source`
  // (an address; the port is ignored) or `source` failed too often for any users.
  absl::StatusOr<LoginResult> Login(std::string_view user, std::string_view password,
                                    std::string_view source);
  // The password check of Login without a session (POST /auth/token: `gantry login`).
  absl::StatusOr<Subject> CheckPassword(std::string_view user, std::string_view password,
                                        std::string_view source);
  absl::Status Logout(const std::string& session_record);
  // A single sign-on login (oidc_login.cc): records what the provider said on the User
  // (created at the first login with spec.source oidc; groups in status.groups, org-admin
  // from --org-admin-group), refuses a user outside `allowed_group` (and marks an existing
  // one refused, so their tokens stop), or one of another source ("user X is a local user");
  // keeps the login's `grant` for re-checks (OidcGrant; none when it has no refresh token);
  // then opens a session (`open_session`) or only returns the subject. Every refusal is 401.
  absl::StatusOr<LoginResult> SsoLogin(const OidcProvider::Finished& login, std::string_view source,
                                       bool open_session);

  // Issues a token for `user` ({name, token (shown once), description, expiresAt,
  // creationTimestamp}). `ttl` nullopt: never expires.
  absl::StatusOr<boost::json::object> CreateToken(const std::string& user,
                                                  const std::string& description,
                                                  std::optional<std::chrono::seconds> ttl);
  // {kind TokenList, items: [{metadata {name, creationTimestamp}, spec {user, description,
  // expiresAt}, status {expired, lastUsed}}]}: never the secret nor its hash. lastUsed ("" for
  // never) is at most a minute behind the token's last request.
  absl::StatusOr<boost::json::object> ListTokens(const std::string& user);
  absl::Status RevokeToken(const std::string& user, const std::string& name);

  // The web sessions of `user`: {kind SessionList, items: [{metadata {name,
  // creationTimestamp}, spec {user, source, expiresAt}, status {lastSeen, current}}]}, never
  // the secret, its hash or the CSRF token. `current`: the caller's Session record ("" for
  // none), marked status.current.
  absl::StatusOr<boost::json::object> ListSessions(const std::string& user,
                                                   const std::string& current);
  // Ends session `name` of `user` at once. 404 when `user` has no such session.
  absl::Status EndSession(const std::string& user, const std::string& name);
  // Ends every web session `user` has now ("log out everywhere"); API tokens stay valid.
  // Returns how many ended.
  absl::StatusOr<int64_t> EndSessions(const std::string& user);

  // The write that sets `user`'s password (create or update of its UserCredential), for the
  // caller's commit. 400 for a password that is too short or too long, and for a user whose
  // password the directory keeps (spec.source ldap).
  absl::StatusOr<store::Write> PasswordWrite(const std::string& user, std::string_view password);
  // A change of an existing user's password, as a User update asks for it.
  struct PasswordChange {
    std::string user;
    std::string password;          // the new one (spec.password)
    std::string current_password;  // spec.currentPassword: needed when caller == user
    std::string caller;            // who asks
    std::string caller_session;    // the caller's Session record when via a session, else ""
    std::string source;            // the caller's address, for the login limiter
  };
  // The writes of `change` for the caller's commit: the new password, and the end of every
  // web session of the user except the caller's own (API tokens stay valid). Changing one's
  // own password needs the current one: 422 when spec.currentPassword is missing, 403 when it
  // is wrong (counted like a failed login from `source`: 429 after too many), 422 for a new
  // password that is too short or too long (spec.password). An org-admin setting another
  // user's password needs none, and ends all of that user's sessions.
  absl::StatusOr<std::vector<store::Write>> PasswordChangeWrites(const PasswordChange& change);
  // Writes removing everything that gives `user` access (password, tokens, sessions, and the
  // role bindings naming the user in every project), for the commit that deletes the User.
  absl::StatusOr<std::vector<store::Write>> ForgetWrites(const std::string& user);

  // The store's commit observer: drops the cached token owners and subjects when users, role
  // bindings, tokens or credentials change. The store calls it synchronously for this
  // replica's own commits (a revoked token fails on the very next request) and, with
  // PostgreSQL, as it tails other replicas' commits (milliseconds later).
  void OnCommit(const std::vector<store::Event>& events);

  // First start: creates user "admin" (org-admin) when no user exists. Its password is
  // `password` when non-empty, else a generated one, returned so the caller prints it once.
  // Returns nullopt when users already existed.
  absl::StatusOr<std::optional<std::string>> EnsureAdmin(const std::string& password);

 private:
  // `touch`: a request (true) records the session's use; a recheck (false) does not.
  absl::StatusOr<Identity> Resolve(std::string_view authorization, std::string_view cookie_header,
                                   bool touch);
  absl::StatusOr<Identity> FromToken(std::string_view token, bool touch);
  // Records that the token with `hash` was used at `now`, when its lastUsed is a minute old or
  // more (best effort: a failed write is left for the next use).
  void TouchToken(const std::string& hash, std::chrono::system_clock::time_point now);
  // SubjectFor without the cache: the User and the user's RoleBindings from the store.
  absl::StatusOr<Subject> ReadSubject(const std::string& user);
  absl::StatusOr<Identity> FromSession(std::string_view secret, bool touch);
  // 429 when `key` failed `limit` times within the window.
  absl::Status CheckLimiter(const std::string& key, int limit);
  void RecordFailure(const std::string& key, int limit);
  std::string Now() const;
  // A new web session for `subject` (Login, SsoLogin).
  absl::StatusOr<LoginResult> OpenSession(Subject subject, std::string_view source);

  // directory_login.cc. The LDAP branch of CheckPassword, for a user with no local password.
  absl::StatusOr<Subject> DirectoryLogin(std::string_view user, std::string_view password,
                                         const std::string& pair_key, const std::string& addr_key);
  // Records what the directory said about `user` (nullopt: not there) on its User, creating
  // it when allowed and absent; returns why the user may not log in ("" when they may). A
  // User of another source is left alone (and refused: "invalid username or password").
  // `source`: kSourceLdap or kSourceOidc; `allowed_group`: that source's (none: "").
  absl::StatusOr<std::string> ApplyDirectory(const std::string& user,
                                             const std::optional<DirectoryEntry>& entry,
                                             const std::string& source,
                                             const std::string& allowed_group);
  // Asks the directory about an LDAP user when what it said last is older than
  // directory_recheck. A directory that cannot be reached leaves the user as they were.
  absl::Status RecheckDirectory(const std::string& user);
  // oidc_login.cc. The user's last login's grant (sealed), replacing the one before; a login
  // without a refresh token deletes it.
  absl::Status KeepGrant(const boost::json::object& user, const SsoGrant& grant);
  // Refreshes the grant of SSO `user` (its User object) at the provider, unless another
  // request or replica did within --oidc-recheck (status.checkedAt, claimed with a
  // resourceVersion-guarded write), and records the answer as ApplyDirectory does. Returns
  // when to ask next (time_point::max(): never, there is no grant).
  absl::StatusOr<std::chrono::system_clock::time_point> RecheckSso(const boost::json::object& user);
  // The project roles `groups` are bound to (RoleBinding spec.group), into `s`.
  absl::Status AddGroupRoles(const std::vector<std::string>& groups, Subject& s);

  store::Store& store_;
  const Clock& clock_;
  const AuthOptions options_;
  const std::string bootstrap_hash_;  // "" when no bootstrap token

  std::mutex mu_;
  std::map<std::string, std::deque<std::chrono::system_clock::time_point>> failures_
      ABSL_GUARDED_BY(mu_);

  // Caches of what a request's credentials resolve to, so that a request with an API token
  // costs no store reads. An entry computed from reads older than the last invalidation is
  // not kept (generation_), so a change is never hidden by a slow request.
  struct CachedToken {
    std::string user;
    std::string expires_at;                           // RFC 3339, "" for never
    std::chrono::system_clock::time_point last_used;  // the epoch for never
  };
  static constexpr size_t kMaxCached = 10000;
  // How soon a re-check that could not reach the directory or provider is tried again (at most).
  static constexpr std::chrono::seconds kRetryUnreachable{30};
  std::mutex cache_mu_;
  uint64_t generation_ ABSL_GUARDED_BY(cache_mu_) = 0;
  std::map<std::string, CachedToken> tokens_ ABSL_GUARDED_BY(cache_mu_);  // by token hash
  std::map<std::string, Subject> subjects_ ABSL_GUARDED_BY(cache_mu_);    // by user
  // When each user is next asked about in the directory (time_point::max(): not an LDAP
  // user). An entry goes when its User changes (OnCommit).
  std::map<std::string, std::chrono::system_clock::time_point> directory_due_
      ABSL_GUARDED_BY(cache_mu_);
};

}  // namespace gantry::auth
