// `gantry extend NAME DURATION`: gives a running compute instance more time before its
// time-to-live runs out (API.md "Lifecycle policies"; issue 17 item 2).
//
// The instance expires at status.startedAt + its effective ttl (spec.lifecycle.ttl, else its
// profile's spec.lifecycle.ttl.default), so extending by 2h means raising the ttl by 2h:
// extend reads the instance (and, when the instance sets no ttl of its own, its profile),
// adds DURATION to the effective ttl and sends a merge patch of spec.lifecycle.ttl carrying
// the resourceVersion it read. The server keeps the ttl within the profile's max (422, printed
// as the server words it) and moves status.expiresAt. A write that lost a race with another
// (409 "the object has been modified") is read and computed again, a few times.
//
// Output: "computeinstance/nb extended by 2h: ttl 8h -> 10h, expires 2026-12-02T05:00:00Z
// (in 4h13m)". Exit 0, 1 when the server refused or the instance has no ttl to extend, 2 for
// a DURATION that is not one of the API's forms (90s, 30m, 8h, 3d).
//
// Thread-safety: free functions; all I/O goes through the CommandContext.
#pragma once

#include <boost/json/object.hpp>
#include <chrono>
#include <string>

#include "absl/status/statusor.h"
#include "cli/context.h"

namespace gantry::cli {

struct ExtendOptions {
  std::string name;  // a compute instance
  std::string by;    // "2h": a duration in the API's form
};
int RunExtend(CommandContext& ctx, const ExtendOptions& options);

// The ttl an instance gets when extended by `by`: its effective ttl (`instance`'s
// spec.lifecycle.ttl, else `profile`'s spec.lifecycle.ttl.default; `profile` may be null when
// the instance sets its own) plus `by`. FAILED_PRECONDITION naming the instance when neither
// sets a ttl: an instance without a TTL does not expire and has nothing to extend.
absl::StatusOr<std::chrono::seconds> ExtendedTtl(const boost::json::object& instance,
                                                 const boost::json::object* profile,
                                                 std::chrono::seconds by);

}  // namespace gantry::cli
