// RFC 6902 JSON Patch (add, remove, replace, move, copy, test) with RFC 6901 JSON Pointers,
// as `kubectl patch --type=json` sends it (application/json-patch+json).
//
// Thread-safety: free functions, no state.
#pragma once

#include <boost/json.hpp>

#include "absl/status/status.h"

namespace gantry::model {

// At most this many operations in one patch (Kubernetes allows 10000).
inline constexpr size_t kMaxJsonPatchOperations = 10000;
// The patched document may not grow past this many bytes (copy can double it per operation).
inline constexpr size_t kMaxJsonPatchResultBytes = 3 << 20;

// Applies `patch` (the parsed request body) to `doc` in place; on error `doc` may be
// partly patched (the caller discards it). Errors:
// - 400 BadRequest: the patch is not a list of operations, an operation lacks op/path/value/
//   from, an unknown op, a pointer that does not start with "/" or has a bad "~" escape,
//   more than kMaxJsonPatchOperations operations.
// - 422 Invalid (as Kubernetes answers a patch that cannot be applied): a path that does not
//   exist (remove, replace, move, copy, test, or the parent for add), an array index out of
//   range or not a number, a failed test, a move into its own child, a result larger than
//   kMaxJsonPatchResultBytes. The message names the operation ("operation 2 (test): ...").
absl::Status ApplyJsonPatch(boost::json::value& doc, const boost::json::value& patch);

}  // namespace gantry::model
