// The resources API of the router: /apis/paas.gantry.dev/v1/... resolved into a Target,
// authorized, then looked up in the route table (method, path pattern) -> handler.
#include <boost/json.hpp>

#include "api/router.h"
#include "api/router_responses.h"
#include "api/status_http.h"
#include "auth/credentials.h"
#include "common/errors.h"
#include "common/utf8.h"
#include "model/codec.h"
#include "model/lifecycle_policy.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

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

// The subresources the API serves; any other name is "other" in a route label.
std::string SubresourceLabel(const std::string& sub) {
  for (const char* known : {"deploy", "destroy", "stop", "start", "cancel", "upgrade", "log",
                            "revisions", "tokens", "sessions", "approve", "reject"})
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

auth::Verb VerbOf(const std::string& method, const std::string& sub, bool collection, bool watch) {
  if (method == "GET" || method == "HEAD")
    return watch ? auth::Verb::kWatch : collection ? auth::Verb::kList : auth::Verb::kGet;
  if (method == "POST")
    return sub.empty() || sub == "tokens" ? auth::Verb::kCreate : auth::Verb::kOperate;
  if (method == "PUT" || method == "PATCH") return auth::Verb::kUpdate;
  return auth::Verb::kDelete;
}

absl::Status NotFoundPathError(const std::string& path) {
  return NotFoundError("the server could not find the requested resource (" + path + ")");
}

// Resolves the segments after /apis/paas.gantry.dev/v1 into t's kind, project and name,
// and the subresource with its own name (revisions/N, tokens/ID).
absl::Status ParseApiPath(const std::vector<std::string>& segs, const std::string& target,
                          Target& t, std::string& sub, std::string& subname) {
  size_t i = 0;
  if (segs[0] == "namespaces") {
    if (segs.size() < 3) {
      if (segs.size() == 2)
        return NotFoundError("projects are served at /apis/paas.gantry.dev/v1/projects/" + segs[1]);
      return NotFoundError("the server could not find the requested resource");
    }
    t.ns = segs[1];
    i = 2;
  } else {
    t.all_namespaces = true;
  }
  t.kind = model::FindKindByPlural(segs[i]);
  if (!t.kind) return NotFoundError("the server doesn't have a resource type \"" + segs[i] + "\"");
  if (!t.kind->namespaced && !t.all_namespaces)
    return NotFoundError(t.kind->plural + " are not in a project; use /apis/" + model::kApiVersion +
                         "/" + t.kind->plural);
  if (!t.kind->namespaced) t.all_namespaces = false;
  if (i + 1 < segs.size()) t.name = segs[i + 1];
  sub = i + 2 < segs.size() ? segs[i + 2] : "";
  subname = i + 3 < segs.size() ? segs[i + 3] : "";
  if (i + 4 < segs.size()) return NotFoundPathError(target);
  if (t.all_namespaces && !t.name.empty())
    return NotFoundError(t.kind->plural + " live in projects; use /apis/" + model::kApiVersion +
                         "/namespaces/PROJECT/" + t.kind->plural + "/" + t.name);
  return absl::OkStatus();
}

// Whether one '/'-separated step of a route pattern matches a path segment: "{...}" any
// segment, else one of the '|'-separated literals.
bool StepMatches(std::string_view step, std::string_view segment) {
  if (step.size() > 1 && step.front() == '{' && step.back() == '}') return true;
  for (size_t b = 0; b <= step.size();) {
    size_t e = std::min(step.find('|', b), step.size());
    if (step.substr(b, e - b) == segment) return true;
    b = e + 1;
  }
  return false;
}

// Whether `pattern` ("", "{name}", "{name}/revisions/{revision}", "**" for anything)
// matches the segments after the resource.
bool PatternMatches(std::string_view pattern, const std::vector<std::string_view>& rest) {
  if (pattern == "**") return true;
  size_t n = 0;
  for (size_t b = 0; b < pattern.size(); ++n) {
    size_t e = std::min(pattern.find('/', b), pattern.size());
    if (n >= rest.size() || !StepMatches(pattern.substr(b, e - b), rest[n])) return false;
    b = e + 1;
  }
  return n == rest.size();
}

// The audit events' own query parameters folded into a list query:
// ?user=NAME&object=RESOURCE/[PROJECT/]NAME as field selectors, since/until (RFC 3339,
// compared as text: every stored time has the same format) as a filter on `visible`.
absl::Status AuditQuery(const Query& query, Query& list_query, Visibility& visible) {
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
      return BadRequestError("object must be RESOURCE/NAME or RESOURCE/PROJECT/NAME");
    add("objectRef.resource=" + parts[0]);
    if (parts.size() == 3) add("objectRef.namespace=" + parts[1]);
    add("objectRef.name=" + parts.back());
  }
  list_query["fieldSelector"] = selector;
  std::string since, until;
  for (auto [key, out] : {std::pair<const char*, std::string*>{"since", &since}, {"until", &until}})
    if (auto it = query.find(key); it != query.end()) {
      if (!auth::ParseTimestamp(it->second))
        return BadRequestError(std::string(key) +
                               " must be an RFC 3339 time such "
                               "as 2026-11-30T12:00:00Z, not \"" +
                               it->second.substr(0, 64) + "\"");
      *out = it->second;
    }
  if (list_query["fieldSelector"].empty()) list_query.erase("fieldSelector");
  if (since.empty() && until.empty()) return absl::OkStatus();
  Visibility inner = visible;
  visible = [inner, since, until](const json::object& o) {
    std::string time = model::GetString(o, "time");
    return (!inner || inner(o)) && (since.empty() || time >= since) &&
           (until.empty() || time < until);
  };
  return absl::OkStatus();
}

}  // namespace

