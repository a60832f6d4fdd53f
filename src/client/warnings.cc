#include "client/warnings.h"

namespace gantry::client {

std::vector<std::string> ParseWarnings(std::string_view h) {
  std::vector<std::string> out;
  size_t i = 0;
  auto skip_spaces = [&] {
    while (i < h.size() && (h[i] == ' ' || h[i] == '\t')) ++i;
  };
  while (true) {
    skip_spaces();
    // warn-code and warn-agent: two tokens before the quoted text.
    for (int token = 0; token < 2; ++token) {
      const size_t start = i;
      while (i < h.size() && h[i] != ' ' && h[i] != '"' && h[i] != ',') ++i;
      if (i == start) return out;
      skip_spaces();
    }
    if (i >= h.size() || h[i] != '"') return out;
    std::string text;
    bool closed = false;
    for (++i; i < h.size(); ++i) {
      if (h[i] == '\\' && i + 1 < h.size()) {
        text += h[++i];
      } else if (h[i] == '"') {
        closed = true;
        ++i;
        break;
      } else {
        text += h[i];
      }
    }
    if (!closed) return out;
    out.push_back(std::move(text));
    // An optional warn-date ("..."), then "," before the next entry.
    skip_spaces();
    if (i < h.size() && h[i] == '"') {
      const size_t end = h.find('"', i + 1);
      if (end == std::string_view::npos) return out;
      i = end + 1;
      skip_spaces();
    }
    if (i >= h.size() || h[i] != ',') return out;
    ++i;
  }
}

absl::StatusOr<HttpResponse> WarningPrinter::Send(std::string_view method, std::string_view target,
                                                  std::string_view body,
                                                  std::string_view content_type) {
  absl::StatusOr<HttpResponse> res = inner_.Send(method, target, body, content_type);
  if (!res.ok()) return res;
  if (auto w = res->headers.find("warning"); w != res->headers.end())
    for (const std::string& text : ParseWarnings(w->second)) err_ << "Warning: " << text << "\n";
  return res;
}

}  // namespace gantry::client
