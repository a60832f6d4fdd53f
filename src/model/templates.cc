#include "model/templates.h"

#include "common/status_macros.h"
#include "model/codec.h"

namespace gantry::model {

absl::StatusOr<Template> DecodeEnvironmentTemplate(const boost::json::object& stored) {
  ASSIGN_OR_RETURN(Template t, DecodeObjectWithMeta<Template>(stored));
  const boost::json::value* spec = stored.if_contains("spec");
  t.spec = DecodeTemplate(spec && spec->is_object() ? spec->get_object() : boost::json::object{});
  t.revision = GetInt(stored, "status.revision", 1);
  return t;
}

}  // namespace gantry::model
