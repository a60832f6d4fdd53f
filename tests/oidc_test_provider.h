// A throwaway OpenID Connect provider for tests: Debian's LemonLDAP::NG portal (packages
// lemonldap-ng, lemonldap-ng-fastcgi-server) behind nginx, on 127.0.0.1 and a free port, with
// everything in a temporary directory (docs/sso.md, "The test provider"):
//   lemonldap-ng.ini     points the portal at conf/ (LLNG_DEFAULTCONFFILE)
//   conf/lmConf-1.json   Debian's shipped demo configuration with the OIDC issuer turned on,
//                        a signing key made here (kid "key-1", then "key-2", ... after
//                        RotateKey), one relying party (client kClientId, secret kClientSecret,
//                        PKCE required, consent skipped, claims in the ID token, a "groups"
//                        claim in scope "groups") and sessions kept under the directory
//   nginx.conf           one server for the portal, FastCGI to llng.sock
// llng-fastcgi-server serves the portal (as nobody when the tests run as root: it refuses
// root), nginx (one process, no daemon) serves HTTP.
//
// Users (LemonLDAP::NG's Demo backend; the password is the login name):
//   dwho    "Doctor Who"    dwho@badwolf.org    groups timelords, users
//   rtyler  "Rose Tyler"    rtyler@badwolf.org  groups earthlings, users
//   msmith  "Mickey Smith"  msmith@badwolf.org  groups earthlings, users
// or, with OnDirectory, the users and groups of an LdapTestServer (tests/ldap_test_server.h:
// the portal binds as its service account, checks passwords by binding as the user, and
// reads groupOfNames groups), so that a test can change or delete a user at the provider.
// The relying party may ask for offline_access: its refresh tokens then outlive the portal
// session, and each refresh looks the user up in the backend again.
//
// The issuer is http://127.0.0.1:PORT/ (with the trailing slash LemonLDAP::NG gives it). A
// relying party's redirect URI must be registered: SetRedirectUri, once gantryd's port is
// known (it restarts the portal, which reads its configuration at start).
//
// Thread-safety: for the test's thread (start it from the thread that stays alive: the
// parent-death signal follows the thread that forked).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace gantry::testing {

class OidcTestProvider {
 public:
  static constexpr char kClientId[] = "gantry";
  static constexpr char kClientSecret[] = "gantry-client-secret-1";

  // A running provider; UNAVAILABLE (with the reason and the servers' output) when the
  // packages are not installed or the provider does not start.
  static absl::StatusOr<std::unique_ptr<OidcTestProvider>> Create();
  // The same provider with an LDAP backend instead of the Demo one: `ldap_url` is an
  // LdapTestServer's url().
  static absl::StatusOr<std::unique_ptr<OidcTestProvider>> OnDirectory(const std::string& ldap_url);
  ~OidcTestProvider();

  std::string issuer() const;  // http://127.0.0.1:PORT/
  int port() const { return port_; }
  // The password of a demo user (the login name).
  static std::string PasswordOf(const std::string& user) { return user; }

  // The relying party's registered redirect URI (until SetRedirectUri: a placeholder on the
  // discard port, for tests that act as the relying party themselves).
  const std::string& redirect_uri() const { return redirect_uri_; }
  // Registers `uri` as the relying party's only redirect URI and restarts the portal.
  absl::Status SetRedirectUri(const std::string& uri);
  // A new signing key with a new kid (the old one is gone from the JWKS); restarts the portal.
  absl::Status RotateKey();
  // The portal's log (for a failing test's message).
  std::string Log() const;
  // Stops the portal (the provider is down: nginx answers 502) and starts it again.
  absl::Status StopPortal();
  absl::Status StartPortal();

 private:
  OidcTestProvider() = default;
  absl::Status Prepare();
  absl::Status WriteConfig();
  absl::Status NewKey();
  static absl::StatusOr<std::unique_ptr<OidcTestProvider>> Start(
      std::unique_ptr<OidcTestProvider> p);
  absl::Status StartNginx();
  absl::Status WaitForDiscovery();

  std::string dir_;
  std::string ldap_url_;  // "" for the Demo backend
  int port_ = 0;
  int key_number_ = 0;
  std::string redirect_uri_;
  int portal_pid_ = -1;
  int nginx_pid_ = -1;
  bool as_root_ = false;
};

// True when the OIDC tests must run rather than skip: GANTRY_CI=1 or CI=true.
bool OidcRequired();

}  // namespace gantry::testing
