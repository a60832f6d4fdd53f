// Identity against a real gantryd: API tokens (shown once, revoked and expired ones fail at
// once), web sessions (HttpOnly SameSite=Strict cookie, CSRF header for changes, logout, idle
// expiry), login rate limiting, the audit record, and that no password or token is ever
// written to gantryd's log, the audit record or the database file.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "api_client.h"
#include "gantryd_process.h"
#include "gantryd_test.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Everything gantryd keeps on disk (database, WAL, logs), as one string.
std::string DiskContents(const std::string& dir) {
  std::string all;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) all += Slurp(e.path().string());
  return all;
}

// Polls `pred` every 50 ms; the deadline only bounds a failure.
bool Eventually(const std::function<bool()>& pred) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

// POST /auth/login to 127.0.0.1:`port` from the loopback address `from` (any 127.x.y.z: Linux
// routes the whole block to lo), over a raw socket so that the source can be chosen. Returns
// the HTTP status, 0 when the exchange failed.
int LoginFrom(int port, const std::string& from, const std::string& user,
              const std::string& password) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, from.c_str(), &local.sin_addr);
  sockaddr_in server{};
  server.sin_family = AF_INET;
  server.sin_port = htons(static_cast<uint16_t>(port));
  server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&server), sizeof server) != 0) {
    ::close(fd);
    return 0;
  }
  std::string body = json::serialize(json::object{{"username", user}, {"password", password}});
  std::string request =
      "POST /auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  std::string answer;
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, n);
  }
  ::close(fd);
  return answer.size() > 12 ? std::atoi(answer.c_str() + 9) : 0;
}

class AuthTest : public GantrydTest {
 protected:
  void CreateUser(const std::string& name, const std::string& password,
                  const std::string& org_role = "") {
    json::object spec{{"displayName", name}, {"password", password}};
    if (!org_role.empty()) spec["orgRole"] = org_role;
    api().MustCreate(ClusterPath("users"),
                     json::object{{"metadata", json::object{{"name", name}}}, {"spec", spec}});
  }
  std::string TokenFor(const std::string& user, json::object body = {}) {
    Resp r = api().Post(ClusterPath("users", user) + "/tokens", body);
    EXPECT_EQ(r.status, 201) << r.raw;
    return r.status == 201 ? std::string(r.obj().at("token").as_string()) : "";
  }
  // POST /auth/login with a raw client; returns the answer with its headers.
  client::HttpResponse Login(const std::string& user, const std::string& password) {
    client::HttpClient c(gantryd_->base_url());
    auto r = c.Send("POST", "/auth/login",
                    json::serialize(json::object{{"username", user}, {"password", password}}));
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : client::HttpResponse{};
  }
  // Sends with a cookie (and optionally the CSRF header) through a raw socket-level client.
  client::HttpResponse WithCookie(const std::string& method, const std::string& target,
                                  const std::string& cookie, const std::string& csrf,
                                  const std::string& body = "") {
    client::HttpClient c(gantryd_->base_url());
    std::map<std::string, std::string> headers{{"Cookie", cookie}};
    if (!csrf.empty()) headers["X-Gantry-CSRF"] = csrf;
    auto r = c.SendWithHeaders(method, target, headers, body);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : client::HttpResponse{};
  }
};

TEST_F(AuthTest, TokensAreShownOnceListedWithoutSecretAndRevokedAtOnce) {
  CreateUser("alice", "alice-password-1");
  std::string token = TokenFor("alice", json::object{{"description", "ci"}});
  ASSERT_THAT(token, ::testing::StartsWith("gnt_"));
  Api alice(gantryd_->base_url(), token);
  Resp me = alice.Get(ClusterPath("users", "alice"));
  ASSERT_EQ(me.status, 200) << me.raw;
  EXPECT_THAT(me.raw, Not(HasSubstr("password")));

  Resp list = alice.Get(ClusterPath("users", "alice") + "/tokens");
  ASSERT_EQ(list.status, 200) << list.raw;
  ASSERT_EQ(list.obj().at("items").as_array().size(), 1u);
  EXPECT_THAT(list.raw, Not(HasSubstr(token)));
  std::string name(list.obj().at("items").at(0).at("metadata").at("name").as_string());
  EXPECT_THAT(list.raw, HasSubstr("\"description\":\"ci\""));

  Resp revoke = alice.Delete(ClusterPath("users", "alice") + "/tokens/" + name);
  EXPECT_EQ(revoke.status, 200) << revoke.raw;
  Resp after = alice.Get(ClusterPath("users", "alice"));
  EXPECT_TRUE(after.IsStatus(401, "Unauthorized")) << after.raw;
  EXPECT_THAT(after.message(), HasSubstr("revoked"));
}

