// Single sign-on against a real gantryd and a real OpenID Connect provider (LemonLDAP::NG
// behind nginx, tests/oidc_test_provider.h), driven the way a browser drives it
// (tests/oidc_browser.h): gantryd's /auth/oidc/login redirects to the provider, the
// provider's own login form is posted, the provider redirects back to gantryd's callback.
// Covered: the first login creates the user (spec.source oidc, name, email, groups) and a
// working web session; --org-admin-group from the groups claim; a RoleBinding spec.group for
// a provider group; `gantry login --sso`'s token page; a rotated signing key (JWKS refetched
// on the unknown kid); and the refusals, each a 401 with a message on the page and a Status
// for an API client, audited: a state that is not this browser's, a replayed callback, a
// user outside --oidc-allowed-group, a wrong client secret, the provider's own error.
// Skipped when lemonldap-ng is not installed, failed then in CI (GANTRY_CI=1).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "api_client.h"
#include "common/test_process.h"
#include "gantryd_test.h"
#include "oidc_browser.h"
#include "oidc_test_provider.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;

class OidcLoginTest : public GantrydTest {
 protected:
  virtual std::string Secret() { return OidcTestProvider::kClientSecret; }
  virtual std::vector<std::string> MoreArgs() { return {"--org-admin-group", "timelords"}; }

