#include "engine/dependencies.h"

#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "model/lifecycle.h"

namespace gantry::engine {

namespace json = boost::json;
using model::GetString;

const char* ProfileKindOf(std::string_view instance_kind) {
  return instance_kind == kServiceInstanceKind ? "ServiceProfile" : "ComputeProfile";
}

absl::StatusOr<std::vector<json::object>> ServicesOn(store::Store& store, const std::string& ns,
                                                     const std::string& name) {
  store::ListOptions q;
  q.kind = kServiceInstanceKind;
  q.fields = {{"spec.computeRef.name", true, name}};
  std::vector<json::object> out;
  while (true) {
    ASSIGN_OR_RETURN(auto page, store.List(q));
    for (auto& s : page.items) {
      std::string own = GetString(s, "metadata.namespace");
      if (GetString(s, "spec.computeRef.namespace", own) == ns) out.push_back(std::move(s));
    }
    if (page.continue_token.empty()) return out;
    q.continue_token = page.continue_token;
  }
}

std::vector<json::object> ActiveServices(const std::vector<json::object>& services) {
  std::vector<json::object> out;
  for (const auto& s : services)
    if (GetString(s, "status.phase", "NotDeployed") != "NotDeployed") out.push_back(s);
  return out;
}

std::string DescribeServices(const std::vector<json::object>& services, const std::string& ns) {
  std::string out;
  for (size_t i = 0; i < services.size() && i < 5; ++i) {
    std::string sns = GetString(services[i], "metadata.namespace");
    out += (i ? ", " : "") + (sns == ns ? "" : sns + "/") +
           GetString(services[i], "metadata.name") + " (" +
           std::string(model::PhaseWords(
               model::ParsePhase(GetString(services[i], "status.phase", "NotDeployed")))) +
           ")";
  }
  if (services.size() > 5) out += ", and " + std::to_string(services.size() - 5) + " more";
  return out;
}

absl::Status HasServicesError(const std::string& verb, const std::string& ns,
                              const std::string& name, const std::vector<json::object>& services) {
  std::string n = std::to_string(services.size());
  return ConflictError(
      "compute instance " + name + " cannot be " + (verb == "destroy" ? "destroyed" : "deleted") +
          ": " + n + " service instance" + (services.size() == 1 ? " runs" : "s run") + " on it (" +
          DescribeServices(services, ns) + "); " +
          (verb == "destroy" ? "destroy them first, or destroy with ?cascade=true to destroy "
                               "them first"
                             : "delete them first, or delete with propagationPolicy=Foreground "
                               "(kubectl delete --cascade=foreground) to destroy and delete "
                               "them first"),
      "HasServices");
}

}  // namespace gantry::engine
