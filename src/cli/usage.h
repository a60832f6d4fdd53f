// `gantry usage`: what was used, and what it cost (API.md "Usage and cost", docs/usage.md).
// Asks the server for a UsageReport (GET …/usagereports, in the project given with -n, else
// across every project the caller may see) and prints its rows: a table with GPU-hours and
// cost and a TOTAL line, `-o csv` (the same columns as the server's text/csv) or `-o json`
// (the report as the server returned it). `--from`/`--to` take RFC 3339 times or dates
// (2026-12-01, midnight UTC); the server refuses bad ones (422, printed as it words them).
//
// Exit 0, 1 when the server refused, 2 for an unknown -o.
//
// Thread-safety: free functions; all I/O goes through the CommandContext.
#pragma once

#include <boost/json/object.hpp>
#include <string>

#include "cli/context.h"

namespace gantry::cli {

struct UsageOptions {
  std::string from, to;  // "" = the server's default (this month, until now)
  std::string group_by;  // "project,gpuType"; "" = every key
  std::string step;      // hour, day, month; "" = none
  std::string output;    // "" (table), csv, json
};
int RunUsage(CommandContext& ctx, const UsageOptions& options);

// The report's rows as a table (`csv` false) or CSV.
std::string UsageText(const boost::json::object& report, bool csv);

}  // namespace gantry::cli