const std::vector<Router::ApiRoute>& Router::ApiRoutes() {
  // First match wins. A row with method "*" answers the methods the rows above it for the
  // same path do not serve (405); a path no row matches is 404.
  static const std::vector<ApiRoute> kRoutes = {
      {"Node", "GET", "", &Router::NodeList},
      {"Node", "GET", "{name}", &Router::NodeGet},
      {"Node", "*", "**", &Router::NodesReadOnly},
      {"UsageReport", "GET", "", &Router::UsageReports},
      {"UsageReport", "*", "**", &Router::UsageReportsReadOnly},
      {"ComputeInstance|ServiceInstance", "POST", "{name}/deploy|destroy|stop|start|cancel|upgrade",
       &Router::Action},
      {"ComputeInstance|ServiceInstance", "*", "{name}/deploy|destroy|stop|start|cancel|upgrade",
       &Router::ActionNeedsPost},
      {"ComputeInstance", "POST", "{name}/approve|reject", &Router::Answer},
      {"ComputeInstance", "*", "{name}/approve|reject", &Router::ActionNeedsPost},
      {"Run", "GET", "{name}/log", &Router::Log},
      {"Run", "*", "{name}/log", &Router::LogReadOnly},
      {"*", "GET", "{name}/revisions", &Router::Revisions},
      {"*", "GET", "{name}/revisions/{revision}", &Router::Revision},
      {"*", "*", "{name}/revisions", &Router::RevisionsReadOnly},
      {"*", "*", "{name}/revisions/{revision}", &Router::RevisionsReadOnly},
      {"*", "GET", "", &Router::ListOrWatch},
      {"*", "POST", "", &Router::Create},
      {"*", "*", "", &Router::CollectionNotAllowed},
      {"*", "GET", "{name}", &Router::GetOrWatch},
      {"*", "PUT", "{name}", &Router::Replace},
      {"*", "PATCH", "{name}", &Router::Patch},
      {"*", "DELETE", "{name}", &Router::Delete},
      {"*", "*", "{name}", &Router::ObjectNotAllowed},
  };
  return kRoutes;
}

