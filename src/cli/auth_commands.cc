#include "cli/auth_commands.h"

#include <termios.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <iostream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "cli/kinds.h"
#include "client/absl_compat.h"
#include "client/kube_status.h"
#include "common/json_member.h"

namespace gantry::cli {
namespace {

namespace json = boost::json;

constexpr char kGroupPath[] = "/apis/paas.gantry.dev/v1";

// Sends and returns the JSON object answered, or the server's refusal.
absl::StatusOr<json::object> Call(CommandContext& ctx, std::string_view method,
                                  const std::string& target, const std::string& body = "",
                                  std::string_view content_type = "application/json") {
  auto resp = ctx.api->Send(method, target, body, content_type);
  if (!resp.ok()) return resp.status();
  if (resp->status < 200 || resp->status >= 300) return client::StatusFromResponse(*resp);
  return ParseObject(*resp);
}

absl::StatusOr<std::string> CurrentUser(CommandContext& ctx) {
  auto me = Call(ctx, "GET", "/auth/whoami");
  if (!me.ok()) return me.status();
  return StringMember(*me, "username");
}

// Reads one line from stdin without echo when it is a terminal.
std::string ReadPassword(CommandContext& ctx, bool prompt) {
  bool tty = prompt && ctx.in == &std::cin && ::isatty(STDIN_FILENO);
  termios old{};
  if (tty) {
    *ctx.err << "Password: " << std::flush;
    ::tcgetattr(STDIN_FILENO, &old);
    termios quiet = old;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
  }
  std::string line;
  std::getline(*ctx.in, line);
  if (tty) {
    ::tcsetattr(STDIN_FILENO, TCSANOW, &old);
    *ctx.err << "\n";
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace

// Saves `token` as the config file's token; false (with the error printed) when it cannot.
bool SaveToken(CommandContext& ctx, Settings& s, const std::string& token) {
  s.token = token;
  if (s.config_path.empty()) {
    PrintError(ctx, "no config file to write to: set HOME, GANTRY_CONFIG or --config");
    return false;
  }
  if (absl::Status w = ctx.write_file ? ctx.write_file(s.config_path, ConfigYaml(s))
                                      : WriteWholeFile(s.config_path, ConfigYaml(s));
      !w.ok()) {
    PrintError(ctx, w);
    return false;
  }
  return true;
}

// `gantry login --sso`: the browser logs in at the provider through gantryd, whose page
// then shows a token to paste here (docs/sso.md).
int RunSsoLogin(CommandContext& ctx) {
  auto info = Call(ctx, "GET", "/auth/oidc");
  if (!info.ok()) {
    PrintError(ctx, info.status());
    return kExitError;
  }
  const json::value* enabled = info->if_contains("enabled");
  if (!enabled || !enabled->is_bool() || !enabled->get_bool()) {
    PrintError(ctx, "single sign-on is not configured on " + ctx.settings.server +
                        " (gantryd --oidc-issuer): log in with --user");
    return kExitUsage;
  }
  *ctx.err << "Open this URL in a browser and log in:\n\n  " << ctx.settings.server
           << "/auth/oidc/login?cli=1\n\nThen paste the token the page shows: " << std::flush;
  std::string token;
  std::getline(*ctx.in, token);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  while (!token.empty() && token.front() == ' ') token.erase(0, 1);
  if (token.rfind("gnt_", 0) != 0) {
    PrintError(ctx, "that is not a Gantry token (they start with gnt_)");
    return kExitUsage;
  }
  Settings s = ctx.settings;
  if (!SaveToken(ctx, s, token)) return kExitError;
  *ctx.out << "Logged in to " << s.server << " by single sign-on (token saved in " << s.config_path
           << "; gantry whoami shows who you are)\n";
  return kExitOk;
}

int RunLogin(CommandContext& ctx, const LoginOptions& o) {
  if (o.sso) return RunSsoLogin(ctx);
  std::string password = ReadPassword(ctx, !o.password_stdin);
  if (password.empty()) {
    PrintError(ctx, "no password given");
    return kExitUsage;
  }
  char host[256] = "unknown";
  ::gethostname(host, sizeof host - 1);
  json::object body{{"username", o.user},
                    {"password", password},
                    {"description", std::string("gantry CLI on ") + host},
                    {"expiresIn", o.expires}};
  auto token = Call(ctx, "POST", "/auth/token", json::serialize(body));
  if (!token.ok()) {
    PrintError(ctx, token.status());
    return kExitError;
  }
  Settings s = ctx.settings;
  if (s.config_path.empty()) {
    PrintError(ctx, "no config file to write to: set HOME, GANTRY_CONFIG or --config");
    return kExitUsage;
  }
  if (!SaveToken(ctx, s, StringMember(*token, "token"))) return kExitError;
  std::string expires, name;
  if (const json::value* spec = token->if_contains("spec"); spec && spec->is_object())
    expires = StringMember(spec->get_object(), "expiresAt");
  if (const json::value* meta = token->if_contains("metadata"); meta && meta->is_object())
    name = StringMember(meta->get_object(), "name");
  *ctx.out << "Logged in to " << s.server << " as " << o.user << " (token " << name
           << (expires.empty() ? "" : ", expires " + expires) << ", saved in " << s.config_path
           << ")\n";
  return kExitOk;
}

int RunWhoAmI(CommandContext& ctx) {
  auto me = Call(ctx, "GET", "/auth/whoami");
  if (!me.ok()) {
    PrintError(ctx, me.status());
    return kExitError;
  }
  std::string org = StringMember(*me, "orgRole");
  *ctx.out << StringMember(*me, "username") << (org.empty() ? "" : " (" + org + ")") << "\n";
  if (const json::value* p = me->if_contains("projects"); p && p->is_object())
    for (const auto& kv : p->get_object())
      *ctx.out << "  " << std::string(kv.key()) << ": "
               << (kv.value().is_string() ? std::string(kv.value().get_string()) : "") << "\n";
  return kExitOk;
}

int RunTokens(CommandContext& ctx, const TokensOptions& o) {
  std::string user = o.user;
  if (user.empty()) {
    auto me = CurrentUser(ctx);
    if (!me.ok()) {
      PrintError(ctx, me.status());
      return kExitError;
    }
    user = *me;
  }
  std::string base = std::string(kGroupPath) + "/users/" + user + "/tokens";
  if (o.verb == "create") {
    json::object body{{"description", o.description}};
    if (!o.expires.empty()) body["expiresIn"] = o.expires;
    auto t = Call(ctx, "POST", base, json::serialize(body));
    if (!t.ok()) {
      PrintError(ctx, t.status());
      return kExitError;
    }
    *ctx.out << StringMember(*t, "token") << "\n";
    *ctx.err << "token " << StringMember(t->at("metadata").as_object(), "name")
             << " created; it is shown only this once\n";
    return kExitOk;
  }
  if (o.verb == "revoke") {
    auto r = Call(ctx, "DELETE", base + "/" + o.name);
    if (!r.ok()) {
      PrintError(ctx, r.status());
      return kExitError;
    }
    *ctx.out << "token " << o.name << " revoked\n";
    return kExitOk;
  }
  auto list = Call(ctx, "GET", base);
  if (!list.ok()) {
    PrintError(ctx, list.status());
    return kExitError;
  }
  *ctx.out
      << "NAME                       CREATED                EXPIRES                DESCRIPTION\n";
  for (const auto& item : list->at("items").as_array()) {
    const json::object& t = item.as_object();
    const json::object& spec = t.at("spec").as_object();
    std::string expires = StringMember(spec, "expiresAt");
    const json::value* st = t.if_contains("status");
    if (st && st->is_object() && st->as_object().if_contains("expired") &&
        st->as_object().at("expired").is_bool() && st->as_object().at("expired").get_bool())
      expires += " (expired)";
    std::string name = StringMember(t.at("metadata").as_object(), "name");
    std::string created = StringMember(t.at("metadata").as_object(), "creationTimestamp");
    auto pad = [](std::string s, size_t w) {
      return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' ');
    };
    *ctx.out << pad(name, 27) << pad(created, 23) << pad(expires.empty() ? "never" : expires, 23)
             << StringMember(spec, "description") << "\n";
  }
  return kExitOk;
}

int RunShare(CommandContext& ctx, const ShareOptions& o) {
  int modes = (o.all ? 1 : 0) + (o.none ? 1 : 0) + (o.projects.empty() ? 0 : 1);
  if (modes != 1) {
    PrintError(ctx, "give exactly one of --all, --none or --projects a,b");
    return kExitUsage;
  }
  auto kind = ResolveKind(o.kind);
  if (!kind.ok()) {
    PrintError(ctx, kind.status());
    return kExitUsage;
  }
  json::object sharing;
  if (o.all) {
    sharing = {{"mode", "All"}, {"projects", nullptr}};
  } else if (o.none) {
    sharing = {{"mode", "None"}, {"projects", nullptr}};
  } else {
    json::array projects;
    for (absl::string_view p : absl::StrSplit(Sv(o.projects), ',', absl::SkipWhitespace()))
      projects.push_back(json::string(p.data(), p.size()));
    sharing = {{"mode", "Selected"}, {"projects", std::move(projects)}};
  }
  std::string path = std::string(kGroupPath) + "/namespaces/" + ctx.settings.project + "/" +
                     kind->plural + "/" + o.name;
  json::object patch{{"spec", json::object{{"sharing", sharing}}}};
  auto r = Call(ctx, "PATCH", path, json::serialize(patch), "application/merge-patch+json");
  if (!r.ok()) {
    PrintError(ctx, r.status());
    return kExitError;
  }
  std::string mode = StringMember(sharing, "mode");
  *ctx.out << kind->singular << "/" << o.name << " shared: "
           << (mode == "All"    ? "with all projects"
               : mode == "None" ? "with no other project"
                                : "with " + o.projects)
           << "\n";
  return kExitOk;
}

int RunKubeconfig(CommandContext& ctx, const KubeconfigOptions& o) {
  if (ctx.settings.token.empty()) {
    PrintError(ctx, "no token: run gantry login first (or pass --token)");
    return kExitUsage;
  }
  std::string server = o.tls_server.empty() ? ctx.settings.server : o.tls_server;
  if (server.rfind("https://", 0) != 0)
    *ctx.err << "warning: kubectl sends tokens only over https; start gantryd with --tls-listen "
                "and pass --tls-server https://HOST:PORT\n";
  std::string ca;
  if (!o.ca_file.empty()) {
    auto pem = ctx.read_file(o.ca_file);
    if (!pem.ok()) {
      PrintError(ctx, pem.status());
      return kExitUsage;
    }
    ca = absl::Base64Escape(*pem);
  }
  auto q = [](const std::string& s) { return json::serialize(json::value(s)); };
  *ctx.out << "apiVersion: v1\nkind: Config\nclusters:\n- name: gantry\n  cluster:\n    server: "
           << q(server) << "\n";
  if (!ca.empty()) *ctx.out << "    certificate-authority-data: " << ca << "\n";
  *ctx.out << "users:\n- name: gantry\n  user:\n    token: " << q(ctx.settings.token)
           << "\ncontexts:\n- name: gantry\n  context:\n    cluster: gantry\n    user: gantry\n"
              "    namespace: "
           << q(ctx.settings.project) << "\ncurrent-context: gantry\n";
  return kExitOk;
}

}  // namespace gantry::cli