// Expiry to the second (tokens and sessions, idle and absolute) is unit-tested on a fake
// clock in src/auth/authenticator_test.cc; SessionIdleTest below keeps the one real wait.
TEST_F(AuthTest, TokenExpiryMustBeADuration) {
  CreateUser("bob", "bob-password-1");
  Resp bad =
      api().Post(ClusterPath("users", "bob") + "/tokens", json::object{{"expiresIn", "forever"}});
  EXPECT_TRUE(bad.IsStatus(422, "Invalid")) << bad.raw;
  // One duration form in all of Gantry (model::ParseDuration): one number, one unit.
  Resp two =
      api().Post(ClusterPath("users", "bob") + "/tokens", json::object{{"expiresIn", "1h30m"}});
  EXPECT_TRUE(two.IsStatus(422, "Invalid")) << two.raw;
  EXPECT_EQ(two.cause_message("expiresIn"),
            "Invalid value: \"1h30m\" is not a duration: use a whole number > 0 and one unit, s, "
            "m, h or d (90s, 30m, 8h, 3d)")
      << two.raw;
}

TEST_F(AuthTest, DisabledAndDeletedUsersLoseAccessAtOnce) {
  CreateUser("carol", "carol-password-1");
  Api carol(gantryd_->base_url(), TokenFor("carol"));
  EXPECT_EQ(carol.Get(ClusterPath("users", "carol")).status, 200);
  ASSERT_EQ(api()
                .Patch(ClusterPath("users", "carol"),
                       json::object{{"spec", json::object{{"disabled", true}}}})
                .status,
            200);
  Resp r = carol.Get(ClusterPath("users", "carol"));
  EXPECT_TRUE(r.IsStatus(401, "Unauthorized"));
  EXPECT_THAT(r.message(), HasSubstr("disabled"));
  ASSERT_EQ(api().Delete(ClusterPath("users", "carol")).status, 200);
  EXPECT_EQ(carol.Get(ClusterPath("users", "carol")).status, 401);
}

TEST_F(AuthTest, WebSessionCookieCsrfAndLogout) {
  client::HttpResponse login = Login("admin", kAdminPassword);
  ASSERT_EQ(login.status, 200) << login.body;
  std::string set_cookie = login.headers["set-cookie"];
  EXPECT_THAT(set_cookie, HasSubstr("gantry_session="));
  EXPECT_THAT(set_cookie, HasSubstr("HttpOnly"));
  EXPECT_THAT(set_cookie, HasSubstr("SameSite=Strict"));
  std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
  json::object body = json::parse(login.body).as_object();
  std::string csrf(body.at("csrfToken").as_string());

  auto who = WithCookie("GET", "/auth/whoami", cookie, "");
  ASSERT_EQ(who.status, 200) << who.body;
  EXPECT_THAT(who.body, HasSubstr("\"username\":\"admin\""));
  EXPECT_THAT(who.body, HasSubstr("\"orgRole\":\"org-admin\""));
  EXPECT_THAT(who.body, HasSubstr(csrf));

  // Reads with the cookie alone; changes need the CSRF header too.
  EXPECT_EQ(WithCookie("GET", ClusterPath("projects"), cookie, "").status, 200);
  std::string project = json::serialize(json::object{{"metadata", json::object{{"name", "web"}}}});
  auto no_csrf = WithCookie("POST", ClusterPath("projects"), cookie, "", project);
  EXPECT_EQ(no_csrf.status, 403) << no_csrf.body;
  EXPECT_THAT(no_csrf.body, HasSubstr("X-Gantry-CSRF"));
  auto wrong_csrf = WithCookie("POST", ClusterPath("projects"), cookie, "nope", project);
  EXPECT_EQ(wrong_csrf.status, 403);
  EXPECT_EQ(WithCookie("POST", ClusterPath("projects"), cookie, csrf, project).status, 201);

  auto logout = WithCookie("POST", "/auth/logout", cookie, csrf);
  EXPECT_EQ(logout.status, 200) << logout.body;
  EXPECT_THAT(logout.headers["set-cookie"], HasSubstr("Max-Age=0"));
  auto after = WithCookie("GET", ClusterPath("projects"), cookie, "");
  EXPECT_EQ(after.status, 401) << after.body;
}

