// The child processes of the throwaway servers tests start (store/postgres/pg_test_server.h,
// tests/ldap_test_server.h): spawn a server binary with its output in a log, wait until it
// serves (or say why not, with its log), wait for it to exit. Test support only: gantryd
// itself starts programs through drivers/common's ProcessLauncher.
//
// Thread-safety: free functions; each child belongs to the caller that spawned it.
#pragma once

#include <pwd.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gantry::testing {

struct SpawnOptions {
  const passwd* user = nullptr;    // run as this user (the caller is root); null: as the caller
  int parent_death_signal = 0;     // the child gets it when the spawning thread dies; 0: none
  bool own_process_group = false;  // the child leads a new process group (kill(-pid))
  bool search_path = false;        // args[0] may be a bare name, looked up in PATH
  std::vector<std::string> env;    // "NAME=value" added to the child's environment
};

// Forks and execs `args` with stdin /dev/null and stdout and stderr appended
// to `log`. Returns the pid, or -1.
pid_t SpawnLogged(const std::vector<std::string>& args, const std::string& log,
                  const SpawnOptions& options = {});

// The exit status of child `pid` (128 + the signal when a signal ended it); -1 on error.
int WaitExit(pid_t pid);

// Waits until `ready()` while child `*pid` runs: UNAVAILABLE quoting `log` when it exits
// first (*pid becomes -1) or when `deadline` passes. `what` names it ("postgres").
absl::Status WaitUntilServing(pid_t* pid, const std::function<bool()>& ready,
                              const std::string& what, const std::string& log,
                              std::chrono::seconds deadline);

// A TCP port on 127.0.0.1 free now; 0 when none could be had.
int FreeLoopbackPort();
// Whether something accepts TCP connections on 127.0.0.1:`port`.
bool AcceptsOnLoopback(int port);
// The file's contents; "" when it cannot be read.
std::string ReadFileOrEmpty(const std::string& path);
// A new directory `prefix`-XXXXXX under $TMPDIR (or /tmp); "" when none could be made.
std::string MakeTempDir(const std::string& prefix);

}  // namespace gantry::testing
