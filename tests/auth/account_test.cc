// What the "My account" and Users pages of the UI stand on, against a real gantryd (issue 21,
// item 5): a user's web sessions (users/NAME/sessions: list, end one, end every one, never a
// secret), a token's last use, who may see and end whose (a user their own; an org-admin
// anyone's), and a disabled user who cannot log in while their sessions and tokens stop.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api_client.h"
#include "gantryd_process.h"
#include "gantryd_test.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;

// A web session as the browser holds it.
struct Browser {
  std::string cookie;  // "gantry_session=..."
  std::string csrf;
};

class AccountTest : public GantrydTest {
 protected:
  void CreateUser(const std::string& name, const std::string& org_role = "") {
    json::object spec{{"displayName", name}, {"password", name + "-password-1"}};
    if (!org_role.empty()) spec["orgRole"] = org_role;
    api().MustCreate(ClusterPath("users"),
                     json::object{{"metadata", json::object{{"name", name}}}, {"spec", spec}});
  }
  std::string TokenFor(const std::string& user) {
    Resp r =
        api().Post(ClusterPath("users", user) + "/tokens", json::object{{"description", "ui"}});
    EXPECT_EQ(r.status, 201) << r.raw;
    return r.status == 201 ? std::string(r.obj().at("token").as_string()) : "";
  }
  // POST /auth/login; the status and, on 200, the session.
  std::pair<int, Browser> LogIn(const std::string& user, const std::string& password = "") {
    client::HttpClient c(gantryd_->base_url());
    auto r = c.Send(
        "POST", "/auth/login",
        json::serialize(json::object{
            {"username", user}, {"password", password.empty() ? user + "-password-1" : password}}));
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {0, {}};
    if (r->status != 200) {
      last_refusal_ = r->body;
      return {r->status, {}};
    }
    std::string set_cookie = r->headers["set-cookie"];
    return {200, Browser{set_cookie.substr(0, set_cookie.find(';')),
                         std::string(json::parse(r->body).at("csrfToken").as_string())}};
  }
  client::HttpResponse Send(const Browser& b, const std::string& method,
                            const std::string& target) {
    client::HttpClient c(gantryd_->base_url());
    std::map<std::string, std::string> headers{{"Cookie", b.cookie}};
    if (method != "GET") headers["X-Gantry-CSRF"] = b.csrf;
    auto r = c.SendWithHeaders(method, target, headers, "");
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : client::HttpResponse{};
  }
  static std::string Sessions(const std::string& user) {
    return ClusterPath("users", user) + "/sessions";
  }
  std::string last_refusal_;
};

TEST_F(AccountTest, AUserListsTheirSessionsWithoutSecretsAndTheCurrentOneIsMarked) {
  CreateUser("alice");
  auto [s1, first] = LogIn("alice");
  auto [s2, second] = LogIn("alice");
  ASSERT_EQ(s1, 200);
  ASSERT_EQ(s2, 200);
  auto list = Send(first, "GET", Sessions("alice"));
  ASSERT_EQ(list.status, 200) << list.body;
  json::object body = json::parse(list.body).as_object();
  EXPECT_EQ(body.at("kind"), "SessionList");
  const json::array& items = body.at("items").as_array();
  ASSERT_EQ(items.size(), 2u) << list.body;
  int current = 0;
  for (const auto& item : items) {
    EXPECT_EQ(item.at("kind"), "Session");
    EXPECT_THAT(std::string(item.at("metadata").at("name").as_string()),
                ::testing::StartsWith("ses-"));
    EXPECT_EQ(item.at("spec").at("user"), "alice");
    EXPECT_EQ(item.at("spec").at("source"), "127.0.0.1");
    EXPECT_FALSE(item.at("status").at("lastSeen").as_string().empty());
    EXPECT_FALSE(item.at("spec").at("expiresAt").as_string().empty());
    current += item.at("status").at("current").as_bool() ? 1 : 0;
  }
  EXPECT_EQ(current, 1);
  // Neither the cookie's secret nor the CSRF token nor any hash is in the answer.
  EXPECT_THAT(list.body, Not(HasSubstr(first.cookie.substr(first.cookie.find('=') + 1))));
  EXPECT_THAT(list.body, Not(HasSubstr(second.cookie.substr(second.cookie.find('=') + 1))));
  EXPECT_THAT(list.body, Not(HasSubstr(first.csrf)));
  EXPECT_THAT(list.body, Not(HasSubstr("hash")));
  // With a token, none is the current one.
  Api alice(gantryd_->base_url(), TokenFor("alice"));
  Resp by_token = alice.Get(Sessions("alice"));
  ASSERT_EQ(by_token.status, 200) << by_token.raw;
  for (const auto& item : by_token.obj().at("items").as_array())
    EXPECT_FALSE(item.at("status").at("current").as_bool());
}

