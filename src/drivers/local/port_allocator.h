// TCP ports for local workloads, handed out from a configured range. A port is given only
// when no other workload of this driver holds it, no netfilter DNAT rule forwards it
// elsewhere (ForwardedPorts), and a bind to it succeeds (so ports held by anything else on
// the host are skipped); the search continues round-robin after the last port given, so a
// port just freed is not handed out again at once.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"

namespace gantry::drivers::local {

// Host ports that a netfilter DNAT rule forwards elsewhere. Rootful Podman (netavark)
// publishes a container's ports that way and can leave the rule behind when the container
// goes; a workload that listens on such a port is never reached, since connections go to the
// rule's address ("Connection refused" from a container long gone). Read from
// `iptables -t nat -S`; empty when that cannot run (not root, no iptables).
std::set<int> ForwardedPorts();
// The TCP ports (`--dport N` or `N:M`) of the DNAT rules in `iptables -t nat -S` output.
std::set<int> ParseForwardedPorts(std::string_view rules);

class PortAllocator {
 public:
  // The ports to skip because a DNAT rule forwards them (ForwardedPorts; tests set their own).
  using Forwarded = std::function<std::set<int>()>;

  // Ports min..max inclusive; 1 <= min <= max <= 65535 (the driver checks its options).
  PortAllocator(int min, int max, Forwarded forwarded = ForwardedPorts);

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
  const Forwarded forwarded_;

  std::mutex mu_;
  std::map<int, std::string> held_ ABSL_GUARDED_BY(mu_);  // port -> owner
  int next_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gantry::drivers::local
