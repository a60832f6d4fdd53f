#include "api/router.h"

#include <boost/url.hpp>

#include "absl/strings/ascii.h"

#include "api/openapi.h"
#include "api/status_http.h"
#include "api/table.h"
#include "auth/credentials.h"
#include "common/clock.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "model/codec.h"
#include "model/sealed_fields.h"
#include "model/schema.h"
#include "model/validation.h"

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
      if (item.is_object()) model::RedactSealed(item.get_object());
  } else {
    model::RedactSealed(body);
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

// How often open streams check again that their caller still has access (stream_guard.h).
constexpr std::chrono::milliseconds kStreamRecheckPeriod{1000};

// The last event of a watch that lost its access: {"type":"ERROR","object":<Status>}, as
// Kubernetes ends a watch it cannot continue.
std::string ErrorEventLine(const absl::Status& why) {
  boost::system::error_code ec;
  json::value status = json::parse(ErrorResponse(why).body, ec);
  return json::serialize(
      json::object{{"type", "ERROR"}, {"object", ec ? json::value(json::object{}) : status}});
}

// Query parameters of writes that Kubernetes clients send. fieldValidation: every value
// is accepted and behaves as Strict (unknown fields are always refused). fieldManager names
// the writer in metadata.managedFields. dryRun: only "All", as Kubernetes (Target::dry_run).
absl::Status CheckWriteOptions(const Query& q) {
  if (auto it = q.find("dryRun"); it != q.end() && !it->second.empty() && it->second != "All")
    return BadRequestError("dryRun must be All, not \"" + it->second.substr(0, 32) + "\"");
  if (auto it = q.find("fieldValidation"); it != q.end()) {
    const std::string& v = it->second;
    if (!v.empty() && v != "Strict" && v != "Warn" && v != "Ignore")
      return BadRequestError("fieldValidation must be Strict, Warn or Ignore, not \"" + v + "\"");
  }
  if (auto it = q.find("fieldManager"); it != q.end()) {
    if (it->second.size() > 128)
      return BadRequestError("fieldManager must be at most 128 characters");
    for (char c : it->second)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        return BadRequestError("fieldManager must not contain control characters");
    if (!IsValidUtf8(it->second)) return BadRequestError("fieldManager must be valid UTF-8");
  }
  return absl::OkStatus();
}

// The field manager of a write, as Kubernetes derives it: ?fieldManager=, else the
// User-Agent up to its first "/" ("kubectl/v1.32.0 (linux/amd64) ..." is "kubectl").
std::string FieldManagerOf(const Request& request, const Query& q) {
  if (auto it = q.find("fieldManager"); it != q.end() && !it->second.empty()) return it->second;
  std::string ua = request.user_agent.substr(0, request.user_agent.find('/'));
  std::string out;
  for (char c : ua)
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) out += c;
  if (out.size() > 128) out.resize(128);
  // A client's User-Agent is not worth a refusal: bytes that are not UTF-8 (or a sequence
  // cut at 128 bytes) become U+FFFD.
  out = ScrubUtf8(out);
  return out.empty() ? "unknown" : out;
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

bool IsMutation(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

// The method as a metric label: one of a fixed set, so junk methods add no series.
std::string MethodLabel(const std::string& method) {
  for (const char* known : {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
    if (method == known) return known;
  return "other";
}

// Routes of fixed paths, named by their path. Every other route label is a template built
// from the route table (kinds, subresources) or "other": never text taken from a request.
constexpr std::string_view kFixedRoutes[] = {
    "/healthz", "/livez",   "/readyz",  "/metrics", "/version",
    "/openapi/v2", "/openapi/v3", "/openapi/v3/apis/paas.gantry.dev/v1",
    "/api",     "/api/v1",  "/apis",    "/apis/paas.gantry.dev", "/apis/paas.gantry.dev/v1"};

std::string FixedRouteOf(const std::string& path) {
  for (std::string_view route : kFixedRoutes)
    if (path == route) return std::string(route);
  return "other";
}

// The subresources the API serves; any other name is "other" in a route label.
std::string SubresourceLabel(const std::string& sub) {
  for (const char* known : {"deploy", "destroy", "cancel", "upgrade", "log", "revisions", "tokens"})
    if (sub == known) return known;
  return "other";
}

// The audit verb of a request on the API.
std::string AuditVerb(const std::string& method, const std::string& sub, bool collection) {
  if (method == "POST") return sub.empty() || sub == "tokens" ? "create" : sub;
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return "delete";
  return collection ? "list" : "get";
}

auth::Verb VerbOf(const std::string& method, const std::string& sub, bool collection,
                  bool watch) {
  if (method == "GET" || method == "HEAD")
    return watch ? auth::Verb::kWatch : collection ? auth::Verb::kList : auth::Verb::kGet;
  if (method == "POST")
    return sub.empty() || sub == "tokens" ? auth::Verb::kCreate : auth::Verb::kOperate;
  if (method == "PUT" || method == "PATCH") return auth::Verb::kUpdate;
  return auth::Verb::kDelete;
}

bool SharedIntoAny(const json::object& obj, const std::map<std::string, auth::Role>& projects) {
  for (const auto& [project, role] : projects)
    if (model::SharedWith(obj, project)) return true;
  return false;
}

// A change made with a session cookie carries the session's CSRF token in X-Gantry-CSRF.
bool CsrfMatches(const Request& request, const auth::Identity& identity) {
  return auth::HashesEqual(auth::HashSecret(request.csrf), auth::HashSecret(identity.csrf));
}

// The host of a Host header or host name, lower case, without the port or IPv6 brackets:
// "LocalHost:8080" -> "localhost", "[::1]:8080" -> "::1".
std::string HostName(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    size_t close = host.find(']');
    host = host.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1);
  } else if (size_t colon = host.find(':'); colon != std::string_view::npos &&
                                             host.find(':', colon + 1) == std::string_view::npos) {
    host = host.substr(0, colon);  // one colon: a port; more: a bare IPv6 address
  }
  return absl::AsciiStrToLower(std::string(host));
}

json::object WhoAmI(const auth::Identity& id, const json::object* user) {
  json::object projects;
  for (const auto& [p, r] : id.subject.projects) projects[p] = auth::RoleName(r);
  json::object out{{"username", id.subject.user},
                   {"displayName", user ? model::GetString(*user, "spec.displayName") : ""},
                   {"orgRole", auth::RoleName(id.subject.org_role)},
                   {"projects", std::move(projects)}};
  if (id.via_session) out["csrfToken"] = id.csrf;
  return out;
}

}  // namespace

Router::Router(ResourceService& resources, engine::Engine& engine, engine::RunLogs& logs,
               Metrics& metrics, auth::Authenticator& authn, auth::AuditLog& audit,
               std::function<absl::Status()> ready)
    : resources_(resources), engine_(engine), logs_(logs), metrics_(metrics), authn_(authn),
      audit_(audit), ready_(std::move(ready)), guard_(authn, kStreamRecheckPeriod) {
  metrics_.Describe("gantry_http_requests_total", "counter", "HTTP requests by route, method and code.");
  metrics_.Describe("gantry_http_request_duration_seconds", "histogram",
                    "HTTP request latency by route (streams: until the stream starts).",
                    {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5});
}

void Router::SetWorkloadHost(std::string host) { workload_host_ = HostName(host); }

Response Router::Handle(const Request& request) {
  auto start = std::chrono::steady_clock::now();
  Call call;
  Response response = Route(request, call);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  metrics_.Add("gantry_http_requests_total", {{"route", call.route},
                                              {"method", MethodLabel(request.method)},
                                              {"code", std::to_string(response.status)}});
  metrics_.Observe("gantry_http_request_duration_seconds", {{"route", call.route}}, secs);
  if (call.audit) {
    auth::AuditEntry& e = call.entry;
    e.code = response.status;
    bool ok = response.status >= 200 && response.status < 300;
    e.result = ok ? "Allowed"
                  : (response.status == 401 || response.status == 403 || response.status == 429)
                        ? "Denied"
                        : "Failed";
    if (!ok || e.name.empty()) {
      boost::system::error_code ec;
      json::value body = json::parse(response.body, ec);
      if (!ec && body.is_object()) {
        if (!ok) e.message = model::GetString(body.as_object(), "message");
        else if (response.stream == nullptr) e.name = model::GetString(body.as_object(), "metadata.name");
      }
    }
    e.source = request.remote;
    audit_.Record(e);
  }
  return response;
}

Response Router::InstanceAction(const Target& t, const std::string& action, const Query& query) {
  const std::string& kind = t.kind->kind;
  bool cascade = false;
  if (auto it = query.find("cascade"); it != query.end()) {
    if (action != "destroy" || kind != "ComputeInstance")
      return ErrorResponse(BadRequestError("cascade applies to destroying a compute instance"));
    if (it->second != "true" && it->second != "false")
      return ErrorResponse(BadRequestError("cascade must be true or false, not \"" +
                                           it->second.substr(0, 32) + "\""));
    cascade = it->second == "true";
  }
  absl::StatusOr<json::object> out;
  if (action == "deploy") out = engine_.Deploy(kind, t.ns, t.name);
  else if (action == "destroy") out = engine_.Destroy(kind, t.ns, t.name, cascade);
  else if (action == "cancel") out = engine_.Cancel(kind, t.ns, t.name);
  else out = resources_.Upgrade(t);
  if (!out.ok() && absl::IsNotFound(out.status())) {
    auto check = resources_.Get(t);  // names the missing project or instance precisely
    if (!check.ok()) return ErrorResponse(check.status());
  }
  return FromStatusOr(std::move(out), action == "upgrade" ? 200 : 202);
}

Response Router::Events(const auth::Subject& subject, const std::string& ns, const Query& query) {
  // kubectl describe asks for the events of the object it shows
  // (fieldSelector=involvedObject.name=N,involvedObject.namespace=NS,involvedObject.kind=K,
  // involvedObject.uid=U). Gantry's events are its runs: one Event per run of an instance.
  Target runs;
  runs.kind = model::FindKindByName("Run");
  runs.ns = ns;
  if (absl::Status s = Authorize(subject, runs, auth::Verb::kList, "Run"); !s.ok())
    return ErrorResponse(s);
  std::map<std::string, std::string> want;
  std::string selector = query.count("fieldSelector") ? query.at("fieldSelector") : "";
  for (size_t b = 0; b < selector.size();) {
    size_t e = selector.find(',', b);
    if (e == std::string::npos) e = selector.size();
    std::string term = selector.substr(b, e - b);
    size_t eq = term.find('=');
    if (eq == std::string::npos)
      return ErrorResponse(BadRequestError("fieldSelector terms must be FIELD=VALUE, not \"" + term + "\""));
    std::string key = term.substr(0, eq), value = term.substr(eq + 1);
    if (!value.empty() && value[0] == '=') value.erase(0, 1);  // "=="
    if (key != "involvedObject.name" && key != "involvedObject.namespace" &&
        key != "involvedObject.kind" && key != "involvedObject.uid" &&
        key != "involvedObject.apiVersion" && key != "involvedObject.resourceVersion" &&
        key != "involvedObject.fieldPath")
      return ErrorResponse(BadRequestError("field label not supported: " + key));
    want[key] = value;
    b = e + 1;
  }
  json::array items;
  std::string kind = want.count("involvedObject.kind") ? want["involvedObject.kind"] : "ComputeInstance";
  if (kind == "ComputeInstance" || kind == "ServiceInstance") {
    Query q;
    if (want.count("involvedObject.name"))
      q["fieldSelector"] = "spec.instanceRef.name=" + want["involvedObject.name"];
    auto list = resources_.List(runs, q);
    if (!list.ok()) return ErrorResponse(list.status());
    for (const auto& item : (*list)["items"].as_array()) {
      const json::object& run = item.as_object();
      // Runs made before service instances existed name no kind: compute instances'.
      if (model::GetString(run, "spec.instanceRef.kind", "ComputeInstance") != kind) continue;
      std::string uid = model::GetString(run, "spec.instanceRef.uid");
      if (want.count("involvedObject.uid") && !want["involvedObject.uid"].empty() &&
          want["involvedObject.uid"] != uid)
        continue;
      std::string phase = model::GetString(run, "status.phase");
      std::string action = model::GetString(run, "spec.action");
      std::string name = model::GetString(run, "metadata.name");
      std::string message = model::GetString(run, "status.message");
      if (message.empty()) message = action + " run " + name + " " + absl::AsciiStrToLower(phase);
      std::string reason = std::string(1, static_cast<char>(std::toupper(action.empty() ? 'r' : action[0]))) +
                           (action.empty() ? "un" : action.substr(1)) + phase;
      std::string first = model::GetString(run, "status.startTime",
                                           model::GetString(run, "metadata.creationTimestamp"));
      std::string last = model::GetString(run, "status.completionTime", first);
      items.push_back(json::object{
          {"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", json::object{{"name", name + ".run"}, {"namespace", ns},
                                    {"uid", model::GetString(run, "metadata.uid")},
                                    {"resourceVersion", model::GetString(run, "metadata.resourceVersion")},
                                    {"creationTimestamp", model::GetString(run, "metadata.creationTimestamp")}}},
          {"involvedObject", json::object{{"apiVersion", model::kApiVersion},
                                          {"kind", kind},
                                          {"namespace", ns},
                                          {"name", model::GetString(run, "spec.instanceRef.name")},
                                          {"uid", uid}}},
          {"reason", reason},
          {"message", message},
          {"type", phase == "Failed" ? "Warning" : "Normal"},
          {"count", 1},
          {"firstTimestamp", first},
          {"lastTimestamp", last},
          {"source", json::object{{"component", "gantryd"}}},
          {"reportingComponent", "gantryd"}});
    }
  }
  return JsonResponse(200, json::object{{"apiVersion", "v1"}, {"kind", "EventList"},
                                        {"metadata", json::object{}}, {"items", std::move(items)}});
}

Response Router::RunLog(const Target& t, const Query& query) {
  auto run = resources_.Get(t);
  if (!run.ok()) return ErrorResponse(run.status());
  std::string uid = model::GetString(*run, "metadata.uid");
  std::string phase = model::GetString(*run, "status.phase");
  bool active = phase == "Queued" || phase == "Running";
  if (QueryBool(query, "follow")) {
    Response r;
    r.content_type = "text/plain; charset=utf-8";
    r.stream = std::make_shared<LineStream>();
    logs_.Follow(uid, active, r.stream);
    return r;
  }
  return Text(200, logs_.Read(uid));
}

Response Router::Guarded(Response r, const Request& request, StreamAccess access, bool watch) {
  if (!r.stream) return r;  // a refusal
  std::weak_ptr<LineStream> weak = r.stream;
  auto check = [this, access = std::move(access)](const auth::Subject& subject) {
    return StillAllowed(subject, access);
  };
  auto end = [weak, watch](const absl::Status& why) {
    auto stream = weak.lock();
    if (!stream) return;
    if (watch) stream->Push(ErrorEventLine(why));
    stream->Close();
  };
  guard_.Guard(std::move(weak), {request.authorization, request.cookie}, std::move(check),
               std::move(end));
  return r;
}

absl::Status Router::StillAllowed(const auth::Subject& subject, const StreamAccess& access) {
  RETURN_IF_ERROR(Authorize(subject, access.target, access.verb, access.kind));
  if (!access.shown || subject.SeesAllProjects()) return absl::OkStatus();
  // A watch across projects is open to everyone but shows only the caller's projects: it
  // ends when one of those it showed is no longer the caller's (a new watch shows the rest).
  for (const std::string& project : *access.shown)
    if (!subject.projects.count(project))
      return ForbiddenError(access.target.kind->plural + "." + model::kGroup +
                            " is forbidden: User \"" + subject.user +
                            "\" no longer holds a role in project \"" + project +
                            "\"; watch again to see what is still visible");
  return absl::OkStatus();
}

Response Router::Route(const Request& request, Call& call) {
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
  call.route = FixedRouteOf(path);
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
    return JsonResponse(
        200, json::object{{"kind", "APIResourceList"}, {"apiVersion", "v1"}, {"groupVersion", "v1"},
                          {"resources", json::array{json::object{{"name", "events"},
                                                                 {"singularName", "event"},
                                                                 {"namespaced", true},
                                                                 {"kind", "Event"},
                                                                 {"verbs", json::array{"list"}},
                                                                 {"shortNames", json::array{"ev"}}}}}});
  if (segments.size() == 5 && segments[0] == "api" && segments[1] == "v1" &&
      segments[2] == "namespaces" && segments[4] == "events") {
    call.route = "/api/v1/namespaces/{ns}/events";
    if (!get) return ErrorResponse(MethodNotAllowedError("events are read-only"));
    auto identity = authn_.Authenticate(request.authorization, request.cookie);
    if (!identity.ok()) return ErrorResponse(identity.status());
    return Events(identity->subject, segments[3], query);
  }
  if (path == "/apis" && get) return JsonResponse(200, ApiGroupList());
  if (path == "/apis/paas.gantry.dev" && get) return JsonResponse(200, ApiGroup());
  if (path == "/apis/paas.gantry.dev/v1" && get) return JsonResponse(200, ApiResourceList());
  if (segments.size() == 2 && segments[0] == "auth") return HandleAuth(request, segments[1], call);
  if (segments.size() > 3 && segments[0] == "apis" && segments[1] == model::kGroup &&
      segments[2] == model::kVersion) {
    if (IsMutation(request.method)) {
      // Recorded whatever happens next, refusals included.
      call.audit = true;
      call.entry.verb = AuditVerb(request.method, "", false);
      call.entry.resource = segments[3] == "namespaces" && segments.size() > 5 ? segments[5] : segments[3];
    }
    auto identity = authn_.Authenticate(request.authorization, request.cookie);
    if (!identity.ok()) return ErrorResponse(identity.status());
    call.entry.user = identity->subject.user;
    call.entry.authenticated = true;
    if (identity->via_session && IsMutation(request.method) && !CsrfMatches(request, *identity))
      return ErrorResponse(ForbiddenError(
          "a change made with a session cookie needs the X-Gantry-CSRF header with the "
          "csrfToken returned by /auth/login or /auth/whoami"));
    return HandleApi(request, std::vector<std::string>(segments.begin() + 3, segments.end()),
                     query, *identity, call);
  }
  if (ui_ && get) {
    call.route = "/ui";
    return ui_->Serve(path, request.accept);
  }
  return NotFoundPath(path);
}

Response Router::HandleAuth(const Request& request, const std::string& what, Call& call) {
  if (what == "login" || what == "token" || what == "logout" || what == "whoami")
    call.route = "/auth/" + what;
  if (what == "login") {
    if (request.method != "POST") return ErrorResponse(MethodNotAllowedError("log in with POST"));
    call.audit = true;
    call.entry.verb = "login";
    call.entry.resource = "sessions";
    if (absl::Status s = CheckJsonBody(request); !s.ok()) return ErrorResponse(s);
    boost::system::error_code ec;
    json::value body = json::parse(request.body, ec);
    if (ec || !body.is_object())
      return ErrorResponse(BadRequestError(
          "the body must be a JSON object: {\"username\": \"...\", \"password\": \"...\"}"));
    std::string user = model::GetString(body.as_object(), "username");
    std::string password = model::GetString(body.as_object(), "password");
    call.entry.user = user.substr(0, 253);
    call.entry.name = call.entry.user;
    if (user.empty() || password.empty())
      return ErrorResponse(BadRequestError("username and password are required"));
    if (!workload_host_.empty() && HostName(request.host) == workload_host_)
      return ErrorResponse(ForbiddenError(
          "log in to the web UI by another host name than " + workload_host_ +
          ": workloads are published on " + workload_host_ +
          " (--advertise-host), and browsers send a site's cookies to every port of it, so "
          "each workload would receive your session"));
    auto login = authn_.Login(user, password, request.remote);
    if (!login.ok()) return ErrorResponse(login.status());
    call.entry.authenticated = true;
    Response r = JsonResponse(200, json::object{{"username", user},
                                                {"csrfToken", login->identity.csrf},
                                                {"expiresAt", login->expires_at}});
    r.headers.push_back({"Set-Cookie", std::string(auth::kSessionCookie) + "=" +
                                           login->cookie_value +
                                           "; Path=/; HttpOnly; SameSite=Strict"});
    r.headers.push_back({"Cache-Control", "no-store"});
    return r;
  }
  if (what == "token") {
    // A token for the CLI (gantry login): password in, bearer token out, no session.
    if (request.method != "POST") return ErrorResponse(MethodNotAllowedError("use POST"));
    call.audit = true;
    call.entry.verb = "create";
    call.entry.resource = "tokens";
    if (absl::Status s = CheckJsonBody(request); !s.ok()) return ErrorResponse(s);
    auto body = model::ParseObjectJson(request.body);
    if (!body.ok()) return ErrorResponse(body.status());
    std::string user = model::GetString(*body, "username");
    std::string password = model::GetString(*body, "password");
    call.entry.user = user.substr(0, 253);
    if (user.empty() || password.empty())
      return ErrorResponse(BadRequestError("username and password are required"));
    auto subject = authn_.CheckPassword(user, password, request.remote);
    if (!subject.ok()) return ErrorResponse(subject.status());
    call.entry.authenticated = true;
    std::optional<std::chrono::seconds> ttl;
    if (std::string e = model::GetString(*body, "expiresIn"); !e.empty()) {
      ttl = auth::ParseDuration(e);
      if (!ttl)
        return ErrorResponse(BadRequestError("expiresIn \"" + e.substr(0, 64) +
                                             "\" is not a duration such as 90d or 12h"));
    }
    auto out = authn_.CreateToken(user, model::GetString(*body, "description"), ttl);
    if (out.ok()) call.entry.name = user + "/" + model::GetString(*out, "metadata.name");
    return FromStatusOr(std::move(out), 201);
  }
  if (what != "logout" && what != "whoami") return NotFoundPath("/auth/" + what);
  auto identity = authn_.Authenticate(request.authorization, request.cookie);
  if (what == "whoami") {
    if (request.method != "GET") return ErrorResponse(MethodNotAllowedError("use GET"));
    if (!identity.ok()) return ErrorResponse(identity.status());
    Target ut;
    ut.kind = model::FindKindByName("User");
    ut.name = identity->subject.user;
    auto user = resources_.Get(ut);
    Response r = JsonResponse(200, WhoAmI(*identity, user.ok() ? &*user : nullptr));
    r.headers.push_back({"Cache-Control", "no-store"});
    return r;
  }
  if (request.method != "POST") return ErrorResponse(MethodNotAllowedError("log out with POST"));
  call.audit = true;
  call.entry.verb = "logout";
  call.entry.resource = "sessions";
  if (!identity.ok()) return ErrorResponse(identity.status());
  call.entry.user = identity->subject.user;
  call.entry.authenticated = true;
  if (!identity->via_session)
    return ErrorResponse(BadRequestError("logout ends a web session; revoke API tokens instead"));
  if (!CsrfMatches(request, *identity))
    return ErrorResponse(ForbiddenError("logout needs the X-Gantry-CSRF header"));
  if (absl::Status s = authn_.Logout(identity->session); !s.ok()) return ErrorResponse(s);
  Response r = SuccessStatus("logged out");
  r.headers.push_back({"Set-Cookie", std::string(auth::kSessionCookie) +
                                         "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"});
  return r;
}

absl::Status Router::Authorize(const auth::Subject& subject, const Target& t, auth::Verb verb,
                               const std::string& kind) {
  auth::Access a{verb, kind, "", auth::Relation::kOwn};
  if (kind == "User" || kind == "Token") {
    a.relation = !t.name.empty() && t.name == subject.user ? auth::Relation::kSelf
                                                            : auth::Relation::kOther;
  } else if (kind == "Project") {
    a.project = t.name;
    a.relation = subject.projects.count(t.name) ? auth::Relation::kOwn : auth::Relation::kOther;
  } else if (t.kind->namespaced && !t.all_namespaces) {
    a.project = t.ns;
    a.relation = subject.projects.count(t.ns) ? auth::Relation::kOwn : auth::Relation::kOther;
  }
  auth::Decision d = auth::Authorize(subject, a);
  if (d.allowed) return absl::OkStatus();
  if (a.relation == auth::Relation::kOther && verb == auth::Verb::kGet && !t.name.empty()) {
    Target obj_target = t;
    auto obj = resources_.Get(obj_target);
    if (obj.ok() && SharedIntoAny(*obj, subject.projects)) {
      a.relation = auth::Relation::kSharedIn;
      d = auth::Authorize(subject, a);
      if (d.allowed) return absl::OkStatus();
    }
  }
  return ForbiddenError(d.reason);
}

Response Router::HandleTokens(const Request& request, const Target& t, const std::string& token,
                              const Query& query, Call& call) {
  // The user must exist (404 names it), whoever asks.
  if (auto user = resources_.Get(t); !user.ok()) return ErrorResponse(user.status());
  const std::string& m = request.method;
  if (token.empty()) {
    if (m == "GET") return FromStatusOr(authn_.ListTokens(t.name));
    if (m != "POST") return ErrorResponse(MethodNotAllowedError(m + " is not supported on tokens"));
    if (absl::Status s = CheckJsonBody(request); !s.ok()) return ErrorResponse(s);
    json::object body;
    if (!request.body.empty()) {
      auto parsed = model::ParseObjectJson(request.body);
      if (!parsed.ok()) return ErrorResponse(parsed.status());
      body = *std::move(parsed);
    }
    for (const auto& kv : body)
      if (kv.key() != "description" && kv.key() != "expiresIn" && kv.key() != "apiVersion" &&
          kv.key() != "kind")
        return ErrorResponse(InvalidError("Token", "", {{std::string(kv.key()),
                                                         "unknown field; a token takes description "
                                                         "and expiresIn",
                                                         "FieldValueNotSupported"}}));
    std::optional<std::chrono::seconds> ttl;
    std::string expires = model::GetString(body, "expiresIn");
    if (!expires.empty()) {
      ttl = auth::ParseDuration(expires);
      if (!ttl)
        return ErrorResponse(InvalidError(
            "Token", "", {{"expiresIn", "Invalid value: \"" + expires.substr(0, 64) +
                                           "\": use a duration such as 90d, 12h or 30m"}}));
    }
    auto out = authn_.CreateToken(t.name, model::GetString(body, "description"), ttl);
    if (out.ok()) call.entry.name = t.name + "/" + model::GetString(*out, "metadata.name");
    return FromStatusOr(std::move(out), 201);
  }
  if (m == "DELETE") {
    call.entry.name = t.name + "/" + token;
    if (absl::Status s = authn_.RevokeToken(t.name, token); !s.ok()) return ErrorResponse(s);
    return SuccessStatus("token " + token + " revoked");
  }
  if (m == "GET") {
    auto list = authn_.ListTokens(t.name);
    if (!list.ok()) return ErrorResponse(list.status());
    for (const auto& item : (*list)["items"].as_array())
      if (model::GetString(item.as_object(), "metadata.name") == token)
        return JsonResponse(200, item.as_object());
    return ErrorResponse(NotFoundError("token \"" + token + "\" of user " + t.name + " not found"));
  }
  return ErrorResponse(MethodNotAllowedError(m + " is not supported on a token"));
}

Response Router::HandleApi(const Request& request, const std::vector<std::string>& segs,
                           const Query& query, const auth::Identity& identity, Call& call) {
  const auth::Subject& subject = identity.subject;
  Target t;
  t.caller = subject.user;
  t.caller_is_org_admin = subject.org_role == auth::Role::kOrgAdmin;
  t.caller_session = identity.session;
  t.caller_source = request.remote;
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
  call.route = std::string(t.all_namespaces ? "/" : "/namespaces/{ns}/") + t.kind->plural +
               (t.name.empty() ? "" : "/{name}") +
               (sub.empty() ? "" : "/" + SubresourceLabel(sub));
  call.entry.verb = AuditVerb(m, sub, t.name.empty());
  call.entry.resource = sub == "tokens" ? "tokens" : t.kind->plural;
  call.entry.ns = t.ns;
  call.entry.name = t.name;
  if (sub != "tokens") call.entry.subresource = sub;
  if (IsMutation(m)) {
    if (absl::Status s = CheckWriteOptions(query); !s.ok()) return ErrorResponse(s);
    t.field_manager = FieldManagerOf(request, query);
    t.dry_run = query.count("dryRun") > 0 && query.at("dryRun") == "All";
    if (t.dry_run && !sub.empty())
      return ErrorResponse(BadRequestError("dryRun is supported on create, update, patch and "
                                           "delete, not on " + sub));
  }

  // Authorize before anything else is looked at.
  const bool tokens = t.kind->kind == "User" && sub == "tokens";
  const bool watch = QueryBool(query, "watch");
  StreamAccess access{t, VerbOf(m, sub, t.name.empty() || (tokens && subname.empty()), watch),
                      tokens ? "Token" : t.kind->kind, std::nullopt};
  if (absl::Status s = Authorize(subject, t, access.verb, access.kind); !s.ok())
    return ErrorResponse(s);
  if (tokens) return HandleTokens(request, t, subname, query, call);
  // Lists and watches across projects (and of projects) carry what the caller may see.
  Visibility visible;
  if (!subject.SeesAllProjects() && t.name.empty() &&
      (t.all_namespaces || t.kind->kind == "Project")) {
    std::map<std::string, auth::Role> mine = subject.projects;
    bool projects = t.kind->kind == "Project";
    access.shown.emplace();
    for (const auto& [project, role] : mine) access.shown->insert(project);
    visible = [mine, projects](const json::object& o) {
      return mine.count(model::GetString(o, projects ? "metadata.name" : "metadata.namespace")) > 0;
    };
  }

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
  if (!sub.empty() &&
      (t.kind->kind == "ComputeInstance" || t.kind->kind == "ServiceInstance") &&
      (sub == "deploy" || sub == "destroy" || sub == "cancel" || sub == "upgrade")) {
    if (!subname.empty()) return NotFoundPath(request.target);
    if (m != "POST") return ErrorResponse(MethodNotAllowedError(sub + " is an action: use POST"));
    return InstanceAction(t, sub, query);
  }
  if (!sub.empty() && t.kind->kind == "Run" && sub == "log") {
    if (!subname.empty()) return NotFoundPath(request.target);
    if (m != "GET") return ErrorResponse(MethodNotAllowedError("the log is read-only"));
    return Guarded(RunLog(t, query), request, std::move(access), /*watch=*/false);
  }
  if (!sub.empty()) {
    if (sub != "revisions") return NotFoundPath(request.target);
    if (m != "GET") return ErrorResponse(MethodNotAllowedError("revisions are read-only"));
    if (subname.empty()) return FromStatusOr(resources_.ListRevisions(t));
    return FromStatusOr(resources_.GetRevision(t, subname));
  }

  std::string since, until;
  Query list_query = query;
  if (t.kind->kind == "AuditEvent" && t.name.empty()) {
    // ?user=NAME&object=RESOURCE/[PROJECT/]NAME&since=T&until=T: field selectors plus a time
    // window (RFC 3339, compared as text: every stored time has the same format).
    std::string selector = list_query["fieldSelector"];
    auto add = [&](const std::string& f) { selector += (selector.empty() ? "" : ",") + f; };
    if (auto it = query.find("user"); it != query.end()) add("user=" + it->second);
    if (auto it = query.find("object"); it != query.end()) {
      std::vector<std::string> parts;
      for (size_t b = 0, e; b <= it->second.size(); b = e + 1) {
        e = it->second.find('/', b);
        if (e == std::string::npos) e = it->second.size();
        parts.push_back(it->second.substr(b, e - b));
      }
      if (parts.size() < 2 || parts.size() > 3 || parts[0].empty())
        return ErrorResponse(BadRequestError("object must be RESOURCE/NAME or RESOURCE/PROJECT/NAME"));
      add("objectRef.resource=" + parts[0]);
      if (parts.size() == 3) add("objectRef.namespace=" + parts[1]);
      add("objectRef.name=" + parts.back());
    }
    list_query["fieldSelector"] = selector;
    for (auto [key, out] : {std::pair<const char*, std::string*>{"since", &since}, {"until", &until}})
      if (auto it = query.find(key); it != query.end()) {
        if (!auth::ParseTimestamp(it->second))
          return ErrorResponse(BadRequestError(std::string(key) + " must be an RFC 3339 time such "
                                               "as 2026-11-30T12:00:00Z, not \"" +
                                               it->second.substr(0, 64) + "\""));
        *out = it->second;
      }
    if (list_query["fieldSelector"].empty()) list_query.erase("fieldSelector");
    if (!since.empty() || !until.empty()) {
      Visibility inner = visible;
      visible = [inner, since, until](const json::object& o) {
        std::string time = model::GetString(o, "time");
        return (!inner || inner(o)) && (since.empty() || time >= since) &&
               (until.empty() || time < until);
      };
    }
  }
  if (t.name.empty()) {
    if (m == "GET") {
      if (watch)
        return Guarded(WatchResponse(request, list_query, *t.kind,
                                     resources_.Watch(t, list_query, visible)),
                       request, std::move(access), /*watch=*/true);
      auto list = resources_.List(t, list_query);
      if (list.ok() && visible) {
        json::array& items = (*list)["items"].as_array();
        json::array kept;
        for (auto& item : items)
          if (visible(item.as_object())) kept.push_back(std::move(item));
        items = std::move(kept);
      }
      return ReadResponse(request, query, *t.kind, std::move(list));
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
    if (watch)
      return Guarded(WatchResponse(request, query, *t.kind, resources_.Watch(t, query)), request,
                     std::move(access), /*watch=*/true);
    return ReadResponse(request, query, *t.kind, resources_.Get(t));
  }
  if (m == "PUT") {
    if (absl::Status s = CheckJsonBody(request); !s.ok()) return ErrorResponse(s);
    return FromStatusOr(resources_.Replace(t, request.body));
  }
  if (m == "PATCH") {
    std::string type = MediaType(request.content_type);
    bool apply = type == "application/apply-patch+yaml";
    if (query.count("force") && !apply)
      return ErrorResponse(BadRequestError("force is only allowed for apply requests "
                                           "(application/apply-patch+yaml)"));
    if (apply) {
      if (!query.count("fieldManager") || query.at("fieldManager").empty())
        return ErrorResponse(BadRequestError("fieldManager is required for apply requests"));
      // An apply that creates needs the right to create, as Kubernetes checks it.
      if (auto existing = resources_.Get(t); !existing.ok()) {
        if (!absl::IsNotFound(existing.status())) return ErrorResponse(existing.status());
        if (absl::Status s = Authorize(subject, t, auth::Verb::kCreate, t.kind->kind); !s.ok())
          return ErrorResponse(s);
      }
      bool created = false;
      auto out = resources_.Apply(t, request.body, QueryBool(query, "force"), &created);
      return FromStatusOr(std::move(out), created ? 201 : 200);
    }
    if (type == "application/merge-patch+json")
      return FromStatusOr(resources_.MergePatch(t, request.body));
    if (type == "application/json-patch+json")
      return FromStatusOr(resources_.JsonPatch(t, request.body));
    // Like Kubernetes for custom resources: strategic merge needs Go types' patch
    // strategies, which these kinds do not have. `kubectl patch` sends it by default.
    if (type == "application/strategic-merge-patch+json")
      return ErrorResponse(UnsupportedMediaTypeError(
          "strategic merge patch is not supported for " + t.kind->plural + "." + model::kGroup +
          ": use kubectl patch --type=merge or --type=json (application/merge-patch+json, "
          "application/json-patch+json or application/apply-patch+yaml)"));
    return ErrorResponse(UnsupportedMediaTypeError(
        "the patch type \"" + type +
        "\" is not supported; use application/merge-patch+json, application/json-patch+json "
        "or application/apply-patch+yaml"));
  }
  if (m == "DELETE") {
    bool accepted = false;
    auto out = resources_.Delete(t, request.body, query, &accepted);
    return FromStatusOr(std::move(out), accepted ? 202 : 200);
  }
  return ErrorResponse(MethodNotAllowedError(m + " is not supported on " + t.kind->plural));
}

}  // namespace gantry::api
