#include "drivers/common/config_problems.h"

namespace gantry::drivers {

namespace json = boost::json;

std::string ConfigProblems::Full(std::string_view field) const {
  return prefix_ + "." + std::string(field);
}

void ConfigProblems::Add(std::string field, std::string message, std::string type) {
  problems_.push_back({std::move(field), std::move(message), std::move(type)});
}

absl::Status ConfigProblems::FirstAsStatus() const {
  if (problems_.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(problems_.front().message);
}

void ConfigProblems::AppendCauses(std::vector<FieldCause>* causes) const {
  for (const FieldCause& p : problems_) {
    // "spec.local.ports[0].name must be ..." -> "must be ..." (the API shows the field).
    std::string message = p.message;
    std::string full = p.field.empty() ? prefix_ : Full(p.field);
    if (message.rfind(full, 0) == 0) {
      size_t at = full.size();
      if (at < message.size() && message[at] == ':') ++at;
      if (at < message.size() && message[at] == ' ') {
        message = message.substr(at + 1);
      }
    }
    causes->push_back({p.field, std::move(message), p.type});
  }
}

json::object SchemaOf(std::string_view type, std::string_view description) {
  return json::object{{"type", type}, {"description", description}};
}

json::object StringListSchema(std::string_view description) {
  json::object out = SchemaOf("array", description);
  out["items"] = json::object{{"type", "string"}};
  return out;
}

json::object MapSchema(std::string_view description, json::object value_schema) {
  json::object out = SchemaOf("object", description);
  out["additionalProperties"] = std::move(value_schema);
  return out;
}

json::object ObjectSchema(std::string_view description, json::object properties,
                          std::vector<std::string> required) {
  json::object out = SchemaOf("object", description);
  out["properties"] = std::move(properties);
  if (!required.empty()) {
    json::array names;
    for (auto& r : required) names.emplace_back(r);
    out["required"] = std::move(names);
  }
  out["additionalProperties"] = false;
  return out;
}

}  // namespace gantry::drivers
