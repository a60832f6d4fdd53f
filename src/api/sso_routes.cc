// Single sign-on routes of the Router (router.h, "OIDC"; docs/sso.md):
//   GET /auth/oidc            {"enabled": bool, "issuer": ...}: whether the UI shows "Log in
//                             with SSO" (public)
//   GET /auth/oidc/login      302 to the provider, with the state in cookie gantry_oidc_state;
//                             ?cli=1 for `gantry login --sso` (the callback then shows a token)
//   GET /auth/oidc/callback   the provider's redirect back: a web session and 303 to the UI,
//                             or (cli) an API token shown once. A refusal is a 401: an HTML
//                             page with the message for a browser, a Kubernetes Status else.
// Every callback is audited (verb login, resource sessions), refused or not.
#include <spdlog/spdlog.h>

#include "api/router.h"
#include "api/router_responses.h"
#include "api/status_http.h"
#include "common/errors.h"
#include "model/codec.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

constexpr char kStateCookie[] = "gantry_oidc_state";

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Response Page(int status, const std::string& title, const std::string& body_html) {
  Response r;
  r.status = status;
  r.content_type = "text/html; charset=utf-8";
  r.body = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + title +
           " - Gantry</title></head><body style=\"font-family:sans-serif;max-width:40em;"
           "margin:4em auto\"><h1>" +
           title + "</h1>" + body_html + "</body></html>";
  r.headers.push_back({"Cache-Control", "no-store"});
  r.headers.push_back({"Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'"});
  return r;
}

bool WantsHtml(const Request& r) { return r.accept.find("text/html") != std::string::npos; }

std::string ClearStateCookie() {
  return std::string(kStateCookie) + "=; Path=/auth/oidc; HttpOnly; SameSite=Lax; Max-Age=0";
}

// A refused login: the message on a page with the way back (browsers), or the Status.
Response Refused(const Request& request, const absl::Status& s, Router::Call& call) {
  call.entry.message = std::string(s.message());
  Response r;
  if (WantsHtml(request)) {
    int code = ErrorResponse(s).status;
    r = Page(code, "Single sign-on failed",
             "<p id=\"sso-error\" role=\"alert\">" + HtmlEscape(std::string(s.message())) +
                 "</p><p><a href=\"/auth/oidc/login\">Log in with SSO again</a> or go back to "
                 "<a href=\"/\">the login page</a>.</p>");
  } else {
    r = ErrorResponse(s);
  }
  r.headers.push_back({"Set-Cookie", ClearStateCookie()});
  return r;
}

}  // namespace

Response Router::Sso(const Request& request, const std::string& what, const Query& query,
                     Call& call) {
  if (request.method != "GET" && request.method != "HEAD")
    return ErrorResponse(MethodNotAllowedError("use GET"));
  if (what.empty()) {
    json::object info{{"enabled", sso_ != nullptr}};
    if (sso_) info["issuer"] = sso_->options().issuer;
    return JsonResponse(200, info);
  }
  if (what != "login" && what != "callback") return NotFoundPath("/auth/oidc/" + what);
  if (!sso_)
    return ErrorResponse(
        NotFoundError("single sign-on is not configured on this server (gantryd --oidc-issuer)"));
  if (what == "login") return SsoStart(request, query);
  return SsoCallback(request, query, call);
}

Response Router::SsoStart(const Request& request, const Query& query) {
  auto started = sso_->Begin(query.count("cli") && query.at("cli") == "1");
  if (!started.ok()) {
    Call ignored;
    return Refused(request, started.status(), ignored);
  }
  Response r;
  r.status = 302;
  r.content_type = "text/plain; charset=utf-8";
  r.body = "continue at the identity provider\n";
  r.headers.push_back({"Location", started->authorization_url});
  r.headers.push_back({"Set-Cookie", std::string(kStateCookie) + "=" + started->state +
                                         "; Path=/auth/oidc; HttpOnly; SameSite=Lax; Max-Age=600"});
  r.headers.push_back({"Cache-Control", "no-store"});
  return r;
}

Response Router::SsoCallback(const Request& request, const Query& query, Call& call) {
  call.audit = true;
  call.entry.verb = "login";
  call.entry.resource = "sessions";
  auto param = [&](const char* k) { return query.count(k) ? query.at(k) : std::string(); };
  if (std::string error = param("error"); !error.empty()) {
    // The provider's own refusal (access_denied, ...): its words, cut short, as a message.
    std::string why = param("error_description");
    return Refused(
        request,
        UnauthorizedError("the identity provider refused the login: " + error.substr(0, 64) +
                          (why.empty() ? "" : " (" + why.substr(0, 200) + ")")),
        call);
  }
  auto finished =
      sso_->Finish(param("code"), param("state"), auth::CookieValue(request.cookie, kStateCookie));
  if (!finished.ok()) return Refused(request, finished.status(), call);
  const auth::SsoIdentity& who = finished->identity;
  call.entry.user = who.user;
  call.entry.name = who.user;
  auto login = authn_.SsoLogin(*finished, request.remote, !finished->for_cli);
  if (!login.ok()) return Refused(request, login.status(), call);
  call.entry.authenticated = true;
  if (finished->for_cli) return SsoCliToken(request, who.user, call);
  Response r = WantsHtml(request)
                   ? Page(303, "Logged in", "<p><a href=\"/\">Continue to Gantry</a></p>")
                   : JsonResponse(200, json::object{{"username", who.user},
                                                    {"csrfToken", login->identity.csrf},
                                                    {"expiresAt", login->expires_at}});
  if (r.status == 303) r.headers.push_back({"Location", "/"});
  r.headers.push_back({"Set-Cookie", std::string(auth::kSessionCookie) + "=" + login->cookie_value +
                                         "; Path=/; HttpOnly; SameSite=Lax"});
  r.headers.push_back({"Set-Cookie", ClearStateCookie()});
  r.headers.push_back({"Cache-Control", "no-store"});
  return r;
}

// `gantry login --sso`: an API token for the terminal, shown once on the page.
Response Router::SsoCliToken(const Request& request, const std::string& user, Call& call) {
  call.entry.verb = "create";
  call.entry.resource = "tokens";
  auto token = authn_.CreateToken(user, "gantry login --sso", std::chrono::hours(24 * 90));
  if (!token.ok()) return Refused(request, token.status(), call);
  const std::string secret = model::GetString(*token, "token");
  Response r = WantsHtml(request)
                   ? Page(200, "Logged in to Gantry",
                          "<p>Paste this token into the terminal that ran <code>gantry login "
                          "--sso</code>. It is shown only this once and expires in 90 days.</p>"
                          "<pre id=\"token\" style=\"white-space:pre-wrap;word-break:break-all\">" +
                              HtmlEscape(secret) + "</pre>")
                   : JsonResponse(200, json::object{{"username", user}, {"token", secret}});
  r.headers.push_back({"Set-Cookie", ClearStateCookie()});
  r.headers.push_back({"Cache-Control", "no-store"});
  return r;
}

}  // namespace gantry::api
