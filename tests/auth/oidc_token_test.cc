// The ID token checks (src/auth/oidc_token.h) on real ID tokens of a real provider
// (LemonLDAP::NG, tests/oidc_test_provider.h): the test is the relying party, logs in through
// the provider's form (tests/oidc_browser.h), exchanges the code and reads the JWKS, then
// checks what gantryd would: the genuine token passes; a bad signature, an expired token (a
// later clock), another nonce (a replay into another login), another audience or issuer, an
// "alg": "none" token and a token signed with an unknown kid are each refused with their
// own message. Skipped when lemonldap-ng is not installed, failed then in CI.
#include "auth/oidc_token.h"

#include <cjose/cjose.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sodium.h>

#include <boost/json.hpp>

#include "api_client.h"
#include "client/http_client.h"
#include "oidc_browser.h"
#include "oidc_test_provider.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

std::string B64Url(std::string_view s) {
  std::string out(sodium_base64_ENCODED_LEN(s.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING),
                  '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(s.data()),
                    s.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  out.resize(std::strlen(out.c_str()));
  return out;
}

class OidcTokenTest : public ::testing::Test {
 protected:
  static constexpr char kNonce[] = "nonce-of-this-login-1";
  static constexpr char kVerifier[] = "a-pkce-verifier-of-at-least-43-characters-long-0123";

  void SetUp() override {
    auto provider = OidcTestProvider::Create();
    if (!provider.ok()) {
      if (OidcRequired()) FAIL() << provider.status();
      GTEST_SKIP() << "no OIDC provider to test against: " << provider.status().message();
    }
    provider_ = *std::move(provider);
    origin_ = "http://127.0.0.1:" + std::to_string(provider_->port());
    ASSERT_NO_FATAL_FAILURE(GetToken());
    client::HttpClient http(origin_);
    auto jwks = http.Send("GET", "/oauth2/jwks");
    ASSERT_TRUE(jwks.ok() && jwks->status == 200);
    auto keys = auth::OidcKeySet::Parse(jwks->body);
    ASSERT_TRUE(keys.ok()) << keys.status();
    keys_ = *keys;
  }

  void GetToken() {
    unsigned char hash[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(hash, reinterpret_cast<const unsigned char*>(kVerifier),
                       std::strlen(kVerifier));
    std::string challenge =
        B64Url(std::string_view(reinterpret_cast<const char*>(hash), sizeof hash));
    std::string authorize =
        origin_ + "/oauth2/authorize?response_type=code&client_id=" + OidcTestProvider::kClientId +
        "&redirect_uri=" + Escape(provider_->redirect_uri()) +
        "&scope=openid%20profile%20groups&state=s1&nonce=" + kNonce +
        "&code_challenge=" + challenge + "&code_challenge_method=S256";
    Browser b;
    auto back = b.LoginForm(authorize, origin_, "dwho", OidcTestProvider::PasswordOf("dwho"));
    ASSERT_TRUE(back.ok()) << back.status() << provider_->Log();
    std::string code = QueryParam(*back, "code");
    ASSERT_FALSE(code.empty()) << *back;
    client::HttpClient http(origin_);
    std::string basic =
        B64Url(std::string(OidcTestProvider::kClientId) + ":" + OidcTestProvider::kClientSecret);
    auto r = http.SendWithHeaders("POST", "/oauth2/token", {{"Authorization", "Basic " + basic}},
                                  "grant_type=authorization_code&code=" + code +
                                      "&redirect_uri=" + Escape(provider_->redirect_uri()) +
                                      "&code_verifier=" + kVerifier,
                                  "application/x-www-form-urlencoded");
    ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
    token_ = std::string(json::parse(r->body).at("id_token").as_string());
  }

  auth::IdTokenExpectations Expect() const {
    return {provider_->issuer(), OidcTestProvider::kClientId, kNonce,
            std::chrono::system_clock::now()};
  }
  // The payload part of the token, decoded.
  json::object Claims() const {
    size_t a = token_.find('.'), b = token_.find('.', a + 1);
    std::string part = token_.substr(a + 1, b - a - 1);
    std::string bin(part.size(), '\0');
    size_t len = 0;
    sodium_base642bin(reinterpret_cast<unsigned char*>(bin.data()), bin.size(), part.data(),
                      part.size(), nullptr, &len, nullptr,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    bin.resize(len);
    return json::parse(bin).as_object();
  }
  std::string Refusal(const std::string& token, const auth::IdTokenExpectations& e) const {
    auto r = auth::VerifyIdToken(token, *keys_, e);
    EXPECT_FALSE(r.ok());
    return r.ok() ? "" : std::string(r.status().message());
  }

  std::unique_ptr<OidcTestProvider> provider_;
  std::string origin_;
  std::string token_;
  std::shared_ptr<const auth::OidcKeySet> keys_;
};

TEST_F(OidcTokenTest, TheProvidersTokenPassesWithItsClaims) {
  auto claims = auth::VerifyIdToken(token_, *keys_, Expect());
  ASSERT_TRUE(claims.ok()) << claims.status();
  EXPECT_EQ(claims->at("preferred_username"), "dwho");
  // LemonLDAP::NG lists the groups in no fixed order (gantryd sorts them).
  EXPECT_THAT(claims->at("groups").as_array(),
              ::testing::UnorderedElementsAre(json::value("timelords"), json::value("users")));
  EXPECT_EQ(auth::IdTokenKeyId(token_).value_or(""), "key-1");
}

TEST_F(OidcTokenTest, ABadSignatureIsRefused) {
  std::string bad = token_;
  size_t sig = bad.rfind('.') + 10;
  bad[sig] = bad[sig] == 'A' ? 'B' : 'A';
  EXPECT_THAT(Refusal(bad, Expect()), HasSubstr("signature is not valid"));
  // The signature of this token over another payload.
  json::object claims = Claims();
  claims["preferred_username"] = "admin";
  size_t a = token_.find('.'), b = token_.rfind('.');
  std::string forged = token_.substr(0, a + 1) + B64Url(json::serialize(claims)) + token_.substr(b);
  EXPECT_THAT(Refusal(forged, Expect()), HasSubstr("signature is not valid"));
}

TEST_F(OidcTokenTest, AnExpiredTokenIsRefused) {
  auth::IdTokenExpectations later = Expect();
  later.now = std::chrono::system_clock::time_point(
      std::chrono::seconds(Claims().at("exp").to_number<int64_t>() + 61));
  EXPECT_THAT(Refusal(token_, later), HasSubstr("has expired"));
}

TEST_F(OidcTokenTest, ATokenReplayedIntoAnotherLoginIsRefused) {
  auth::IdTokenExpectations other = Expect();
  other.nonce = "the-nonce-of-another-login";
  EXPECT_THAT(Refusal(token_, other), HasSubstr("nonce mismatch"));
}

// OpenID Connect Core 12.2: a refreshed ID token may leave the nonce out, but one it carries
// must be the login's.
TEST_F(OidcTokenTest, ARefreshedTokenMayOnlyRepeatTheLoginsNonce) {
  auth::IdTokenExpectations refreshed = Expect();
  refreshed.refreshed = true;
  EXPECT_TRUE(auth::VerifyIdToken(token_, *keys_, refreshed).ok());
  refreshed.nonce = "the-nonce-of-another-login";
  EXPECT_THAT(Refusal(token_, refreshed), HasSubstr("nonce mismatch"));
}

TEST_F(OidcTokenTest, AnotherAudienceOrIssuerIsRefused) {
  auth::IdTokenExpectations aud = Expect();
  aud.client_id = "another-client";
  EXPECT_THAT(Refusal(token_, aud), HasSubstr("another client"));
  auth::IdTokenExpectations iss = Expect();
  iss.issuer = "https://elsewhere.example/";
  EXPECT_THAT(Refusal(token_, iss), HasSubstr("another issuer"));
}

TEST_F(OidcTokenTest, AnUnsignedTokenIsRefused) {
  std::string none =
      B64Url(R"({"alg":"none","kid":"key-1"})") + "." + B64Url(json::serialize(Claims())) + ".";
  EXPECT_THAT(Refusal(none, Expect()), HasSubstr("does not accept"));
  EXPECT_THAT(Refusal("not a token at all", Expect()), HasSubstr("not a signed JWT"));
}

TEST_F(OidcTokenTest, AnUnknownKidIsNotFoundSoTheCallerRefetches) {
  ASSERT_TRUE(provider_->RotateKey().ok());
  std::string old = token_;
  ASSERT_NO_FATAL_FAILURE(GetToken());
  auto r = auth::VerifyIdToken(token_, *keys_, Expect());
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  EXPECT_EQ(auth::IdTokenKeyId(token_).value_or(""), "key-2");
  EXPECT_TRUE(auth::VerifyIdToken(old, *keys_, Expect()).ok());
}

TEST(OidcKeySetTest, AJwksWithoutUsableKeysIsRefused) {
  EXPECT_FALSE(auth::OidcKeySet::Parse("not json").ok());
  EXPECT_FALSE(auth::OidcKeySet::Parse(R"({"keys":[]})").ok());
  EXPECT_FALSE(auth::OidcKeySet::Parse(R"({"keys":[{"kty":"RSA","kid":"x"}]})").ok());
}

}  // namespace
}  // namespace gantry::testing