TEST_F(AuthTest, WrongPasswordsAreRefusedAlikeAndRateLimited) {
  auto wrong = Login("admin", "not-the-password");
  EXPECT_EQ(wrong.status, 401);
  auto unknown = Login("nobody-at-all", "not-the-password");
  EXPECT_EQ(unknown.status, 401);
  EXPECT_EQ(json::parse(wrong.body).at("message"), json::parse(unknown.body).at("message"));
  int last = 0;
  for (int i = 0; i < 6; ++i) last = Login("admin", "still-wrong-" + std::to_string(i)).status;
  EXPECT_EQ(last, 429);
  auto limited = Login("admin", kAdminPassword);  // even the right one, for a while
  EXPECT_EQ(limited.status, 429) << limited.body;
  EXPECT_THAT(limited.body, HasSubstr("try again in"));
}

TEST_F(AuthTest, NoPasswordOrTokenInLogsAuditOrDatabase) {
  const std::string password = "Sup3r-Secret-Passw0rd";
  CreateUser("dave", password);
  std::string token = TokenFor("dave");
  Api dave(gantryd_->base_url(), token);
  ASSERT_EQ(dave.Get(ClusterPath("users", "dave")).status, 200);
  ASSERT_EQ(Login("dave", password).status, 200);
  (void)Login("dave", password + "x");
  ASSERT_EQ(api()
                .Patch(ClusterPath("users", "dave"),
                       json::object{{"spec", json::object{{"password", password + "2"}}}})
                .status,
            200);
  client::HttpClient raw(gantryd_->base_url());
  ASSERT_TRUE(
      raw.Send("POST", "/auth/token",
               json::serialize(json::object{{"username", "dave"}, {"password", password + "2"}}))
          .ok());
  Resp audit = api().Get(ClusterPath("auditevents"));
  ASSERT_EQ(audit.status, 200);
  std::string everything = gantryd_->Log() + audit.raw + DiskContents(gantryd_->data_dir());
  EXPECT_THAT(everything, Not(HasSubstr(password)));
  EXPECT_THAT(everything, Not(HasSubstr(token)));
  EXPECT_THAT(everything, Not(HasSubstr(kBootstrapToken)));
  EXPECT_THAT(everything, Not(HasSubstr(kAdminPassword)));
  Resp user = api().Get(ClusterPath("users", "dave"));
  EXPECT_THAT(user.raw, Not(HasSubstr("password")));
}

