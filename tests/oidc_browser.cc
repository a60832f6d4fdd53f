#include "oidc_browser.h"

#include <gtest/gtest.h>

#include <boost/url.hpp>
#include <cctype>

#include "api_client.h"
#include "client/http_client.h"

namespace gantry::testing {
namespace {

struct Parts {
  std::string origin;  // http://host:port
  std::string target;  // /path?query
};

absl::StatusOr<Parts> Split(const std::string& url) {
  auto u = boost::urls::parse_uri(url);
  if (!u) return absl::InvalidArgumentError("not a URL: " + url);
  Parts p{std::string(u->scheme()) + "://" + std::string(u->encoded_host_and_port()),
          std::string(u->encoded_path())};
  if (p.target.empty()) p.target = "/";
  if (u->has_query()) p.target += "?" + std::string(u->encoded_query());
  return p;
}

// Set-Cookie headers joined with ", " (HttpClient joins repeated headers): split where a new
// "name=" starts, not inside an Expires date.
std::vector<std::string> SplitSetCookies(const std::string& joined) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < joined.size()) {
    size_t next = joined.find(", ", start);
    while (next != std::string::npos) {
      size_t eq = joined.find('=', next + 2);
      size_t semi = joined.find(';', next + 2);
      size_t space = joined.find(' ', next + 2);
      if (eq != std::string::npos && (semi == std::string::npos || eq < semi) &&
          (space == std::string::npos || eq < space))
        break;
      next = joined.find(", ", next + 2);
    }
    out.push_back(
        joined.substr(start, next == std::string::npos ? std::string::npos : next - start));
    start = next == std::string::npos ? joined.size() : next + 2;
  }
  return out;
}

std::string Resolve(const std::string& base, const std::string& location) {
  if (location.rfind("http://", 0) == 0 || location.rfind("https://", 0) == 0) return location;
  auto p = Split(base);
  return p.ok() ? p->origin + location : location;
}

}  // namespace

std::string QueryParam(const std::string& url, const std::string& name) {
  auto u = boost::urls::parse_uri_reference(url);
  if (!u) return "";
  for (auto param : u->params())
    if (param.key == name) return std::string(param.value);
  return "";
}

std::string FormField(const std::string& html, const std::string& name) {
  std::string needle = "name=\"" + name + "\"";
  size_t at = html.find(needle);
  if (at == std::string::npos) return "";
  size_t tag = html.rfind('<', at);
  size_t end = html.find('>', at);
  std::string input = html.substr(tag, end - tag);
  size_t v = input.find("value=\"");
  if (v == std::string::npos) return "";
  v += 7;
  return input.substr(v, input.find('"', v) - v);
}

void Browser::Remember(const std::string& origin, const std::string& set_cookie) {
  for (const std::string& c : SplitSetCookies(set_cookie)) {
    std::string pair = c.substr(0, c.find(';'));
    size_t eq = pair.find('=');
    if (eq == std::string::npos) continue;
    std::string name = pair.substr(0, eq), value = pair.substr(eq + 1);
    std::string lower = c;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (value.empty() || lower.find("max-age=0") != std::string::npos ||
        lower.find("expires=thu, 01 jan 1970") != std::string::npos)
      jar_[origin].erase(name);
    else
      jar_[origin][name] = value;
  }
}

std::string Browser::Cookie(const std::string& origin, const std::string& name) const {
  auto o = jar_.find(origin);
  if (o == jar_.end()) return "";
  auto c = o->second.find(name);
  return c == o->second.end() ? "" : c->second;
}

void Browser::SetCookie(const std::string& origin, const std::string& name,
                        const std::string& value) {
  jar_[origin][name] = value;
}

std::string Browser::CookieHeader(const std::string& origin) const {
  std::string out;
  auto o = jar_.find(origin);
  if (o == jar_.end()) return out;
  for (const auto& [k, v] : o->second) out += (out.empty() ? "" : "; ") + k + "=" + v;
  return out;
}