const Router::ApiRoute* Router::FindApiRoute(const ApiCall& c) {
  std::vector<std::string_view> rest;
  for (const std::string* part : {&c.t.name, &c.sub, &c.subname})
    if (!part->empty()) rest.push_back(*part);
  for (const ApiRoute& r : ApiRoutes()) {
    if (r.kinds != "*" && !StepMatches(r.kinds, c.t.kind->kind)) continue;
    if (r.method != "*" && r.method != c.request.method) continue;
    if (PatternMatches(r.pattern, rest)) return &r;
  }
  return nullptr;
}

// Names the request in metrics (a template, never text from the request) and the audit log.
void Router::LabelApiCall(const std::string& method, const Target& t, const std::string& sub,
                          Call& call) {
  call.route = std::string(t.all_namespaces ? "/" : "/namespaces/{ns}/") + t.kind->plural +
               (t.name.empty() ? "" : "/{name}") + (sub.empty() ? "" : "/" + SubresourceLabel(sub));
  call.entry.verb = AuditVerb(method, sub, t.name.empty());
  const bool credential = sub == "tokens" || sub == "sessions";
  call.entry.resource = credential ? sub : t.kind->plural;
  call.entry.ns = t.ns;
  call.entry.name = t.name;
  if (!credential) call.entry.subresource = sub;
}

Visibility Router::VisibleTo(const auth::Subject& subject, const Target& t, StreamAccess& access) {
  // Lists and watches across projects (and of projects) carry what the caller may see.
  if (subject.SeesAllProjects() || !t.name.empty() ||
      !(t.all_namespaces || t.kind->kind == "Project"))
    return nullptr;
  std::map<std::string, auth::Role> mine = subject.projects;
  bool projects = t.kind->kind == "Project";
  access.shown.emplace();
  for (const auto& [project, role] : mine) access.shown->insert(project);
  return [mine, projects](const json::object& o) {
    return mine.count(model::GetString(o, projects ? "metadata.name" : "metadata.namespace")) > 0;
  };
}

Response Router::HandleApi(const Request& request, const std::vector<std::string>& segs,
                           const Query& query, const auth::Identity& identity, Call& call) {
  const auth::Subject& subject = identity.subject;
  Target t;
  t.caller = subject.user;
  t.caller_is_org_admin = subject.org_role == auth::Role::kOrgAdmin;
  t.caller_session = identity.session;
  t.caller_source = request.remote;
  std::string sub, subname;
  if (absl::Status s = ParseApiPath(segs, request.target, t, sub, subname); !s.ok())
    return ErrorResponse(s);
  const std::string& m = request.method;
  LabelApiCall(m, t, sub, call);
  if (IsMutation(m)) {
    if (absl::Status s = CheckWriteOptions(query); !s.ok()) return ErrorResponse(s);
    t.field_manager = FieldManagerOf(request, query);
    t.dry_run = query.count("dryRun") > 0 && query.at("dryRun") == "All";
    if (t.dry_run && !sub.empty())
      return ErrorResponse(BadRequestError(
          "dryRun is supported on create, update, patch and delete, not on " + sub));
  }
  // Authorize before anything else is looked at.
  const bool tokens = t.kind->kind == "User" && sub == "tokens";
  const bool sessions = t.kind->kind == "User" && sub == "sessions";
  const bool watch = QueryBool(query, "watch");
  StreamAccess access{
      t, VerbOf(m, sub, t.name.empty() || ((tokens || sessions) && subname.empty()), watch),
      tokens     ? "Token"
      : sessions ? "Session"
                 : t.kind->kind,
      std::nullopt};
  if (absl::Status s = Authorize(subject, t, access.verb, access.kind); !s.ok())
    return ErrorResponse(s);
  if (tokens) return HandleTokens(request, t, subname, query, call);
  if (sessions) return HandleSessions(request, t, subname, call);
  Visibility visible = VisibleTo(subject, t, access);
  ApiCall c{request,
            query,
            subject,
            call,
            std::move(t),
            std::move(sub),
            std::move(subname),
            watch,
            std::move(access),
            std::move(visible),
            query};
  if (c.t.kind->kind == "AuditEvent" && c.t.name.empty())
    if (absl::Status s = AuditQuery(query, c.list_query, c.visible); !s.ok())
      return ErrorResponse(s);
  const ApiRoute* route = FindApiRoute(c);
  if (!route) return NotFoundPath(request.target);
  return (this->*(route->handler))(c);
}

