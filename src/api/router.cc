#include "api/router.h"

#include <boost/url.hpp>

#include "api/openapi.h"
#include "api/status_http.h"
#include "common/errors.h"
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

Response FromStatusOr(absl::StatusOr<json::object> result, int ok_status = 200) {
  if (!result.ok()) return ErrorResponse(result.status());
  return JsonResponse(ok_status, *result);
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

Router::Router(ResourceService& resources, std::function<absl::Status()> ready)
    : resources_(resources), ready_(std::move(ready)) {}

Response Router::Handle(const Request& request) {
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
  if (path == "/version" && get)
    return JsonResponse(200, json::object{{"major", "1"}, {"minor", "0"},
                                          {"gitVersion", "v0.1.0+gantry"}, {"platform", "linux/amd64"}});
  if (path == "/openapi/v3" && get) return JsonResponse(200, OpenApiIndex());
  if (path == "/openapi/v3/apis/paas.gantry.dev/v1" && get)
    return JsonResponse(200, OpenApiGroupDocument());
  if (path == "/apis" && get) return JsonResponse(200, ApiGroupList());
  if (path == "/apis/paas.gantry.dev" && get) return JsonResponse(200, ApiGroup());
  if (path == "/apis/paas.gantry.dev/v1" && get) return JsonResponse(200, ApiResourceList());
  if (segments.size() > 3 && segments[0] == "apis" && segments[1] == model::kGroup &&
      segments[2] == model::kVersion)
    return HandleApi(request, std::vector<std::string>(segments.begin() + 3, segments.end()),
                     query);
  return NotFoundPath(path);
}

Response Router::HandleApi(const Request& request, const std::vector<std::string>& segs,
                           const Query& query) {
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

  if (!sub.empty()) {
    if (sub != "revisions") return NotFoundPath(request.target);
    if (m != "GET") return ErrorResponse(MethodNotAllowedError("revisions are read-only"));
    if (subname.empty()) return FromStatusOr(resources_.ListRevisions(t));
    return FromStatusOr(resources_.GetRevision(t, subname));
  }

  if (t.name.empty()) {
    if (m == "GET") {
      if (IsTrue(query, "watch")) {
        auto stream = resources_.Watch(t, query);
        if (!stream.ok()) return ErrorResponse(stream.status());
        Response r;
        r.stream = *stream;
        return r;
      }
      return FromStatusOr(resources_.List(t, query));
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
    if (IsTrue(query, "watch")) {
      auto stream = resources_.Watch(t, query);
      if (!stream.ok()) return ErrorResponse(stream.status());
      Response r;
      r.stream = *stream;
      return r;
    }
    return FromStatusOr(resources_.Get(t));
  }
  if (m == "PUT") {
    if (absl::Status s = CheckJsonBody(request); !s.ok()) return ErrorResponse(s);
    return FromStatusOr(resources_.Replace(t, request.body));
  }
  if (m == "PATCH") {
    std::string type = MediaType(request.content_type);
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
