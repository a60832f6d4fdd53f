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
// compute instances show NAME, DISPLAY NAME, PROFILE, EXPIRES, GPU%, CREATED, STATUS,
// SHARING, as the server's Table orders them; profiles NAME,
// DISPLAY NAME, TEMPLATE, GPU, REVISION, SHARING, AGE; runs NAME, INSTANCE, ACTION, STATUS,
// ATTEMPT, STARTED, DURATION, REASON; ...).
std::string RenderTable(const KindInfo& kind, const std::vector<boost::json::object>& items,
                        const TableOptions& options);

// The lifecycle cells of a compute or service instance, as the server's Table prints them:
// EXPIRES is the time left until status.expiresAt in kubectl's HumanDuration ("4h13m"),
// "expired" once past, "<none>" without a TTL; GPU% is status.gpuUtilization ("37%", "<none>"
// before a sample).
std::string ExpiresText(const boost::json::object& instance, absl::Time now);
std::string GpuPercentText(const boost::json::object& instance);
// What the server did by itself, from status.reason: "Stopped: TTL expired", "Stopped: idle",
// "Stopped: scheduled stop" (TTLExpired, Idle, Scheduled); "" for any other reason.
std::string AutomaticActionText(const boost::json::object& instance);

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
// flattened ("profileRef.name:"), status fields, for instances a Lifecycle section (started,
// expires with the time left, TTL, GPU%, idle since, the last automatic action) and a
// conditions table.
std::string RenderDescribe(const KindInfo& kind, const boost::json::object& object, absl::Time now);

// kubectl describe's Events section for core/v1 Events (the runs of an instance and the
// lifecycle warnings ExpiresSoon, IdleSoon, StopScheduled): TYPE REASON AGE FROM MESSAGE,
// oldest first; "Events:  <none>" without any.
std::string RenderEvents(const std::vector<boost::json::object>& events, absl::Time now);

}  // namespace gantry::cli
