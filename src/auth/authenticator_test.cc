// Authenticator on a real SqliteStore (temporary directory) and a FakeClock: API token
// expiry to the second, web session idle and absolute expiry (and which uses count as
// activity), and the login limiter's windows and their reset, without waiting real time.
// tests/auth/auth_test.cc keeps what only a running gantryd shows (HTTP answers, flags).
#include "auth/authenticator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "common/fake_clock.h"
#include "store/sqlite/sqlite_store.h"

namespace gantry::auth {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr char kPassword[] = "correct-horse-1";

class AuthenticatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::path(::testing::TempDir()) / "gantry-authn-XXXXXX");
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    store::SqliteOptions options;
    options.path = dir_ + "/gantry.db";
    options.synchronous = "NORMAL";
    auto s = store::SqliteStore::Open(options);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    Start(AuthOptions{});
  }
  void TearDown() override {
    authn_.reset();
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // A fresh Authenticator with `options` on the same store and clock (the store's observer
  // is set once, so it calls whichever is current).
  void Start(AuthOptions options) {
    bool first = authn_ == nullptr;
    authn_ = std::make_unique<Authenticator>(*store_, clock_, std::move(options));
    if (first)
      store_->SetCommitObserver(
          [this](const std::vector<store::Event>& e) { authn_->OnCommit(e); });
  }
  // User `name` with kPassword.
  void AddUser(const std::string& name) {
    json::object user{{"apiVersion", "paas.gantry.dev/v1"},
                      {"kind", "User"},
                      {"metadata", json::object{{"name", name}, {"namespace", ""}}},
                      {"spec", json::object{{"displayName", name}}}};
    auto password = authn_->PasswordWrite(name, kPassword);
    ASSERT_TRUE(password.ok()) << password.status();
    std::vector<store::Write> writes;
    writes.push_back({store::Write::Op::kCreate, "User", std::move(user), 0, 0});
    writes.push_back(*std::move(password));
    ASSERT_TRUE(store_->Commit(std::move(writes)).ok());
  }
  std::string Token(std::optional<std::chrono::seconds> ttl) {
    auto t = authn_->CreateToken("alice", "ci", ttl);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? std::string(t->at("token").as_string()) : "";
  }
  absl::Status WithToken(const std::string& token) {
    return authn_->Authenticate("Bearer " + token, "").status();
  }
  // Logs alice in from `source`; returns the Cookie header for the session.
  std::string LogIn(std::string_view source = "10.0.0.1:4000") {
    auto r = authn_->Login("alice", kPassword, source);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::string(kSessionCookie) + "=" + r->cookie_value : "";
  }
  absl::Status WithCookie(const std::string& cookie) {
    return authn_->Authenticate("", cookie).status();
  }
  absl::Status Attempt(std::string_view user, std::string_view password,
                       std::string_view source = "10.0.0.9:5000") {
    return authn_->CheckPassword(user, password, source).status();
  }

  std::string dir_;
  FakeClock clock_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<Authenticator> authn_;
};

// --- API tokens ---

TEST_F(AuthenticatorTest, ATokenWorksUntilItsExpiryAndFailsExactlyAtIt) {
  AddUser("alice");
  std::string token = Token(90s);
  EXPECT_TRUE(WithToken(token).ok());
  clock_.Advance(89s);
  EXPECT_TRUE(WithToken(token).ok());  // cached now: expiry is still checked on every use
  clock_.Advance(1s);
  absl::Status expired = WithToken(token);
  EXPECT_TRUE(absl::IsUnauthenticated(expired)) << expired;
  EXPECT_EQ(expired.message(), "the bearer token expired at 2026-01-01T00:01:30Z");
  clock_.Advance(1h);
  EXPECT_TRUE(absl::IsUnauthenticated(WithToken(token)));
}

TEST_F(AuthenticatorTest, ATokenWithoutExpiryNeverExpires) {
  AddUser("alice");
  std::string token = Token(std::nullopt);
  clock_.Advance(std::chrono::hours(24 * 365 * 10));
  EXPECT_TRUE(WithToken(token).ok());
}