  void SetUp() override {
    auto provider = OidcTestProvider::Create();
    if (!provider.ok()) {
      if (OidcRequired()) FAIL() << provider.status();
      GTEST_SKIP() << "no OIDC provider to test against: " << provider.status().message();
    }
    provider_ = *std::move(provider);
    dir_ = MakeTempDir("gantry-oidcit");
    ASSERT_FALSE(dir_.empty());
    std::ofstream(dir_ + "/client-secret") << Secret() << "\n";
    port_ = FreeLoopbackPort();
    ASSERT_NE(port_, 0);
    origin_ = "http://127.0.0.1:" + std::to_string(port_);
    absl::Status s = provider_->SetRedirectUri(origin_ + "/auth/oidc/callback");
    ASSERT_TRUE(s.ok()) << s;
    GantrydTest::SetUp();
  }
  void TearDown() override {
    GantrydTest::TearDown();
    provider_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  std::vector<std::string> Args() override {
    std::vector<std::string> args{"--listen",
                                  "127.0.0.1:" + std::to_string(port_),
                                  "--oidc-issuer",
                                  provider_->issuer(),
                                  "--oidc-client-id",
                                  OidcTestProvider::kClientId,
                                  "--oidc-client-secret-file",
                                  dir_ + "/client-secret",
                                  "--oidc-redirect-url",
                                  origin_ + "/auth/oidc/callback"};
    for (std::string& a : MoreArgs()) args.push_back(std::move(a));
    return args;
  }
  std::string ProviderOrigin() const {
    return "http://127.0.0.1:" + std::to_string(provider_->port());
  }
  // Through the provider's login form to the callback URL it sends the browser back to.
  std::string CallbackFor(Browser& b, const std::string& user, const std::string& start = "") {
    auto cb = b.LoginAtProvider(start.empty() ? origin_ + "/auth/oidc/login" : start,
                                ProviderOrigin(), user, OidcTestProvider::PasswordOf(user));
    EXPECT_TRUE(cb.ok()) << cb.status() << "\n" << provider_->Log();
    return cb.ok() ? *cb : "";
  }
  // A whole login; the browser then holds gantryd's session cookie.
  Browser::Page LogIn(Browser& b, const std::string& user) {
    std::string cb = CallbackFor(b, user);
    auto page = b.Get(cb);
    EXPECT_TRUE(page.ok()) << page.status();
    return page.ok() ? *page : Browser::Page{};
  }
  Resp WhoAmI(const Browser& b) {
    client::HttpClient c(origin_);
    auto r = c.SendWithHeaders("GET", "/auth/whoami", {{"Cookie", b.CookieHeader(origin_)}});
    EXPECT_TRUE(r.ok()) << r.status();
    Resp out;
    if (!r.ok()) return out;
    out.status = r->status;
    out.raw = r->body;
    boost::system::error_code ec;
    out.body = json::parse(r->body, ec);
    return out;
  }
  // The audit events of single sign-on callbacks, as one JSON text.
  std::string SsoAudit() {
    Resp audit = api().Get(ClusterPath("auditevents"));
    EXPECT_EQ(audit.status, 200) << audit.raw;
    return audit.raw;
  }

  std::unique_ptr<OidcTestProvider> provider_;
  std::string dir_;
  int port_ = 0;
  std::string origin_;
};

TEST_F(OidcLoginTest, DiscoveryInfoTellsTheUiToShowTheButton) {
  Resp info = Api(gantryd_->base_url(), "").Get("/auth/oidc");
  ASSERT_EQ(info.status, 200) << info.raw;
  EXPECT_EQ(info.obj().at("enabled"), true);
  EXPECT_EQ(info.obj().at("issuer"), json::value(provider_->issuer()));
}

TEST_F(OidcLoginTest, FirstLoginCreatesTheUserAndAWebSession) {
  Browser b;
  Browser::Page done = LogIn(b, "rtyler");
  ASSERT_EQ(done.status, 303) << done.body;
  EXPECT_EQ(done.location, origin_ + "/");
  ASSERT_FALSE(b.Cookie(origin_, "gantry_session").empty());
  EXPECT_TRUE(b.Cookie(origin_, "gantry_oidc_state").empty()) << "the state cookie is spent";
  Resp me = WhoAmI(b);
  ASSERT_EQ(me.status, 200) << me.raw;
  EXPECT_THAT(me.raw, HasSubstr("\"rtyler\""));

  Resp user = api().Get(ClusterPath("users", "rtyler"));
  ASSERT_EQ(user.status, 200) << user.raw;
  const json::object& spec = user.obj().at("spec").as_object();
  EXPECT_EQ(spec.at("source"), "oidc");
  EXPECT_EQ(spec.at("displayName"), "Rose Tyler");
  EXPECT_EQ(spec.at("email"), "rtyler@badwolf.org");
  EXPECT_FALSE(spec.contains("orgRole") && spec.at("orgRole") == "org-admin");
  EXPECT_EQ(json::serialize(user.obj().at("status").at("groups")), R"(["earthlings","users"])");
  // The provider keeps the credentials: no Gantry password for this user.
  Resp set = api().Patch(ClusterPath("users", "rtyler"),
                         json::object{{"spec", json::object{{"password", "local-password-1"}}}});
  EXPECT_EQ(set.status, 422) << set.raw;
  EXPECT_THAT(set.raw, HasSubstr("single sign-on"));
  // A second login updates the same user (and is a new session).
  Browser again;
  EXPECT_EQ(LogIn(again, "rtyler").status, 303);
  EXPECT_NE(again.Cookie(origin_, "gantry_session"), b.Cookie(origin_, "gantry_session"));
  EXPECT_THAT(SsoAudit(), HasSubstr("rtyler"));
}

TEST_F(OidcLoginTest, TheOrgAdminGroupGivesTheOrgRole) {
  Browser b;
  ASSERT_EQ(LogIn(b, "dwho").status, 303);
  Resp user = api().Get(ClusterPath("users", "dwho"));
  ASSERT_EQ(user.status, 200) << user.raw;
  EXPECT_EQ(user.obj().at("spec").at("orgRole"), "org-admin");
}

TEST_F(OidcLoginTest, AGroupRoleBindingBindsTheProvidersGroupMembers) {
  api().CreateProject("tardis");
  api().MustCreate(
      NsPath("tardis", "rolebindings"),
      json::object{{"apiVersion", "paas.gantry.dev/v1"},
                   {"kind", "RoleBinding"},
                   {"metadata", json::object{{"name", "earthlings-view"}}},
                   {"spec", json::object{{"group", "earthlings"}, {"role", "viewer"}}}});
  Browser b;
  ASSERT_EQ(LogIn(b, "msmith").status, 303);
  client::HttpClient c(origin_);
  auto listed = c.SendWithHeaders("GET", NsPath("tardis", "computeinstances"),
                                  {{"Cookie", b.CookieHeader(origin_)}});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->status, 200) << listed->body;
}

