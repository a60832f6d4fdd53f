// Identity and sharing commands of the `gantry` CLI:
//   gantry login [--user U] [--password-stdin] [--expires 90d]
//       asks gantryd for an API token with the user's password (POST /auth/token) and saves
//       server and token in the config file (mode 0600).
//   gantry whoami                              who the token belongs to, with roles
//   gantry tokens create [--description D] [--expires 30d] [--user U]
//   gantry tokens list [--user U]
//   gantry tokens revoke NAME [--user U]
//   gantry share KIND NAME --all | --none | --projects a,b
//   gantry kubeconfig [--tls-server URL] [--ca-file PEM]   prints a kubeconfig for kubectl
//
// Thread-safety: free functions; all I/O goes through the CommandContext.
#pragma once

#include <string>

#include "cli/context.h"

namespace gantry::cli {

struct LoginOptions {
  std::string user = "admin";
  bool password_stdin = false;  // read the password from stdin (first line); else prompt
  std::string expires = "90d";
  bool sso = false;  // --sso: single sign-on in a browser, then paste the token it shows
};
int RunLogin(CommandContext& ctx, const LoginOptions& options);

int RunWhoAmI(CommandContext& ctx);

struct TokensOptions {
  std::string verb;  // create, list, revoke
  std::string name;  // revoke
  std::string user;  // "" = the caller
  std::string description;
  std::string expires;  // "" = never
};
int RunTokens(CommandContext& ctx, const TokensOptions& options);

struct ShareOptions {
  std::string kind;
  std::string name;
  bool all = false;
  bool none = false;
  std::string projects;  // comma-separated
};
int RunShare(CommandContext& ctx, const ShareOptions& options);

struct KubeconfigOptions {
  std::string tls_server;  // the https:// URL kubectl should use (gantryd --tls-listen)
  std::string ca_file;     // PEM file to trust (gantryd's DATA_DIR/tls.crt when self-signed)
};
// kubectl sends tokens only over TLS: without --tls-server the kubeconfig points at the
// plain server and a warning says so.
int RunKubeconfig(CommandContext& ctx, const KubeconfigOptions& options);

}  // namespace gantry::cli