Response Router::ApiRequest(const Request& request, const std::vector<std::string>& segments,
                            const Query& query, Call& call) {
  if (IsMutation(request.method)) {
    // Recorded whatever happens next, refusals included.
    call.audit = true;
    call.entry.verb = AuditVerb(request.method, "", false);
    call.entry.resource =
        segments[3] == "namespaces" && segments.size() > 5 ? segments[5] : segments[3];
  }
  auto identity = authn_.Authenticate(request.authorization, request.cookie);
  if (!identity.ok()) return ErrorResponse(identity.status());
  call.entry.user = identity->subject.user;
  call.entry.authenticated = true;
  if (identity->via_session && IsMutation(request.method) && !CsrfMatches(request, *identity))
    return ErrorResponse(ForbiddenError(
        "a change made with a session cookie needs the X-Gantry-CSRF header with the "
        "csrfToken returned by /auth/login or /auth/whoami"));
  return HandleApi(request, std::vector<std::string>(segments.begin() + 3, segments.end()), query,
                   *identity, call);
}

// --- The handlers of the route table.

Response Router::NodeList(ApiCall& c) {
  // Computed from this host's inventory, not stored.
  json::object list{{"apiVersion", model::kApiVersion},
                    {"kind", "NodeList"},
                    {"metadata", json::object{}},
                    {"items", json::array{engine_.NodeView()}}};
  return ReadResponse(c.request, c.query, *c.t.kind, std::move(list));
}

Response Router::NodeGet(ApiCall& c) {
  json::object node = engine_.NodeView();
  if (model::GetString(node, "metadata.name") != c.t.name)
    return ErrorResponse(NotFoundError("nodes.paas.gantry.dev \"" + c.t.name + "\" not found"));
  return ReadResponse(c.request, c.query, *c.t.kind, node);
}

Response Router::NodesReadOnly(ApiCall&) {
  return ErrorResponse(MethodNotAllowedError("nodes are read-only"));
}

// A deploy, destroy, stop or start records itself in the commit that queues its run; any
// other answer (a refusal, an approval asked for, a cancel) is recorded by Handle.
Response Router::Action(ApiCall& c) {
  return Audited(
      c, [] { return 202; },
      [&](store::AlsoCommit* also) { return InstanceAction(c.t, c.sub, c.query, also); });
}

Response Router::ActionNeedsPost(ApiCall& c) {
  return ErrorResponse(MethodNotAllowedError(c.sub + " is an action: use POST"));
}

Response Router::Log(ApiCall& c) {
  return Guarded(RunLog(c.t, c.query), c.request, std::move(c.access), /*watch=*/false);
}

Response Router::LogReadOnly(ApiCall&) {
  return ErrorResponse(MethodNotAllowedError("the log is read-only"));
}

Response Router::Revisions(ApiCall& c) { return FromStatusOr(resources_.ListRevisions(c.t)); }

Response Router::Revision(ApiCall& c) {
  return FromStatusOr(resources_.GetRevision(c.t, c.subname));
}

Response Router::RevisionsReadOnly(ApiCall&) {
  return ErrorResponse(MethodNotAllowedError("revisions are read-only"));
}

