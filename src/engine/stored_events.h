// Events gantryd writes itself: core v1 `Event` objects kept in the store (kind "Event"), served
// by GET /api/v1/namespaces/NS/events after the run events (what `kubectl get events` and
// `kubectl describe` read). The lifecycle controller's warnings (lifecycle_controller.h) and
// the budget monitor's (budget_monitor.h) are such events.
//
// Each has a deterministic name chosen by its sender (what it warns about and when), so that a
// second create — by a restart or another replica — is AlreadyExists and sends nothing twice.
// The lifecycle controller prunes them after their retention.
//
// Thread-safety: a free function over a thread-safe Store.
#pragma once

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "store/store.h"

namespace gantry::engine {

inline constexpr char kStoredEventKind[] = "Event";

struct StoredEvent {
  std::string ns, name;  // metadata: the involved object's project, the deterministic name
  struct Involved {
    std::string api_version, kind, ns, name, uid;
  } involved;
  std::string reason, message;
  std::string type = "Warning";  // Normal or Warning
  std::string component;         // source.component and reportingComponent
};

// Stores `event` as of `now`. OK when an event of that name exists already (it was sent).
absl::Status CreateStoredEvent(store::Store& store, const StoredEvent& event,
                               std::chrono::system_clock::time_point now);

}  // namespace gantry::engine