TEST_F(AuthenticatorTest, TheTokenListShowsExpiryAsTimePasses) {
  AddUser("alice");
  Token(60s);
  Token(std::nullopt);
  auto expired_count = [&] {
    auto list = authn_->ListTokens("alice");
    EXPECT_TRUE(list.ok()) << list.status();
    int n = 0;
    for (const auto& item : list->at("items").as_array())
      n += item.at("status").at("expired").as_bool() ? 1 : 0;
    return n;
  };
  EXPECT_EQ(expired_count(), 0);
  clock_.Advance(59s);
  EXPECT_EQ(expired_count(), 0);
  clock_.Advance(1s);
  EXPECT_EQ(expired_count(), 1);
}

// The lastUsed of alice's only token, "" for never.
std::string LastUsed(Authenticator& authn) {
  auto list = authn.ListTokens("alice");
  EXPECT_TRUE(list.ok()) << list.status();
  if (!list.ok() || list->at("items").as_array().empty()) return "(no token)";
  return std::string(list->at("items").at(0).at("status").at("lastUsed").as_string());
}

TEST_F(AuthenticatorTest, ATokensLastUseIsRecordedAtMostOnceAMinute) {
  AddUser("alice");
  std::string token = Token(std::nullopt);
  EXPECT_EQ(LastUsed(*authn_), "");
  clock_.Advance(10s);
  EXPECT_TRUE(WithToken(token).ok());  // the first use is recorded at once
  EXPECT_EQ(LastUsed(*authn_), "2026-01-01T00:00:10Z");
  clock_.Advance(59s);
  EXPECT_TRUE(WithToken(token).ok());  // cached, and within the minute: no write
  EXPECT_EQ(LastUsed(*authn_), "2026-01-01T00:00:10Z");
  clock_.Advance(1s);
  EXPECT_TRUE(WithToken(token).ok());
  EXPECT_EQ(LastUsed(*authn_), "2026-01-01T00:01:10Z");
  // An open stream's re-check is not a use.
  clock_.Advance(5min);
  EXPECT_TRUE(authn_->Recheck("Bearer " + token, "").ok());
  EXPECT_EQ(LastUsed(*authn_), "2026-01-01T00:01:10Z");
}

// --- web sessions (idle 30 min, at most 12 h by default) ---

TEST_F(AuthenticatorTest, SessionsAreListedWithoutSecretsAndEndOneOrAll) {
  AddUser("alice");
  AddUser("bob");
  std::string first = LogIn("10.0.0.1:4000");
  std::string second = LogIn("10.0.0.2:4000");
  auto me = authn_->Authenticate("", first);
  ASSERT_TRUE(me.ok()) << me.status();
  auto list = authn_->ListSessions("alice", me->session);
  ASSERT_TRUE(list.ok()) << list.status();
  const json::array& items = list->at("items").as_array();
  ASSERT_EQ(items.size(), 2u);
  int current = 0;
  for (const auto& item : items) {
    current += item.at("status").at("current").as_bool() ? 1 : 0;
    EXPECT_THAT(std::string(item.at("spec").at("source").as_string()),
                ::testing::StartsWith("10.0.0."));
    std::string text = json::serialize(item);
    EXPECT_THAT(text, ::testing::Not(HasSubstr("hash")));
    EXPECT_THAT(text, ::testing::Not(HasSubstr("csrf")));
  }
  EXPECT_EQ(current, 1);
  // Another user's session is not alice's to end.
  EXPECT_TRUE(absl::IsNotFound(authn_->EndSession("bob", me->session)));
  ASSERT_TRUE(authn_->EndSession("alice", me->session).ok());
  EXPECT_TRUE(absl::IsUnauthenticated(WithCookie(first)));
  EXPECT_TRUE(WithCookie(second).ok());
  std::string token = Token(std::nullopt);
  LogIn();
  auto ended = authn_->EndSessions("alice");
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(*ended, 2);
  EXPECT_TRUE(absl::IsUnauthenticated(WithCookie(second)));
  EXPECT_TRUE(WithToken(token).ok());  // log out everywhere leaves API tokens alone
  EXPECT_TRUE(authn_->ListSessions("alice", "")->at("items").as_array().empty());
}