Response Router::ListOrWatch(ApiCall& c) {
  if (c.watch)
    return Guarded(WatchResponse(c.request, c.list_query, *c.t.kind,
                                 resources_.Watch(c.t, c.list_query, c.visible)),
                   c.request, std::move(c.access), /*watch=*/true);
  // A list without a limit is read a page at a time and sent as it is read (StreamedList).
  auto limit = QueryNonNegative(c.list_query, "limit");
  const bool stream = c.request.method == "GET" && limit.ok() && *limit == 0;
  Query query = c.list_query;
  if (stream) query["limit"] = std::to_string(resources_.PageSize());
  auto list = VisibleList(c.t, query, c.visible);
  if (!stream || !list.ok() || !list->at("metadata").as_object().contains("continue"))
    return ReadResponse(c.request, c.query, *c.t.kind, std::move(list));
  // The later pages: by their continue token, without the version options the first page
  // was checked against (the token pins the first page's resourceVersion).
  query.erase("resourceVersion");
  query.erase("resourceVersionMatch");
  auto next = [this, t = c.t, query, visible = c.visible](const std::string& token) mutable {
    query["continue"] = token;
    return VisibleList(t, query, visible);
  };
  return StreamedList(c.request, c.query, *c.t.kind, *std::move(list), std::move(next));
}

absl::StatusOr<json::object> Router::VisibleList(const Target& t, const Query& query,
                                                 const Visibility& visible) {
  auto list = resources_.List(t, query);
  if (list.ok() && visible) {
    json::array& items = (*list)["items"].as_array();
    json::array kept;
    for (auto& item : items)
      if (visible(item.as_object())) kept.push_back(std::move(item));
    items = std::move(kept);
  }
  return list;
}

Response Router::Create(ApiCall& c) {
  if (absl::Status s = CheckJsonBody(c.request); !s.ok()) return ErrorResponse(s);
  if (c.t.all_namespaces && c.t.kind->namespaced)
    return ErrorResponse(BadRequestError("create " + c.t.kind->plural +
                                         " in a project: POST /apis/" + model::kApiVersion +
                                         "/namespaces/PROJECT/" + c.t.kind->plural));
  return RecordedWrite(c, 201, [&](store::AlsoCommit* also) {
    return resources_.Create(c.t, c.request.body, also);
  });
}

// The audit record of a successful write, for the write's own transaction (one commit holds
// both), with the HTTP code `code` gives at commit time; nullopt when the request is not
// recorded so (a dry run, an unauthenticated call). A refused, failed or no-op write is
// recorded by Handle afterwards.
std::optional<store::AlsoCommit> Router::AuditInWrite(ApiCall& c, std::function<int()> code) {
  if (!c.call.audit || !c.call.entry.authenticated || c.t.dry_run) return std::nullopt;
  return store::AlsoCommit{[this, &c, code = std::move(code)](const json::object& written) {
    auth::AuditEntry e = c.call.entry;
    e.name = model::GetString(written, "metadata.name");
    Answered(e, code(), c.request.remote);
    return audit_.AsWrite(e);
  }};
}

// `act`'s answer, `act` given the request's audit record (AuditInWrite; null when there is
// none) for the commit it makes; Handle records the request afterwards only when no commit
// held the record.
Response Router::Audited(ApiCall& c, std::function<int()> code, const AuditedCall& act) {
  std::optional<store::AlsoCommit> record = AuditInWrite(c, std::move(code));
  Response r = act(record ? &*record : nullptr);
  c.call.audit_committed = record && record->committed;
  return r;
}

// A create's or an update's answer (`ok_status` on success), its audit record committed with
// it when the write committed.
Response Router::RecordedWrite(ApiCall& c, int ok_status, const WriteCall& write) {
  return Audited(
      c, [ok_status] { return ok_status; },
      [&](store::AlsoCommit* also) { return Written(c, write(also), ok_status); });
}