TEST_F(AuthTest, AuditRecordsMutationsAndRefusalsForAdminsOnly) {
  CreateUser("erin", "erin-password-1");
  Api erin(gantryd_->base_url(), TokenFor("erin"));
  api().CreateProject("ml");
  Resp denied = erin.Post(ClusterPath("projects"),
                          json::object{{"metadata", json::object{{"name", "not-allowed"}}}});
  ASSERT_EQ(denied.status, 403);
  Api anonymous(gantryd_->base_url(), "");
  ASSERT_EQ(anonymous.Delete(ClusterPath("projects", "ml")).status, 401);

  Resp all = api().Get(ClusterPath("auditevents"));
  ASSERT_EQ(all.status, 200) << all.raw;
  bool created = false, refused = false, unauthenticated = false;
  for (const auto& item : all.obj().at("items").as_array()) {
    const json::object& e = item.as_object();
    std::string user(e.at("user").as_string()), verb(e.at("verb").as_string()),
        result(e.at("result").as_string());
    const json::object& ref = e.at("objectRef").as_object();
    if (verb == "create" && ref.at("resource") == "projects" && ref.at("name") == "ml" &&
        result == "Allowed" && user == "system:bootstrap")
      created = true;
    if (user == "erin" && verb == "create" && result == "Denied" && e.at("code") == 403) {
      refused = true;
      EXPECT_THAT(std::string(e.at("message").as_string()), HasSubstr("forbidden"));
      EXPECT_THAT(std::string(e.at("sourceAddress").as_string()), HasSubstr("127.0.0.1"));
      EXPECT_FALSE(std::string(e.at("time").as_string()).empty());
    }
    if (user.empty() && verb == "delete" && result == "Denied" && e.at("code") == 401)
      unauthenticated = true;
  }
  EXPECT_TRUE(created) << all.raw;
  EXPECT_TRUE(refused) << all.raw;
  EXPECT_TRUE(unauthenticated) << all.raw;

  Resp by_user = api().Get(ClusterPath("auditevents") + "?user=erin");
  ASSERT_EQ(by_user.status, 200) << by_user.raw;
  for (const auto& item : by_user.obj().at("items").as_array())
    EXPECT_EQ(item.at("user").as_string(), "erin");
  EXPECT_FALSE(by_user.obj().at("items").as_array().empty());
  Resp by_object = api().Get(ClusterPath("auditevents") + "?object=projects/not-allowed");
  ASSERT_EQ(by_object.status, 200) << by_object.raw;
  Resp since = api().Get(ClusterPath("auditevents") + "?since=2199-01-01T00:00:00Z");
  ASSERT_EQ(since.status, 200) << since.raw;
  EXPECT_TRUE(since.obj().at("items").as_array().empty());
  EXPECT_TRUE(
      api().Get(ClusterPath("auditevents") + "?since=yesterday").IsStatus(400, "BadRequest"));

  // Not writable by anyone; not readable by non-admins.
  Resp write = api().Post(ClusterPath("auditevents"),
                          json::object{{"metadata", json::object{{"name", "x"}}}});
  EXPECT_EQ(write.status, 405) << write.raw;
  EXPECT_TRUE(erin.Get(ClusterPath("auditevents")).IsStatus(403, "Forbidden"));
}

TEST_F(AuthTest, InstancesPerUserQuotaCountsWhatEachUserCreated) {
  api().MustCreate(
      ClusterPath("projects"),
      json::object{{"metadata", json::object{{"name", "lab"}}},
                   {"spec", json::object{{"quota", json::object{{"instancesPerUser", 1}}}}}});
  api().CreateTemplate("lab", "tpl");
  api().CreateProfile("lab", "prof", "tpl");
  CreateUser("frank", "frank-password-1");
  api().MustCreate(NsPath("lab", "rolebindings"),
                   json::object{{"metadata", json::object{{"name", "frank"}}},
                                {"spec", json::object{{"user", "frank"}, {"role", "member"}}}});
  Api frank(gantryd_->base_url(), TokenFor("frank"));
  Resp first = frank.Post(NsPath("lab", "computeinstances"), InstanceObject("f1", "prof"));
  ASSERT_EQ(first.status, 201) << first.raw;
  EXPECT_EQ(first.obj().at("status").at("createdBy"), "frank");
  Resp second = frank.Post(NsPath("lab", "computeinstances"), InstanceObject("f2", "prof"));
  EXPECT_TRUE(second.IsStatus(403, "Forbidden")) << second.raw;
  EXPECT_THAT(second.message(),
              HasSubstr("allows 1 compute instances per user and frank already has 1"));
  // Another user's count is their own.
  EXPECT_EQ(api().Post(NsPath("lab", "computeinstances"), InstanceObject("a1", "prof")).status,
            201);
  // Deleting frees the slot.
  EXPECT_EQ(frank.Delete(NsPath("lab", "computeinstances", "f1")).status, 200);
  EXPECT_EQ(frank.Post(NsPath("lab", "computeinstances"), InstanceObject("f2", "prof")).status,
            201);
}

