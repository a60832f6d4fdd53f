// Table: the meta.k8s.io/v1 Table form of objects, lists and watch events, which kubectl
// asks for (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) to print `kubectl get`
// without knowing our kinds. Columns per kind follow the seed's lists (instances: Name,
// Display Name, Profile, Age, Status, Sharing), with the lifecycle's Expires (time left until
// status.expiresAt as kubectl prints ages: "45s", "133m", "4h13m"; "expired"; "<none>") and
// GPU% (status.gpuUtilization: "37%") before
// Age as Kubernetes puts printer columns; wide-only columns have priority 1.
//
// Thread-safety: the functions are pure; TableWatch's relay may be driven from any thread.
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/line_stream.h"
#include "model/schema.h"

namespace gantry::api {

// What each row carries in `object` (the `includeObject` query parameter; Kubernetes
// defaults to Metadata, which kubectl needs for -A's namespace column and --show-labels).
enum class IncludeObject { kNone, kMetadata, kObject };

// The Table version asked for by an Accept header ("v1" or "v1beta1"), or "" when the
// client did not ask for a Table.
std::string TableVersionWanted(std::string_view accept);

// "", "None", "Metadata" or "Object"; 400 otherwise.
absl::StatusOr<IncludeObject> ParseIncludeObject(std::string_view value);

// `body` is one object or a list (with `items`) of `kind`. `now` computes the Age column.
boost::json::object ToTable(const model::KindInfo& kind, const boost::json::object& body,
                            IncludeObject include, std::string_view version,
                            std::chrono::system_clock::time_point now);

// A stream that carries `events` (watch lines) with each event's object turned into a
// one-row Table; ERROR events pass unchanged. Canceling the returned stream cancels
// `events`. `now` is read once per event.
std::shared_ptr<LineStream> TableWatch(std::shared_ptr<LineStream> events,
                                       const model::KindInfo& kind, IncludeObject include,
                                       std::string version,
                                       std::function<std::chrono::system_clock::time_point()> now);

// Kubernetes' short human duration (5s, 3m20s, 2h, 4d5h, 2y), as the Age column shows it.
std::string HumanDuration(std::chrono::seconds d);

}  // namespace gantry::api
