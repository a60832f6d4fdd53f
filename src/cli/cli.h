// The `gantry` command line: global flags, the command table and dispatch.
//
// Adding a command (login, share, ...) means one entry in the table in cli.cc: a setup
// function that declares the subcommand's flags on its CLI11 App and returns the runner to
// call once parsing succeeded. Runners are plain functions over a CommandContext (see get.h,
// apply.h, actions.h) so they are tested without CLI11.
//
// Thread-safety: RunCli is re-entrant; everything it touches comes through CliEnvironment.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "cli/config.h"
#include "client/http_client.h"

namespace gantry::cli {

// The outside world as the CLI sees it; main() passes the real one, tests fakes.
struct CliEnvironment {
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  std::istream* in = nullptr;
  EnvGetter getenv;
  FileReader read_file;
  std::function<absl::Time()> now;
  // Pauses (reconnect backoff); absl::SleepFor when unset. Tests pass one that advances their
  // fake `now`.
  std::function<void(absl::Duration)> sleep;
  // Makes the transport for the resolved settings (server URL, token, TLS trust).
  std::function<std::unique_ptr<client::HttpTransport>(const Settings& settings)> connect;
};

// std streams, the process environment, real files, the wall clock, HttpClient.
CliEnvironment SystemEnvironment();

// Parses argv and runs the command. Returns the exit status: 0 success, 1 a refused or failed
// call, 2 a usage error (help printed on request exits 0).
int RunCli(int argc, const char* const* argv, const CliEnvironment& env);

}  // namespace gantry::cli
