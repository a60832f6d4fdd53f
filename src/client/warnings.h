// Warnings in answers (docs/api.md "Warnings"): gantryd, like the Kubernetes API server, sends
// a write that is allowed but worth a second look with `Warning: 299 - "<text>"` headers;
// kubectl prints each as "Warning: <text>" on stderr, and so does the gantry CLI through
// WarningPrinter.
//
// Thread-safety: ParseWarnings is pure; a WarningPrinter is for one thread, as its transport.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "client/http_client.h"

namespace gantry::client {

// The texts of a Warning header (RFC 7234: `code agent "text"`, several joined with ", "),
// unescaped. An entry that does not parse ends the list.
std::vector<std::string> ParseWarnings(std::string_view header);

// Forwards to `inner` and prints every warning of each answer on `err`.
class WarningPrinter : public HttpTransport {
 public:
  WarningPrinter(HttpTransport& inner, std::ostream& err) : inner_(inner), err_(err) {}

  absl::StatusOr<HttpResponse> Send(std::string_view method, std::string_view target,
                                    std::string_view body = "",
                                    std::string_view content_type = "application/json") override;
  absl::Status Stream(std::string_view target,
                      const std::function<bool(std::string_view line)>& on_line) override {
    return inner_.Stream(target, on_line);
  }
  const std::string& base_url() const override { return inner_.base_url(); }

 private:
  HttpTransport& inner_;
  std::ostream& err_;
};

}  // namespace gantry::client
