#include "api/router.h"

#include <boost/url.hpp>

#include "absl/strings/ascii.h"
#include "api/openapi.h"
#include "api/router_responses.h"
#include "api/status_http.h"
#include "api/table.h"
#include "auth/credentials.h"
#include "common/clock.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "model/codec.h"
#include "model/lifecycle_policy.h"
#include "model/schema.h"
#include "model/sealed_fields.h"
#include "model/validation.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

// How often open streams check again that their caller still has access (stream_guard.h).
constexpr std::chrono::milliseconds kStreamRecheckPeriod{1000};

// The method as a metric label: one of a fixed set, so junk methods add no series.
std::string MethodLabel(const std::string& method) {
  for (const char* known : {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
    if (method == known) return known;
  return "other";
}

bool SharedIntoAny(const json::object& obj, const std::map<std::string, auth::Role>& projects) {
  for (const auto& [project, role] : projects)
    if (model::SharedWith(obj, project)) return true;
  return false;
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

// A run of an instance as a core Event (kubectl describe shows an instance's runs so).
json::object RunEvent(const json::object& run, const std::string& ns, const std::string& kind,
                      const std::string& uid) {
  std::string phase = model::GetString(run, "status.phase");
  std::string action = model::GetString(run, "spec.action");
  std::string name = model::GetString(run, "metadata.name");
  std::string message = model::GetString(run, "status.message");
  if (message.empty()) message = action + " run " + name + " " + absl::AsciiStrToLower(phase);
  std::string reason =
      std::string(1, static_cast<char>(std::toupper(action.empty() ? 'r' : action[0]))) +
      (action.empty() ? "un" : action.substr(1)) + phase;
  std::string first = model::GetString(run, "status.startTime",
                                       model::GetString(run, "metadata.creationTimestamp"));
  std::string last = model::GetString(run, "status.completionTime", first);
  return json::object{
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata",
       json::object{{"name", name + ".run"},
                    {"namespace", ns},
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
      {"reportingComponent", "gantryd"}};
}

}  // namespace

Router::Router(ResourceService& resources, engine::Engine& engine, engine::RunLogs& logs,
               Metrics& metrics, auth::Authenticator& authn, auth::AuditLog& audit,
               std::function<absl::Status()> ready)
    : resources_(resources),
      engine_(engine),
      logs_(logs),
      metrics_(metrics),
      authn_(authn),
      audit_(audit),
      ready_(std::move(ready)),
      guard_(authn, kStreamRecheckPeriod) {
  metrics_.Describe("gantry_http_requests_total", "counter",
                    "HTTP requests by route, method and code.");
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
  if (call.audit && !call.audit_committed) {
    auth::AuditEntry& e = call.entry;
    Answered(e, response.status, request.remote);
    const bool ok = e.result == "Allowed";
    if (!ok || e.name.empty()) {
      boost::system::error_code ec;
      json::value body = json::parse(response.body, ec);
      if (!ec && body.is_object()) {
        if (!ok)
          e.message = model::GetString(body.as_object(), "message");
        else if (response.stream == nullptr)
          e.name = model::GetString(body.as_object(), "metadata.name");
      }
    }
    audit_.Record(e);
  }
  return response;
}

void Router::Answered(auth::AuditEntry& e, int code, const std::string& source) {
  e.code = code;
  e.result = code >= 200 && code < 300                   ? "Allowed"
             : code == 401 || code == 403 || code == 429 ? "Denied"
                                                         : "Failed";
  e.source = source;
}

Response Router::Events(const auth::Subject& subject, const std::string& ns, const Query& query) {
  // kubectl describe asks for the events of the object it shows
  // (fieldSelector=involvedObject.name=N,involvedObject.namespace=NS,involvedObject.kind=K,
  // involvedObject.uid=U). Gantry's events are its runs (one Event per run of an instance)
  // and the lifecycle controller's stored warnings; both are read with the project's runs.
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
      return ErrorResponse(
          BadRequestError("fieldSelector terms must be FIELD=VALUE, not \"" + term + "\""));
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
  std::string kind =
      want.count("involvedObject.kind") ? want["involvedObject.kind"] : "ComputeInstance";
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
      items.push_back(RunEvent(run, ns, kind, uid));
    }
  }
  // The Events gantryd stores (engine/stored_events.h: lifecycle warnings, preemptions, budget
  // warnings on the Project): of the kind asked for, else of every kind.
  if (lifecycle_) {
    std::string name = want.count("involvedObject.name") ? want["involvedObject.name"] : "";
    auto stored = lifecycle_->StoredEvents(
        ns, want.count("involvedObject.kind") ? want["involvedObject.kind"] : "", name);
    if (!stored.ok()) return ErrorResponse(stored.status());
    for (json::object& e : *stored) {
      if (want.count("involvedObject.uid") && !want["involvedObject.uid"].empty() &&
          want["involvedObject.uid"] != model::GetString(e, "involvedObject.uid"))
        continue;
      items.push_back(std::move(e));
    }
  }
  return JsonResponse(200, json::object{{"apiVersion", "v1"},
                                        {"kind", "EventList"},
                                        {"metadata", json::object{}},
                                        {"items", std::move(items)}});
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
    if (watch) stream->Push(ErrorLine(why));
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

namespace {

// The path's segments (empty ones dropped: "//" and a trailing slash are tolerated) and
// query parameters; 400 for a target that is not a URL path or has "." or ".." in it.
absl::Status ParseTarget(const std::string& target, std::vector<std::string>& segments,
                         Query& query) {
  auto parsed = boost::urls::parse_origin_form(target);
  if (!parsed) return BadRequestError("the request path is not a valid URL path");
  for (auto seg : parsed->segments()) {
    std::string s(seg);
    if (s.empty()) continue;
    if (s == "." || s == ".." || s.find('/') != std::string::npos ||
        s.find('\0') != std::string::npos)
      return BadRequestError("the request path contains an invalid segment \"" + s + "\"");
    segments.push_back(std::move(s));
  }
  for (auto p : parsed->params()) query[std::string(p.key)] = std::string(p.value);
  return absl::OkStatus();
}

}  // namespace

const std::vector<Router::FixedRoute>& Router::FixedRoutes() {
  // Each is its own route label. A GET-only row lets other methods go on to the rules below
  // (and end in 404); an any-method row answers them itself (405).
  static const std::vector<FixedRoute> kRoutes = {
      {"/healthz", true, &Router::Health},
      {"/livez", true, &Router::Health},
      {"/readyz", true, &Router::Ready},
      {"/metrics", false, &Router::MetricsText},
      {"/version", false, &Router::Version},
      {"/openapi/v2", false, &Router::OpenApiV2},
      {"/openapi/v3", false, &Router::OpenApiV3Index},
      {"/openapi/v3/apis/paas.gantry.dev/v1", false, &Router::OpenApiV3Group},
      {"/api", false, &Router::CoreVersions},
      {"/api/v1", false, &Router::CoreResources},
      {"/apis", false, &Router::Groups},
      {"/apis/paas.gantry.dev", false, &Router::Group},
      {"/apis/paas.gantry.dev/v1", false, &Router::GroupResources},
  };
  return kRoutes;
}

Response Router::Route(const Request& request, Call& call) {
  std::vector<std::string> segments;
  Query query;
  if (absl::Status s = ParseTarget(request.target, segments, query); !s.ok())
    return ErrorResponse(s);
  std::string path = "/";
  for (size_t i = 0; i < segments.size(); ++i) path += (i ? "/" : "") + segments[i];

  const bool get = request.method == "GET" || request.method == "HEAD";
  for (const FixedRoute& r : FixedRoutes()) {
    if (r.path != path) continue;
    call.route = std::string(r.path);
    if (r.any_method || get) return (this->*(r.handler))(request);
    break;
  }
  if (segments.size() == 5 && segments[0] == "api" && segments[1] == "v1" &&
      segments[2] == "namespaces" && segments[4] == "events") {
    call.route = "/api/v1/namespaces/{ns}/events";
    if (!get) return ErrorResponse(MethodNotAllowedError("events are read-only"));
    auto identity = authn_.Authenticate(request.authorization, request.cookie);
    if (!identity.ok()) return ErrorResponse(identity.status());
    return Events(identity->subject, segments[3], query);
  }
  if (segments.size() >= 2 && segments.size() <= 3 && segments[0] == "auth" &&
      segments[1] == "oidc") {
    call.route = "/auth/oidc";
    return Sso(request, segments.size() == 3 ? segments[2] : "", query, call);
  }
  if (segments.size() == 2 && segments[0] == "auth") {
    const std::string& what = segments[1];
    if (what == "login" || what == "token" || what == "logout" || what == "whoami")
      call.route = "/auth/" + what;
    if (what == "login") return Login(request, call);
    if (what == "token") return CliToken(request, call);
    if (what != "logout" && what != "whoami") return NotFoundPath("/auth/" + what);
    return WhoAmIOrLogout(request, what, call);
  }
  if (segments.size() > 3 && segments[0] == "apis" && segments[1] == model::kGroup &&
      segments[2] == model::kVersion)
    return ApiRequest(request, segments, query, call);
  if (ui_ && get) {
    call.route = "/ui";
    return ui_->Serve(path, request.accept);
  }
  return NotFoundPath(path);
}

Response Router::Health(const Request& request) {
  if (request.method != "GET" && request.method != "HEAD")
    return ErrorResponse(MethodNotAllowedError("use GET"));
  return Text(200, "ok");
}

Response Router::Ready(const Request& request) {
  if (request.method != "GET" && request.method != "HEAD")
    return ErrorResponse(MethodNotAllowedError("use GET"));
  absl::Status s = ready_ ? ready_() : absl::OkStatus();
  return s.ok() ? Text(200, "ok") : Text(503, "not ready: " + std::string(s.message()));
}

Response Router::MetricsText(const Request&) {
  metrics_.Set("gantry_run_queue_depth", {}, static_cast<double>(engine_.QueueDepth()));
  NoteUsageMetrics();
  Response r = Text(200, metrics_.Render());
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  return r;
}

Response Router::Version(const Request&) {
  return JsonResponse(200, json::object{{"major", "1"},
                                        {"minor", "0"},
                                        {"gitVersion", "v0.1.0+gantry"},
                                        {"platform", "linux/amd64"}});
}

Response Router::OpenApiV2(const Request& request) {
  // Older kubectl (1.27) needs this document to apply; it asks for protobuf only. An
  // empty message is the empty Document: kubectl then finds no schema for our kinds,
  // skips client-side validation and leaves it to the server (which always validates).
  // Schemas are served by /openapi/v3.
  if (request.accept.find("protobuf") != std::string::npos) {
    Response r;
    r.content_type = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
    return r;
  }
  return JsonResponse(200,
                      json::object{{"swagger", "2.0"},
                                   {"info", json::object{{"title", "Gantry"}, {"version", "v1"}}},
                                   {"paths", json::object{}}});
}

Response Router::OpenApiV3Index(const Request&) { return JsonResponse(200, OpenApiIndex()); }

Response Router::OpenApiV3Group(const Request&) {
  return JsonResponse(200, OpenApiGroupDocument(resources_.Drivers()));
}

// Core-group discovery: kubectl reads it first. Of the core resources, events are served.
Response Router::CoreVersions(const Request&) {
  return JsonResponse(200, json::object{{"kind", "APIVersions"},
                                        {"versions", json::array{"v1"}},
                                        {"serverAddressByClientCIDRs", json::array{}}});
}

Response Router::CoreResources(const Request&) {
  json::object events{
      {"name", "events"}, {"singularName", "event"},      {"namespaced", true},
      {"kind", "Event"},  {"verbs", json::array{"list"}}, {"shortNames", json::array{"ev"}}};
  return JsonResponse(200, json::object{{"kind", "APIResourceList"},
                                        {"apiVersion", "v1"},
                                        {"groupVersion", "v1"},
                                        {"resources", json::array{std::move(events)}}});
}

Response Router::Groups(const Request&) { return JsonResponse(200, ApiGroupList()); }
Response Router::Group(const Request&) { return JsonResponse(200, ApiGroup()); }
Response Router::GroupResources(const Request&) { return JsonResponse(200, ApiResourceList()); }

absl::Status Router::Authorize(const auth::Subject& subject, const Target& t, auth::Verb verb,
                               const std::string& kind) {
  auth::Access a{verb, kind, "", auth::Relation::kOwn};
  if (kind == "User" || kind == "Token" || kind == "Session") {
    a.relation =
        !t.name.empty() && t.name == subject.user ? auth::Relation::kSelf : auth::Relation::kOther;
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

Response Router::Login(const Request& request, Call& call) {
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
  r.headers.push_back({"Set-Cookie", std::string(auth::kSessionCookie) + "=" + login->cookie_value +
                                         "; Path=/; HttpOnly; SameSite=Strict"});
  r.headers.push_back({"Cache-Control", "no-store"});
  return r;
}

Response Router::CliToken(const Request& request, Call& call) {
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
    auto parsed = model::ParseDuration(e);
    if (!parsed.ok())
      return ErrorResponse(BadRequestError("expiresIn " + std::string(parsed.status().message())));
    ttl = *parsed;
  }
  auto out = authn_.CreateToken(user, model::GetString(*body, "description"), ttl);
  if (out.ok()) call.entry.name = user + "/" + model::GetString(*out, "metadata.name");
  return FromStatusOr(std::move(out), 201);
}

Response Router::WhoAmIOrLogout(const Request& request, const std::string& what, Call& call) {
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

}  // namespace gantry::api
