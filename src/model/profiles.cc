#include "model/profiles.h"

#include "common/status_macros.h"
#include "model/codec.h"

namespace gantry::model {
namespace {

namespace json = boost::json;

const json::object& ObjectAtPath(const json::object& o, std::string_view path) {
  static const json::object kEmpty;
  const json::value* v = FindPath(o, path);
  return v && v->is_object() ? v->get_object() : kEmpty;
}

}  // namespace

ObjectRef DecodeRef(const json::object& spec, std::string_view key, const std::string& default_ns) {
  const json::object& ref = ObjectAtPath(spec, key);
  return ObjectRef{GetString(ref, "namespace", default_ns), GetString(ref, "name")};
}

ProfileSpec DecodeProfileSpec(const json::object& spec, const std::string& ns) {
  ProfileSpec p;
  p.raw = spec;
  p.template_ref = DecodeRef(spec, "templateRef", ns);
  p.resources = DecodeResources(spec);
  if (spec.contains("autoCreateCompute")) {
    const json::object& a = ObjectAtPath(spec, "autoCreateCompute");
    p.auto_create_compute =
        AutoCreateCompute{DecodeRef(a, "profileRef", ns), ObjectAtPath(a, "variables")};
  }
  return p;
}

absl::StatusOr<Profile> DecodeProfile(json::object stored) {
  ASSIGN_OR_RETURN(Profile p, DecodeObjectWithMeta<Profile>(std::move(stored)));
  p.kind = GetString(p.raw, "kind");
  p.spec = DecodeProfileSpec(ObjectAtPath(p.raw, "spec"), p.metadata.ns);
  const json::object& status = ObjectAtPath(p.raw, "status");
  p.revision = GetInt(status, "revision", 1);
  p.template_revision = GetInt(status, "templateRevision", 1);
  return p;
}

}  // namespace gantry::model