TEST_F(AuthTest, WrongPasswordsLockOutOnlyTheAddressThatGuessed) {
  const int port = gantryd_->port();
  int last = 0;
  for (int i = 0; i < 6; ++i)
    last = LoginFrom(port, "127.0.0.2", "admin", "wrong-" + std::to_string(i));
  EXPECT_EQ(last, 429);
  // The guesser is locked out, even with the right password...
  EXPECT_EQ(LoginFrom(port, "127.0.0.2", "admin", kAdminPassword), 429);
  // ...but admin, from an address that has not failed, is not.
  EXPECT_EQ(LoginFrom(port, "127.0.0.3", "admin", kAdminPassword), 200);
  // One address guessing many users' passwords is stopped too (20 per address).
  for (int i = 0; i < 20; ++i)
    last = LoginFrom(port, "127.0.0.4", "user-" + std::to_string(i), "x-wrong-1");
  EXPECT_EQ(last, 401);
  EXPECT_EQ(LoginFrom(port, "127.0.0.4", "someone-else", "x-wrong-1"), 429);
  EXPECT_EQ(LoginFrom(port, "127.0.0.3", "admin", kAdminPassword), 200);
}

TEST_F(AuthTest, DeletingAUserDeletesTheirRoleBindingsSoANewNamesakeInheritsNothing) {
  api().CreateProject("ml");
  CreateUser("gina", "gina-password-1");
  api().MustCreate(
      NsPath("ml", "rolebindings"),
      json::object{{"metadata", json::object{{"name", "gina-admin"}}},
                   {"spec", json::object{{"user", "gina"}, {"role", "project-admin"}}}});
  ASSERT_EQ(api().Delete(ClusterPath("users", "gina")).status, 200);
  EXPECT_TRUE(api().Get(NsPath("ml", "rolebindings", "gina-admin")).IsStatus(404, "NotFound"));
  // A new user of the same name starts with no role.
  CreateUser("gina", "gina-password-2");
  Api gina(gantryd_->base_url(), TokenFor("gina"));
  Resp r = gina.Get(NsPath("ml", "computeinstances"));
  EXPECT_TRUE(r.IsStatus(403, "Forbidden")) << r.raw;
}

TEST_F(AuthTest, ChangingOnesOwnPasswordNeedsTheCurrentOneAndEndsTheOtherSessions) {
  CreateUser("hana", "hana-password-1");
  std::string token = TokenFor("hana");
  Api hana(gantryd_->base_url(), token);
  client::HttpResponse other = Login("hana", "hana-password-1");  // e.g. another browser
  ASSERT_EQ(other.status, 200) << other.body;
  auto cookie_of = [](client::HttpResponse& r) {
    return r.headers["set-cookie"].substr(0, r.headers["set-cookie"].find(';'));
  };
  std::string other_cookie = cookie_of(other);
  client::HttpResponse mine = Login("hana", "hana-password-1");
  ASSERT_EQ(mine.status, 200) << mine.body;
  std::string my_cookie = cookie_of(mine);
  std::string my_csrf(json::parse(mine.body).at("csrfToken").as_string());
  auto change = [&](json::object spec) {
    client::HttpClient c(gantryd_->base_url());
    auto r = c.SendWithHeaders(
        "PATCH", ClusterPath("users", "hana"), {{"Cookie", my_cookie}, {"X-Gantry-CSRF", my_csrf}},
        json::serialize(json::object{{"spec", std::move(spec)}}), "application/merge-patch+json");
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : client::HttpResponse{};
  };
  // Without the current password, or with a wrong one: refused, and nothing changes.
  auto missing = hana.Patch(ClusterPath("users", "hana"),
                            json::object{{"spec", json::object{{"password", "hana-password-2"}}}});
  EXPECT_TRUE(missing.IsStatus(422, "Invalid")) << missing.raw;
  EXPECT_EQ(missing.cause_fields(), (std::vector<std::string>{"spec.currentPassword"}));
  auto wrong =
      change(json::object{{"password", "hana-password-2"}, {"currentPassword", "nope-nope-1"}});
  EXPECT_EQ(wrong.status, 403) << wrong.body;
  EXPECT_THAT(wrong.body, HasSubstr("spec.currentPassword is not the current password"));
  auto alone = change(json::object{{"currentPassword", "hana-password-1"}});
  EXPECT_EQ(alone.status, 422) << alone.body;
  EXPECT_EQ(Login("hana", "hana-password-2").status, 401);
  EXPECT_EQ(WithCookie("GET", "/auth/whoami", other_cookie, "").status, 200);

  auto ok =
      change(json::object{{"password", "hana-password-2"}, {"currentPassword", "hana-password-1"}});
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_THAT(ok.body, Not(HasSubstr("hana-password")));
  // The other session ended; the caller's session and API token go on.
  EXPECT_EQ(WithCookie("GET", "/auth/whoami", other_cookie, "").status, 401);
  EXPECT_EQ(WithCookie("GET", "/auth/whoami", my_cookie, "").status, 200);
  EXPECT_EQ(hana.Get(ClusterPath("users", "hana")).status, 200);
  EXPECT_EQ(Login("hana", "hana-password-1").status, 401);
  EXPECT_EQ(Login("hana", "hana-password-2").status, 200);
  // An org-admin resets another user's password without knowing it.
  EXPECT_EQ(api()
                .Patch(ClusterPath("users", "hana"),
                       json::object{{"spec", json::object{{"password", "hana-password-3"}}}})
                .status,
            200);
  EXPECT_EQ(WithCookie("GET", "/auth/whoami", my_cookie, "").status, 401);
}

