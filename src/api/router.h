// Router: maps an HTTP request to the API's handlers and their answer. Plain function of
// Request -> Response (STYLE.md #9); the transport (server.h) never looks inside.
//
// Routes: /healthz /livez /readyz /version /metrics, /openapi/v2,
// /openapi/v3[/apis/paas.gantry.dev/v1], discovery at /api[/v1] and /apis[/paas.gantry.dev[/v1]]
// (all public), /auth/login, /auth/logout, /auth/whoami, and the resources of API.md under
// /apis/paas.gantry.dev/v1 (authenticated, then authorized by auth::Authorize, docs/security.md).
// Every mutation and every refusal of one is written to the audit log. Both the fixed paths
// and the resources API are route tables (FixedRoutes, ApiRoutes): a request is a look-up
// plus a dispatch to a handler.
//
// Thread-safety: Handle may be called concurrently from any thread.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "api/http_types.h"
#include "api/resources.h"
#include "api/static_files.h"
#include "api/stream_guard.h"
#include "auth/audit.h"
#include "auth/authenticator.h"
#include "common/metrics.h"
#include "engine/approvals.h"
#include "engine/engine.h"
#include "engine/lifecycle_controller.h"
#include "engine/run_log.h"

namespace gantry::api {

class Router {
 public:
  // `ready` answers /readyz: OK when the server can serve (store reachable, engine running).
  Router(ResourceService& resources, engine::Engine& engine, engine::RunLogs& logs,
         Metrics& metrics, auth::Authenticator& authn, auth::AuditLog& audit,
         std::function<absl::Status()> ready);

  Response Handle(const Request& request);

  // What one request did, for metrics and the audit log.
  struct Call {
    std::string route = "other";
    bool audit = false;  // a mutation (or an attempt at one)
    // The record was committed with the change it records (Router::Create): Handle skips it.
    bool audit_committed = false;
    auth::AuditEntry entry;
  };

  // Serves the web UI for GETs of paths the API does not own (may be null: 404 Status).
  void SetStaticFiles(const StaticFiles* ui) { ui_ = ui; }
  // The host name workloads' endpoints are published on (--advertise-host). Cookies are not
  // kept apart by port, so a session cookie set for this name would reach every workload:
  // POST /auth/login reached by this name is refused (403). "" (the default): none.
  void SetWorkloadHost(std::string host);
  // The lifecycle controller whose stored warnings (ExpiresSoon, ...) the core events list
  // serves next to the run events (may be null: runs only). Set before serving.
  void SetLifecycleEvents(const engine::LifecycleController* lifecycle) { lifecycle_ = lifecycle; }
  // Single sign-on (gantryd --oidc-issuer; sso_routes.cc): /auth/oidc, /auth/oidc/login and
  // /auth/oidc/callback. Null (the default): those answer that SSO is not configured.
  void SetSso(auth::OidcProvider* sso) { sso_ = sso; }
  // The approval gates deploys and starts of compute instances pass (may be null: none;
  // POST …/approve and …/reject then answer 404). Set before serving.
  void SetApprovals(engine::Approvals* approvals) { approvals_ = approvals; }

