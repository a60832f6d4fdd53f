// The GPUs of the whole fleet: every gantryd replica publishes its host's GPUs per type in the
// store (kind GpuHost, name = --host-id; internal, never served by the API), and whoever needs
// the fleet's capacity (the overcommitted-guarantees warning of a Project write, the share
// monitor's GuaranteesOvercommitted condition) sums the hosts that published recently. One
// replica (SQLite) is a fleet of one host.
//
//   GpuHost  metadata.name = host; spec.gpus {type: count}; status.renewTime (RFC 3339)
//
// A host counts while its record was renewed within kFleetFresh: a replica renews it at start
// and every kFleetRenew (engine/share_monitor.h), so a host whose gantryd stopped leaves the
// sum a little over a minute later.
//
// Thread-safety: free functions; the store is thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/store.h"

namespace gantry::engine {

inline constexpr char kGpuHostKind[] = "GpuHost";
inline constexpr std::chrono::seconds kFleetRenew{30};
inline constexpr std::chrono::seconds kFleetFresh{90};

using GpusByType = std::map<std::string, int64_t>;

// Records `gpus` as host `host`'s at `now` (creates or replaces its GpuHost; relaxed: a
// record lost to a power loss is written again at the next renewal).
absl::Status PublishHostGpus(store::Store& store, const std::string& host, const GpusByType& gpus,
                             std::chrono::system_clock::time_point now);

// The GPUs per type of every host renewed within kFleetFresh of `now`.
absl::StatusOr<GpusByType> FleetGpus(store::Store& store,
                                     std::chrono::system_clock::time_point now);

}  // namespace gantry::engine
