// The query parameters that Kubernetes clients send with lists and watches, parsed as the
// Kubernetes API server parses them, so that every client library drives Gantry unchanged.
//
//   Booleans (watch, allowWatchBookmarks, sendInitialEvents, pretty, force, follow, ...):
//     absent, "0" or "false" in any case is false; every other value, the empty one included,
//     is true. This is apimachinery's Convert_Slice_string_To_bool: the official Python
//     client sends `watch=True`, others `watch=1` or `watch=true`.
//   Integers (limit, timeoutSeconds): a decimal number; anything else is a 400 naming the
//     parameter.
//   resourceVersion, resourceVersionMatch, sendInitialEvents: the combinations Kubernetes
//     allows (ValidateListOptions); the others are 422 Invalid ListOptions with one cause
//     per parameter, in Kubernetes' words.
//
// Thread-safety: plain functions over their arguments.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace gantry::api {

using Query = std::map<std::string, std::string>;

// The value of a boolean parameter (never fails: Kubernetes takes any other text as true).
bool QueryBool(const Query& q, const std::string& key);
// A non-negative integer parameter; 0 when absent or empty. 400 BadRequest naming `key`
// ("limit must be a non-negative integer, not \"ten\"") otherwise.
absl::StatusOr<int64_t> QueryNonNegative(const Query& q, const std::string& key);

// What a list or watch asked for about resourceVersions.
struct VersionOptions {
  // ?resourceVersion=N: nullopt when absent or empty; 0 for "0" ("any version").
  std::optional<int64_t> resource_version;
  enum class Match { kUnset, kNotOlderThan, kExact };
  Match match = Match::kUnset;
  // ?sendInitialEvents= (watch only): nullopt when absent.
  std::optional<bool> send_initial_events;
  bool allow_bookmarks = false;  // ?allowWatchBookmarks=
};

// Parses and checks resourceVersion, resourceVersionMatch, sendInitialEvents and
// allowWatchBookmarks for a list (`watch` false) or a watch. 400 for a resourceVersion that
// is not a number; 422 Invalid (kind ListOptions) for a combination Kubernetes forbids.
absl::StatusOr<VersionOptions> ParseVersionOptions(const Query& q, bool watch);

// The answer to a list asked at `want` (VersionOptions) when the store is at `current`:
// OK to serve the current state; 410 Expired for resourceVersionMatch=Exact at an older
// version (gantryd keeps no past states of lists); 410 Expired "Too large resource version"
// for a version this server has not reached (another replica's commit not seen here yet):
// Kubernetes answers 504 there, but gantryd answers no input with a 5xx, and on a 410
// clients list again from scratch, which is what helps.
absl::Status CheckListVersion(const VersionOptions& want, int64_t current);

}  // namespace gantry::api