Response Router::Written(const ApiCall& c, absl::StatusOr<json::object> result, int ok_status) {
  std::vector<std::string> warnings;
  if (result.ok()) warnings = resources_.WarningsOnWrite(c.t, *result);
  return WriteResponse(std::move(result), ok_status, warnings);
}

Response Router::CollectionNotAllowed(ApiCall& c) {
  return ErrorResponse(
      MethodNotAllowedError(c.request.method + " is not supported on a collection"));
}

Response Router::GetOrWatch(ApiCall& c) {
  if (c.watch)
    return Guarded(WatchResponse(c.request, c.query, *c.t.kind, resources_.Watch(c.t, c.query)),
                   c.request, std::move(c.access), /*watch=*/true);
  return ReadTextResponse(c.request, c.query, *c.t.kind, resources_.GetText(c.t));
}

Response Router::Replace(ApiCall& c) {
  if (absl::Status s = CheckJsonBody(c.request); !s.ok()) return ErrorResponse(s);
  return RecordedWrite(c, 200, [&](store::AlsoCommit* also) {
    return resources_.Replace(c.t, c.request.body, also);
  });
}

Response Router::Patch(ApiCall& c) {
  std::string type = MediaType(c.request.content_type);
  bool apply = type == "application/apply-patch+yaml";
  if (c.query.count("force") && !apply)
    return ErrorResponse(
        BadRequestError("force is only allowed for apply requests (application/apply-patch+yaml)"));
  if (apply) return ServerSideApply(c);
  if (type == "application/merge-patch+json")
    return RecordedWrite(c, 200, [&](store::AlsoCommit* also) {
      return resources_.MergePatch(c.t, c.request.body, also);
    });
  if (type == "application/json-patch+json")
    return RecordedWrite(c, 200, [&](store::AlsoCommit* also) {
      return resources_.JsonPatch(c.t, c.request.body, also);
    });
  // Like Kubernetes for custom resources: strategic merge needs Go types' patch
  // strategies, which these kinds do not have. `kubectl patch` sends it by default.
  if (type == "application/strategic-merge-patch+json")
    return ErrorResponse(UnsupportedMediaTypeError(
        "strategic merge patch is not supported for " + c.t.kind->plural + "." + model::kGroup +
        ": use kubectl patch --type=merge or --type=json (application/merge-patch+json, "
        "application/json-patch+json or application/apply-patch+yaml)"));
  return ErrorResponse(UnsupportedMediaTypeError(
      "the patch type \"" + type +
      "\" is not supported; use application/merge-patch+json, application/json-patch+json "
      "or application/apply-patch+yaml"));
}

Response Router::ServerSideApply(ApiCall& c) {
  if (!c.query.count("fieldManager") || c.query.at("fieldManager").empty())
    return ErrorResponse(BadRequestError("fieldManager is required for apply requests"));
  // An apply that creates needs the right to create, as Kubernetes checks it.
  if (auto existing = resources_.Get(c.t); !existing.ok()) {
    if (!absl::IsNotFound(existing.status())) return ErrorResponse(existing.status());
    if (absl::Status s = Authorize(c.subject, c.t, auth::Verb::kCreate, c.t.kind->kind); !s.ok())
      return ErrorResponse(s);
  }
  // Whether the apply creates is known before it commits, so its record's code is read then.
  bool created = false;
  return Audited(
      c, [&created] { return created ? 201 : 200; },
      [&](store::AlsoCommit* also) {
        auto out =
            resources_.Apply(c.t, c.request.body, QueryBool(c.query, "force"), &created, also);
        return Written(c, std::move(out), created ? 201 : 200);
      });
}

Response Router::Delete(ApiCall& c) {
  bool accepted = false;
  // A compute instance's delete is the engine's (202): its record is written afterwards.
  return Audited(
      c, [] { return 200; },
      [&](store::AlsoCommit* also) {
        auto out = resources_.Delete(c.t, c.request.body, c.query, &accepted, also);
        return FromStatusOr(std::move(out), accepted ? 202 : 200);
      });
}

