// StaticFiles: serves the built web UI (PaaS Studio, web/dist) from `/` on the same origin
// as the API, so the run command still starts one process.
//
// - A file under the root is served with the content type of its extension. Files under
//   `assets/` carry a content hash in their names (Vite), so they are cached for a year
//   (`immutable`); everything else, index.html included, is `no-cache` so a rebuilt UI is
//   picked up at the next load.
// - A GET by a browser (Accept names text/html) of a path without a file extension that
//   matches no file is a client-side route of the single-page app: it gets index.html (SPA
//   fallback, so deep links and reloads work). Anything else that matches no file gets the
//   API's 404 Status, as before the UI existed (API clients and scripts never get a page for a
//   mistyped path).
// - Paths of the API (`/api`, `/apis`, `/openapi`, `/auth`) are never answered with a page:
//   they get the API's 404 Status, so a client of the API never parses HTML.
// - When the UI was not built (no index.html under the root) `/`, and any page a browser asks
//   for, answers 404 with a short text naming the build command; the API works as before.
//
// Thread-safety: Serve may be called concurrently; the object is constant after construction
// and reads files on every request (a rebuilt UI needs no restart).
#pragma once

#include <string>

#include "api/http_types.h"

namespace gantry::api {

class StaticFiles {
 public:
  // `root` is the folder holding index.html (e.g. web/dist); it need not exist.
  explicit StaticFiles(std::string root);

  // Whether index.html was found under the root when constructed (for the start-up log).
  bool available() const { return available_; }
  const std::string& root() const { return root_; }

  // Answers a GET or HEAD of `path`, the request path with its segments already checked by
  // the router (no empty, ".", ".." or NUL segments), always starting with "/". `accept` is
  // the request's Accept header.
  Response Serve(const std::string& path, const std::string& accept) const;

  // The default --ui-dir: the first folder holding index.html among `ui/` next to the
  // gantryd binary and the web/dist of the source tree this binary was built from. Returns
  // the source tree's web/dist when neither holds one (so the log says where to build).
  static std::string DefaultRoot();

 private:
  // Constant after construction.
  std::string root_;
  bool available_ = false;
};

}  // namespace gantry::api
