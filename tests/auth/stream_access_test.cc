// Open streams end when access ends (issue 15, item 7), against a real gantryd: a watch and a
// `logs -f` opened by alice end within seconds of her user being disabled, her token revoked,
// her session logged out or her role binding removed; a watch ends with a last ERROR event
// carrying the 401 or 403 Status, a followed log simply ends. Streams of others go on. With
// two replicas on one PostgreSQL store, a revocation on one ends the stream on the other.
//
// No sleeps: the streams are live once their first line arrived (the guard registers a stream
// before its first byte is sent); the test then changes access and waits for the end, with
// the collectors' generous deadline bounding only a failure.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api_client.h"
#include "engine_fixture.h"
#include "gantryd_process.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

constexpr char kAlicePassword[] = "alice-password-1";

std::string Bearer(const std::string& token) { return "Authorization: Bearer " + token + "\r\n"; }

// The last event of `watch`, which must have ended: {"type":"ERROR","object":<Status>}.
json::object FinalError(WatchCollector& watch) {
  EXPECT_TRUE(watch.WaitDone()) << "the watch did not end";
  std::vector<json::object> events = watch.events();
  if (events.empty()) {
    ADD_FAILURE() << "the watch sent nothing";
    return {};
  }
  const json::object& last = events.back();
  EXPECT_EQ(last.contains("type") ? last.at("type") : json::value(), json::value("ERROR"))
      << json::serialize(last);
  const json::value* status = last.if_contains("object");
  if (!status || !status->is_object()) return {};
  EXPECT_EQ(status->at("kind"), "Status") << json::serialize(last);
  return status->get_object();
}

// User alice, a member of project "default", and an API token of hers (`secret`, record
// `name`), created through `api`.
void CreateAlice(Api& api, std::string* secret, std::string* name) {
  api.MustCreate(ClusterPath("users"),
                 json::object{{"metadata", json::object{{"name", "alice"}}},
                              {"spec", json::object{{"password", kAlicePassword}}}});
  api.MustCreate(NsPath("default", "rolebindings"),
                 json::object{{"metadata", json::object{{"name", "alice-member"}}},
                              {"spec", json::object{{"user", "alice"}, {"role", "member"}}}});
  Resp token = api.Post(ClusterPath("users", "alice") + "/tokens", json::object{});
  ASSERT_EQ(token.status, 201) << token.raw;
  *secret = std::string(token.obj().at("token").as_string());
  *name = token.meta("name");
}

bool Live(WatchCollector& stream) {
  return stream.WaitFor([](const auto& events) { return !events.empty(); });
}

class StreamAccessTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    ASSERT_NO_FATAL_FAILURE(CreateAlice(api(), &token_, &token_name_));
  }

  // A watch of the default project's role bindings (alice's own is its first event).
  std::unique_ptr<WatchCollector> Watch(const std::string& credentials,
                                        const std::string& base_url = "") {
    auto w = std::make_unique<WatchCollector>(base_url.empty() ? gantryd_->base_url() : base_url,
                                              NsPath("default", "rolebindings") + "?watch=true",
                                              nullptr, nullptr, credentials);
    EXPECT_TRUE(Live(*w)) << ::testing::PrintToString(w->Summary());
    return w;
  }

  // `logs -f` of a deploy that runs until released (release_ names it).
  std::unique_ptr<WatchCollector> FollowLog(const std::string& credentials) {
    if (run_.empty()) {
      CreateStandardProfile();
      api().CreateInstance("default", "web", "std");
      run_ = DeployBlocked("web");
    }
    auto f = std::make_unique<WatchCollector>(gantryd_->base_url(),
                                              NsPath("default", "runs", run_) + "/log?follow=true",
                                              nullptr, nullptr, credentials);
    EXPECT_TRUE(Live(*f)) << f->result();
    return f;
  }

  void TearDown() override {
    if (!run_.empty()) Touch("release-" + run_);
    EngineTest::TearDown();
  }

  // A web session of alice: {cookie header line, csrf token}.
  std::pair<std::string, std::string> AliceSession() {
    client::HttpClient c(gantryd_->base_url());
    auto r =
        c.Send("POST", "/auth/login",
               json::serialize(json::object{{"username", "alice"}, {"password", kAlicePassword}}));
    EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
    if (!r.ok()) return {};
    std::string set_cookie = r->headers["set-cookie"];
    json::object body = json::parse(r->body).as_object();
    return {"Cookie: " + set_cookie.substr(0, set_cookie.find(';')) + "\r\n",
            std::string(body.at("csrfToken").as_string())};
  }

  std::string token_, token_name_, run_;
};

TEST_F(StreamAccessTest, DisablingTheUserEndsHerWatchAndLogButNotOthers) {
  auto watch = Watch(Bearer(token_));
  auto log = FollowLog(Bearer(token_));
  auto admins = Watch("");  // the bootstrap org-admin's
  ASSERT_EQ(api()
                .Patch(ClusterPath("users", "alice"),
                       json::object{{"spec", json::object{{"disabled", true}}}})
                .status,
            200);
  json::object status = FinalError(*watch);
  EXPECT_EQ(status["code"], 401) << json::serialize(status);
  EXPECT_EQ(status["reason"], "Unauthorized");
  EXPECT_THAT(std::string(status["message"].as_string()), HasSubstr("alice\" is disabled"));
  EXPECT_TRUE(log->WaitDone()) << "the followed log did not end";
  // The admin's watch goes on: it still sees changes.
  ASSERT_EQ(api().Delete(NsPath("default", "rolebindings", "alice-member")).status, 200);
  EXPECT_TRUE(admins->WaitFor([](const std::vector<json::object>& events) {
    return !events.empty() && events.back().at("type") == "DELETED";
  })) << ::testing::PrintToString(admins->Summary());
}

