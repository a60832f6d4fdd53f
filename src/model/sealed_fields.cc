#include "model/sealed_fields.h"

#include "model/codec.h"

namespace gantry::model {

// One scan per string (every answer is redacted with it): "sealed:v" then "1:" or "2:".
bool HoldsSealed(std::string_view s) {
  for (size_t at = s.find("sealed:v"); at != std::string_view::npos;
       at = s.find("sealed:v", at + 1)) {
    std::string_view rest = s.substr(at);
    if (rest.starts_with(kSealedPrefix) || rest.starts_with(kLegacySealedPrefix)) return true;
  }
  return false;
}

namespace {

namespace json = boost::json;

bool IsVariableDefault(std::string_view path) {
  // spec.variables[N].default
  constexpr std::string_view kHead = "spec.variables[";
  constexpr std::string_view kTail = "].default";
  return path.starts_with(kHead) && path.ends_with(kTail) &&
         path.size() > kHead.size() + kTail.size();
}

bool SealedAllowedAt(std::string_view path, bool is_instance, std::string_view sealed_field) {
  if (!sealed_field.empty() && path == sealed_field) return true;
  if (is_instance)
    return path.starts_with("spec.variables.") &&
           path.find_first_of(".[", sizeof "spec.variables." - 1) == std::string_view::npos;
  return IsVariableDefault(path);
}

void Walk(const json::value& v, const std::string& path, bool is_instance,
          std::string_view sealed_field, std::vector<FieldCause>* causes) {
  if (v.is_string()) {
    if (HoldsSealed(v.get_string()) && !SealedAllowedAt(path, is_instance, sealed_field))
      causes->push_back({path,
                         "Invalid value: this value holds an encrypted secret of this server; "
                         "secrets may only be kept in the variable they were sealed for",
                         "FieldValueForbidden"});
  } else if (v.is_object()) {
    for (const auto& kv : v.get_object())
      Walk(kv.value(), path + "." + std::string(kv.key()), is_instance, sealed_field, causes);
  } else if (v.is_array()) {
    const auto& a = v.get_array();
    for (size_t i = 0; i < a.size(); ++i)
      Walk(a[i], path + "[" + std::to_string(i) + "]", is_instance, sealed_field, causes);
  }
}

// The entry of spec.variables (an array of {name, ...}) named `name`, or nullptr.
json::object* VariableEntry(json::object& spec, std::string_view name) {
  json::value* vars = spec.if_contains("variables");
  if (!vars || !vars->is_array()) return nullptr;
  for (auto& e : vars->get_array())
    if (e.is_object() && GetString(e.get_object(), "name") == name) return &e.get_object();
  return nullptr;
}

const json::object* VariableEntry(const json::object& spec, std::string_view name) {
  return VariableEntry(const_cast<json::object&>(spec), name);
}

}  // namespace

std::string VariableContext(const json::object& obj, std::string_view var) {
  return SealContext(GetString(obj, "kind"), GetString(obj, "metadata.namespace"),
                     GetString(obj, "metadata.name"), GetString(obj, "metadata.uid"),
                     "variables/" + std::string(var));
}

std::string DefaultContext(std::string_view kind, std::string_view ns, std::string_view name,
                           std::string_view var) {
  return SealContext(kind, ns, name, "", "defaults/" + std::string(var));
}

void FindMisplacedSealed(const json::object& obj, bool is_instance, std::string_view sealed_field,
                         std::vector<FieldCause>* causes) {
  for (const char* key : {"metadata", "spec"})
    if (const json::value* v = obj.if_contains(key))
      Walk(*v, key, is_instance, sealed_field, causes);
}

void RedactSealed(json::value& v) {
  if (v.is_string()) {
    if (HoldsSealed(v.get_string())) v = kRedacted;
  } else if (v.is_object()) {
    for (auto& kv : v.get_object()) RedactSealed(kv.value());
  } else if (v.is_array()) {
    for (auto& e : v.get_array()) RedactSealed(e);
  }
}

void RedactSealed(json::object& obj) {
  // Sealed values live in spec only: FindMisplacedSealed refuses them elsewhere on every
  // write, and status is written by gantryd from plaintext. Every GET pays for this walk.
  if (json::value* spec = obj.if_contains("spec")) RedactSealed(*spec);
}

void RedactLastApplied(json::object& obj, bool is_instance, const std::set<std::string>& names) {
  if (names.empty()) return;
  json::value* ann = obj.contains("metadata") && obj["metadata"].is_object()
                         ? obj["metadata"].get_object().if_contains("annotations")
                         : nullptr;
  if (!ann || !ann->is_object()) return;
  json::value* text = ann->get_object().if_contains(kLastAppliedAnnotation);
  if (!text || !text->is_string()) return;
  boost::system::error_code ec;
  json::value applied = json::parse(text->get_string(), ec);
  if (ec || !applied.is_object()) return;
  json::value* spec = applied.get_object().if_contains("spec");
  if (!spec || !spec->is_object()) return;
  bool changed = false;
  for (const auto& name : names) {
    if (is_instance) {
      json::value* vars = spec->get_object().if_contains("variables");
      json::value* v = vars && vars->is_object() ? vars->get_object().if_contains(name) : nullptr;
      if (v && !(v->is_string() && v->get_string() == kRedacted)) {
        *v = kRedacted;
        changed = true;
      }
    } else if (json::object* e = VariableEntry(spec->get_object(), name);
               e && e->contains("default") && (*e)["default"] != json::value(kRedacted)) {
      (*e)["default"] = kRedacted;
      changed = true;
    }
  }
  if (changed) *text = json::serialize(applied);
}

std::set<std::string> SensitiveDeclared(const json::object& spec) {
  std::set<std::string> out;
  const json::value* vars = spec.if_contains("variables");
  if (!vars || !vars->is_array()) return out;
  for (const auto& e : vars->get_array())
    if (e.is_object() && GetBool(e.get_object(), "sensitive"))
      out.insert(GetString(e.get_object(), "name"));
  return out;
}

std::set<std::string> SealedDefaultNames(const json::object& spec) {
  std::set<std::string> out;
  const json::value* vars = spec.if_contains("variables");
  if (!vars || !vars->is_array()) return out;
  for (const auto& e : vars->get_array())
    if (e.is_object() && SecretBox::IsSealed(GetString(e.get_object(), "default")))
      out.insert(GetString(e.get_object(), "name"));
  return out;
}

absl::StatusOr<json::object> UnsealDefaults(const SecretBox& secrets, std::string_view kind,
                                            std::string_view ns, std::string_view name,
                                            const json::object& spec) {
  json::object out = spec;
  json::value* vars = out.if_contains("variables");
  if (!vars || !vars->is_array()) return out;
  for (auto& e : vars->get_array()) {
    if (!e.is_object()) continue;
    json::value* d = e.get_object().if_contains("default");
    if (!d || !d->is_string() || !SecretBox::IsSealed(d->get_string())) continue;
    std::string var = GetString(e.get_object(), "name");
    auto plain = secrets.Unseal(d->get_string(), DefaultContext(kind, ns, name, var));
    if (!plain.ok())
      return absl::FailedPreconditionError(
          "the default of variable " + var + " of " + std::string(kind) + " " + std::string(name) +
          " cannot be decrypted: " + std::string(plain.status().message()));
    *d = *plain;
  }
  return out;
}

void SealDefaults(const SecretBox& secrets, std::string_view kind, std::string_view ns,
                  std::string_view name, const std::set<std::string>& sensitive,
                  const json::object* current, json::object& next,
                  std::vector<FieldCause>* causes) {
  json::value* spec = next.if_contains("spec");
  if (!spec || !spec->is_object()) return;
  const json::value* cur_spec = current ? current->if_contains("spec") : nullptr;
  json::value* vars = spec->get_object().if_contains("variables");
  if (!vars || !vars->is_array()) return;
  for (size_t i = 0; i < vars->get_array().size(); ++i) {
    json::value& e = vars->get_array()[i];
    if (!e.is_object()) continue;
    std::string var = GetString(e.get_object(), "name");
    json::value* d = e.get_object().if_contains("default");
    if (!d || !sensitive.count(var)) continue;
    std::string path = "spec.variables[" + std::to_string(i) + "].default";
    std::string given = d->is_string() ? std::string(d->get_string()) : json::serialize(*d);
    const json::object* old =
        cur_spec && cur_spec->is_object() ? VariableEntry(cur_spec->get_object(), var) : nullptr;
    std::string stored = old ? GetString(*old, "default") : "";
    std::string context = DefaultContext(kind, ns, name, var);
    if (SecretBox::IsSealed(stored) && !SecretBox::IsLegacy(stored)) {
      if (given == kRedacted || given == stored) {
        *d = stored;
        continue;
      }
      if (auto plain = secrets.Unseal(stored, context); plain.ok() && *plain == given) {
        *d = stored;
        continue;
      }
    }
    if (given == kRedacted) {
      causes->push_back({path,
                         std::string("Required value: give the value itself, not ") + kRedacted,
                         "FieldValueRequired"});
    } else if (SecretBox::IsSealed(given) && !SecretBox::IsLegacy(given) &&
               secrets.Unseal(given, context).ok()) {
      // Sealed for this very field (by an earlier step of this write): it stays.
    } else if (SecretBox::IsSealed(given)) {
      causes->push_back({path,
                         "Invalid value: a sealed value is only valid where it was sealed; "
                         "give the value itself"});
    } else {
      *d = secrets.Seal(given, context);
    }
  }
}

}  // namespace gantry::model
