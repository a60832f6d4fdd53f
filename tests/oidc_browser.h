// What a browser does in a single sign-on login, for the OIDC tests (tests/auth/oidc_test.cc,
// tests/auth/oidc_token_test.cc): GETs and form POSTs over HTTP to gantryd and to the test
// provider (tests/oidc_test_provider.h), a cookie jar per origin (host:port; the Domain and
// Path attributes are not modelled: each test talks to two origins only), redirects followed
// one at a time, and the provider's real login form filled in and posted. Every answer is
// checked never to be a 5xx.
//
// Thread-safety: one Browser per test thread.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace gantry::testing {

class Browser {
 public:
  struct Page {
    int status = 0;
    std::string url;  // what was asked for
    std::string body;
    std::string location;  // the Location header, "" when none
    std::string content_type;
  };

  // One request, no redirect followed. `accept` is sent as Accept.
  absl::StatusOr<Page> Get(const std::string& url, const std::string& accept = "text/html");
  absl::StatusOr<Page> PostForm(const std::string& url,
                                const std::map<std::string, std::string>& form);
  // Follows redirects from `page` while they go to `origin_prefix` ("http://127.0.0.1:PORT").
  absl::StatusOr<Page> FollowWithin(Page page, const std::string& origin_prefix);

  // From gantryd's /auth/oidc/login, through the provider's login form (user, password), to
  // the provider's redirect back: the callback URL gantryd is sent to (not yet visited).
  absl::StatusOr<std::string> LoginAtProvider(const std::string& start_url,
                                              const std::string& provider_origin,
                                              const std::string& user, const std::string& password);

  // The same from the provider's authorization URL: its login form filled in and posted.
  absl::StatusOr<std::string> LoginForm(const std::string& authorize_url,
                                        const std::string& provider_origin, const std::string& user,
                                        const std::string& password);

  // The cookie `name` this browser holds for `origin` ("" when none); sets one.
  std::string Cookie(const std::string& origin, const std::string& name) const;
  void SetCookie(const std::string& origin, const std::string& name, const std::string& value);
  // The Cookie header sent to `origin`.
  std::string CookieHeader(const std::string& origin) const;

 private:
  absl::StatusOr<Page> Send(const std::string& method, const std::string& url,
                            const std::string& body, const std::string& type,
                            const std::string& accept);
  void Remember(const std::string& origin, const std::string& set_cookie);

  std::map<std::string, std::map<std::string, std::string>> jar_;  // origin -> name -> value
};

// `url` with its query parameter `name` ("" when absent; percent-decoded).
std::string QueryParam(const std::string& url, const std::string& name);
// The value of the form field `name` in an HTML page ("" when absent).
std::string FormField(const std::string& html, const std::string& name);

}  // namespace gantry::testing
