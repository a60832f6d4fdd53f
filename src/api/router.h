// Router: maps an HTTP request to the API's handlers and their answer. Plain function of
// Request -> Response (STYLE.md #9); the transport (server.h) never looks inside.
//
// Routes: /healthz /livez /readyz /version /metrics, /openapi/v2, /openapi/v3[/apis/paas.gantry.dev/v1],
// discovery at /api[/v1] and /apis[/paas.gantry.dev[/v1]], and the resources of API.md under
// /apis/paas.gantry.dev/v1.
//
// Thread-safety: Handle may be called concurrently from any thread.
#pragma once

#include <functional>

#include "absl/status/status.h"
#include "api/http_types.h"
#include "api/resources.h"
#include "api/static_files.h"
#include "common/metrics.h"
#include "engine/engine.h"
#include "engine/run_log.h"

namespace gantry::api {

class Router {
 public:
  // `ready` answers /readyz: OK when the server can serve (store reachable, engine running).
  Router(ResourceService& resources, engine::Engine& engine, engine::RunLogs& logs,
         Metrics& metrics, std::function<absl::Status()> ready);

  Response Handle(const Request& request);

  // Serves the web UI for GETs of paths the API does not own (may be null: 404 Status).
  void SetStaticFiles(const StaticFiles* ui) { ui_ = ui; }

 private:
  Response Route(const Request& request, std::string* route);
  Response HandleApi(const Request& request, const std::vector<std::string>& segments,
                     const Query& query, std::string* route);
  Response InstanceAction(const Target& t, const std::string& action);
  Response RunLog(const Target& t, const Query& query);

  ResourceService& resources_;
  engine::Engine& engine_;
  engine::RunLogs& logs_;
  Metrics& metrics_;
  std::function<absl::Status()> ready_;
  const StaticFiles* ui_ = nullptr;
};

}  // namespace gantry::api
