// Target: where a request to the resources API points and who sends it, as the router
// resolved and authorized it. A plain value, copied freely.
#pragma once

#include <string>

#include "model/schema.h"

namespace gantry::api {

// Where a request points: the kind, the project (empty for cluster scope or all projects)
// and the object name (empty for collections).
struct Target {
  const model::KindInfo* kind = nullptr;
  std::string ns;
  bool all_namespaces = false;
  std::string name;
  // Who asks (already authorized by the router): recorded as an instance's creator, counted
  // by instancesPerUser, and checked for the fields only an org-admin may change.
  std::string caller;
  bool caller_is_org_admin = false;
  // The caller's web session (its Session record, "" for a token) and address: a change of
  // one's own password keeps this session and is rate-limited per address.
  std::string caller_session;
  std::string caller_source;
  // Who writes, in metadata.managedFields: the fieldManager query parameter, else the
  // program name of the User-Agent (set by the router; "unknown" when neither is sent).
  std::string field_manager = "unknown";
  // ?dryRun=All: every check runs (validation, references, lifecycle 409s, conflicts, field
  // managers) and the answer is the object as it would be, but nothing is committed.
  bool dry_run = false;
};

}  // namespace gantry::api
