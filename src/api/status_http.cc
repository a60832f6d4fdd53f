#include "api/status_http.h"

#include <boost/json.hpp>

#include "common/errors.h"

namespace gantry::api {

namespace json = boost::json;

Response ErrorResponse(const absl::Status& status) {
  int code = HttpCodeOf(status);
  json::object body{{"kind", "Status"},
                    {"apiVersion", "v1"},
                    {"metadata", json::object()},
                    {"status", "Failure"},
                    {"message", std::string(status.message())},
                    {"reason", ReasonOf(status)},
                    {"code", code}};
  json::object details;
  if (std::string k = DetailKindOf(status); !k.empty()) {
    details["kind"] = k;
    details["group"] = "paas.gantry.dev";
    details["name"] = DetailNameOf(status);
  }
  auto causes = CausesOf(status);
  if (!causes.empty()) {
    json::array arr;
    for (const auto& c : causes)
      arr.push_back(json::object{{"reason", c.type}, {"message", c.message}, {"field", c.field}});
    details["causes"] = std::move(arr);
  }
  if (!details.empty()) body["details"] = std::move(details);
  Response r;
  r.status = code;
  r.body = json::serialize(body);
  return r;
}

Response SuccessStatus(std::string_view message) {
  json::object body{{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()},
                    {"status", "Success"}, {"message", message}, {"code", 200}};
  Response r;
  r.body = json::serialize(body);
  return r;
}

}  // namespace gantry::api
