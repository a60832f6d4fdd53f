// The approval gates of the router (engine/approvals.h, docs/approvals.md): the gate in front
// of POST …/deploy and …/start of a compute instance, and of the compute instance a service
// auto-created when the service deploys or starts; the withdrawal of a pending request by
// …/cancel or …/destroy, and POST …/approve and …/reject.
#include <boost/json.hpp>

#include "api/router.h"
#include "api/router_responses.h"
#include "api/status_http.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "engine/created_compute.h"
#include "model/approval.h"
#include "model/codec.h"
#include "model/schema.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

constexpr size_t kMaxMessage = 1000;

// The approver's words: body {"message": "…"} (optional, at most 1000 characters).
absl::StatusOr<std::string> MessageOf(const Request& request, const std::string& name) {
  RETURN_IF_ERROR(CheckJsonBody(request));
  if (request.body.empty()) return std::string();
  ASSIGN_OR_RETURN(json::object body, model::ParseObjectJson(request.body));
  std::vector<FieldCause> causes;
  for (const auto& kv : body)
    if (kv.key() != "message" && kv.key() != "apiVersion" && kv.key() != "kind")
      causes.push_back({std::string(kv.key()).substr(0, 64),
                        "unknown field; an answer takes only message", "FieldValueNotSupported"});
  std::string message;
  if (const json::value* m = body.if_contains("message"); m && !m->is_null()) {
    if (!m->is_string()) {
      causes.push_back({"message", "must be of type string", "FieldValueTypeInvalid"});
    } else {
      message = std::string(m->get_string());
      if (message.size() > kMaxMessage)
        causes.push_back({"message", "Too long: at most 1000 characters", "FieldValueTooLong"});
      else if (!IsValidUtf8(message))
        causes.push_back({"message", "must be valid UTF-8"});
      for (char c : message)
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
          causes.push_back({"message", "must not contain control characters"});
          break;
        }
    }
  }
  if (!causes.empty()) return InvalidError("ComputeInstance", name, std::move(causes));
  return message;
}

// A service's deploy or start deploys or starts the compute instance it auto-created
// (engine/created_compute.h): when that instance's profile wants approval, it asks first, as
// the caller, and the engine then leaves it waiting; the service's run waits for it
// (ComputeNotReady). Anything refused here is the engine's to report when it acts on the
// service (which it then does not: a refused service deploy touches no compute instance).
void GateCreatedCompute(ResourceService& resources, engine::Approvals& approvals, const Target& t,
                        bool start) {
  auto raw = resources.Get(t);
  if (!raw.ok()) return;
  auto service = model::DecodeInstance(*raw);
  if (!service.ok() || !service->status.compute_created) return;
  if (!model::Decide(start ? model::Action::kStart : model::Action::kDeploy, *raw).ok()) return;
  Target compute = t;
  compute.kind = model::FindKindByName("ComputeInstance");
  compute.ns = service->compute_ns;
  compute.name = service->compute_name;
  auto stored = compute.kind ? resources.Get(compute) : absl::NotFoundError("no kind");
  if (!stored.ok()) return;
  auto phase = model::DecodeInstance(*stored);
  auto action = phase.ok() ? engine::CreatedComputeAction(phase->status.PhaseOr()) : std::nullopt;
  if (action) approvals.Gate(compute.ns, compute.name, *action, t.caller).IgnoreError();
}

}  // namespace

std::optional<Response> Router::ApprovalGate(const Target& t, const std::string& action,
                                             std::optional<model::Instance>* checked) {
  if (approvals_ && t.kind->kind == "ServiceInstance" && (action == "deploy" || action == "start"))
    GateCreatedCompute(resources_, *approvals_, t, action == "start");
  if (!approvals_ || t.kind->kind != "ComputeInstance") return std::nullopt;
  if (action == "deploy" || action == "start") {
    auto gated = approvals_->Gate(
        t.ns, t.name, action == "start" ? model::RunAction::kStart : model::RunAction::kApply,
        t.caller, checked);
    if (!gated.ok() && absl::IsNotFound(gated.status())) {
      auto check = resources_.Get(t);  // names the missing project or instance precisely
      if (!check.ok()) return ErrorResponse(check.status());
    }
    if (!gated.ok()) return ErrorResponse(gated.status());
    if (!gated->has_value()) return std::nullopt;
    return JsonResponse(202, **gated);
  }
  if (action == "cancel" || action == "destroy") {
    auto withdrawn = approvals_->Withdraw(t.caller, t.ns, t.name);
    if (withdrawn.ok()) return JsonResponse(200, *withdrawn);
  }
  return std::nullopt;
}

Response Router::Answer(ApiCall& c) {
  if (!approvals_) return NotFoundPath(c.request.target);
  auto message = MessageOf(c.request, c.t.name);
  if (!message.ok()) return ErrorResponse(message.status());
  const bool approve = c.sub == "approve";
  auto out = approve ? approvals_->Approve(c.subject, c.t.ns, c.t.name, *message)
                     : approvals_->Reject(c.subject, c.t.ns, c.t.name, *message);
  if (!out.ok() && absl::IsNotFound(out.status())) {
    auto check = resources_.Get(c.t);
    if (!check.ok()) return ErrorResponse(check.status());
  }
  if (!out.ok()) return ErrorResponse(out.status());
  if (auto r = model::DecodeApprovalRequest(*out))
    c.call.entry.message = std::string(approve ? "approved " : "rejected ") +
                           engine::Approvals::Describe(*r) +
                           (message->empty() ? "" : ": " + *message);
  return JsonResponse(approve ? 202 : 200, *out);
}

}  // namespace gantry::api