TEST_F(AuthenticatorTest, AnIdleSessionIsNotListedAsActive) {
  AddUser("alice");
  LogIn();
  clock_.Advance(30min);
  auto list = authn_->ListSessions("alice", "");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->at("items").as_array().empty());
}

TEST_F(AuthenticatorTest, AnUnusedSessionExpiresExactlyAfterTheIdleTime) {
  AddUser("alice");
  std::string cookie = LogIn();
  clock_.Advance(30min - 1s);
  EXPECT_TRUE(WithCookie(cookie).ok());  // used: lastSeen moves to now
  clock_.Advance(30min - 1s);
  EXPECT_TRUE(WithCookie(cookie).ok());
  clock_.Advance(30min);
  absl::Status idle = WithCookie(cookie);
  EXPECT_TRUE(absl::IsUnauthenticated(idle)) << idle;
  EXPECT_EQ(idle.message(), "the session expired after inactivity; log in again");
  // Removed on first sight: the next use finds no session at all.
  EXPECT_EQ(WithCookie(cookie).message(),
            "the session ended (logged out or expired); log in again");
}

TEST_F(AuthenticatorTest, UsesWithinAMinuteOfTheLastRecordedOneDoNotExtendTheSession) {
  AddUser("alice");
  std::string cookie = LogIn();
  clock_.Advance(59s);
  EXPECT_TRUE(WithCookie(cookie).ok());  // lastSeen is written at most once a minute
  clock_.Advance(30min - 59s);
  EXPECT_EQ(WithCookie(cookie).message(), "the session expired after inactivity; log in again");
}

TEST_F(AuthenticatorTest, ARecheckOfAnOpenStreamIsNotActivity) {
  AddUser("alice");
  std::string cookie = LogIn();
  clock_.Advance(20min);
  EXPECT_TRUE(authn_->Recheck("", cookie).ok());
  clock_.Advance(10min);
  absl::Status recheck = authn_->Recheck("", cookie).status();
  EXPECT_EQ(recheck.message(), "the session expired after inactivity; log in again");
}

TEST_F(AuthenticatorTest, AUsedSessionStillEndsAtItsAbsoluteExpiry) {
  AuthOptions options;
  options.session_idle = 30min;
  options.session_max = 2h;
  Start(options);
  AddUser("alice");
  auto login = authn_->Login("alice", kPassword, "10.0.0.1:4000");
  ASSERT_TRUE(login.ok()) << login.status();
  EXPECT_EQ(login->expires_at, "2026-01-01T02:00:00Z");
  std::string cookie = std::string(kSessionCookie) + "=" + login->cookie_value;
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(20min);
    EXPECT_TRUE(WithCookie(cookie).ok()) << "at " << (i + 1) * 20 << " min";
  }
  clock_.Advance(20min);  // 2 h after the login
  EXPECT_EQ(WithCookie(cookie).message(), "the session expired; log in again");
}

TEST_F(AuthenticatorTest, TheIdleTimeIsAnOption) {
  AuthOptions options;
  options.session_idle = 1s;  // gantryd --session-idle 1s
  Start(options);
  AddUser("alice");
  std::string cookie = LogIn();
  EXPECT_TRUE(WithCookie(cookie).ok());
  clock_.Advance(1s);
  EXPECT_THAT(WithCookie(cookie).message(), HasSubstr("log in again"));
}

// --- the login limiter (3 per user and address, 5 per address, in 5 min) ---