TEST_F(AccountTest, EndingOneSessionOrEveryOneLeavesTheTokensWorking) {
  CreateUser("alice");
  auto [s1, laptop] = LogIn("alice");
  auto [s2, phone] = LogIn("alice");
  auto [s3, desk] = LogIn("alice");
  ASSERT_EQ(s1, 200);
  ASSERT_EQ(s2, 200);
  ASSERT_EQ(s3, 200);
  Api alice(gantryd_->base_url(), TokenFor("alice"));
  Resp list = alice.Get(Sessions("alice"));
  ASSERT_EQ(list.status, 200) << list.raw;
  // The phone's session id: the one the phone's own list marks current.
  json::object mine = json::parse(Send(phone, "GET", Sessions("alice")).body).as_object();
  std::string phone_id;
  for (const auto& item : mine.at("items").as_array())
    if (item.at("status").at("current").as_bool())
      phone_id = std::string(item.at("metadata").at("name").as_string());
  ASSERT_FALSE(phone_id.empty()) << json::serialize(mine);

  auto one = Send(laptop, "DELETE", Sessions("alice") + "/" + phone_id);
  EXPECT_EQ(one.status, 200) << one.body;
  EXPECT_THAT(one.body, HasSubstr("session " + phone_id + " ended"));
  auto gone = Send(phone, "GET", ClusterPath("users", "alice"));
  EXPECT_EQ(gone.status, 401) << gone.body;
  EXPECT_THAT(gone.body, HasSubstr("the session ended"));
  EXPECT_EQ(Send(laptop, "GET", ClusterPath("users", "alice")).status, 200);
  Resp again = alice.Delete(Sessions("alice") + "/" + phone_id);
  EXPECT_TRUE(again.IsStatus(404, "NotFound")) << again.raw;
  EXPECT_EQ(again.message(), "session \"" + phone_id + "\" of user alice not found");

  // Log out everywhere: every session, the caller's own included; the token stays.
  auto all = Send(laptop, "DELETE", Sessions("alice"));
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(json::parse(all.body).at("message"),
            "2 sessions of user alice ended; API tokens keep working");
  EXPECT_EQ(Send(laptop, "GET", ClusterPath("users", "alice")).status, 401);
  EXPECT_EQ(Send(desk, "GET", ClusterPath("users", "alice")).status, 401);
  Resp still = alice.Get(Sessions("alice"));
  ASSERT_EQ(still.status, 200) << still.raw;
  EXPECT_TRUE(still.obj().at("items").as_array().empty());
  EXPECT_EQ(LogIn("alice").first, 200);  // and alice can log in again
}

TEST_F(AccountTest, OnlyTheUserAndAnOrgAdminSeeAndEndTheirSessionsAndTokens) {
  CreateUser("alice");
  CreateUser("bob");
  CreateUser("pat", "paas-admin");
  CreateUser("olga", "org-admin");
  auto [s1, alice_web] = LogIn("alice");
  ASSERT_EQ(s1, 200);
  std::string alice_token = TokenFor("alice");
  Api bob(gantryd_->base_url(), TokenFor("bob"));
  Api pat(gantryd_->base_url(), TokenFor("pat"));
  Api olga(gantryd_->base_url(), TokenFor("olga"));

  for (Api* other : {&bob, &pat}) {
    Resp list = other->Get(Sessions("alice"));
    EXPECT_TRUE(list.IsStatus(403, "Forbidden")) << list.raw;
    EXPECT_TRUE(other->Delete(Sessions("alice")).IsStatus(403, "Forbidden"));
    EXPECT_TRUE(other->Get(ClusterPath("users", "alice") + "/tokens").IsStatus(403, "Forbidden"));
  }
  EXPECT_THAT(bob.Delete(Sessions("alice")).message(),
              HasSubstr("User \"bob\" cannot delete resource \"sessions\": only the user "
                        "themself or a org-admin may do this"));
  EXPECT_EQ(Send(alice_web, "GET", ClusterPath("users", "alice")).status, 200);

  // The org-admin sees alice's session (not as its own) and her token with its last use.
  Resp sessions = olga.Get(Sessions("alice"));
  ASSERT_EQ(sessions.status, 200) << sessions.raw;
  ASSERT_EQ(sessions.obj().at("items").as_array().size(), 1u);
  EXPECT_FALSE(sessions.obj().at("items").at(0).at("status").at("current").as_bool());
  Api alice(gantryd_->base_url(), alice_token);
  ASSERT_EQ(alice.Get(ClusterPath("users", "alice")).status, 200);
  Resp tokens = olga.Get(ClusterPath("users", "alice") + "/tokens");
  ASSERT_EQ(tokens.status, 200) << tokens.raw;
  ASSERT_EQ(tokens.obj().at("items").as_array().size(), 1u);
  const json::object& token = tokens.obj().at("items").at(0).as_object();
  EXPECT_FALSE(token.at("status").at("lastUsed").as_string().empty()) << tokens.raw;
  EXPECT_THAT(tokens.raw, Not(HasSubstr(alice_token)));

  // ... and ends both.
  EXPECT_EQ(olga.Delete(Sessions("alice")).status, 200);
  EXPECT_EQ(Send(alice_web, "GET", ClusterPath("users", "alice")).status, 401);
  std::string name(token.at("metadata").at("name").as_string());
  EXPECT_EQ(olga.Delete(ClusterPath("users", "alice") + "/tokens/" + name).status, 200);
  EXPECT_TRUE(alice.Get(ClusterPath("users", "alice")).IsStatus(401, "Unauthorized"));
  EXPECT_TRUE(olga.Get(Sessions("nobody")).IsStatus(404, "NotFound"));
}

