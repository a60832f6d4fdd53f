// What the Store implementations share so that they behave identically: the denormalized
// selector columns of an object, the continue token, and the messages of their refusals.
//
// Thread-safety: plain functions over their arguments.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics.h"

namespace gantry::store {

// "computeinstances.paas.gantry.dev" for "ComputeInstance" (the kind itself when unknown).
std::string QualifiedResource(const std::string& kind);

// ASCII lower case: what search matches case-insensitively on.
std::string LowerAscii(std::string s);

// Copies of fields of an object kept in columns so that selectors run inside the database.
struct Columns {
  std::string labels;    // metadata.labels as a JSON object ("{}" when absent)
  std::string phase;     // status.phase
  std::string ref_name;  // spec.profileRef.name, else templateRef, else instanceRef
  std::string search;    // lower-case "name\ndisplayName\ndescription"
};
Columns ColumnsOf(const boost::json::object& obj);

// The group commit's metrics, the same for both stores (docs/operations.md):
// gantry_store_transactions_total, gantry_store_commits_total and the gauge
// gantry_store_commits_waiting. Each function does nothing when `m` is null.
void DescribeGroupCommitMetrics(Metrics* m);
void CountGroupCommit(Metrics* m, size_t calls);  // one transaction holding `calls` calls
void SetCommitsWaiting(Metrics* m, size_t waiting);

// Continue tokens: "c1.<id>" where id is the last object id of the page.
std::string ContinueToken(int64_t last_id);
// The id of a token; INVALID_ARGUMENT (400) for anything malformed.
absl::StatusOr<int64_t> ParseContinueToken(const std::string& token);

// INVALID_ARGUMENT (400) naming the field when a key or string of an object to be written
// is not valid UTF-8: checked by both stores before a commit touches the database.
absl::Status CheckStorable(const std::string& kind, const boost::json::object& obj);

// A stored body as GetText returns it: the text itself when it is valid UTF-8 (what every
// write since invalid UTF-8 was refused stored), else parsed and scrubbed as Get reads it.
absl::StatusOr<std::string> StoredText(std::string_view body);

// The refusals every store gives in the same words.
absl::Status ObjectNotFound(const std::string& kind, const std::string& name);
absl::Status ObjectModified(const std::string& kind, const std::string& name);
absl::Status ObjectExists(const std::string& kind, const std::string& name);
absl::Status RevisionExists(const std::string& kind, const std::string& name, int64_t revision);
absl::Status RevisionNotFound(const std::string& kind, const std::string& name, int64_t revision);
absl::Status TooOldResourceVersion(int64_t after, int64_t compacted_through);
absl::Status UnsupportedField(const std::string& field);
// The indexed column a field selector compares ("" for other fields).
std::string FieldColumn(const std::string& field);
// "spec.user", "objectRef.name": dot-separated identifiers, safe inside a JSON path. Field
// selectors on such paths (not indexed) read the stored JSON.
bool IsPlainFieldPath(const std::string& field);

}  // namespace gantry::store
