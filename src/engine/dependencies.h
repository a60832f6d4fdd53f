// Service instances run on compute instances (issue 9). The rules that tie them together,
// shared by the engine (deploy admission, destroy ordering) and the API (deletes):
//
//   - a ServiceInstance names its ComputeInstance in spec.computeRef {name, namespace};
//     the compute instance may live in another project that shares it;
//   - a service deploys only onto a compute instance in Success;
//   - a compute instance that still has services can be destroyed or deleted only by
//     cascading, which destroys (and, for a delete, deletes) the services first.
//
// Thread-safety: free functions over a thread-safe Store.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "store/store.h"

namespace gantry::engine {

inline constexpr char kComputeInstanceKind[] = "ComputeInstance";
inline constexpr char kServiceInstanceKind[] = "ServiceInstance";

// The profile kind of an instance kind: ServiceProfile for ServiceInstance, else ComputeProfile.
const char* ProfileKindOf(std::string_view instance_kind);

// Every ServiceInstance (any project) whose spec.computeRef names compute instance ns/name.
absl::StatusOr<std::vector<boost::json::object>> ServicesOn(store::Store& store,
                                                            const std::string& ns,
                                                            const std::string& name);

// Those of `services` that keep their compute instance from being destroyed: every one that
// is not NotDeployed (deploying, deployed, failed, or waiting to deploy).
std::vector<boost::json::object> ActiveServices(const std::vector<boost::json::object>& services);

// "team-b/notebook (Success), jupyter (Waiting)": names relative to project `ns`, with phases,
// at most five, then "and N more".
std::string DescribeServices(const std::vector<boost::json::object>& services,
                             const std::string& ns);

// The refusal of destroying (`verb` "destroy") or deleting compute instance ns/name while
// `services` run on it: 409 with reason HasServices and how to cascade.
absl::Status HasServicesError(const std::string& verb, const std::string& ns,
                              const std::string& name,
                              const std::vector<boost::json::object>& services);

}  // namespace gantry::engine
