// Raw TCP to a gantryd under test, for what an HTTP client library will not send (garbage
// bytes, odd headers, idle or half-open connections). Failures are test failures.
//
// Thread-safety: free functions.
#pragma once

#include <string>

namespace gantry::testing {

// A connected socket to 127.0.0.1:port (a 120 s receive timeout that only bounds a failure),
// or -1 with a test failure. The caller closes it.
int ConnectLoopback(int port);

// Everything the server sends on `fd` until it closes (or resets) the connection.
std::string ReadUntilClosed(int fd);

}  // namespace gantry::testing
