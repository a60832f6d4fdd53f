// CheckField of schema.h: one value against its Field, the causes Kubernetes names
// (FieldValueTypeInvalid, FieldValueNotSupported, FieldValueRequired, ...) with the path.
#include "model/schema.h"

namespace gantry::model {
namespace {

namespace json = boost::json;

const char* TypeName(FieldType t) {
  switch (t) {
    case FieldType::kString:
      return "string";
    case FieldType::kInteger:
      return "integer";
    case FieldType::kNumber:
      return "number";
    case FieldType::kBoolean:
      return "boolean";
    case FieldType::kArray:
      return "array";
    default:
      return "object";
  }
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "\"" : ", \"") + s + "\"";
  return out;
}

}  // namespace

void CheckField(const Field& field, const json::value& value, const std::string& path,
                std::vector<FieldCause>* causes) {
  auto wrong_type = [&] {
    causes->push_back({path,
                       std::string("must be of type ") + TypeName(field.type) + ", not " +
                           (value.is_string()   ? "string"
                            : value.is_bool()   ? "boolean"
                            : value.is_number() ? "number"
                            : value.is_array()  ? "array"
                            : value.is_null()   ? "null"
                                                : "object"),
                       "FieldValueTypeInvalid"});
  };
  switch (field.type) {
    case FieldType::kString:
      if (!value.is_string()) return wrong_type();
      if (!field.enum_values.empty() &&
          std::find(field.enum_values.begin(), field.enum_values.end(),
                    std::string_view(value.get_string())) == field.enum_values.end()) {
        causes->push_back({path,
                           "unsupported value \"" + std::string(value.get_string()) +
                               "\": supported values: " + Join(field.enum_values),
                           "FieldValueNotSupported"});
      }
      return;
    case FieldType::kInteger:
      if (value.is_int64() || value.is_uint64()) return;
      if (value.is_double() &&
          value.get_double() == static_cast<double>(static_cast<int64_t>(value.get_double())))
        return;
      return wrong_type();
    case FieldType::kNumber:
      if (!value.is_number()) return wrong_type();
      return;
    case FieldType::kBoolean:
      if (!value.is_bool()) return wrong_type();
      return;
    case FieldType::kFreeObject:
      if (!value.is_object()) return wrong_type();
      return;
    case FieldType::kStringMap:
    case FieldType::kScalarMap:
      if (!value.is_object()) return wrong_type();
      for (const auto& kv : value.get_object()) {
        bool ok = kv.value().is_string() || (field.type == FieldType::kScalarMap &&
                                             (kv.value().is_number() || kv.value().is_bool()));
        if (!ok) {
          causes->push_back({path + "." + std::string(kv.key()),
                             field.type == FieldType::kStringMap
                                 ? "must be a string"
                                 : "must be a string, number or boolean",
                             "FieldValueTypeInvalid"});
        }
      }
      return;
    case FieldType::kArray: {
      if (!value.is_array()) return wrong_type();
      const auto& arr = value.get_array();
      for (size_t i = 0; i < arr.size(); ++i)
        CheckField(field.children[0], arr[i], path + "[" + std::to_string(i) + "]", causes);
      return;
    }
    case FieldType::kObject: {
      if (!value.is_object()) return wrong_type();
      const auto& obj = value.get_object();
      for (const auto& kv : obj) {
        auto it = std::find_if(field.children.begin(), field.children.end(),
                               [&](const Field& c) { return c.name == kv.key(); });
        std::string child_path =
            path.empty() ? std::string(kv.key()) : path + "." + std::string(kv.key());
        if (it == field.children.end()) {
          causes->push_back({child_path, "unknown field \"" + std::string(kv.key()) + "\"",
                             "FieldValueNotSupported"});
          continue;
        }
        // null means "not set", as in Kubernetes JSON decoding; a required field sent as null
        // is reported once, by the required check below.
        if (kv.value().is_null()) continue;
        CheckField(*it, kv.value(), child_path, causes);
      }
      for (const auto& c : field.children) {
        if (!c.required) continue;
        auto found = obj.find(c.name);
        if (found == obj.end() || found->value().is_null() ||
            (found->value().is_string() && found->value().get_string().empty())) {
          causes->push_back({path.empty() ? c.name : path + "." + c.name, "Required value",
                             "FieldValueRequired"});
        }
      }
      return;
    }
  }
}

}  // namespace gantry::model
