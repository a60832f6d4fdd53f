#include "oidc_test_provider.h"

#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "client/http_client.h"
#include "common/test_process.h"
#include "ldap_test_server.h"

namespace gantry::testing {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

constexpr char kShippedConfig[] = "/var/lib/lemonldap-ng/conf/lmConf-1.json";
constexpr char kFastCgi[] = "/usr/sbin/llng-fastcgi-server";
constexpr char kPortalRoot[] = "/usr/share/lemonldap-ng/portal";
constexpr auto kStartDeadline = std::chrono::seconds(60);

std::string Ini(const std::string& dir) {
  return "[all]\nlogLevel = notice\ncheckTime = 1\n"
         "[configuration]\ntype = File\ndirName = " +
         dir + "/conf\n[portal]\nstaticPrefix = /static\ntemplateDir = " + kPortalRoot +
         "/templates\nlanguages = en\n[handler]\nstatus = 0\n";
}

std::string NginxConf(const std::string& dir, int port) {
  std::string d = dir + "/";
  return "daemon off;\nmaster_process off;\nworker_processes 1;\npid " + d +
         "nginx.pid;\nerror_log " + d +
         "nginx-error.log warn;\nevents { worker_connections 64; }\n" +
         "http {\n  access_log off;\n  client_body_temp_path " + d + "tmp-body;\n" +
         "  fastcgi_temp_path " + d + "tmp-fcgi;\n  proxy_temp_path " + d + "tmp-proxy;\n" +
         "  uwsgi_temp_path " + d + "tmp-uwsgi;\n  scgi_temp_path " + d + "tmp-scgi;\n" +
         "  include /etc/nginx/mime.types;\n  server {\n    listen 127.0.0.1:" +
         std::to_string(port) + ";\n    server_name 127.0.0.1;\n    root " + kPortalRoot +
         "/htdocs/;\n"
         "    if ($uri !~ ^/((static|javascript|favicon).*|.*\\.psgi)) {\n"
         "      rewrite ^/(.*)$ /index.psgi/$1 break;\n    }\n"
         "    location ~ ^(?<sc>/.*\\.psgi)(?:$|/) {\n"
         "      include /etc/nginx/fastcgi_params;\n      fastcgi_pass unix:" +
         d +
         "llng.sock;\n"
         "      fastcgi_param HTTP_HOST $host:$server_port;\n"
         "      fastcgi_param LLTYPE psgi;\n"
         "      fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;\n"
         "      fastcgi_split_path_info ^(.*\\.psgi)(/.*)$;\n"
         "      fastcgi_param PATH_INFO $fastcgi_path_info;\n    }\n"
         "    location /static/ { alias " +
         kPortalRoot +
         "/htdocs/static/; }\n"
         "    location /javascript/ { alias /usr/share/javascript/; }\n  }\n}\n";
}

json::object Storage(const std::string& dir) {
  return json::object{{"Directory", dir}, {"LockDirectory", dir + "/lock"}};
}

// The relying party gantryd is: PKCE required, no consent page, claims in the ID token.
json::object RelyingParty(const std::string& redirect_uri) {
  return json::object{{"oidcRPMetaDataOptionsClientID", OidcTestProvider::kClientId},
                      {"oidcRPMetaDataOptionsClientSecret", OidcTestProvider::kClientSecret},
                      {"oidcRPMetaDataOptionsRedirectUris", redirect_uri},
                      {"oidcRPMetaDataOptionsBypassConsent", 1},
                      {"oidcRPMetaDataOptionsIDTokenSignAlg", "RS256"},
                      {"oidcRPMetaDataOptionsIDTokenForceClaims", 1},
                      {"oidcRPMetaDataOptionsRequirePKCE", 1},
                      {"oidcRPMetaDataOptionsAllowOffline", 1},  // scope offline_access
                      {"oidcRPMetaDataOptionsIDTokenExpiration", 3600},
                      {"oidcRPMetaDataOptionsAccessTokenExpiration", 3600}};
}

void Chown(const std::string& dir) {
  const passwd* pw = ::getpwnam("nobody");
  const group* gr = ::getgrnam("nogroup");
  if (!pw || !gr) return;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    (void)::lchown(e.path().c_str(), pw->pw_uid, gr->gr_gid);
  (void)::chown(dir.c_str(), pw->pw_uid, gr->gr_gid);
}

}  // namespace

bool OidcRequired() {
  const char* gantry_ci = std::getenv("GANTRY_CI");
  const char* ci = std::getenv("CI");
  return (gantry_ci && std::string(gantry_ci) == "1") || (ci && std::string(ci) == "true");
}

absl::StatusOr<std::unique_ptr<OidcTestProvider>> OidcTestProvider::Create() {
  return Start(std::unique_ptr<OidcTestProvider>(new OidcTestProvider()));
}

