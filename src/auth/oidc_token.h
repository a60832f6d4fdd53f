// OIDC ID tokens: the provider's signing keys (its JWKS) and the checks an ID token must pass
// before gantryd believes it (OpenID Connect Core 1.0, 3.1.3.7). JOSE parsing is Debian's
// libcjose (cjose_jwk_import, cjose_jws_import, cjose_jws_verify): nothing here decodes
// base64url or checks a signature by hand.
//
// Checks, in order: a compact JWS; alg one of RS256/RS384/RS512/PS256/PS384/PS512/ES256/
// ES384/ES512 (never "none" or an HMAC, whose key would be the client secret); a kid the key
// set knows (the caller refetches the JWKS once on an unknown kid: keys rotate); the
// signature; iss equal to the issuer; aud containing the client id (and azp equal to it when
// there are several audiences); exp in the future and iat not in the future (60 s of clock
// skew allowed both ways); nonce equal to the login's. A token from a refresh (OpenID Connect
// Core 1.0, 12.2) may lack the nonce; when it has one, it must be the login's.
//
// Errors are UNAUTHENTICATED with a message for a person ("the ID token has expired", ...),
// except NOT_FOUND for an unknown kid (the caller's cue to refetch). Nothing of the token is
// put in a message.
//
// Thread-safety: a KeySet is immutable after Parse and safe to share (shared_ptr); Verify is
// a pure function of its arguments.
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gantry::auth {

class OidcKeySet {
 public:
  // The signing keys of a JWKS document ({"keys": [...]}); keys with "use" other than "sig"
  // and keys cjose cannot import are skipped. INVALID_ARGUMENT when none is usable.
  static absl::StatusOr<std::shared_ptr<const OidcKeySet>> Parse(std::string_view jwks);
  ~OidcKeySet();
  OidcKeySet(const OidcKeySet&) = delete;
  OidcKeySet& operator=(const OidcKeySet&) = delete;

  // The key named `kid`; with an empty kid, the only key when there is exactly one. Null when
  // there is no such key.
  const void* Find(const std::string& kid) const;
  size_t size() const { return keys_.size(); }

 private:
  OidcKeySet() = default;
  std::map<std::string, void*> keys_;  // kid -> cjose_jwk_t*
};

struct IdTokenExpectations {
  std::string issuer;
  std::string client_id;
  std::string nonce;
  std::chrono::system_clock::time_point now;
  bool refreshed = false;  // from grant_type=refresh_token: the nonce may be absent
};

// The verified token's claims. NOT_FOUND when the token's kid is not in `keys`.
absl::StatusOr<boost::json::object> VerifyIdToken(std::string_view token, const OidcKeySet& keys,
                                                  const IdTokenExpectations& expect);

// The kid in a compact JWS's protected header ("" when none; INVALID_ARGUMENT when `token`
// is not a JWS).
absl::StatusOr<std::string> IdTokenKeyId(std::string_view token);

}  // namespace gantry::auth
