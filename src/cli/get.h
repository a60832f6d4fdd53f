// `gantry get` and `gantry describe`: reading objects and lists and printing them.
//
// Thread-safety: free functions; I/O only through the CommandContext.
#pragma once

#include <string>
#include <vector>

#include "cli/context.h"

namespace gantry::cli {

struct GetOptions {
  std::string kind;
  std::vector<std::string> names;
  bool all_projects = false;  // -A
  std::string label_selector;
  std::string field_selector;
  std::string search;
  std::string output;      // "", "wide", "name", "json", "yaml"
  bool revisions = false;  // computeprofiles NAME --revisions
};
int RunGet(CommandContext& ctx, const GetOptions& options);

struct DescribeOptions {
  std::string kind;
  std::vector<std::string> names;
};
int RunDescribe(CommandContext& ctx, const DescribeOptions& options);

}  // namespace gantry::cli