TEST_F(StreamAccessTest, RevokingTheTokenEndsItsWatchAndLog) {
  auto watch = Watch(Bearer(token_));
  auto log = FollowLog(Bearer(token_));
  ASSERT_EQ(api().Delete(ClusterPath("users", "alice") + "/tokens/" + token_name_).status, 200);
  json::object status = FinalError(*watch);
  EXPECT_EQ(status["code"], 401) << json::serialize(status);
  EXPECT_THAT(std::string(status["message"].as_string()), HasSubstr("revoked"));
  EXPECT_TRUE(log->WaitDone()) << "the followed log did not end";
}

TEST_F(StreamAccessTest, LoggingOutEndsTheSessionsWatchAndLog) {
  auto [cookie, csrf] = AliceSession();
  ASSERT_FALSE(cookie.empty());
  auto watch = Watch(cookie);
  auto log = FollowLog(cookie);
  auto by_token = Watch(Bearer(token_));  // another credential of alice's: unaffected
  client::HttpClient c(gantryd_->base_url());
  std::string cookie_value = cookie.substr(8, cookie.size() - 10);  // "Cookie: …\r\n"
  auto out = c.SendWithHeaders("POST", "/auth/logout",
                               {{"Cookie", cookie_value}, {"X-Gantry-CSRF", csrf}}, "");
  ASSERT_TRUE(out.ok() && out->status == 200) << (out.ok() ? out->body : out.status().ToString());
  json::object status = FinalError(*watch);
  EXPECT_EQ(status["code"], 401) << json::serialize(status);
  EXPECT_THAT(std::string(status["message"].as_string()), HasSubstr("session ended"));
  EXPECT_TRUE(log->WaitDone()) << "the followed log did not end";
  // The token's watch still streams.
  ASSERT_EQ(api()
                .Patch(NsPath("default", "rolebindings", "alice-member"),
                       json::object{
                           {"metadata", json::object{{"labels", json::object{{"seen", "yes"}}}}}})
                .status,
            200);
  EXPECT_TRUE(by_token->WaitFor([](const std::vector<json::object>& events) {
    return !events.empty() && events.back().at("type") == "MODIFIED";
  })) << ::testing::PrintToString(by_token->Summary());
}

TEST_F(StreamAccessTest, RemovingTheRoleBindingEndsWatchesAndLogWith403) {
  auto watch = Watch(Bearer(token_));
  auto log = FollowLog(Bearer(token_));
  // A watch across projects is open to everyone, but showed alice the default project.
  auto across = std::make_unique<WatchCollector>(gantryd_->base_url(),
                                                 ClusterPath("computeinstances") + "?watch=true",
                                                 nullptr, nullptr, Bearer(token_));
  ASSERT_TRUE(Live(*across));  // the instance "web" of FollowLog
  ASSERT_EQ(api().Delete(NsPath("default", "rolebindings", "alice-member")).status, 200);
  json::object status = FinalError(*watch);
  EXPECT_EQ(status["code"], 403) << json::serialize(status);
  EXPECT_EQ(status["reason"], "Forbidden");
  EXPECT_THAT(std::string(status["message"].as_string()),
              HasSubstr("User \"alice\" cannot watch resource \"rolebindings\""));
  EXPECT_TRUE(log->WaitDone()) << "the followed log did not end";
  json::object across_status = FinalError(*across);
  EXPECT_EQ(across_status["code"], 403) << json::serialize(across_status);
  EXPECT_THAT(std::string(across_status["message"].as_string()),
              HasSubstr("no longer holds a role in project \"default\""));
}

// Two replicas on one PostgreSQL database: alice watches through one, her token is revoked
// through the other.
class StreamAccessReplicasTest : public TwoReplicaTest<GantrydTest> {};

TEST_F(StreamAccessReplicasTest, RevokingATokenOnOneReplicaEndsItsWatchOnTheOther) {
  std::string secret, token_name;
  ASSERT_NO_FATAL_FAILURE(CreateAlice(api(), &secret, &token_name));
  WatchCollector watch(second_->base_url(), NsPath("default", "rolebindings") + "?watch=true",
                       nullptr, nullptr, Bearer(secret));
  // Live, and the second replica resolved (and cached) the token.
  ASSERT_TRUE(Live(watch)) << watch.result();
  ASSERT_EQ(api().Delete(ClusterPath("users", "alice") + "/tokens/" + token_name).status, 200);
  json::object status = FinalError(watch);
  EXPECT_EQ(status["code"], 401) << json::serialize(status);
  EXPECT_THAT(std::string(status["message"].as_string()), HasSubstr("revoked"));
}

}  // namespace
}  // namespace gantry::testing