 private:
  Response Route(const Request& request, Call& call);
  // The audit entry's code, result (Allowed, Denied or Failed, from the code) and source
  // address, once the answer is decided.
  static void Answered(auth::AuditEntry& e, int code, const std::string& source);
  Response HandleAuth(const Request& request, const std::string& path, Call& call);
  // The resources API (api_routes.cc): resolves the path into a Target, authorizes it,
  // then dispatches by the route table.
  Response HandleApi(const Request& request, const std::vector<std::string>& segments,
                     const Query& query, const auth::Identity& identity, Call& call);
  Response HandleTokens(const Request& request, const Target& t, const std::string& token,
                        const Query& query, Call& call);
  // users/NAME/sessions[/ID]: GET lists (or shows one), DELETE ends one or, on the collection,
  // every one ("log out everywhere"; API tokens stay valid).
  Response HandleSessions(const Request& request, const Target& t, const std::string& session,
                          Call& call);
  // OK, or 403 naming the missing permission. Reads of one object of another project are
  // allowed when it is shared into one of the caller's projects.
  absl::Status Authorize(const auth::Subject& subject, const Target& t, auth::Verb verb,
                         const std::string& kind);
  // POST …/computeinstances|serviceinstances/NAME/deploy|destroy|stop|start|cancel|upgrade
  // (?cascade=true on a compute instance's destroy).
  // `also`: the request's audit record, for the commit that queues a run (Engine::Deploy).
  Response InstanceAction(const Target& t, const std::string& action, const Query& query,
                          store::AlsoCommit* also);
  Response RunLog(const Target& t, const Query& query);
  // approval_routes.cc: a deploy or start that waits for approval (the 202 answer), a cancel
  // or destroy that withdraws a pending request; nullopt: the engine takes the action (a
  // compute instance's deploy or start from *checked, the instance as the gate read it).
  std::optional<Response> ApprovalGate(const Target& t, const std::string& action,
                                       std::optional<model::Instance>* checked);
  // What an open stream needs to stay open: the access that opened it (`verb` on `kind` of
  // `t`, as HandleApi authorized it) and, for a watch filtered to the caller's projects,
  // every project it showed.
  struct StreamAccess {
    Target target;
    auth::Verb verb = auth::Verb::kWatch;
    std::string kind;
    std::optional<std::set<std::string>> shown;
  };
  // Hands `r`'s stream (a watch when `watch`, else a followed log) to the stream guard, which
  // ends it once the request's credentials or `access` fail. Returns `r`.
  Response Guarded(Response r, const Request& request, StreamAccess access, bool watch);
  // OK while `subject` still has `access`, else the 403 that ends its stream.
  absl::Status StillAllowed(const auth::Subject& subject, const StreamAccess& access);
  // GET /api/v1/namespaces/NS/events: the runs of an instance as core Events (kubectl describe).
  Response Events(const auth::Subject& subject, const std::string& ns, const Query& query);

  // One request to the resources API, as HandleApi resolved and authorized it.
  struct ApiCall {
    const Request& request;
    const Query& query;
    const auth::Subject& subject;
    Call& call;
    Target t;
    std::string sub;      // the subresource (deploy, log, revisions, ...), "" for none
    std::string subname;  // what follows it (revisions/N)
    bool watch = false;
    StreamAccess access;  // what an open stream keeps checking
    Visibility visible;   // lists and watches across projects: what the caller may see
    Query list_query;     // the query of a list, the audit events' filters folded in
  };
  using ApiHandler = Response (Router::*)(ApiCall&);
  // A row of the route table: (kind, method, path pattern) -> handler.
  struct ApiRoute {
    // "*", or kind names separated by '|'.
    std::string_view kinds;
    // "*": any method; such a row answers 405 for what the rows above it do not serve.
    std::string_view method;
    // After the resource: "", "{name}", "{name}/revisions/{revision}", "{name}/deploy|destroy";
    // "**": anything.
    std::string_view pattern;
    ApiHandler handler;
  };
  // The table, first match wins; FindApiRoute returns null for a path no row serves (404).
  static const std::vector<ApiRoute>& ApiRoutes();
  static const ApiRoute* FindApiRoute(const ApiCall& c);
  static void LabelApiCall(const std::string& method, const Target& t, const std::string& sub,
                           Call& call);
  // What a list or watch across projects (or of projects) shows the caller; null: all. Fills
  // access.shown with the projects it shows.
  static Visibility VisibleTo(const auth::Subject& subject, const Target& t, StreamAccess& access);
  Response NodeList(ApiCall& c);
  Response NodeGet(ApiCall& c);
  Response NodesReadOnly(ApiCall& c);
  Response Action(ApiCall& c);
  Response ActionNeedsPost(ApiCall& c);
  // POST …/computeinstances/NAME/approve|reject, body {"message": "…"} (approval_routes.cc).
  Response Answer(ApiCall& c);
  Response Log(ApiCall& c);
  Response LogReadOnly(ApiCall& c);
  Response Revisions(ApiCall& c);
  Response Revision(ApiCall& c);
  Response RevisionsReadOnly(ApiCall& c);
  Response ListOrWatch(ApiCall& c);
  // A page of a list (ResourceService::List) with only what `visible` accepts (null: all).
  absl::StatusOr<boost::json::object> VisibleList(const Target& t, const Query& query,
                                                  const Visibility& visible);
  Response Create(ApiCall& c);
  std::optional<store::AlsoCommit> AuditInWrite(ApiCall& c, std::function<int()> code);
  using AuditedCall = std::function<Response(store::AlsoCommit* also)>;
  Response Audited(ApiCall& c, std::function<int()> code, const AuditedCall& act);
  using WriteCall = std::function<absl::StatusOr<boost::json::object>(store::AlsoCommit* also)>;
  Response RecordedWrite(ApiCall& c, int ok_status, const WriteCall& write);
  // The answer to a create or update of c.t: with the warnings of its kind's strategy.
  Response Written(const ApiCall& c, absl::StatusOr<boost::json::object> result,
                   int ok_status = 200);
  Response CollectionNotAllowed(ApiCall& c);
  Response GetOrWatch(ApiCall& c);
  Response Replace(ApiCall& c);
  Response Patch(ApiCall& c);
  Response ServerSideApply(ApiCall& c);
  Response Delete(ApiCall& c);
  Response ObjectNotAllowed(ApiCall& c);
  // GET …/usagereports (api/usage_reports.cc): computed from the usage ledger.
  Response UsageReports(ApiCall& c);
  Response UsageReportsReadOnly(ApiCall& c);
  // Sets gantry_gpu_seconds_total from the ledger before /metrics renders.
  void NoteUsageMetrics();

