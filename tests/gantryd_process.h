// A real gantryd for integration tests: spawns the built binary on 127.0.0.1:0 in a fresh
// temporary data directory, learns the port from its `listening on http://HOST:PORT` log line,
// and cleans up (process and directory) when destroyed.
//
// No sleeps: Start() blocks on the stderr pipe until the line arrives, the process exits, or
// a generous deadline passes (a wedged binary fails the test instead of hanging it). A thread
// keeps draining stderr for the process's whole life so that logging never blocks gantryd.
//
// The child gets PR_SET_PDEATHSIG(SIGKILL): if the test process dies, so does gantryd. Note
// that Linux ties this to the thread that forked, so start and restart from the test's main
// thread.
//
// Thread-safety: Start/Kill9/Terminate/Restart and the destructor are for one thread (the
// test's); base_url() and Log() may be read from any thread between those calls.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "test_credentials.h"

namespace gantry::testing {

// The gantryd binary the tests run: $GANTRY_TEST_GANTRYD when set (to test another build,
// e.g. a sanitizer one), else the one this build made (GANTRYD_PATH).
std::string GantrydBinary();

// The store the tests run gantryd on: GANTRY_TEST_STORE=postgres gives each GantrydProcess a
// fresh database on a throwaway PostgreSQL server (store/postgres/pg_test_server.h) and
// passes `--store URL`; anything else (the default) is SQLite in the data directory.
bool TestStoreIsPostgres();
// Why the PostgreSQL test store cannot be used ("" when it can, or when not asked for).
std::string TestStoreUnavailable();

class GantrydProcess {
 public:
  // `extra_args` are appended to `--listen 127.0.0.1:0 --data-dir DIR` (and to `--store URL`
  // under GANTRY_TEST_STORE=postgres, unless they name a --store themselves; and without the
  // --listen when they name one: a test that must know the port before gantryd starts).
  explicit GantrydProcess(std::vector<std::string> extra_args = {});
  ~GantrydProcess();
  GantrydProcess(const GantrydProcess&) = delete;
  GantrydProcess& operator=(const GantrydProcess&) = delete;

  // Sets (or, with an empty value, removes) an environment variable of gantryd for the next
  // Start/Restart. By default the two of kBootstrapToken/kAdminPassword are set.
  void SetEnv(const std::string& key, const std::string& value);

  // Spawns gantryd and waits for its `listening on` line. FAILED_PRECONDITION when already
  // running; UNAVAILABLE when it exits or stays silent past the deadline (the message carries
  // its log).
  absl::Status Start();

  // SIGKILL and reap. No-op when not running.
  void Kill9();

  // SIGTERM and wait for the exit. Returns the exit code, or 128 + signal when it died of a
  // signal, or -1 when it was not running.
  int Terminate();

  // Starts again on the same data directory (after Kill9 or Terminate; stops it first with
  // SIGKILL when still running). The port changes: read base_url() again.
  absl::Status Restart();

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  // The HTTPS port when started with --tls-listen (from its `listening on https://` line),
  // else 0.
  int tls_port() const;
  // "http://127.0.0.1:PORT".
  std::string base_url() const;
  const std::string& data_dir() const { return data_dir_; }
  // The PostgreSQL URL it runs on ("" for SQLite); set by the first Start.
  const std::string& store_url() const { return store_url_; }
  // Everything gantryd wrote to stderr so far (all runs).
  std::string Log() const;
  // Waits until the log holds `text`: gantryd writes a line before it answers, but the test
  // reads its stderr on a thread of its own, so the line may arrive after the answer. False
  // when the current run's stderr closed, or two minutes passed, without it.
  bool WaitForLog(std::string_view text);

 private:
  void ReaderLoop(int fd);
  void StopReader();

  // Constant after construction.
  std::vector<std::string> extra_args_;
  std::map<std::string, std::string> env_;  // test thread only
  std::string data_dir_;

  // Owned by the test thread.
  std::string store_url_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::thread reader_;

  // Shared with the reader thread.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string log_;       // guarded by mu_
  bool eof_ = false;      // guarded by mu_: the current run's stderr closed
  int found_port_ = 0;    // guarded by mu_: from the current run's `listening on` line
  size_t run_start_ = 0;  // guarded by mu_: where the current run's log begins
};

}  // namespace gantry::testing