TEST_F(AuthTest, NoSessionIsOpenedOnTheHostNameOfWorkloads) {
  // Workloads are published on --advertise-host (default localhost); the UI is reached on
  // 127.0.0.1. A session cookie for localhost would be sent to every workload's port.
  auto login = [&](const std::string& host) {
    client::HttpClient c(gantryd_->base_url());
    auto r = c.SendWithHeaders(
        "POST", "/auth/login", {{"Host", host + ":" + std::to_string(gantryd_->port())}},
        json::serialize(json::object{{"username", "admin"}, {"password", kAdminPassword}}));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : client::HttpResponse{};
  };
  client::HttpResponse refused = login("LocalHost");
  EXPECT_EQ(refused.status, 403) << refused.body;
  EXPECT_THAT(refused.body, HasSubstr("workloads are published on localhost"));
  EXPECT_EQ(refused.headers.count("set-cookie"), 0u);
  EXPECT_EQ(login("127.0.0.1").status, 200);
}

class SessionIdleTest : public AuthTest {
 protected:
  std::vector<std::string> Args() override { return {"--session-idle", "1s"}; }
};

// What only a running gantryd shows: --session-idle reaches the authenticator, and an
// expired token or idle session gets a 401 with its message. The API refuses a token that
// is born expired (expiresIn must be > 0), so this waits (once, about a second) for both.
TEST_F(SessionIdleTest, ExpiredTokensAndIdleSessionsAnswer401) {
  CreateUser("bob", "bob-password-1");
  Api bob(gantryd_->base_url(), TokenFor("bob", json::object{{"expiresIn", "1s"}}));
  client::HttpResponse login = Login("admin", kAdminPassword);
  ASSERT_EQ(login.status, 200);
  std::string cookie = login.headers["set-cookie"].substr(0, login.headers["set-cookie"].find(';'));
  EXPECT_TRUE(Eventually([&] {
    return bob.Get(ClusterPath("users", "bob")).status == 401 &&
           WithCookie("GET", "/auth/whoami", cookie, "").status == 401;
  }));
  Resp r = bob.Get(ClusterPath("users", "bob"));
  EXPECT_TRUE(r.IsStatus(401, "Unauthorized")) << r.raw;
  EXPECT_THAT(r.message(), HasSubstr("expired"));
  auto idle = WithCookie("GET", "/auth/whoami", cookie, "");
  EXPECT_EQ(idle.status, 401);
  EXPECT_THAT(idle.body, HasSubstr("log in again"));
}

}  // namespace
}  // namespace gantry::testing
