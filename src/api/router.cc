#include "api/router.h"

#include <boost/url.hpp>

#include "api/openapi.h"
#include "api/status_http.h"
#include "api/table.h"
#include "common/clock.h"
#include "common/errors.h"
#include "model/codec.h"
#include "model/schema.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

Response JsonResponse(int status, const json::object& body) {
  Response r;
  r.status = status;
  r.body = json::serialize(body);
  return r;
}

Response Text(int status, std::string body) {
  Response r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(body);
  return r;
}

// Secrets never leave the server, in objects or in lists.
void Redact(json::object& body) {
  if (json::value* items = body.if_contains("items"); items && items->is_array()) {
    for (auto& item : items->get_array())
      if (item.is_object()) model::RedactSealedValues(item.get_object());
  } else {
    model::RedactSealedValues(body);
  }
}

Response FromStatusOr(absl::StatusOr<json::object> result, int ok_status = 200) {
  if (!result.ok()) return ErrorResponse(result.status());
  Redact(*result);
  return JsonResponse(ok_status, *result);
}

// The Age column of tables only. Router has no injected clock (yet); nothing stored or
// decided depends on this reading, and tests never assert on ages.
std::chrono::system_clock::time_point TableNow() {
  static const SystemClock clock;
  return clock.Now();
}

// A get or list: JSON, or a meta.k8s.io Table when the client asks for one (kubectl get).
Response ReadResponse(const Request& request, const Query& query, const model::KindInfo& kind,
                      absl::StatusOr<json::object> result) {
  std::string version = TableVersionWanted(request.accept);
  if (version.empty() || !result.ok()) return FromStatusOr(std::move(result));
  auto include =
      ParseIncludeObject(query.count("includeObject") ? query.at("includeObject") : "");
  if (!include.ok()) return ErrorResponse(include.status());
  Redact(*result);
  return JsonResponse(200, ToTable(kind, *result, *include, version, TableNow()));
}

// A watch: the stream of events (as one-row Tables when asked for), or the refusal.
Response WatchResponse(const Request& request, const Query& query, const model::KindInfo& kind,
                       absl::StatusOr<std::shared_ptr<LineStream>> stream) {
  if (!stream.ok()) return ErrorResponse(stream.status());
  Response r;
  r.stream = *std::move(stream);
  if (std::string version = TableVersionWanted(request.accept); !version.empty()) {
    auto include =
        ParseIncludeObject(query.count("includeObject") ? query.at("includeObject") : "");
    if (!include.ok()) {
      r.stream->Cancel();
      return ErrorResponse(include.status());
    }
    r.stream = TableWatch(std::move(r.stream), kind, *include, version, TableNow);
  }
  return r;
}

// Query parameters of writes that Kubernetes clients send. fieldValidation: every value
// is accepted and behaves as Strict (unknown fields are always refused). fieldManager is
// accepted and ignored (no managed fields without server-side apply). dryRun is refused
// before anything is written: no verb here can run without committing yet.
absl::Status CheckWriteOptions(const Query& q) {
  if (auto it = q.find("dryRun"); it != q.end() && !it->second.empty())
    return BadRequestError("dryRun is not supported by this server; use kubectl's "
                           "--dry-run=client instead");
  if (auto it = q.find("fieldValidation"); it != q.end()) {
    const std::string& v = it->second;
    if (!v.empty() && v != "Strict" && v != "Warn" && v != "Ignore")
      return BadRequestError("fieldValidation must be Strict, Warn or Ignore, not \"" + v + "\"");
  }
  if (auto it = q.find("fieldManager"); it != q.end() && it->second.size() > 128)
    return BadRequestError("fieldManager must be at most 128 characters");
  return absl::OkStatus();
}

Response NotFoundPath(const std::string& path) {
  return ErrorResponse(
      NotFoundError("the server could not find the requested resource (" + path + ")"));
}