  // The fixed paths outside the resources API (router.cc).
  struct FixedRoute {
    std::string_view path;
    bool any_method;  // false: GET and HEAD only, other methods go on to the next rules
    Response (Router::*handler)(const Request& request);
  };
  static const std::vector<FixedRoute>& FixedRoutes();
  Response Health(const Request& request);
  Response Ready(const Request& request);
  Response MetricsText(const Request& request);
  Response Version(const Request& request);
  Response OpenApiV2(const Request& request);
  Response OpenApiV3Index(const Request& request);
  Response OpenApiV3Group(const Request& request);
  Response CoreVersions(const Request& request);
  Response CoreResources(const Request& request);
  Response Groups(const Request& request);
  Response Group(const Request& request);
  Response GroupResources(const Request& request);
  // /apis/paas.gantry.dev/v1/...: authenticated (and CSRF-checked for session writes),
  // audited when a mutation, then HandleApi.
  Response ApiRequest(const Request& request, const std::vector<std::string>& segments,
                      const Query& query, Call& call);
  // POST /auth/login, /auth/token, /auth/logout; GET /auth/whoami.
  Response Login(const Request& request, Call& call);
  Response CliToken(const Request& request, Call& call);
  Response WhoAmIOrLogout(const Request& request, const std::string& what, Call& call);
  // GET /auth/oidc[/login|/callback] (sso_routes.cc).
  Response Sso(const Request& request, const std::string& what, const Query& query, Call& call);
  Response SsoStart(const Request& request, const Query& query);
  Response SsoCallback(const Request& request, const Query& query, Call& call);
  Response SsoCliToken(const Request& request, const std::string& user, Call& call);

  ResourceService& resources_;
  engine::Engine& engine_;
  engine::RunLogs& logs_;
  Metrics& metrics_;
  auth::Authenticator& authn_;
  auth::AuditLog& audit_;
  std::function<absl::Status()> ready_;
  const StaticFiles* ui_ = nullptr;
  const engine::LifecycleController* lifecycle_ = nullptr;
  auth::OidcProvider* sso_ = nullptr;
  engine::Approvals* approvals_ = nullptr;
  std::string workload_host_;  // lower case, without [] or port; set before serving
  // Last: destroyed (its thread joined) before what its checks use.
  StreamGuard guard_;
};

}  // namespace gantry::api
