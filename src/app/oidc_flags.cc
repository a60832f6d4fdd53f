#include "app/oidc_flags.h"

#include <spdlog/spdlog.h>

#include <fstream>
#include <sstream>

#include "model/lifecycle_policy.h"

namespace gantry::app {

void AddOidcFlags(CLI::App& app, OidcFlags& f) {
  auth::OidcOptions& o = f.options;
  app.add_option("--oidc-issuer", o.issuer,
                 "Log users in by single sign-on through this OpenID Connect provider (its "
                 "issuer URL, exactly as its discovery document gives it)");
  app.add_option("--oidc-client-id", o.client_id, "gantryd's client id at the provider");
  app.add_option("--oidc-client-secret-file", f.secret_file,
                 "A file holding gantryd's client secret at the provider");
  app.add_option("--oidc-redirect-url", o.redirect_url,
                 "The callback URL registered at the provider: "
                 "https://GANTRY-HOST/auth/oidc/callback");
  app.add_option("--oidc-scopes", o.scopes, "The scopes asked for")->capture_default_str();
  app.add_option("--oidc-username-claim", o.username_claim, "The claim naming the user")
      ->capture_default_str();
  app.add_option("--oidc-name-claim", o.name_claim, "The claim with the display name")
      ->capture_default_str();
  app.add_option("--oidc-email-claim", o.email_claim, "The claim with the email address")
      ->capture_default_str();
  app.add_option("--oidc-groups-claim", o.groups_claim,
                 "The claim listing the user's groups (RoleBinding spec.group, "
                 "--org-admin-group)")
      ->capture_default_str();
  app.add_option("--oidc-allowed-group", o.allowed_group,
                 "Only members of this provider group may log in by single sign-on");
  app.add_option("--oidc-ca-file", o.ca_file,
                 "PEM CA certificates for the provider's TLS certificate (default: the system's)");
  app.add_option("--oidc-timeout", f.timeout,
                 "Each call to the provider (discovery, token, keys) must be answered within "
                 "this long (a duration, at most 5m); a login that waits longer fails with 503")
      ->capture_default_str();
  app.add_option("--oidc-recheck", f.recheck,
                 "Sessions and tokens of single sign-on users are checked at the provider again "
                 "(their login's refresh token) once this long has passed since it was last "
                 "asked (a duration; 0: every request)")
      ->capture_default_str();
}

absl::StatusOr<std::unique_ptr<auth::OidcProvider>> MakeOidc(OidcFlags f, const Clock& clock) {
  auth::OidcOptions& o = f.options;
  if (o.issuer.empty()) {
    if (!o.client_id.empty() || !f.secret_file.empty() || !o.redirect_url.empty())
      return absl::InvalidArgumentError("the --oidc-* flags need --oidc-issuer");
    return nullptr;
  }
  if (o.issuer.rfind("https://", 0) != 0 && o.issuer.rfind("http://", 0) != 0)
    return absl::InvalidArgumentError("--oidc-issuer must be an https:// URL");
  if (o.client_id.empty())
    return absl::InvalidArgumentError("--oidc-issuer needs --oidc-client-id");
  if (o.redirect_url.empty())
    return absl::InvalidArgumentError(
        "--oidc-issuer needs --oidc-redirect-url (https://GANTRY-HOST/auth/oidc/callback, as "
        "registered at the provider)");
  std::ifstream in(f.secret_file);
  std::stringstream ss;
  ss << in.rdbuf();
  if (f.secret_file.empty() || !in)
    return absl::InvalidArgumentError("--oidc-issuer needs a readable --oidc-client-secret-file");
  o.client_secret = ss.str();
  while (!o.client_secret.empty() &&
         (o.client_secret.back() == '\n' || o.client_secret.back() == '\r'))
    o.client_secret.pop_back();
  if (o.client_secret.empty())
    return absl::InvalidArgumentError("--oidc-client-secret-file is empty");
  auto timeout = model::ParseDuration(f.timeout);
  if (!timeout.ok())
    return absl::InvalidArgumentError("--oidc-timeout: " + std::string(timeout.status().message()));
  if (*timeout > std::chrono::minutes(5))
    return absl::InvalidArgumentError("--oidc-timeout: at most 5m");
  o.timeout = *timeout;
  auto recheck = model::ParseDurationOrZero(f.recheck);
  if (!recheck.ok())
    return absl::InvalidArgumentError("--oidc-recheck: " + std::string(recheck.status().message()) +
                                      " (or 0s: every request)");
  o.recheck = *recheck;
  if (o.scopes.find("openid") == std::string::npos)
    return absl::InvalidArgumentError("--oidc-scopes must include openid");
  if (o.issuer.rfind("http://", 0) == 0)
    spdlog::warn("--oidc-issuer {} is plain http: use https outside tests", o.issuer);
  spdlog::info("single sign-on through {} (callback {})", o.issuer, o.redirect_url);
  return std::make_unique<auth::OidcProvider>(std::move(o), clock);
}

}  // namespace gantry::app