// The media type without parameters, lower-cased.
std::string MediaType(std::string_view content_type) {
  std::string out(content_type.substr(0, content_type.find(';')));
  while (!out.empty() && out.back() == ' ') out.pop_back();
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

absl::Status CheckJsonBody(const Request& r) {
  std::string type = MediaType(r.content_type);
  if (type.empty() || type == "application/json") return absl::OkStatus();
  return UnsupportedMediaTypeError("the body must be application/json, not " + type +
                                   " (the gantry CLI converts YAML for you)");
}

bool IsTrue(const Query& q, const std::string& key) {
  auto it = q.find(key);
  return it != q.end() && (it->second == "true" || it->second == "1");
}

}  // namespace

Router::Router(ResourceService& resources, engine::Engine& engine, engine::RunLogs& logs,
               Metrics& metrics, std::function<absl::Status()> ready)
    : resources_(resources), engine_(engine), logs_(logs), metrics_(metrics),
      ready_(std::move(ready)) {
  metrics_.Describe("gantry_http_requests_total", "counter", "HTTP requests by route, method and code.");
  metrics_.Describe("gantry_http_request_duration_seconds", "histogram",
                    "HTTP request latency by route (streams: until the stream starts).",
                    {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5});
}

Response Router::Handle(const Request& request) {
  auto start = std::chrono::steady_clock::now();
  std::string route = "other";
  Response response = Route(request, &route);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  metrics_.Add("gantry_http_requests_total",
               {{"route", route}, {"method", request.method}, {"code", std::to_string(response.status)}});
  metrics_.Observe("gantry_http_request_duration_seconds", {{"route", route}}, secs);
  return response;
}

Response Router::InstanceAction(const Target& t, const std::string& action) {
  absl::StatusOr<json::object> out;
  if (action == "deploy") out = engine_.Deploy(t.ns, t.name);
  else if (action == "destroy") out = engine_.Destroy(t.ns, t.name);
  else if (action == "cancel") out = engine_.Cancel(t.ns, t.name);
  else out = resources_.Upgrade(t);
  if (!out.ok() && absl::IsNotFound(out.status())) {
    auto check = resources_.Get(t);  // names the missing project or instance precisely
    if (!check.ok()) return ErrorResponse(check.status());
  }
  return FromStatusOr(std::move(out), action == "upgrade" ? 200 : 202);
}

Response Router::RunLog(const Target& t, const Query& query) {
  auto run = resources_.Get(t);
  if (!run.ok()) return ErrorResponse(run.status());
  std::string uid = model::GetString(*run, "metadata.uid");
  std::string phase = model::GetString(*run, "status.phase");
  bool active = phase == "Queued" || phase == "Running";
  if (IsTrue(query, "follow")) {
    Response r;
    r.content_type = "text/plain; charset=utf-8";
    r.stream = std::make_shared<LineStream>();
    logs_.Follow(uid, active, r.stream);
    return r;
  }
  return Text(200, logs_.Read(uid));
}

