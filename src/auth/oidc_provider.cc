#include "auth/oidc_provider.h"

#include <sodium.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/url.hpp>

#include "auth/credentials.h"
#include "client/http_client.h"
#include "common/errors.h"
#include "common/json_member.h"
#include "model/label_selector.h"

namespace gantry::auth {
namespace {

namespace json = boost::json;

constexpr size_t kMaxPending = 10000;
// What the provider says, at most, in a line of gantryd's log.
constexpr size_t kMaxLoggedText = 256;
// The JWKS is fetched again for the same unknown kid at most this often.
constexpr auto kRefetchEvery = std::chrono::seconds(10);

std::string RandomToken() {
  unsigned char bytes[32];
  randombytes_buf(bytes, sizeof bytes);
  return Base64Url(bytes, sizeof bytes);
}

std::string S256(const std::string& verifier) {
  unsigned char hash[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(hash, reinterpret_cast<const unsigned char*>(verifier.data()),
                     verifier.size());
  return Base64Url(hash, sizeof hash);
}

std::string FormEscape(std::string_view s) {
  return boost::urls::encode(s, boost::urls::unreserved_chars);
}

// "https://host:port" and "/path?query" of an absolute URL.
struct SplitUrl {
  std::string base;
  std::string target;
};
absl::StatusOr<SplitUrl> Split(const std::string& url) {
  auto u = boost::urls::parse_uri(url);
  if (!u || (u->scheme() != "http" && u->scheme() != "https") || u->host().empty())
    return absl::UnavailableError("the provider gave an unusable URL");
  SplitUrl out;
  out.base = std::string(u->scheme()) + "://" + std::string(u->encoded_host_and_port());
  out.target = std::string(u->encoded_path());
  if (out.target.empty()) out.target = "/";
  if (u->has_query()) out.target += "?" + std::string(u->encoded_query());
  return out;
}

absl::StatusOr<client::HttpResponse> Call(const std::string& url, const OidcOptions& options,
                                          std::string_view method,
                                          const std::map<std::string, std::string>& headers,
                                          std::string_view body = "", std::string_view type = "") {
  auto split = Split(url);
  if (!split.ok()) return split.status();
  client::HttpClient http(split->base, "", {.ca_file = options.ca_file});
  http.SetTimeout(options.timeout);
  auto r = http.SendWithHeaders(method, split->target, headers, body, type);
  if (!r.ok()) {
    spdlog::warn("OIDC: {} {}: {}", method, url, std::string(r.status().message()));
    return absl::UnavailableError("the identity provider cannot be reached; try again later");
  }
  return r;
}

absl::StatusOr<json::object> JsonBody(const client::HttpResponse& r, const char* what) {
  boost::system::error_code ec;
  json::value v = json::parse(r.body, ec);
  if (ec || !v.is_object()) {
    spdlog::warn("OIDC: the provider's {} answered {} with no JSON object", what, r.status);
    return absl::UnavailableError(std::string("the identity provider's ") + what +
                                  " answered nonsense; try again later");
  }
  return std::move(v.as_object());
}

}  // namespace

OidcProvider::OidcProvider(OidcOptions options, const Clock& clock)
    : options_(std::move(options)), clock_(clock) {}

absl::StatusOr<OidcProvider::Metadata> OidcProvider::Discovered() {
  {
    std::lock_guard lock(mu_);
    if (metadata_) return *metadata_;
  }
  std::string base = options_.issuer;
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string url = base + "/.well-known/openid-configuration";
  auto r = Call(url, options_, "GET", {{"Accept", "application/json"}});
  if (!r.ok()) return r.status();
  auto doc = JsonBody(*r, "discovery document");
  if (!doc.ok()) return doc.status();
  if (StringMember(*doc, "issuer") != options_.issuer) {
    spdlog::warn("OIDC: {} names issuer \"{}\", not --oidc-issuer \"{}\"", url,
                 StringMember(*doc, "issuer").substr(0, kMaxLoggedText), options_.issuer);
    return absl::UnavailableError(
        "the identity provider names another issuer than gantryd's --oidc-issuer; an "
        "administrator must correct it");
  }
  Metadata m{StringMember(*doc, "authorization_endpoint"), StringMember(*doc, "token_endpoint"),
             StringMember(*doc, "jwks_uri")};
  if (m.authorization_endpoint.empty() || m.token_endpoint.empty() || m.jwks_uri.empty())
    return absl::UnavailableError("the identity provider's discovery document lacks endpoints");
  std::lock_guard lock(mu_);
  metadata_ = std::make_unique<Metadata>(m);
  return m;
}

absl::StatusOr<OidcProvider::Started> OidcProvider::Begin(bool for_cli) {
  auto m = Discovered();
  if (!m.ok()) return m.status();
  Started out;
  out.state = RandomToken();
  Pending p{RandomToken(), RandomToken(), for_cli, clock_.Now() + options_.pending_ttl};
  boost::urls::url u(m->authorization_endpoint);
  auto params = u.params();
  params.append({"response_type", "code"});
  params.append({"client_id", options_.client_id});
  params.append({"redirect_uri", options_.redirect_url});
  params.append({"scope", options_.scopes});
  params.append({"state", out.state});
  params.append({"nonce", p.nonce});
  params.append({"code_challenge", S256(p.verifier)});
  params.append({"code_challenge_method", "S256"});
  out.authorization_url = std::string(u.buffer());
  std::lock_guard lock(mu_);
  const auto now = clock_.Now();
  std::erase_if(pending_, [&](const auto& e) { return e.second.expires <= now; });
  if (pending_.size() >= kMaxPending)
    return TooManyRequestsError("too many single sign-on logins are under way; try again soon");
  pending_[out.state] = std::move(p);
  return out;
}

absl::StatusOr<OidcProvider::Pending> OidcProvider::TakePending(const std::string& state,
                                                                const std::string& cookie_state) {
  if (state.empty())
    return UnauthorizedError("the provider sent no state back; start the login again");
  if (cookie_state != state)
    return UnauthorizedError(
        "this login was not started in this browser (state mismatch); start the login again");
  std::lock_guard lock(mu_);
  auto it = pending_.find(state);
  if (it == pending_.end())
    return UnauthorizedError(
        "this login link was already used or is unknown (state); start the login again");
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (p.expires <= clock_.Now())
    return UnauthorizedError("this login took too long (state expired); start the login again");
  return p;
}

absl::StatusOr<OidcProvider::TokenAnswer> OidcProvider::PostToken(const Metadata& m,
                                                                  const std::string& form) {
  std::string basic = FormEscape(options_.client_id) + ":" + FormEscape(options_.client_secret);
  std::string encoded(sodium_base64_ENCODED_LEN(basic.size(), sodium_base64_VARIANT_ORIGINAL),
                      '\0');
  sodium_bin2base64(encoded.data(), encoded.size(),
                    reinterpret_cast<const unsigned char*>(basic.data()), basic.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  encoded.resize(std::strlen(encoded.c_str()));
  auto r = Call(m.token_endpoint, options_, "POST",
                {{"Authorization", "Basic " + encoded}, {"Accept", "application/json"}}, form,
                "application/x-www-form-urlencoded");
  sodium_memzero(basic.data(), basic.size());
  sodium_memzero(encoded.data(), encoded.size());
  if (!r.ok()) return r.status();
  auto body = JsonBody(*r, "token endpoint");
  if (!body.ok()) return body.status();
  if (r->status == 401 || StringMember(*body, "error") == "invalid_client") {
    spdlog::warn("OIDC: the token endpoint refused gantryd's client credentials ({})", r->status);
    return UnauthorizedError(
        "the identity provider refused gantryd's client credentials (a wrong "
        "--oidc-client-secret-file?); an administrator must correct them");
  }
  return TokenAnswer{r->status, *std::move(body)};
}

absl::StatusOr<OidcProvider::CodeTokens> OidcProvider::ExchangeCode(const Metadata& m,
                                                                    const std::string& code,
                                                                    const std::string& verifier) {
  auto answer = PostToken(m, "grant_type=authorization_code&code=" + FormEscape(code) +
                                 "&redirect_uri=" + FormEscape(options_.redirect_url) +
                                 "&code_verifier=" + FormEscape(verifier));
  if (!answer.ok()) return answer.status();
  const std::string error = StringMember(answer->body, "error");
  if (!error.empty() || answer->status != 200)
    return UnauthorizedError("the identity provider refused the login code (" +
                             error.substr(0, 64) +
                             "): it was used already or has expired; start the login again");
  CodeTokens out{StringMember(answer->body, "id_token"),
                 StringMember(answer->body, "refresh_token")};
  if (out.id_token.empty()) return UnauthorizedError("the identity provider sent no ID token");
  return out;
}

absl::StatusOr<std::shared_ptr<const OidcKeySet>> OidcProvider::Keys(const Metadata& m,
                                                                     const std::string& kid) {
  {
    std::lock_guard lock(mu_);
    if (keys_ && kid.empty()) return keys_;
    // The same unknown kid again soon after a fetch that did not have it: not again.
    if (keys_ && kid == missing_kid_ && clock_.SteadyNow() - last_fetch_ < kRefetchEvery)
      return keys_;
    last_fetch_ = clock_.SteadyNow();
    missing_kid_ = kid;
  }
  auto r = Call(m.jwks_uri, options_, "GET", {{"Accept", "application/json"}});
  if (!r.ok()) return r.status();
  auto set = OidcKeySet::Parse(r->body);
  if (!set.ok()) {
    spdlog::warn("OIDC: {}: {}", m.jwks_uri, std::string(set.status().message()));
    return absl::UnavailableError("the identity provider's keys (JWKS) cannot be read");
  }
  std::lock_guard lock(mu_);
  keys_ = *set;
  return keys_;
}

absl::StatusOr<json::object> OidcProvider::Verify(const Metadata& m, const std::string& id_token,
                                                  const std::string& nonce, bool refreshed) {
  IdTokenExpectations expect{options_.issuer, options_.client_id, nonce, clock_.Now(), refreshed};
  auto kid = IdTokenKeyId(id_token);
  if (!kid.ok())
    return UnauthorizedError("the identity provider sent an ID token that is not a JWT");
  for (bool refetch : {false, true}) {
    // Refetch: keyed by the unknown kid ("?" for a token that names none).
    auto keys = Keys(m, refetch ? (kid->empty() ? "?" : *kid) : "");
    if (!keys.ok()) return keys.status();
    auto claims = VerifyIdToken(id_token, **keys, expect);
    if (!absl::IsNotFound(claims.status())) return claims;
  }
  return UnauthorizedError("the ID token is signed with a key the identity provider does not list");
}

absl::StatusOr<SsoIdentity> OidcProvider::IdentityFrom(const json::object& claims) const {
  SsoIdentity id;
  id.user = StringMember(claims, options_.username_claim);
  if (id.user.empty())
    return UnauthorizedError("the identity provider sent no \"" + options_.username_claim +
                             "\" claim to name the user by");
  if (model::Dns1123LabelError(id.user))
    return UnauthorizedError("the user name \"" + id.user.substr(0, 64) +
                             "\" from the identity provider is not a valid Gantry user name "
                             "(lower-case letters, digits and '-')");
  id.display_name = StringMember(claims, options_.name_claim).substr(0, kMaxIdentityText);
  id.email = StringMember(claims, options_.email_claim).substr(0, kMaxIdentityText);
  if (const json::value* g = claims.if_contains(options_.groups_claim)) {
    if (g->is_string()) id.groups.emplace_back(g->get_string());
    if (g->is_array())
      for (const json::value& v : g->get_array())
        if (v.is_string() && !v.get_string().empty() && v.get_string().size() <= kMaxIdentityText &&
            id.groups.size() < kMaxIdentityGroups)
          id.groups.emplace_back(v.get_string());
  }
  std::sort(id.groups.begin(), id.groups.end());
  id.groups.erase(std::unique(id.groups.begin(), id.groups.end()), id.groups.end());
  return id;
}

absl::StatusOr<OidcProvider::Finished> OidcProvider::Finish(const std::string& code,
                                                            const std::string& state,
                                                            const std::string& cookie_state) {
  auto pending = TakePending(state, cookie_state);
  if (!pending.ok()) return pending.status();
  if (code.empty()) return UnauthorizedError("the identity provider sent no code back");
  auto m = Discovered();
  if (!m.ok()) return m.status();
  auto tokens = ExchangeCode(*m, code, pending->verifier);
  if (!tokens.ok()) return tokens.status();
  auto claims = Verify(*m, tokens->id_token, pending->nonce, /*refreshed=*/false);
  if (!claims.ok()) return claims.status();
  auto identity = IdentityFrom(*claims);
  if (!identity.ok()) return identity.status();
  SsoGrant grant{tokens->refresh_token, StringMember(*claims, "sub"), pending->nonce};
  return Finished{*std::move(identity), std::move(grant), pending->for_cli};
}

absl::StatusOr<OidcProvider::Refreshed> OidcProvider::Refresh(const SsoGrant& grant) {
  auto m = Discovered();
  if (!m.ok()) return m.status();
  auto answer =
      PostToken(*m, "grant_type=refresh_token&refresh_token=" + FormEscape(grant.refresh_token));
  if (!answer.ok()) return answer.status();
  if (answer->status >= 500) {
    spdlog::warn("OIDC: the token endpoint answered a refresh with {}", answer->status);
    return absl::UnavailableError("the identity provider failed; try again later");
  }
  const std::string error = StringMember(answer->body, "error");
  if (!error.empty() || answer->status != 200)
    return absl::NotFoundError(
        "the identity provider no longer accepts the sign-in (" +
        (error.empty() ? std::to_string(answer->status) : error.substr(0, 64)) + ")");
  Refreshed out;
  out.refresh_token = StringMember(answer->body, "refresh_token");
  const std::string id_token = StringMember(answer->body, "id_token");
  if (id_token.empty()) return out;
  auto claims = Verify(*m, id_token, grant.nonce, /*refreshed=*/true);
  if (!claims.ok()) return claims.status();
  if (StringMember(*claims, "sub") != grant.subject)
    return absl::NotFoundError("the identity provider's refreshed ID token names another subject");
  auto identity = IdentityFrom(*claims);
  if (!identity.ok()) return identity.status();
  out.identity = *std::move(identity);
  return out;
}

}  // namespace gantry::auth