TEST_F(AccountTest, SessionsAreReadAndEndedOnlyWithGetAndDelete) {
  CreateUser("alice");
  Api alice(gantryd_->base_url(), TokenFor("alice"));
  Resp post = alice.Post(Sessions("alice"), json::object{});
  EXPECT_TRUE(post.IsStatus(405, "MethodNotAllowed")) << post.raw;
  EXPECT_THAT(post.message(), HasSubstr("POST /auth/login"));
  EXPECT_EQ(alice.Put(Sessions("alice") + "/ses-x", json::object{}).status, 405);
  EXPECT_TRUE(alice.Get(Sessions("alice") + "/ses-nope").IsStatus(404, "NotFound"));
  EXPECT_TRUE(alice.Delete(Sessions("alice") + "/ses-nope").IsStatus(404, "NotFound"));
  Resp ended = alice.Delete(Sessions("alice"));
  ASSERT_EQ(ended.status, 200) << ended.raw;
  EXPECT_EQ(ended.message(), "0 sessions of user alice ended; API tokens keep working");
}

TEST_F(AccountTest, ADisabledUserCannotLogInAndTheirSessionsStopUntilEnabled) {
  CreateUser("carol");
  auto [s1, web] = LogIn("carol");
  ASSERT_EQ(s1, 200);
  Api carol(gantryd_->base_url(), TokenFor("carol"));
  auto disable = [&](bool disabled) {
    Resp r = api().Patch(ClusterPath("users", "carol"),
                         json::object{{"spec", json::object{{"disabled", disabled}}}});
    EXPECT_EQ(r.status, 200) << r.raw;
  };
  disable(true);
  auto refused = LogIn("carol");
  EXPECT_EQ(refused.first, 401);
  EXPECT_THAT(last_refusal_, HasSubstr("user \\\"carol\\\" is disabled"));
  auto by_cookie = Send(web, "GET", ClusterPath("users", "carol"));
  EXPECT_EQ(by_cookie.status, 401);
  EXPECT_THAT(by_cookie.body, HasSubstr("disabled"));
  EXPECT_TRUE(carol.Get(ClusterPath("users", "carol")).IsStatus(401, "Unauthorized"));
  // A wrong password of a disabled user reads like any wrong password.
  auto wrong = LogIn("carol", "not-her-password");
  EXPECT_EQ(wrong.first, 401);
  EXPECT_THAT(last_refusal_, HasSubstr("invalid username or password"));
  // Only an org-admin switches it.
  Resp self = carol.Patch(ClusterPath("users", "carol"),
                          json::object{{"spec", json::object{{"disabled", false}}}});
  EXPECT_EQ(self.status, 401);
  disable(false);
  EXPECT_EQ(LogIn("carol").first, 200);
  EXPECT_EQ(Send(web, "GET", ClusterPath("users", "carol")).status, 200);
  EXPECT_EQ(carol.Get(ClusterPath("users", "carol")).status, 200);
}

}  // namespace
}  // namespace gantry::testing