Response Router::Route(const Request& request, std::string* route) {
  auto parsed = boost::urls::parse_origin_form(request.target);
  if (!parsed) return ErrorResponse(BadRequestError("the request path is not a valid URL path"));
  std::vector<std::string> segments;
  for (auto seg : parsed->segments()) {
    std::string s(seg);
    if (s.empty()) continue;  // tolerate "//" and a trailing slash
    if (s == "." || s == ".." || s.find('/') != std::string::npos || s.find('\0') != std::string::npos)
      return ErrorResponse(BadRequestError("the request path contains an invalid segment \"" +
                                           s + "\""));
    segments.push_back(std::move(s));
  }
  Query query;
  for (auto p : parsed->params()) query[std::string(p.key)] = std::string(p.value);
  std::string path = "/";
  for (size_t i = 0; i < segments.size(); ++i) path += (i ? "/" : "") + segments[i];

  const bool get = request.method == "GET" || request.method == "HEAD";
  if (path == "/healthz" || path == "/livez") {
    if (!get) return ErrorResponse(MethodNotAllowedError("use GET"));
    return Text(200, "ok");
  }
  if (path == "/readyz") {
    if (!get) return ErrorResponse(MethodNotAllowedError("use GET"));
    absl::Status s = ready_ ? ready_() : absl::OkStatus();
    return s.ok() ? Text(200, "ok") : Text(503, "not ready: " + std::string(s.message()));
  }
  if (path == "/metrics" && get) {
    *route = "/metrics";
    metrics_.Set("gantry_run_queue_depth", {}, static_cast<double>(engine_.QueueDepth()));
    Response r = Text(200, metrics_.Render());
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return r;
  }
  if (path == "/version" && get)
    return JsonResponse(200, json::object{{"major", "1"}, {"minor", "0"},
                                          {"gitVersion", "v0.1.0+gantry"}, {"platform", "linux/amd64"}});
  if (path == "/openapi/v2" && get) {
    // Older kubectl (1.27) needs this document to apply; it asks for protobuf only. An
    // empty message is the empty Document: kubectl then finds no schema for our kinds,
    // skips client-side validation and leaves it to the server (which always validates).
    // Schemas are served by /openapi/v3.
    if (request.accept.find("protobuf") != std::string::npos) {
      Response r;
      r.content_type = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
      return r;
    }
    return JsonResponse(200, json::object{{"swagger", "2.0"},
                                          {"info", json::object{{"title", "Gantry"},
                                                                {"version", "v1"}}},
                                          {"paths", json::object{}}});
  }
  if (path == "/openapi/v3" && get) return JsonResponse(200, OpenApiIndex());
  if (path == "/openapi/v3/apis/paas.gantry.dev/v1" && get)
    return JsonResponse(200, OpenApiGroupDocument());
  // Core-group discovery: kubectl reads it first. We serve no core resources (yet).
  if (path == "/api" && get)
    return JsonResponse(200, json::object{{"kind", "APIVersions"},
                                          {"versions", json::array{"v1"}},
                                          {"serverAddressByClientCIDRs", json::array{}}});
  if (path == "/api/v1" && get)
    return JsonResponse(200, json::object{{"kind", "APIResourceList"}, {"apiVersion", "v1"},
                                          {"groupVersion", "v1"}, {"resources", json::array{}}});
  if (path == "/apis" && get) return JsonResponse(200, ApiGroupList());
  if (path == "/apis/paas.gantry.dev" && get) return JsonResponse(200, ApiGroup());
  if (path == "/apis/paas.gantry.dev/v1" && get) return JsonResponse(200, ApiResourceList());
  if (segments.size() > 3 && segments[0] == "apis" && segments[1] == model::kGroup &&
      segments[2] == model::kVersion)
    return HandleApi(request, std::vector<std::string>(segments.begin() + 3, segments.end()),
                     query, route);
  if (ui_ && get) {
    *route = "/ui";
    return ui_->Serve(path, request.accept);
  }
  return NotFoundPath(path);
}

