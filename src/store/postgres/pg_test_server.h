// A throwaway PostgreSQL server for tests (store unit tests, integration tests, benchmarks):
// initdb into a temporary directory, then the server itself on a free port with its unix
// socket in that directory and no TCP listener. When the tests run as root (CI containers),
// initdb and the server run as the `postgres` OS user, because both refuse root.
//
// One server per test process, started on first use and stopped (SIGQUIT, directory
// removed) when the process exits; the server also gets PR_SET_PDEATHSIG, so a test process
// killed outright does not leave it behind. Each test asks for a fresh database.
//
// The server runs with fsync=off: it is for correctness tests, not for durability or speed
// figures (bench/ starts its own server with the defaults).
//
// Thread-safety: Get and CreateDatabase may be called from any thread; start the server from
// the test's main thread (PR_SET_PDEATHSIG follows the thread that forked).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace gantry::store::testing {

class PgTestServer {
 public:
  // The process's server, started on first use; UNAVAILABLE (with the reason and the
  // server's log) when PostgreSQL is not installed or does not start.
  static absl::StatusOr<PgTestServer*> Get();

  // A new empty database; returns its URL (postgresql:///NAME?host=SOCKETDIR&port=PORT&…).
  absl::StatusOr<std::string> CreateDatabase();

  const std::string& socket_dir() const { return dir_; }
  int port() const { return port_; }
  const std::string& bin_dir() const { return bin_dir_; }
  std::string Url(const std::string& database) const;

  ~PgTestServer();

 private:
  PgTestServer() = default;
  absl::Status Start();

  std::string bin_dir_;
  std::string dir_;
  int port_ = 0;
  int pid_ = -1;
};

// True when PostgreSQL tests must run rather than skip: GANTRY_REQUIRE_POSTGRES=1 or
// GANTRY_CI=1 (both set by .ci/run), or CI=true.
bool PostgresRequired();

}  // namespace gantry::store::testing
