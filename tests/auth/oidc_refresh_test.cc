// Re-checks of single sign-on users at the provider (issue 21; docs/security.md, "How soon a
// change at the provider takes effect"), against a real gantryd, a real OpenID Connect
// provider (LemonLDAP::NG, tests/oidc_test_provider.h) and the real directory behind it
// (slapd, tests/ldap_test_server.h), which each test changes:
//   - a group removed at the provider takes a group role binding away at the next refresh;
//   - a user deleted at the provider loses their web session and their `gantry login --sso`
//     token at the next refresh, with a message saying why;
//   - while the provider is down, access stays as it was, and a later refresh catches up;
//   - with a long --oidc-recheck, nothing is asked before it falls due.
// gantryd asks for offline_access, so the provider's refresh tokens look the user up in the
// directory again at each refresh. --oidc-recheck 0s makes every request refresh, so each
// step is seen at the next request, with no waiting. Skipped when lemonldap-ng or slapd is not
// installed, failed then in CI (GANTRY_CI=1).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "api_client.h"
#include "common/test_process.h"
#include "gantryd_test.h"
#include "ldap_test_server.h"
#include "oidc_browser.h"
#include "oidc_test_provider.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;

class OidcRefreshTest : public GantrydTest {
 protected:
  virtual std::string Recheck() { return "0s"; }

