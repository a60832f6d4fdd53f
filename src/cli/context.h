// What a CLI command runs with, and the API calls every command shares (GET one object, list
// all pages, error printing).
//
// Commands take a CommandContext instead of reaching for globals (STYLE.md #1): tests pass a
// fake HttpTransport, string streams and a fixed clock.
//
// Thread-safety: a CommandContext is used by one command on one thread.
#pragma once

#include <boost/json/object.hpp>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/config.h"
#include "client/http_client.h"

namespace gantry::cli {

// Process exit codes.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // the server refused, or a call failed
inline constexpr int kExitUsage = 2;  // the command line itself is wrong

struct CommandContext {
  Settings settings;
  client::HttpTransport* api = nullptr;  // not owned
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  std::istream* in = nullptr;  // for `-f -`
  absl::Time now;              // when the command started: ages in tables
  FileReader read_file;
  FileWriter write_file;  // unset: WriteWholeFile
  // The running clock and a pause, for commands that wait (--wait, --timeout, reconnect
  // backoff). Tests inject a fake clock and a sleep that only advances it. When unset, the
  // wall clock and absl::SleepFor are used (see Clock() and Pause()).
  std::function<absl::Time()> clock;
  std::function<void(absl::Duration)> sleep;
};

// ctx.clock(), or absl::Now() when unset.
absl::Time Clock(const CommandContext& ctx);
// ctx.sleep(d), or absl::SleepFor(d) when unset.
void Pause(const CommandContext& ctx, absl::Duration d);

// Prints "error: <message>" on ctx.err.
void PrintError(CommandContext& ctx, const absl::Status& status);
void PrintError(CommandContext& ctx, std::string_view message);
// PrintError(ctx, status), then kExitError: what a command returns when a call failed.
int Fail(CommandContext& ctx, const absl::Status& status);

// GET `path` → the object. Non-2xx answers become the server's Status (kube_status.h);
// INVALID_ARGUMENT (Internal) when the body is not a JSON object.
absl::StatusOr<boost::json::object> GetObject(client::HttpTransport& api, const std::string& path);

struct ListResult {
  std::vector<boost::json::object> items;
  std::string resource_version;
};

// GETs `path` with `query` ("labelSelector=...&search=..." already encoded, may be empty) in
// pages of kListPageSize, following metadata.continue until the last page.
inline constexpr int kListPageSize = 500;
absl::StatusOr<ListResult> ListAll(client::HttpTransport& api, const std::string& path,
                                   const std::string& query);

// Parses a response body as one JSON object.
absl::StatusOr<boost::json::object> ParseObject(const client::HttpResponse& response);

}  // namespace gantry::cli
