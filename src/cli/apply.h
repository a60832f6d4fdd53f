// `gantry apply` and `gantry delete -f`: reading manifests from files, directories or stdin,
// ordering them so that containers come before contents, and the create-or-update decision.
//
// Thread-safety: free functions; I/O only through the CommandContext.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/context.h"

namespace gantry::cli {

struct Manifest {
  boost::json::object object;
  std::string source;  // file it came from ("-" for stdin), for messages
};

// Reads every object from `paths`: "-" is stdin, a directory contributes its *.yaml, *.yml and
// *.json files sorted by name (its subdirectories too when `recursive`). Errors
// (INVALID_ARGUMENT / NOT_FOUND) name the file: "f.yaml: line 3, column 1: ...".
absl::StatusOr<std::vector<Manifest>> LoadManifests(CommandContext& ctx,
                                                    const std::vector<std::string>& paths,
                                                    bool recursive);

// Stable sort by ApplyRank(kind): Projects, EnvironmentTemplates, ComputeProfiles,
// ComputeInstances, then the rest, each group in file order.
void OrderForApply(std::vector<Manifest>& manifests);

// True when applying `applied` over `live` would change nothing the user controls: spec,
// metadata.labels and metadata.annotations are equal. Absent, null and empty maps count as
// equal; numbers compare by value (1 == 1.0).
bool SameDesiredState(const boost::json::object& applied, const boost::json::object& live);

struct ApplyOptions {
  std::vector<std::string> files;
  bool recursive = false;
};
// Creates (POST), updates (PUT with the live resourceVersion) or leaves each object, printing
// "computeinstance/gpu-1 created|configured|unchanged". Continues past a refused object
// ("error: <server message>") and returns kExitError at the end if any failed. Manifests that
// cannot be read stop everything before the first request.
int RunApply(CommandContext& ctx, const ApplyOptions& options);

struct DeleteOptions {
  std::string kind;
  std::vector<std::string> names;
  std::vector<std::string> files;
  bool recursive = false;
  // Sends DeleteOptions{propagationPolicy: Foreground}: a compute instance's service
  // instances are destroyed and deleted first instead of the delete being refused (409).
  bool cascade = false;
};
// DELETEs each named object (or each object in the files), printing "computeinstance/x deleted".
int RunDelete(CommandContext& ctx, const DeleteOptions& options);

}  // namespace gantry::cli