absl::StatusOr<Browser::Page> Browser::Send(const std::string& method, const std::string& url,
                                            const std::string& body, const std::string& type,
                                            const std::string& accept) {
  auto parts = Split(url);
  if (!parts.ok()) return parts.status();
  client::HttpClient http(parts->origin, "");
  std::map<std::string, std::string> headers{{"Accept", accept}};
  if (std::string c = CookieHeader(parts->origin); !c.empty()) headers["Cookie"] = c;
  auto r = http.SendWithHeaders(method, parts->target, headers, body, type);
  if (!r.ok()) return r.status();
  EXPECT_LT(r->status, 500) << method << " " << url << ": " << r->body.substr(0, 2000);
  if (auto it = r->headers.find("set-cookie"); it != r->headers.end())
    Remember(parts->origin, it->second);
  Page p{r->status, url, r->body, "", r->content_type};
  if (auto it = r->headers.find("location"); it != r->headers.end())
    p.location = Resolve(url, it->second);
  return p;
}

absl::StatusOr<Browser::Page> Browser::Get(const std::string& url, const std::string& accept) {
  return Send("GET", url, "", "", accept);
}

absl::StatusOr<Browser::Page> Browser::PostForm(const std::string& url,
                                                const std::map<std::string, std::string>& form) {
  std::string body;
  for (const auto& [k, v] : form) body += (body.empty() ? "" : "&") + Escape(k) + "=" + Escape(v);
  return Send("POST", url, body, "application/x-www-form-urlencoded", "text/html");
}

absl::StatusOr<Browser::Page> Browser::FollowWithin(Page page, const std::string& origin_prefix) {
  for (int hops = 0; hops < 10; ++hops) {
    if (page.status < 300 || page.status >= 400 || page.location.empty()) return page;
    if (page.location.rfind(origin_prefix, 0) != 0) return page;
    auto next = Get(page.location);
    if (!next.ok()) return next.status();
    page = *std::move(next);
  }
  return absl::InternalError("too many redirects from " + page.url);
}

absl::StatusOr<std::string> Browser::LoginAtProvider(const std::string& start_url,
                                                     const std::string& provider_origin,
                                                     const std::string& user,
                                                     const std::string& password) {
  auto start = Get(start_url);
  if (!start.ok()) return start.status();
  if (start->status != 302 || start->location.rfind(provider_origin, 0) != 0)
    return absl::FailedPreconditionError("gantryd did not send the browser to the provider: " +
                                         std::to_string(start->status) + " " + start->body);
  return LoginForm(start->location, provider_origin, user, password);
}

absl::StatusOr<std::string> Browser::LoginForm(const std::string& authorize,
                                               const std::string& provider_origin,
                                               const std::string& user,
                                               const std::string& password) {
  auto first = Get(authorize);
  if (!first.ok()) return first.status();
  auto form = FollowWithin(*first, provider_origin);
  if (!form.ok()) return form.status();
  if (form->status != 200 || form->body.find("name=\"password\"") == std::string::npos)
    return absl::FailedPreconditionError("no login form at the provider: " +
                                         std::to_string(form->status) + form->body.substr(0, 500));
  // The form posts to its own URL (action "#"), with its hidden fields.
  std::map<std::string, std::string> fields{
      {"user", user}, {"password", password}, {"timezone", "0"}};
  for (const char* hidden : {"url", "token", "skin"})
    fields[hidden] = FormField(form->body, hidden);
  auto posted = PostForm(form->url.empty() ? authorize : form->url, fields);
  if (!posted.ok()) return posted.status();
  auto back = FollowWithin(*posted, provider_origin);
  if (!back.ok()) return back.status();
  if (back->status < 300 || back->status >= 400 || back->location.empty())
    return absl::PermissionDeniedError("the provider did not send the browser back (" +
                                       std::to_string(back->status) +
                                       "): " + back->body.substr(0, 800));
  return back->location;
}

}  // namespace gantry::testing