TEST_F(OidcLoginTest, TheCliLoginShowsATokenOnce) {
  Browser b;
  std::string cb = CallbackFor(b, "rtyler", origin_ + "/auth/oidc/login?cli=1");
  auto page = b.Get(cb);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->status, 200) << page->body;
  size_t at = page->body.find("gnt_");
  ASSERT_NE(at, std::string::npos) << page->body;
  std::string token = page->body.substr(at, page->body.find('<', at) - at);
  Api rose(gantryd_->base_url(), token);
  Resp me = rose.Get("/auth/whoami");
  EXPECT_EQ(me.status, 200) << me.raw;
  EXPECT_THAT(me.raw, HasSubstr("rtyler"));
  EXPECT_TRUE(b.Cookie(origin_, "gantry_session").empty()) << "a CLI login opens no session";
}

TEST_F(OidcLoginTest, ARotatedSigningKeyIsFetchedAgain) {
  Browser first;
  ASSERT_EQ(LogIn(first, "rtyler").status, 303);
  ASSERT_TRUE(provider_->RotateKey().ok());
  Browser second;
  Browser::Page done = LogIn(second, "rtyler");
  EXPECT_EQ(done.status, 303) << done.body << "\n" << gantryd_->Log();
}

TEST_F(OidcLoginTest, ACallbackFromAnotherBrowserIsAStateMismatch) {
  Browser victim;
  std::string cb = CallbackFor(victim, "rtyler");
  Browser attacker;  // has not begun this login: no state cookie
  auto page = attacker.Get(cb);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->status, 401);
  EXPECT_THAT(page->body, HasSubstr("state mismatch"));
  EXPECT_THAT(page->body, HasSubstr("Log in with SSO again"));
  EXPECT_TRUE(attacker.Cookie(origin_, "gantry_session").empty());
  EXPECT_EQ(api().Get(ClusterPath("users", "rtyler")).status, 404) << "no user was created";
  EXPECT_THAT(SsoAudit(), HasSubstr("state mismatch"));
}

TEST_F(OidcLoginTest, AReplayedCallbackIsRefused) {
  Browser b;
  std::string cb = CallbackFor(b, "rtyler");
  const std::string state = b.Cookie(origin_, "gantry_oidc_state");
  ASSERT_EQ(b.Get(cb)->status, 303);
  b.SetCookie(origin_, "gantry_oidc_state", state);  // a replay carries the cookie too
  auto again = b.Get(cb, "application/json");        // an API client: a Status
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->status, 401) << again->body;
  EXPECT_THAT(again->body, HasSubstr("\"kind\":\"Status\""));
  EXPECT_THAT(again->body, HasSubstr("already used"));
}

TEST_F(OidcLoginTest, TheProvidersOwnErrorIsShown) {
  Browser b;
  auto start = b.Get(origin_ + "/auth/oidc/login");
  ASSERT_TRUE(start.ok());
  std::string state = QueryParam(start->location, "state");
  auto page = b.Get(origin_ + "/auth/oidc/callback?error=access_denied&state=" + state);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->status, 401);
  EXPECT_THAT(page->body, HasSubstr("access_denied"));
  EXPECT_THAT(SsoAudit(), HasSubstr("the identity provider refused the login: access_denied"));
}

TEST_F(OidcLoginTest, NoSecretReachesTheLogTheAuditLogOrTheUser) {
  Browser b;
  ASSERT_EQ(LogIn(b, "rtyler").status, 303);
  std::string audit = SsoAudit();
  for (const std::string& secret :
       {std::string(OidcTestProvider::kClientSecret), b.Cookie(origin_, "gantry_session")}) {
    EXPECT_THAT(gantryd_->Log(), Not(HasSubstr(secret)));
    EXPECT_THAT(audit, Not(HasSubstr(secret)));
  }
  EXPECT_THAT(api().Get(ClusterPath("users", "rtyler")).raw,
              Not(HasSubstr(OidcTestProvider::kClientSecret)));
}