Response Router::ObjectNotAllowed(ApiCall& c) {
  return ErrorResponse(
      MethodNotAllowedError(c.request.method + " is not supported on " + c.t.kind->plural));
}

Response Router::InstanceAction(const Target& t, const std::string& action, const Query& query,
                                store::AlsoCommit* also) {
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
  std::optional<model::Instance> checked;  // as the approval gate read it
  if (auto gated = ApprovalGate(t, action, &checked)) return *std::move(gated);
  absl::StatusOr<json::object> out;
  if (action == "deploy")
    out = engine_.Deploy(kind, t.ns, t.name, also, std::move(checked));
  else if (action == "destroy")
    out = engine_.Destroy(kind, t.ns, t.name, cascade, "", also);
  else if (action == "stop")
    out = engine_.Stop(kind, t.ns, t.name, "StoppedByUser", also);
  else if (action == "start")
    out = engine_.Start(kind, t.ns, t.name, "", also, std::move(checked));
  else if (action == "cancel")
    out = engine_.Cancel(kind, t.ns, t.name);
  else
    out = resources_.Upgrade(t);
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
  if (QueryBool(query, "follow")) {
    Response r;
    r.content_type = "text/plain; charset=utf-8";
    r.stream = std::make_shared<LineStream>();
    logs_.Follow(uid, active, r.stream);
    return r;
  }
  return Text(200, logs_.Read(uid));
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
        return ErrorResponse(InvalidError("Token", "",
                                          {{std::string(kv.key()),
                                            "unknown field; a token takes description "
                                            "and expiresIn",
                                            "FieldValueNotSupported"}}));
    std::optional<std::chrono::seconds> ttl;
    std::string expires = model::GetString(body, "expiresIn");
    if (!expires.empty()) {
      auto parsed = model::ParseDuration(expires);
      if (!parsed.ok())
        return ErrorResponse(InvalidError(
            "Token", "",
            {{"expiresIn", "Invalid value: " + std::string(parsed.status().message())}}));
      ttl = *parsed;
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

Response Router::HandleSessions(const Request& request, const Target& t, const std::string& session,
                                Call& call) {
  // The user must exist (404 names it), whoever asks.
  if (auto user = resources_.Get(t); !user.ok()) return ErrorResponse(user.status());
  const std::string& m = request.method;
  // The caller's own session is marked; an org-admin looking at another user's has none there.
  const std::string current = t.caller == t.name ? t.caller_session : "";
  if (m == "GET") {
    auto list = authn_.ListSessions(t.name, current);
    if (!list.ok() || session.empty()) return FromStatusOr(std::move(list));
    for (const auto& item : (*list)["items"].as_array())
      if (model::GetString(item.as_object(), "metadata.name") == session)
        return JsonResponse(200, item.as_object());
    return ErrorResponse(
        NotFoundError("session \"" + session + "\" of user " + t.name + " not found"));
  }
  if (m != "DELETE")
    return ErrorResponse(MethodNotAllowedError(
        m +
        " is not supported on sessions: GET lists them, DELETE ends one or (on the "
        "collection) every one; a session is opened by POST /auth/login"));
  if (!session.empty()) {
    call.entry.name = t.name + "/" + session;
    if (absl::Status s = authn_.EndSession(t.name, session); !s.ok()) return ErrorResponse(s);
    return SuccessStatus("session " + session + " ended");
  }
  call.entry.verb = "deletecollection";
  auto ended = authn_.EndSessions(t.name);
  if (!ended.ok()) return ErrorResponse(ended.status());
  return SuccessStatus(std::to_string(*ended) + " session" + (*ended == 1 ? "" : "s") +
                       " of user " + t.name + " ended; API tokens keep working");
}

}  // namespace gantry::api
