// Readiness checks of a local workload, against 127.0.0.1: an HTTP GET answered with a 2xx
// or 3xx status, or a TCP connect that succeeds. Each call is one attempt bounded by
// `timeout`; the caller repeats it until the workload is ready or its deadline passes.
//
// Thread-safety: reentrant.
#pragma once

#include <chrono>
#include <string_view>

#include "absl/status/status.h"

namespace gantry::drivers::local {

// OK when GET `path` on 127.0.0.1:`port` answers 200-399; otherwise UNAVAILABLE saying why
// ("connection refused", "answered 503").
absl::Status ProbeHttp(int port, std::string_view path, std::chrono::milliseconds timeout);

// OK when a TCP connection to 127.0.0.1:`port` succeeds; otherwise UNAVAILABLE.
absl::Status ProbeTcp(int port, std::chrono::milliseconds timeout);

}  // namespace gantry::drivers::local