absl::StatusOr<std::unique_ptr<OidcTestProvider>> OidcTestProvider::OnDirectory(
    const std::string& ldap_url) {
  std::unique_ptr<OidcTestProvider> p(new OidcTestProvider());
  p->ldap_url_ = ldap_url;
  return Start(std::move(p));
}

absl::StatusOr<std::unique_ptr<OidcTestProvider>> OidcTestProvider::Start(
    std::unique_ptr<OidcTestProvider> p) {
  if (absl::Status s = p->Prepare(); !s.ok()) return s;
  if (absl::Status s = p->StartPortal(); !s.ok()) return s;
  if (absl::Status s = p->StartNginx(); !s.ok()) return s;
  if (absl::Status s = p->WaitForDiscovery(); !s.ok()) return s;
  return p;
}

absl::Status OidcTestProvider::Prepare() {
  for (const char* f : {kFastCgi, "/usr/sbin/nginx", kShippedConfig, "/usr/bin/openssl"})
    if (!fs::exists(f))
      return absl::UnavailableError(std::string(f) +
                                    " is missing (Debian: lemonldap-ng "
                                    "lemonldap-ng-fastcgi-server nginx; scripts/install-deps.sh)");
  dir_ = MakeTempDir("gantry-oidc");
  if (dir_.empty()) return absl::UnavailableError("mkdtemp failed");
  for (const char* sub : {"conf", "sessions/lock", "psessions/lock", "cache"})
    fs::create_directories(dir_ + "/" + sub);
  port_ = FreeLoopbackPort();
  if (port_ == 0) return absl::UnavailableError("no free port");
  as_root_ = ::geteuid() == 0;
  std::ofstream(dir_ + "/lemonldap-ng.ini") << Ini(dir_);
  std::ofstream(dir_ + "/nginx.conf") << NginxConf(dir_, port_);
  redirect_uri_ = "http://127.0.0.1:9/auth/oidc/callback";  // until SetRedirectUri
  if (absl::Status s = NewKey(); !s.ok()) return s;
  return WriteConfig();
}

absl::Status OidcTestProvider::NewKey() {
  ++key_number_;
  std::string key = dir_ + "/sig.key";
  pid_t gen = SpawnLogged({"/usr/bin/openssl", "genrsa", "-out", key, "2048"}, dir_ + "/key.log");
  if (gen < 0 || WaitExit(gen) != 0)
    return absl::UnavailableError("openssl genrsa failed: " + ReadFileOrEmpty(dir_ + "/key.log"));
  pid_t pub = SpawnLogged({"/usr/bin/openssl", "rsa", "-in", key, "-pubout", "-out", key + ".pub"},
                          dir_ + "/key.log");
  if (pub < 0 || WaitExit(pub) != 0)
    return absl::UnavailableError("openssl rsa failed: " + ReadFileOrEmpty(dir_ + "/key.log"));
  return absl::OkStatus();
}

absl::Status OidcTestProvider::WriteConfig() {
  boost::system::error_code ec;
  json::value shipped = json::parse(ReadFileOrEmpty(kShippedConfig), ec);
  if (ec || !shipped.is_object())
    return absl::UnavailableError("cannot read " + std::string(kShippedConfig));
  json::object c = shipped.as_object();
  for (const char* k :
       {"applicationList", "reloadUrls", "notificationStorage", "notificationStorageOptions"})
    c.erase(k);
  c["locationRules"] = json::object{};  // the demo's rules are for its example.com hosts
  c["exportedHeaders"] = json::object{};
  if (ldap_url_.empty()) {
    c["authentication"] = "Demo";  // the demo users above; password = login
    c["passwordDB"] = "Demo";
  } else {
    c["authentication"] = "LDAP";  // the LdapTestServer's people and groups
    c["passwordDB"] = "LDAP";
    c["ldapServer"] = ldap_url_;
    c["ldapBase"] = LdapTestServer::kPeople;
    c["managerDn"] = LdapTestServer::kServiceDn;
    c["managerPassword"] = LdapTestServer::kServicePassword;
    c["ldapGroupBase"] = LdapTestServer::kGroups;
    c["ldapUsePasswordResetAttribute"] = 0;
    c["ldapPpolicyControl"] = 0;
  }
  c["userDB"] = "Same";
  c["registerDB"] = "Null";  // no self-registration (it would need an SMTP library)
  c["portal"] = issuer();
  c["domain"] = "127.0.0.1";
  c["notification"] = 0;
  c["loginHistoryEnabled"] = 0;
  c["macros"] = json::object{};
  c["whatToTrace"] = "uid";
  c["globalStorageOptions"] = Storage(dir_ + "/sessions");
  c["globalStorageOptions"].as_object()["generateModule"] =
      "Lemonldap::NG::Common::Apache::Session::Generate::SHA256";
  c["persistentStorageOptions"] = Storage(dir_ + "/psessions");
  c["localSessionStorageOptions"].as_object()["cache_root"] = dir_ + "/cache";
  c["issuerDBOpenIDConnectActivation"] = 1;
  c["oidcServicePrivateKeySig"] = ReadFileOrEmpty(dir_ + "/sig.key");
  c["oidcServicePublicKeySig"] = ReadFileOrEmpty(dir_ + "/sig.key.pub");
  c["oidcServiceKeyIdSig"] = "key-" + std::to_string(key_number_);
  c["oidcRPMetaDataOptions"] = json::object{{kClientId, RelyingParty(redirect_uri_)}};
  c["oidcRPMetaDataExportedVars"] =
      json::object{{kClientId, json::object{{"email", "mail"},
                                            {"name", "cn"},
                                            {"preferred_username", "uid"},
                                            {"groups", "groups;string;always"}}}};
  c["oidcRPMetaDataOptionsExtraClaims"] =
      json::object{{kClientId, json::object{{"groups", "groups"}}}};
  std::ofstream(dir_ + "/conf/lmConf-1.json") << json::serialize(c);
  if (as_root_) Chown(dir_);
  return absl::OkStatus();
}