class OidcAllowedGroupTest : public OidcLoginTest {
 protected:
  std::vector<std::string> MoreArgs() override { return {"--oidc-allowed-group", "timelords"}; }
};

TEST_F(OidcAllowedGroupTest, AUserOutsideTheAllowedGroupIsRefusedWithAClearMessage) {
  Browser rose;
  Browser::Page refused = LogIn(rose, "rtyler");
  EXPECT_EQ(refused.status, 401) << refused.body;
  EXPECT_THAT(refused.body, HasSubstr("not in the directory group that may use Gantry"));
  EXPECT_TRUE(rose.Cookie(origin_, "gantry_session").empty());
  EXPECT_EQ(api().Get(ClusterPath("users", "rtyler")).status, 404);
  EXPECT_THAT(SsoAudit(), HasSubstr("not in the directory group that may use Gantry"));
  Browser doctor;
  EXPECT_EQ(LogIn(doctor, "dwho").status, 303);
}

class OidcWrongSecretTest : public OidcLoginTest {
 protected:
  std::string Secret() override { return "not-the-client-secret"; }
};

TEST_F(OidcWrongSecretTest, AWrongClientSecretIsExplained) {
  Browser b;
  Browser::Page refused = LogIn(b, "rtyler");
  EXPECT_EQ(refused.status, 401) << refused.body;
  EXPECT_THAT(refused.body, HasSubstr("client credentials (a wrong --oidc-client-secret-file?)"));
  EXPECT_TRUE(b.Cookie(origin_, "gantry_session").empty());
  EXPECT_THAT(gantryd_->Log(), Not(HasSubstr("not-the-client-secret")));
  const std::string audit = SsoAudit();
  EXPECT_THAT(audit, HasSubstr("a wrong --oidc-client-secret-file?"));
  EXPECT_THAT(audit, Not(HasSubstr("not-the-client-secret")));
}

// A provider that accepts connections and never answers (a port nobody accepts on: the
// kernel completes the connection). With --oidc-timeout 1s a login answers 503 with a message
// instead of holding the request, and gantryd's own API goes on answering. No LemonLDAP here.
class OidcHangingProviderTest : public GantrydTest {
 protected:
  void SetUp() override {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(::listen(listener_, 8), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    issuer_ = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
    dir_ = MakeTempDir("gantry-oidchang");
    ASSERT_FALSE(dir_.empty());
    std::ofstream(dir_ + "/client-secret") << "s3cret-of-the-client\n";
    GantrydTest::SetUp();
  }
  void TearDown() override {
    GantrydTest::TearDown();
    if (listener_ >= 0) ::close(listener_);
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  std::vector<std::string> Args() override {
    return {"--oidc-issuer",
            issuer_,
            "--oidc-client-id",
            "gantry",
            "--oidc-client-secret-file",
            dir_ + "/client-secret",
            "--oidc-redirect-url",
            "http://127.0.0.1:1/auth/oidc/callback",
            "--oidc-timeout",
            "1s"};
  }

  int listener_ = -1;
  std::string issuer_;
  std::string dir_;
};

TEST_F(OidcHangingProviderTest, ALoginFailsWith503InsteadOfWaitingForever) {
  // Not through Api(): it counts every 5xx as a failure, and the provider being down is the
  // one case where 503 is the right answer.
  client::HttpClient c(gantryd_->base_url());
  auto login = c.Send("GET", "/auth/oidc/login");
  ASSERT_TRUE(login.ok()) << login.status();
  EXPECT_EQ(login->status, 503) << login->body;
  EXPECT_THAT(login->body, HasSubstr("\"message\":\"the identity provider cannot be reached; "
                                     "try again later\""));
  EXPECT_TRUE(
      gantryd_->WaitForLog("no answer from " + issuer_ + " in time (waiting for the answer)"))
      << gantryd_->Log();
  EXPECT_EQ(api().Get(ClusterPath("projects")).status, 200);
}

}  // namespace
}  // namespace gantry::testing
