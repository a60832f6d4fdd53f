#include "cli/kinds.h"

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/absl_compat.h"

namespace gantry::cli {
namespace {

struct KnownKind {
  std::string_view plural;
  std::string_view kind;
  bool namespaced;
  std::array<std::string_view, 4> aliases;  // besides plural, singular and Kind
  int apply_rank;
};

constexpr int kOtherRank = 5;

constexpr KnownKind kKnown[] = {
    {"projects", "Project", false, {"proj"}, 0},
    {"environmenttemplates", "EnvironmentTemplate", true, {"templates", "template", "et"}, 1},
    {"computeprofiles", "ComputeProfile", true, {"profiles", "profile", "cp"}, 2},
    {"computeinstances", "ComputeInstance", true, {"instances", "instance", "ci"}, 3},
    // A service profile names a template and (auto-create compute) a compute profile; a
    // service instance names a service profile and a compute instance.
    {"serviceprofiles", "ServiceProfile", true, {"sp"}, 3},
    {"serviceinstances", "ServiceInstance", true, {"si", "service", "services"}, 4},
    {"runs", "Run", true, {}, kOtherRank},
    {"users", "User", false, {"user"}, 1},
    {"rolebindings", "RoleBinding", true, {"rb"}, 1},
    {"auditevents", "AuditEvent", false, {"audit"}, kOtherRank},
    {"nodes", "Node", false, {"node"}, kOtherRank},
    {"webhooks", "Webhook", true, {"wh"}, 1},
    {"clusterwebhooks", "ClusterWebhook", false, {"cwh"}, 1},
    {"webhookdeliveries", "WebhookDelivery", true, {"deliveries", "delivery"}, kOtherRank},
};

KindInfo Info(const KnownKind& k) {
  return KindInfo{std::string(k.plural), std::string(k.kind), absl::AsciiStrToLower(Sv(k.kind)),
                  k.namespaced};
}

}  // namespace

absl::StatusOr<KindInfo> ResolveKind(std::string_view arg) {
  std::string word = absl::AsciiStrToLower(Sv(arg));
  if (word.empty()) return absl::InvalidArgumentError("a resource type is required");
  for (char c : word) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') {
      return absl::InvalidArgumentError(absl::StrCat("invalid resource type \"", Sv(arg), "\""));
    }
  }
  for (const KnownKind& k : kKnown) {
    if (word == k.plural || word == absl::AsciiStrToLower(Sv(k.kind))) return Info(k);
    for (std::string_view alias : k.aliases) {
      if (!alias.empty() && word == alias) return Info(k);
    }
  }
  KindInfo info;
  info.plural = word;
  info.singular = absl::EndsWith(word, "s") ? word.substr(0, word.size() - 1) : word;
  return info;
}

KindInfo KindFromObjectKind(std::string_view kind) {
  for (const KnownKind& k : kKnown) {
    if (kind == k.kind) return Info(k);
  }
  KindInfo info;
  info.kind = std::string(kind);
  info.singular = absl::AsciiStrToLower(Sv(kind));
  const std::string& s = info.singular;
  if (absl::EndsWith(s, "y") && s.size() > 1 &&
      std::string_view("aeiou").find(s[s.size() - 2]) == std::string_view::npos) {
    info.plural = s.substr(0, s.size() - 1) + "ies";
  } else if (absl::EndsWith(s, "s") || absl::EndsWith(s, "x") || absl::EndsWith(s, "ch") ||
             absl::EndsWith(s, "sh")) {
    info.plural = s + "es";
  } else {
    info.plural = s + "s";
  }
  return info;
}

int ApplyRank(std::string_view object_kind) {
  for (const KnownKind& k : kKnown) {
    if (object_kind == k.kind) return k.apply_rank;
  }
  return kOtherRank;
}

std::string CollectionPath(const KindInfo& kind, std::string_view project, bool all_projects) {
  if (!kind.namespaced || all_projects) return absl::StrCat(Sv(kApiPrefix), "/", kind.plural);
  return absl::StrCat(Sv(kApiPrefix), "/namespaces/", PercentEncode(project), "/", kind.plural);
}

std::string ObjectPath(const KindInfo& kind, std::string_view project, std::string_view name) {
  return absl::StrCat(CollectionPath(kind, project, false), "/", PercentEncode(name));
}

std::string PercentEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace gantry::cli
