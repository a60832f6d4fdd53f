// How `gantry get` and `gantry describe` present API objects: per-kind tables, `-o name`,
// `-o json|yaml` documents, the revisions table and the describe view.
//
// Everything here is a pure function of the objects and `now` (no I/O), so it is tested
// without a server.
//
// Thread-safety: free functions, no state.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cli/kinds.h"

namespace gantry::cli {

struct TableOptions {
  bool wide = false;          // -o wide: extra columns (timestamps, reasons)
  bool all_projects = false;  // -A: a leading PROJECT column for namespaced kinds
  absl::Time now;
};

// The kubectl-style table for `items` of `kind` (see the column list in the CLI's brief:
// instances show NAME, DISPLAY NAME, PROFILE, CREATED, STATUS, SHARING; profiles NAME,
// DISPLAY NAME, TEMPLATE, GPU, REVISION, SHARING, AGE; runs NAME, INSTANCE, ACTION, STATUS,
// ATTEMPT, STARTED, DURATION, REASON; ...).
std::string RenderTable(const KindInfo& kind, const std::vector<boost::json::object>& items,
                        const TableOptions& options);

// `-o name`: "computeinstance/gpu-1" per line.
std::string RenderNames(const KindInfo& kind, const std::vector<boost::json::object>& items);

// `-o json|yaml` (`format` is "json" or "yaml"): one object as itself, several (or a list
// request) as a `List`. Items lacking apiVersion/kind get the kind's.
std::string RenderDocument(const KindInfo& kind, const std::vector<boost::json::object>& items,
                           bool as_list, const std::string& format);

// Revisions of a versioned object: REVISION, CREATED (age; -o wide adds the timestamp). Accepts
// items shaped {revision, creationTimestamp} or full objects (status.revision,
// metadata.creationTimestamp).
std::string RenderRevisions(const std::vector<boost::json::object>& items,
                            const TableOptions& options);

// The `describe` view: name, project, labels, annotations, metadata, every spec field
// flattened ("profileRef.name:"), status fields, and a conditions table.
std::string RenderDescribe(const KindInfo& kind, const boost::json::object& object, absl::Time now);

}  // namespace gantry::cli