class LoginLimiterTest : public AuthenticatorTest {
 protected:
  void SetUp() override {
    AuthenticatorTest::SetUp();
    AuthOptions options;
    options.login_failures = 3;
    options.login_address_failures = 5;
    options.login_window = 5min;
    Start(options);
    AddUser("alice");
  }
};

TEST_F(LoginLimiterTest, TooManyFailuresRefuseEvenTheRightPasswordUntilTheWindowPasses) {
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(absl::IsUnauthenticated(Attempt("alice", "wrong"))) << "attempt " << i;
  absl::Status limited = Attempt("alice", kPassword);
  EXPECT_TRUE(absl::IsResourceExhausted(limited)) << limited;  // 429
  EXPECT_EQ(limited.message(), "too many failed logins; try again in 300 seconds");
  clock_.Advance(5min - 1s);
  EXPECT_EQ(Attempt("alice", kPassword).message(),
            "too many failed logins; try again in 1 seconds");
  clock_.Advance(1s);  // the oldest failure leaves the window exactly now
  EXPECT_TRUE(Attempt("alice", kPassword).ok());
}

TEST_F(LoginLimiterTest, TheWindowSlidesFailureByFailure) {
  EXPECT_FALSE(Attempt("alice", "wrong").ok());
  clock_.Advance(2min);
  EXPECT_FALSE(Attempt("alice", "wrong").ok());
  EXPECT_FALSE(Attempt("alice", "wrong").ok());
  clock_.Advance(3min - 1s);
  EXPECT_EQ(Attempt("alice", kPassword).message(),
            "too many failed logins; try again in 1 seconds");
  clock_.Advance(1s);  // the first failure is out; two are left, one short of the limit
  EXPECT_TRUE(absl::IsUnauthenticated(Attempt("alice", "wrong")));
  EXPECT_EQ(Attempt("alice", kPassword).message(),
            "too many failed logins; try again in 120 seconds");
}

TEST_F(LoginLimiterTest, ARightPasswordResetsTheUsersCountButNotTheAddresss) {
  EXPECT_FALSE(Attempt("alice", "wrong").ok());
  EXPECT_FALSE(Attempt("alice", "wrong").ok());
  EXPECT_TRUE(Attempt("alice", kPassword).ok());  // resets alice's count from this address
  EXPECT_TRUE(absl::IsUnauthenticated(Attempt("alice", "wrong")));
  EXPECT_TRUE(absl::IsUnauthenticated(Attempt("alice", "wrong")));
  EXPECT_TRUE(Attempt("alice", kPassword).ok());  // 2 of 3 since the reset
  // The address has failed 4 times; its fifth failure (another user) reaches its limit.
  EXPECT_TRUE(absl::IsUnauthenticated(Attempt("bob", "wrong")));
  EXPECT_THAT(Attempt("alice", kPassword).message(), HasSubstr("too many failed logins"));
}

TEST_F(LoginLimiterTest, OnlyTheAddressThatFailedIsLimited) {
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(Attempt("user-" + std::to_string(i), "x").ok());
  EXPECT_THAT(Attempt("someone", "x").message(), HasSubstr("too many failed logins"));
  // The port is not part of the address; another address is not limited at all.
  EXPECT_THAT(Attempt("alice", kPassword, "10.0.0.9:6000").message(),
              HasSubstr("too many failed logins"));
  EXPECT_TRUE(Attempt("alice", kPassword, "10.0.0.8:5000").ok());
  clock_.Advance(5min);
  EXPECT_TRUE(Attempt("alice", kPassword).ok());
}

TEST_F(LoginLimiterTest, LoginAndCheckPasswordShareTheLimiter) {
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(authn_->Login("alice", "wrong", "10.0.0.9:1").ok());
  EXPECT_THAT(Attempt("alice", kPassword).message(), HasSubstr("too many failed logins"));
  clock_.Advance(5min);
  EXPECT_TRUE(authn_->Login("alice", kPassword, "10.0.0.9:1").ok());
}

}  // namespace
}  // namespace gantry::auth