Response Router::HandleApi(const Request& request, const std::vector<std::string>& segs,
                           const Query& query, std::string* route) {
  Target t;
  size_t i = 0;
  if (segs[0] == "namespaces") {
    if (segs.size() < 3) {
      if (segs.size() == 2)
        return ErrorResponse(NotFoundError(
            "projects are served at /apis/paas.gantry.dev/v1/projects/" + segs[1]));
      return ErrorResponse(NotFoundError("the server could not find the requested resource"));
    }
    t.ns = segs[1];
    i = 2;
  } else {
    t.all_namespaces = true;
  }
  t.kind = model::FindKindByPlural(segs[i]);
  if (!t.kind)
    return ErrorResponse(NotFoundError("the server doesn't have a resource type \"" + segs[i] +
                                       "\""));
  if (!t.kind->namespaced && !t.all_namespaces)
    return ErrorResponse(NotFoundError(t.kind->plural + " are not in a project; use /apis/" +
                                       model::kApiVersion + "/" + t.kind->plural));
  if (!t.kind->namespaced) t.all_namespaces = false;
  if (i + 1 < segs.size()) t.name = segs[i + 1];
  std::string sub = i + 2 < segs.size() ? segs[i + 2] : "";
  std::string subname = i + 3 < segs.size() ? segs[i + 3] : "";
  if (i + 4 < segs.size()) return NotFoundPath(request.target);
  if (t.all_namespaces && !t.name.empty())
    return ErrorResponse(NotFoundError(t.kind->plural + " live in projects; use /apis/" +
                                       model::kApiVersion + "/namespaces/PROJECT/" +
                                       t.kind->plural + "/" + t.name));
  const std::string& m = request.method;
  *route = std::string(t.all_namespaces ? "/" : "/namespaces/{ns}/") + t.kind->plural +
           (t.name.empty() ? "" : "/{name}") + (sub.empty() ? "" : "/" + sub);
  if (m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE")
    if (absl::Status s = CheckWriteOptions(query); !s.ok()) return ErrorResponse(s);

  if (t.kind->kind == "Node") {
    // Computed from this host's inventory, not stored.
    if (m != "GET" || !sub.empty())
      return ErrorResponse(MethodNotAllowedError("nodes are read-only"));
    json::object node = engine_.NodeView();
    if (t.name.empty())
      return ReadResponse(request, query, *t.kind,
                          json::object{{"apiVersion", model::kApiVersion}, {"kind", "NodeList"},
                                       {"metadata", json::object{}},
                                       {"items", json::array{node}}});
    if (model::GetString(node, "metadata.name") != t.name)
      return ErrorResponse(NotFoundError("nodes.paas.gantry.dev \"" + t.name + "\" not found"));
    return ReadResponse(request, query, *t.kind, node);
  }
  if (!sub.empty() && t.kind->kind == "ComputeInstance" &&
      (sub == "deploy" || sub == "destroy" || sub == "cancel" || sub == "upgrade")) {
    if (!subname.empty()) return NotFoundPath(request.target);
    if (m != "POST") return ErrorResponse(MethodNotAllowedError(sub + " is an action: use POST"));
    return InstanceAction(t, sub);
  }
  if (!sub.empty() && t.kind->kind == "Run" && sub == "log") {
    if (!subname.empty()) return NotFoundPath(request.target);
    if (m != "GET") return ErrorResponse(MethodNotAllowedError("the log is read-only"));
    return RunLog(t, query);
  }
  if (!sub.empty()) {
    if (sub != "revisions") return NotFoundPath(request.target);
    if (m != "GET") return ErrorResponse(MethodNotAllowedError("revisions are read-only"));
    if (subname.empty()) return FromStatusOr(resources_.ListRevisions(t));
    return FromStatusOr(resources_.GetRevision(t, subname));
  }

  if (t.name.empty()) {
    if (m == "GET") {
      if (IsTrue(query, "watch"))
        return WatchResponse(request, query, *t.kind, resources_.Watch(t, query));
      return ReadResponse(request, query, *t.kind, resources_.List(t, query));
    }
    if (m == "POST") {
      if (absl::Status s = CheckJsonBody(request); !s.ok()) return ErrorResponse(s);
      if (t.all_namespaces && t.kind->namespaced)
        return ErrorResponse(BadRequestError("create " + t.kind->plural +
                                             " in a project: POST /apis/" + model::kApiVersion +
                                             "/namespaces/PROJECT/" + t.kind->plural));
      return FromStatusOr(resources_.Create(t, request.body), 201);
    }
    return ErrorResponse(MethodNotAllowedError(m + " is not supported on a collection"));
  }

  if (m == "GET") {
    if (IsTrue(query, "watch"))
      return WatchResponse(request, query, *t.kind, resources_.Watch(t, query));
    return ReadResponse(request, query, *t.kind, resources_.Get(t));
  }
  if (m == "PUT") {
    if (absl::Status s = CheckJsonBody(request); !s.ok()) return ErrorResponse(s);
    return FromStatusOr(resources_.Replace(t, request.body));
  }
  if (m == "PATCH") {
    std::string type = MediaType(request.content_type);
    // kubectl sends merge patches for kinds it has no Go types for (label, annotate,
    // client-side apply), so strategic merge and server-side apply stay refused.
    if (type != "application/merge-patch+json")
      return ErrorResponse(UnsupportedMediaTypeError(
          "the patch type \"" + type +
          "\" is not supported; use application/merge-patch+json"));
    return FromStatusOr(resources_.MergePatch(t, request.body));
  }
  if (m == "DELETE") {
    bool accepted = false;
    auto out = resources_.Delete(t, request.body, &accepted);
    return FromStatusOr(std::move(out), accepted ? 202 : 200);
  }
  return ErrorResponse(MethodNotAllowedError(m + " is not supported on " + t.kind->plural));
}

}  // namespace gantry::api
