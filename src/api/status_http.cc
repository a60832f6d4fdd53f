#include "api/status_http.h"

#include <boost/json.hpp>

#include "common/errors.h"

namespace gantry::api {

namespace json = boost::json;

Response ErrorResponse(const absl::Status& status) {
  int code = HttpCodeOf(status);
  std::string reason = ReasonOf(status);
  // Status.reason takes Kubernetes' StatusReason values only, which clients switch on
  // (kubectl prints "Error from server (Conflict)"). A 409 with a reason of Gantry's own
  // (InstanceInProgress, HasServices, InUse, …) is a Conflict whose first cause carries it.
  json::array causes_out;
  if (code == 409 && reason != "Conflict" && reason != "AlreadyExists") {
    causes_out.push_back(
        json::object{{"reason", reason}, {"message", std::string(status.message())}});
    reason = "Conflict";
  }
  json::object body{{"kind", "Status"},
                    {"apiVersion", "v1"},
                    {"metadata", json::object()},
                    {"status", "Failure"},
                    {"message", std::string(status.message())},
                    {"reason", reason},
                    {"code", code}};
  json::object details;
  if (std::string k = DetailKindOf(status); !k.empty()) {
    details["kind"] = k;
    details["group"] = "paas.gantry.dev";
    details["name"] = DetailNameOf(status);
  }
  for (const auto& c : CausesOf(status))
    causes_out.push_back(
        json::object{{"reason", c.type}, {"message", c.message}, {"field", c.field}});
  if (!causes_out.empty()) details["causes"] = std::move(causes_out);
  if (!details.empty()) body["details"] = std::move(details);
  Response r;
  r.status = code;
  r.body = json::serialize(body);
  return r;
}

Response SuccessStatus(std::string_view message) {
  json::object body{{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
                    {"status", "Success"}, {"message", message}, {"code", 200}};
  Response r;
  r.body = json::serialize(body);
  return r;
}

}  // namespace gantry::api