  void SetUp() override {
    auto directory = LdapTestServer::Create();
    auto provider =
        directory.ok() ? OidcTestProvider::OnDirectory((*directory)->url()) : directory.status();
    if (!provider.ok()) {
      if (OidcRequired()) FAIL() << provider.status();
      GTEST_SKIP() << "no OIDC provider to test against: " << provider.status().message();
    }
    directory_ = *std::move(directory);
    provider_ = *std::move(provider);
    dir_ = MakeTempDir("gantry-oidcrefresh");
    ASSERT_FALSE(dir_.empty());
    std::ofstream(dir_ + "/client-secret") << OidcTestProvider::kClientSecret << "\n";
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
    directory_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  std::vector<std::string> Args() override {
    return {"--listen",
            "127.0.0.1:" + std::to_string(port_),
            "--oidc-issuer",
            provider_->issuer(),
            "--oidc-client-id",
            OidcTestProvider::kClientId,
            "--oidc-client-secret-file",
            dir_ + "/client-secret",
            "--oidc-redirect-url",
            origin_ + "/auth/oidc/callback",
            "--oidc-scopes",
            "openid profile email groups offline_access",
            "--oidc-recheck",
            Recheck()};
  }

  // Through the provider's login form (the directory's password) to the callback URL.
  std::string CallbackFor(Browser& b, const std::string& user, const std::string& start) {
    auto cb = b.LoginAtProvider(start, "http://127.0.0.1:" + std::to_string(provider_->port()),
                                user, LdapTestServer::PasswordOf(user));
    EXPECT_TRUE(cb.ok()) << cb.status() << "\n" << provider_->Log();
    return cb.ok() ? *cb : "";
  }
  // A web login: the browser then holds gantryd's session cookie.
  void LogIn(Browser& b, const std::string& user) {
    auto page = b.Get(CallbackFor(b, user, origin_ + "/auth/oidc/login"));
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_EQ(page->status, 303) << page->body;
  }
  // `gantry login --sso`'s token, read off the page as the person would.
  std::string CliToken(const std::string& user) {
    Browser b;
    auto page = b.Get(CallbackFor(b, user, origin_ + "/auth/oidc/login?cli=1"));
    EXPECT_TRUE(page.ok() && page->status == 200) << (page.ok() ? page->body : "");
    if (!page.ok()) return "";
    size_t at = page->body.find("gnt_");
    EXPECT_NE(at, std::string::npos) << page->body;
    return at == std::string::npos ? "" : page->body.substr(at, page->body.find('<', at) - at);
  }
  // GET `path` with the browser's session cookie.
  Resp AsBrowser(const Browser& b, const std::string& path) {
    client::HttpClient c(origin_);
    auto r = c.SendWithHeaders("GET", path, {{"Cookie", b.CookieHeader(origin_)}});
    EXPECT_TRUE(r.ok()) << r.status();
    Resp out;
    if (!r.ok()) return out;
    out.status = r->status;
    out.raw = r->body;
    return out;
  }
  std::string GroupsOf(const std::string& user) {
    Resp u = api().Get(ClusterPath("users", user));
    EXPECT_EQ(u.status, 200) << u.raw;
    return u.status == 200 ? json::serialize(u.obj().at("status").at("groups")) : "";
  }

  std::unique_ptr<LdapTestServer> directory_;
  std::unique_ptr<OidcTestProvider> provider_;
  std::string dir_;
  int port_ = 0;
  std::string origin_;
};

TEST_F(OidcRefreshTest, AGroupRemovedAtTheProviderTakesItsRoleAwayAtTheNextRefresh) {
  api().CreateProject("ml");
  api().MustCreate(
      NsPath("ml", "rolebindings"),
      json::object{{"apiVersion", "paas.gantry.dev/v1"},
                   {"kind", "RoleBinding"},
                   {"metadata", json::object{{"name", "researchers-view"}}},
                   {"spec", json::object{{"group", "ml-researchers"}, {"role", "viewer"}}}});
  Browser b;
  LogIn(b, "alice");
  EXPECT_EQ(GroupsOf("alice"), R"(["ml-researchers","vision-team"])");
  Resp listed = AsBrowser(b, NsPath("ml", "computeinstances"));
  EXPECT_EQ(listed.status, 200) << listed.raw;

  ASSERT_TRUE(directory_->RemoveMember("ml-researchers", LdapTestServer::UserDn("alice")).ok());
  Resp after = AsBrowser(b, NsPath("ml", "computeinstances"));
  EXPECT_EQ(after.status, 403) << after.raw;
  EXPECT_EQ(GroupsOf("alice"), R"(["vision-team"])");
  // Still herself, in what she is still a member of.
  EXPECT_EQ(AsBrowser(b, "/auth/whoami").status, 200);
}

TEST_F(OidcRefreshTest, AUserDeletedAtTheProviderIsCutOffAtTheNextRefresh) {
  Browser b;
  LogIn(b, "alice");
  const std::string token = CliToken("alice");
  ASSERT_FALSE(token.empty());
  Api cli(gantryd_->base_url(), token);
  EXPECT_EQ(cli.Get("/auth/whoami").status, 200);
  EXPECT_EQ(AsBrowser(b, "/auth/whoami").status, 200);

  ASSERT_TRUE(directory_->Delete(LdapTestServer::UserDn("alice")).ok());
  Resp session = AsBrowser(b, "/auth/whoami");
  EXPECT_EQ(session.status, 401) << session.raw;
  EXPECT_THAT(session.raw, HasSubstr("no longer in the organisation's directory"));
  Resp by_token = cli.Get("/auth/whoami");
  EXPECT_EQ(by_token.status, 401) << by_token.raw;
  Resp user = api().Get(ClusterPath("users", "alice"));
  ASSERT_EQ(user.status, 200) << user.raw;
  EXPECT_THAT(json::serialize(user.obj().at("status")), HasSubstr("directoryRefusal"));
  // No refresh token, sealed or not, is ever shown.
  EXPECT_THAT(user.raw, Not(HasSubstr("sealed:")));
  EXPECT_THAT(user.raw, Not(HasSubstr("refresh")));
}

TEST_F(OidcRefreshTest, WhileTheProviderIsDownAccessStaysAsItWas) {
  Browser b;
  LogIn(b, "bob");
  ASSERT_TRUE(provider_->StopPortal().ok());
  ASSERT_TRUE(directory_->Delete(LdapTestServer::UserDn("bob")).ok());
  Resp down = AsBrowser(b, "/auth/whoami");
  EXPECT_EQ(down.status, 200) << "a provider that cannot answer cuts nobody off: " << down.raw;
  EXPECT_TRUE(gantryd_->WaitForLog("cannot re-check user bob")) << gantryd_->Log();

  ASSERT_TRUE(provider_->StartPortal().ok());
  // The failed check is tried again within 30 s, at most (--oidc-recheck 0s: at once).
  Resp back = AsBrowser(b, "/auth/whoami");
  EXPECT_EQ(back.status, 401) << back.raw;
}

class OidcRefreshNotDueTest : public OidcRefreshTest {
 protected:
  std::string Recheck() override { return "1h"; }
};

TEST_F(OidcRefreshNotDueTest, NothingIsAskedBeforeTheRecheckFallsDue) {
  Browser b;
  LogIn(b, "alice");
  ASSERT_TRUE(directory_->Delete(LdapTestServer::UserDn("alice")).ok());
  // The login itself was the last check; the next is an hour away.
  Resp r = AsBrowser(b, "/auth/whoami");
  EXPECT_EQ(r.status, 200) << r.raw;
}

}  // namespace
}  // namespace gantry::testing
