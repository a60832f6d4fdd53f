// A small synchronous HTTP/1.1 client for talking to gantryd (the `gantry` CLI's transport).
//
// The header exposes plain structs only; Boost.Beast stays inside http_client.cc so that
// callers (the CLI, its tests, integration tests) do not pay Beast's compile time.
//
// `HttpTransport` is the seam (STYLE.md #1): the CLI's commands talk to an HttpTransport&, and
// tests substitute a fake that answers from memory. `HttpClient` is the real one.
//
// Thread-safety: an HttpClient owns one connection and is NOT thread-safe; use one per thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gantry::client {

struct HttpResponse {
  int status = 0;
  std::string content_type;
  std::string body;
  // Header names lower-cased; repeated headers joined with ", ".
  std::map<std::string, std::string> headers;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;

  // Sends one request and returns the complete answer, whatever its HTTP status (a 404 is a
  // response, not an error). `target` is the origin-form path plus query, already
  // percent-encoded ("/apis/...?limit=500"). `body` is sent with `content_type` when non-empty
  // or when the method is POST, PUT or PATCH.
  // Errors: UNAVAILABLE when the server cannot be reached or the connection breaks;
  // INVALID_ARGUMENT for an unknown method or an unusable base URL.
  virtual absl::StatusOr<HttpResponse> Send(std::string_view method, std::string_view target,
                                            std::string_view body = "",
                                            std::string_view content_type = "application/json") = 0;

  // GETs `target` and hands the body to `on_line` one line at a time (without the trailing
  // "\n" or "\r\n"), as it arrives: for `?watch=true` and log following. Stops when on_line
  // returns false (OK) or when the server ends the body (OK). A non-2xx answer is turned into
  // a Status with StatusFromResponse (kube_status.h). UNAVAILABLE when the server cannot be
  // reached or the stream breaks mid-body.
  virtual absl::Status Stream(std::string_view target,
                              const std::function<bool(std::string_view line)>& on_line) = 0;

  // "http://host:port" as given, for messages.
  virtual const std::string& base_url() const = 0;
};

// How an https:// server is trusted. The certificate must chain to `ca_file` (PEM; gantryd's
// self-signed DATA_DIR/tls.crt, or the CA of --tls-cert) or, without one, to the system's
// trust store, and name the URL's host (DNS or IP subjectAltName). `insecure_skip_verify`
// turns both checks off (kubectl's --insecure-skip-tls-verify).
struct TlsOptions {
  std::string ca_file;
  bool insecure_skip_verify = false;
};

// The real transport: http:// and https:// (TLS 1.2 or later, OpenSSL via Boost.Asio).
//
// Send keeps one connection alive across calls. When a reused connection turns out to be dead
// (the server closed it while idle) before any byte of the answer arrived, it reconnects once
// and resends: that case means the server never saw the request. Stream opens its own
// connection and closes it at the end. Calls block without a deadline.
class HttpClient : public HttpTransport {
 public:
  // `base_url`: "http://host:port" or "https://host:port" with an optional path prefix;
  // `token` is sent as "Authorization: Bearer <token>" when non-empty. An unreadable
  // `tls.ca_file` makes every call fail with INVALID_ARGUMENT naming it.
  explicit HttpClient(std::string base_url, std::string token = "", TlsOptions tls = {});
  ~HttpClient() override;
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  absl::StatusOr<HttpResponse> Send(std::string_view method, std::string_view target,
                                    std::string_view body = "",
                                    std::string_view content_type = "application/json") override;
  absl::Status Stream(std::string_view target,
                      const std::function<bool(std::string_view line)>& on_line) override;
  const std::string& base_url() const override { return base_url_; }

  // Send with extra request headers (a web session's Cookie and X-Gantry-CSRF, in tests).
  absl::StatusOr<HttpResponse> SendWithHeaders(std::string_view method, std::string_view target,
                                               const std::map<std::string, std::string>& headers,
                                               std::string_view body = "",
                                               std::string_view content_type = "application/json");

  // Bounds each later Send (and SendWithHeaders): connecting, the TLS handshake, writing the
  // request and reading the whole answer must end within `timeout` together. A call that runs
  // out closes the connection and fails with DEADLINE_EXCEEDED naming the server. 0 (the
  // default): no bound, as the class comment says. Stream is never bounded (a watch is long).
  void SetTimeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

  // Number of TCP connections opened so far (Send and Stream); lets tests observe reuse.
  int connections_opened_for_test() const { return connections_opened_; }

 private:
  struct Impl;

  // Constant after construction.
  std::string base_url_;
  std::string token_;
  absl::Status init_status_;  // why base_url_ is unusable, OK otherwise
  std::string host_;
  std::string port_;
  std::string path_prefix_;  // "" or "/prefix" without a trailing slash
  std::string host_header_;

  std::chrono::milliseconds timeout_{0};  // SetTimeout

  // Connection state (single-threaded use).
  std::unique_ptr<Impl> impl_;
  int connections_opened_ = 0;
};

}  // namespace gantry::client
