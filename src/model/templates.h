// A typed view of a stored EnvironmentTemplate (ARCHITECTURE.md "Typed inside, JSON at the
// edges"): its metadata, its spec as the engine reads it (model::TemplateSpec: the driver,
// the driver's configuration in spec.<driver>, the raw spec for variables and sharing) and
// its latest revision. The API's template rules (api/template_strategy.cc) read it.
//
// As objects.h: decoded once, the stored object kept in `raw`.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <boost/json.hpp>
#include <cstdint>

#include "absl/status/statusor.h"
#include "model/objects.h"

namespace gantry::model {

inline constexpr char kTemplateKind[] = "EnvironmentTemplate";

struct Template {
  boost::json::object raw;
  ObjectMeta metadata;
  TemplateSpec spec;
  int64_t revision = 1;  // status.revision: the latest
};
// INTERNAL when the object has no metadata.name.
absl::StatusOr<Template> DecodeEnvironmentTemplate(const boost::json::object& stored);

}  // namespace gantry::model
