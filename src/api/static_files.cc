#include "api/static_files.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/status_http.h"
#include "common/errors.h"

#ifndef GANTRY_SOURCE_UI_DIR
#define GANTRY_SOURCE_UI_DIR "web/dist"
#endif

namespace gantry::api {
namespace {

namespace fs = std::filesystem;

std::string ContentType(const std::string& ext) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},
      {".webp", "image/webp"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"},
      {".woff", "font/woff"},
      {".ttf", "font/ttf"},
      {".otf", "font/otf"},
      {".eot", "application/vnd.ms-fontobject"},
      {".txt", "text/plain; charset=utf-8"},
      {".webmanifest", "application/manifest+json"},
  };
  for (const auto& [e, type] : kTypes)
    if (ext == e) return type;
  return "application/octet-stream";
}

bool ReadFile(const fs::path& p, std::string* out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = std::move(ss).str();
  return !in.bad();
}

bool IsApiPath(const std::string& path) {
  for (const char* prefix : {"/api", "/apis", "/openapi", "/auth"}) {
    std::string p = prefix;
    if (path == p || path.rfind(p + "/", 0) == 0) return true;
  }
  return false;
}

Response File(const fs::path& p, const std::string& cache_control) {
  Response r;
  if (!ReadFile(p, &r.body))
    return ErrorResponse(NotFoundError("the web UI file could not be read"));
  std::string ext = p.extension().string();
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  r.content_type = ContentType(ext);
  r.headers.emplace_back("Cache-Control", cache_control);
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  if (ext == ".html") {
    // The UI loads only its own scripts; PatternFly sets inline styles (Popper positions).
    r.headers.emplace_back("Content-Security-Policy",
                           "default-src 'self'; script-src 'self'; style-src 'self' "
                           "'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
                           "connect-src 'self'; frame-ancestors 'none'; base-uri 'self'");
    r.headers.emplace_back("X-Frame-Options", "DENY");
    r.headers.emplace_back("Referrer-Policy", "same-origin");
  }
  return r;
}

}  // namespace

StaticFiles::StaticFiles(std::string root) : root_(std::move(root)) {
  std::error_code ec;
  available_ = fs::is_regular_file(fs::path(root_) / "index.html", ec);
}

std::string StaticFiles::DefaultRoot() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path next_to = exe.parent_path() / "ui";
    if (fs::is_regular_file(next_to / "index.html", ec)) return next_to.string();
  }
  return GANTRY_SOURCE_UI_DIR;
}

Response StaticFiles::Serve(const std::string& path, const std::string& accept) const {
  auto not_found = [&path] {
    return ErrorResponse(
        NotFoundError("the server could not find the requested resource (" + path + ")"));
  };
  if (IsApiPath(path)) return not_found();
  const bool browser = accept.find("text/html") != std::string::npos;
  std::error_code ec;
  const fs::path root(root_);
  if (!fs::is_regular_file(root / "index.html", ec)) {
    if (path != "/" && !browser) return not_found();
    Response r;
    r.status = 404;
    r.content_type = "text/plain; charset=utf-8";
    r.body =
        "Gantry is running, but its web UI (PaaS Studio) was not built, so there is nothing to "
        "show at " +
        path +
        ".\n\nBuild it with `bash scripts/run.sh`, or `cd web && npm ci && "
        "npm run build`, then reload (no restart needed); or start gantryd with --ui-dir "
        "pointing at a built web/dist.\nLooked in: " +
        root_ + "\n\nThe API works without it: /apis/paas.gantry.dev/v1\n";
    return r;
  }
  // The router refused ".", ".." and empty segments; the path is relative to the root.
  fs::path rel = fs::path(path).relative_path();
  fs::path file = root / rel;
  if (!rel.empty() && fs::is_regular_file(file, ec)) {
    bool hashed = path.rfind("/assets/", 0) == 0;
    return File(file, hashed ? "public, max-age=31536000, immutable" : "no-cache");
  }
  if (rel.empty()) return File(root / "index.html", "no-cache");
  if (!browser || rel.filename().has_extension()) return not_found();
  return File(root / "index.html", "no-cache");
}

}  // namespace gantry::api
