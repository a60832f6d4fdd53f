// TCP ports for local workloads, handed out from a configured range. A port is given only
// when no other workload of this driver holds it and a bind to it succeeds (so ports held
// by anything else on the host are skipped); the search continues round-robin after the
// last port given, so a port just freed is not handed out again at once.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"

namespace gantry::drivers::local {

class PortAllocator {
 public:
  // Ports min..max inclusive; 1 <= min <= max <= 65535 (the driver checks its options).
  PortAllocator(int min, int max);

  // One free port per name, held by `owner` until Release(owner). RESOURCE_EXHAUSTED when
  // the range has no free port left (nothing is held then).
  absl::StatusOr<std::map<std::string, int>> Allocate(const std::string& owner,
                                                      const std::vector<std::string>& names);
  // Marks ports already in use by `owner`'s workload as held (after a gantryd restart).
  void Reserve(const std::string& owner, const std::map<std::string, int>& ports);
  // Frees everything `owner` holds; no-op when it holds nothing.
  void Release(const std::string& owner);

  // True when nothing listens on (or holds) TCP `port` on any local address.
  static bool PortIsFree(int port);

 private:
  // Constant after construction.
  const int min_;
  const int max_;

  std::mutex mu_;
  std::map<int, std::string> held_ ABSL_GUARDED_BY(mu_);  // port -> owner
  int next_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gantry::drivers::local
