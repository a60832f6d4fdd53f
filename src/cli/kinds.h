// Resource kinds as the CLI sees them: what a user may type for a kind (plural, singular,
// short alias, Kind), which kinds are cluster-scoped, and the API paths for each.
//
// Kinds not in the built-in table pass through unchanged (as namespaced plurals), so the CLI
// reaches kinds the server adds before the CLI learns their aliases.
//
// Thread-safety: free functions over constant tables.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gantry::cli {

inline constexpr std::string_view kApiGroupVersion = "paas.gantry.dev/v1";
inline constexpr std::string_view kApiPrefix = "/apis/paas.gantry.dev/v1";

struct KindInfo {
  std::string plural;    // "computeinstances": the path segment
  std::string kind;      // "ComputeInstance"; "" for a kind the CLI does not know
  std::string singular;  // "computeinstance": used in "computeinstance/x created"
  bool namespaced = true;
};

// What the user typed → the kind. Case-insensitive; accepts plural, singular, aliases
// ("ci", "instances", ...) and the Kind. Unknown words pass through as a namespaced plural.
// Errors: INVALID_ARGUMENT for an empty word or one with characters no plural has.
absl::StatusOr<KindInfo> ResolveKind(std::string_view arg);

// The `kind` field of an object ("ComputeInstance") → the kind. Unknown kinds get a plural
// made the Kubernetes way ("Policy" → "policies", "Run" → "runs").
KindInfo KindFromObjectKind(std::string_view kind);

// Order in which apply sends objects: Project, EnvironmentTemplate, ComputeProfile,
// ComputeInstance, then everything else.
int ApplyRank(std::string_view object_kind);

// /apis/paas.gantry.dev/v1/projects, .../namespaces/{project}/{plural}, or with
// `all_projects` .../{plural}.
std::string CollectionPath(const KindInfo& kind, std::string_view project, bool all_projects);
// CollectionPath + "/" + name (percent-encoded).
std::string ObjectPath(const KindInfo& kind, std::string_view project, std::string_view name);

// Percent-encodes everything but RFC 3986 unreserved characters (for path segments and query
// values).
std::string PercentEncode(std::string_view s);

}  // namespace gantry::cli
