#include "auth/oidc_token.h"

#include <cjose/cjose.h>

#include <algorithm>
#include <array>

#include "common/errors.h"
#include "common/json_member.h"

namespace gantry::auth {
namespace {

namespace json = boost::json;

constexpr auto kSkew = std::chrono::seconds(60);
constexpr std::array<std::string_view, 9> kAlgorithms = {
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"};

struct JwsDeleter {
  void operator()(cjose_jws_t* jws) const { cjose_jws_release(jws); }
};
using JwsPtr = std::unique_ptr<cjose_jws_t, JwsDeleter>;

absl::StatusOr<JwsPtr> Import(std::string_view token) {
  cjose_err err{};
  JwsPtr jws(cjose_jws_import(token.data(), token.size(), &err));
  if (!jws) return absl::InvalidArgumentError("the ID token is not a signed JWT");
  return jws;
}

std::string Header(cjose_jws_t* jws, const char* attr) {
  cjose_err err{};
  cjose_header_t* h = cjose_jws_get_protected(jws);
  const char* v = h ? cjose_header_get(h, attr, &err) : nullptr;
  return v ? v : "";
}

// Seconds since the epoch in claim `name`; -1 when absent or not a number.
int64_t NumericDate(const json::object& claims, const char* name) {
  const json::value* v = claims.if_contains(name);
  if (!v) return -1;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->get_uint64());
  if (v->is_double()) return static_cast<int64_t>(v->get_double());
  return -1;
}

absl::Status CheckAudience(const json::object& claims, const std::string& client_id) {
  const json::value* aud = claims.if_contains("aud");
  bool ours = false;
  size_t count = 0;
  if (aud && aud->is_string()) {
    ours = aud->get_string() == client_id;
    count = 1;
  } else if (aud && aud->is_array()) {
    for (const json::value& a : aud->get_array())
      ours = ours || (a.is_string() && a.get_string() == client_id);
    count = aud->get_array().size();
  }
  if (!ours) return UnauthorizedError("the ID token was issued to another client (aud)");
  if (count > 1 && StringMember(claims, "azp") != client_id)
    return UnauthorizedError("the ID token was issued to another client (azp)");
  return absl::OkStatus();
}

absl::Status CheckClaims(const json::object& claims, const IdTokenExpectations& e) {
  if (StringMember(claims, "iss") != e.issuer)
    return UnauthorizedError("the ID token comes from another issuer than " + e.issuer);
  if (absl::Status s = CheckAudience(claims, e.client_id); !s.ok()) return s;
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(e.now.time_since_epoch()).count();
  const int64_t exp = NumericDate(claims, "exp");
  if (exp < 0) return UnauthorizedError("the ID token has no expiry (exp)");
  if (exp + kSkew.count() <= now)
    return UnauthorizedError("the ID token has expired; log in again");
  if (int64_t iat = NumericDate(claims, "iat"); iat > now + kSkew.count())
    return UnauthorizedError("the ID token was issued in the future (iat): check the clocks");
  const std::string nonce = StringMember(claims, "nonce");
  if (e.refreshed ? (!nonce.empty() && nonce != e.nonce) : (e.nonce.empty() || nonce != e.nonce))
    return UnauthorizedError(
        "the ID token does not belong to this login (nonce mismatch): it was replayed or "
        "mixed up; log in again");
  if (StringMember(claims, "sub").empty())
    return UnauthorizedError("the ID token names no subject (sub)");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const OidcKeySet>> OidcKeySet::Parse(std::string_view jwks) {
  boost::system::error_code ec;
  json::value doc = json::parse(jwks, ec);
  const json::value* keys =
      (!ec && doc.is_object()) ? doc.as_object().if_contains("keys") : nullptr;
  if (!keys || !keys->is_array())
    return absl::InvalidArgumentError("the provider's JWKS is not a JSON object with \"keys\"");
  std::shared_ptr<OidcKeySet> set(new OidcKeySet());
  for (const json::value& k : keys->get_array()) {
    if (!k.is_object()) continue;
    std::string use = StringMember(k.as_object(), "use");
    if (!use.empty() && use != "sig") continue;
    std::string text = json::serialize(k);
    cjose_err err{};
    cjose_jwk_t* jwk = cjose_jwk_import(text.data(), text.size(), &err);
    if (!jwk) continue;
    std::string kid = StringMember(k.as_object(), "kid");
    if (auto it = set->keys_.find(kid); it != set->keys_.end()) {
      cjose_jwk_release(static_cast<cjose_jwk_t*>(it->second));
      set->keys_.erase(it);
    }
    set->keys_[kid] = jwk;
  }
  if (set->keys_.empty())
    return absl::InvalidArgumentError("the provider's JWKS has no usable signing key");
  return std::shared_ptr<const OidcKeySet>(std::move(set));
}

OidcKeySet::~OidcKeySet() {
  for (auto& [kid, jwk] : keys_) cjose_jwk_release(static_cast<cjose_jwk_t*>(jwk));
}

const void* OidcKeySet::Find(const std::string& kid) const {
  if (kid.empty()) return keys_.size() == 1 ? keys_.begin()->second : nullptr;
  auto it = keys_.find(kid);
  return it == keys_.end() ? nullptr : it->second;
}

absl::StatusOr<std::string> IdTokenKeyId(std::string_view token) {
  auto jws = Import(token);
  if (!jws.ok()) return jws.status();
  return Header(jws->get(), CJOSE_HDR_KID);
}

absl::StatusOr<json::object> VerifyIdToken(std::string_view token, const OidcKeySet& keys,
                                           const IdTokenExpectations& expect) {
  auto jws = Import(token);
  if (!jws.ok()) return UnauthorizedError(std::string(jws.status().message()));
  const std::string alg = Header(jws->get(), CJOSE_HDR_ALG);
  if (std::find(kAlgorithms.begin(), kAlgorithms.end(), alg) == kAlgorithms.end())
    return UnauthorizedError("the ID token is signed with \"" + alg.substr(0, 16) +
                             "\", which gantryd does not accept (RS256, PS256, ES256, ...)");
  const std::string kid = Header(jws->get(), CJOSE_HDR_KID);
  const void* key = keys.Find(kid);
  if (!key)
    return absl::NotFoundError("the ID token is signed with a key the provider's JWKS lacks");
  cjose_err err{};
  if (!cjose_jws_verify(jws->get(), static_cast<const cjose_jwk_t*>(key), &err))
    return UnauthorizedError("the ID token's signature is not valid");
  uint8_t* plain = nullptr;
  size_t len = 0;
  if (!cjose_jws_get_plaintext(jws->get(), &plain, &len, &err))
    return UnauthorizedError("the ID token has no payload");
  boost::system::error_code ec;
  json::value claims = json::parse(std::string_view(reinterpret_cast<char*>(plain), len), ec);
  if (ec || !claims.is_object()) return UnauthorizedError("the ID token's claims are not JSON");
  if (absl::Status s = CheckClaims(claims.as_object(), expect); !s.ok()) return s;
  return std::move(claims.as_object());
}

}  // namespace gantry::auth
