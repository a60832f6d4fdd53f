// gantryd's --oidc-* flags (issue 21; docs/sso.md): single sign-on through an OpenID Connect
// provider. AddOidcFlags declares them; MakeOidc checks them after parsing and builds the
// relying party (null without --oidc-issuer), or says what is wrong.
//
// Thread-safety: call from main before serving.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "auth/oidc_provider.h"
#include "common/clock.h"

namespace gantry::app {

struct OidcFlags {
  auth::OidcOptions options;
  std::string secret_file;
  std::string timeout = "10s";  // --oidc-timeout, a duration
  std::string recheck = "5m";   // --oidc-recheck, a duration ("0": every request)
};

void AddOidcFlags(CLI::App& app, OidcFlags& f);
absl::StatusOr<std::unique_ptr<auth::OidcProvider>> MakeOidc(OidcFlags f, const Clock& clock);

}  // namespace gantry::app