absl::Status OidcTestProvider::StartPortal() {
  std::string log = dir_ + "/portal.log";
  std::vector<std::string> args{kFastCgi, "--foreground",      "-n", "2",
                                "-s",     dir_ + "/llng.sock", "-p", dir_ + "/llng.pid"};
  if (as_root_) args.insert(args.end(), {"-u", "nobody", "-g", "nogroup"});
  std::error_code ec;
  fs::remove(dir_ + "/llng.sock", ec);
  portal_pid_ = SpawnLogged(args, log,
                            {.parent_death_signal = SIGTERM,
                             .own_process_group = true,
                             .env = {"LLNG_DEFAULTCONFFILE=" + dir_ + "/lemonldap-ng.ini",
                                     "LLNG_DEFAULTLOGGER=Lemonldap::NG::Common::Logger::Std"}});
  if (portal_pid_ < 0) return absl::UnavailableError("cannot start llng-fastcgi-server");
  return WaitUntilServing(
      &portal_pid_, [&] { return fs::exists(dir_ + "/llng.sock"); }, "llng-fastcgi-server", log,
      kStartDeadline);
}

absl::Status OidcTestProvider::StopPortal() {
  if (portal_pid_ < 0) return absl::OkStatus();
  ::kill(-portal_pid_, SIGTERM);  // the manager and its FastCGI workers
  WaitExit(portal_pid_);
  portal_pid_ = -1;
  return absl::OkStatus();
}

absl::Status OidcTestProvider::StartNginx() {
  std::string log = dir_ + "/nginx.log";
  SpawnOptions options;
  options.parent_death_signal = SIGTERM;
  nginx_pid_ =
      SpawnLogged({"/usr/sbin/nginx", "-p", dir_, "-c", dir_ + "/nginx.conf"}, log, options);
  if (nginx_pid_ < 0) return absl::UnavailableError("cannot start nginx");
  return WaitUntilServing(
      &nginx_pid_, [&] { return AcceptsOnLoopback(port_); }, "nginx",
      log + "\n" + ReadFileOrEmpty(dir_ + "/nginx-error.log"), kStartDeadline);
}

// Until the portal answers discovery (its first request compiles it: seconds).
absl::Status OidcTestProvider::WaitForDiscovery() {
  client::HttpClient http("http://127.0.0.1:" + std::to_string(port_));
  const auto deadline = std::chrono::steady_clock::now() + kStartDeadline;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = http.Send("GET", "/.well-known/openid-configuration");
    if (r.ok() && r->status == 200 && r->body.find("\"jwks_uri\"") != std::string::npos)
      return absl::OkStatus();
    last = r.ok() ? std::to_string(r->status) + " " + r->body.substr(0, 300)
                  : std::string(r.status().message());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return absl::UnavailableError("the provider does not answer discovery (" + last + "):\n" + Log());
}

std::string OidcTestProvider::issuer() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/";
}

std::string OidcTestProvider::Log() const {
  return ReadFileOrEmpty(dir_ + "/portal.log") + ReadFileOrEmpty(dir_ + "/nginx-error.log");
}

absl::Status OidcTestProvider::SetRedirectUri(const std::string& uri) {
  redirect_uri_ = uri;
  if (absl::Status s = WriteConfig(); !s.ok()) return s;
  (void)StopPortal();
  if (absl::Status s = StartPortal(); !s.ok()) return s;
  return WaitForDiscovery();
}

absl::Status OidcTestProvider::RotateKey() {
  if (absl::Status s = NewKey(); !s.ok()) return s;
  return SetRedirectUri(redirect_uri_);
}

OidcTestProvider::~OidcTestProvider() {
  (void)StopPortal();
  if (nginx_pid_ >= 0) {
    ::kill(nginx_pid_, SIGTERM);
    WaitExit(nginx_pid_);
  }
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

}  // namespace gantry::testing
