#include "cli/extend.h"

#include <boost/json.hpp>
#include <ostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/kinds.h"
#include "cli/printers.h"
#include "cli/table.h"
#include "client/kube_status.h"
#include "common/status_macros.h"
#include "model/lifecycle_policy.h"

namespace gantry::cli {
namespace {

namespace json = boost::json;

// Reads and computes again when the patch lost a race with another write.
constexpr int kAttempts = 3;

const json::object& SpecOf(const json::object& o) {
  static const json::object kEmpty;
  const json::value* spec = o.if_contains("spec");
  return spec && spec->is_object() ? spec->get_object() : kEmpty;
}

// The instance's profile, needed only when the instance does not set a ttl itself.
absl::StatusOr<json::object> ProfileOf(CommandContext& ctx, const json::object& instance) {
  std::string ns = FieldText(instance, "spec.profileRef.namespace");
  if (ns.empty()) ns = FieldText(instance, "metadata.namespace");
  if (ns.empty()) ns = ctx.settings.project;
  return GetObject(*ctx.api, ObjectPath(KindFromObjectKind("ComputeProfile"), ns,
                                        FieldText(instance, "spec.profileRef.name")));
}

struct Extended {
  std::chrono::seconds before{0}, after{0};
  json::object instance;  // as the server answered the patch
};

// One read-compute-patch round. ABORTED when another write came between the read and the
// patch (the caller tries again); the server's refusal otherwise.
absl::StatusOr<Extended> ExtendOnce(CommandContext& ctx, const std::string& path,
                                    std::chrono::seconds by) {
  ASSIGN_OR_RETURN(json::object instance, GetObject(*ctx.api, path));
  std::optional<json::object> profile;
  if (!model::DecodeInstanceLifecycle(SpecOf(instance)).ttl) {
    ASSIGN_OR_RETURN(profile, ProfileOf(ctx, instance));
  }
  Extended e;
  ASSIGN_OR_RETURN(e.after, ExtendedTtl(instance, profile ? &*profile : nullptr, by));
  e.before = e.after - by;
  json::object patch{
      {"metadata", {{"resourceVersion", FieldText(instance, "metadata.resourceVersion")}}},
      {"spec", {{"lifecycle", {{"ttl", model::FormatDuration(e.after)}}}}}};
  ASSIGN_OR_RETURN(client::HttpResponse res, ctx.api->Send("PATCH", path, json::serialize(patch),
                                                           "application/merge-patch+json"));
  if (res.status < 200 || res.status >= 300) {
    absl::Status refused = client::StatusFromResponse(res);
    if (res.status == 409 && absl::StrContains(refused.message(), "has been modified"))
      return absl::AbortedError(refused.message());
    return refused;
  }
  ASSIGN_OR_RETURN(e.instance, ParseObject(res));
  return e;
}

}  // namespace

absl::StatusOr<std::chrono::seconds> ExtendedTtl(const json::object& instance,
                                                 const json::object* profile,
                                                 std::chrono::seconds by) {
  model::LifecyclePolicy policy;
  if (profile != nullptr) policy = model::DecodeLifecyclePolicy(SpecOf(*profile));
  std::optional<std::chrono::seconds> ttl =
      model::EffectiveTtl(policy, model::DecodeInstanceLifecycle(SpecOf(instance)));
  if (!ttl) {
    return absl::FailedPreconditionError(absl::StrCat(
        "computeinstance/", FieldText(instance, "metadata.name"),
        " has no time-to-live to extend: neither its spec.lifecycle.ttl nor its profile's "
        "spec.lifecycle.ttl.default is set, so it does not expire"));
  }
  return *ttl + by;
}

int RunExtend(CommandContext& ctx, const ExtendOptions& options) {
  absl::StatusOr<std::chrono::seconds> by = model::ParseDuration(options.by);
  if (!by.ok()) {
    PrintError(ctx, absl::StrCat("extend by \"", options.by, "\": ", by.status().message()));
    return kExitUsage;
  }
  std::string path =
      ObjectPath(KindFromObjectKind("ComputeInstance"), ctx.settings.project, options.name);
  absl::StatusOr<Extended> e = absl::AbortedError("not tried");
  for (int i = 0; i < kAttempts && absl::IsAborted(e.status()); ++i) e = ExtendOnce(ctx, path, *by);
  if (!e.ok()) {
    PrintError(ctx, e.status());
    return kExitError;
  }
  *ctx.out << "computeinstance/" << options.name << " extended by " << model::FormatDuration(*by)
           << ": ttl " << model::FormatDuration(e->before) << " -> "
           << model::FormatDuration(e->after);
  if (std::string expires = FieldText(e->instance, "status.expiresAt"); !expires.empty()) {
    std::string left = ExpiresText(e->instance, Clock(ctx));
    *ctx.out << ", expires " << expires << " (" << (left == "expired" ? left : "in " + left) << ")";
  }
  *ctx.out << "\n";
  return kExitOk;
}

}  // namespace gantry::cli
