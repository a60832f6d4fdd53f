#include "model/validation.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <set>

#include "common/secrets.h"
#include "model/codec.h"
#include "model/label_selector.h"

namespace gantry::model {
namespace {

namespace json = boost::json;

constexpr size_t kMaxAnnotationBytes = 256 * 1024;

std::vector<std::string> Strings(const json::value* v) {
  std::vector<std::string> out;
  if (v && v->is_array())
    for (const auto& e : v->get_array())
      if (e.is_string()) out.emplace_back(e.get_string());
  return out;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& e : v)
    if (e == s) return true;
  return false;
}

std::string Quoted(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "\"" : ", \"") + s + "\"";
  return out;
}

// Decimal numbers only, as JSON writes them (no whitespace, no hex).
bool ParsesAsNumber(const std::string& s) {
  if (s.empty()) return false;
  double d = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), d, std::chars_format::general);
  return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(d);
}

// A JSON number as people write it: "0.5", "3", "1.1" (never "5E-1").
std::string NumberText(const json::value& v) {
  if (!v.is_double()) return json::serialize(v);
  double d = v.get_double();
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, d);
  if (ec != std::errc()) return json::serialize(v);
  return std::string(buf, ptr);
}

// The value of a sensitive variable is never quoted: messages reach audit records and logs.
std::string Shown(const std::string& value, bool sensitive) {
  return sensitive ? "the value (sensitive, not shown)" : "\"" + value + "\"";
}

// nullopt when `value` fits `type` (and, for enums, `allowed`); else the message.
std::optional<std::string> TypeError(const std::string& type, const std::string& value,
                                     const std::vector<std::string>& allowed,
                                     bool sensitive = false) {
  if (type == "number" && !ParsesAsNumber(value))
    return Shown(value, sensitive) + " is not a number";
  if (type == "bool" && value != "true" && value != "false")
    return Shown(value, sensitive) + " is not a boolean (true or false)";
  if (type == "enum" && !Contains(allowed, value))
    return "unsupported value " + Shown(value, sensitive) +
           ": supported values: " + Quoted(allowed);
  return std::nullopt;
}

// A sealed (or redacted, as shown) default was checked when its plaintext was written.
bool KeptSecret(const std::string& value) {
  return SecretBox::IsSealed(value) || value == kRedacted;
}

void ValidateSharing(const json::object& spec, std::vector<FieldCause>* causes) {
  const json::value* sharing = FindPath(spec, "sharing");
  if (!sharing || !sharing->is_object()) return;
  std::string mode = GetString(sharing->get_object(), "mode", "None");
  std::vector<std::string> projects = Strings(FindPath(sharing->get_object(), "projects"));
  if (mode == "Selected" && projects.empty())
    causes->push_back({"spec.sharing.projects",
                       "at least one project is required when mode is Selected",
                       "FieldValueRequired"});
  if (mode != "Selected" && !projects.empty())
    causes->push_back(
        {"spec.sharing.projects", "may only be set when mode is Selected", "FieldValueForbidden"});
  for (size_t i = 0; i < projects.size(); ++i)
    if (auto err = Dns1123LabelError(projects[i]))
      causes->push_back({"spec.sharing.projects[" + std::to_string(i) + "]", *err});
}

// Calls `check(entry, path)` for each object of spec.variables (template declarations or
// profile rules) after refusing a name used twice.
void ForEachVariable(const json::object& spec, std::vector<FieldCause>* causes,
                     const std::function<void(const json::object&, const std::string&)>& check) {
  const json::value* vars = FindPath(spec, "variables");
  if (!vars || !vars->is_array()) return;
  std::set<std::string> seen;
  for (size_t i = 0; i < vars->get_array().size(); ++i) {
    const auto& v = vars->get_array()[i];
    if (!v.is_object()) continue;
    const auto& o = v.get_object();
    std::string path = "spec.variables[" + std::to_string(i) + "]";
    std::string name = GetString(o, "name");
    if (!name.empty() && !seen.insert(name).second)
      causes->push_back(
          {path + ".name", "Duplicate value: \"" + name + "\"", "FieldValueDuplicate"});
    check(o, path);
  }
}

void ValidateTemplateVariables(const json::object& spec, std::vector<FieldCause>* causes) {
  ForEachVariable(spec, causes, [&](const json::object& o, const std::string& path) {
    std::string type = GetString(o, "type", "string");
    auto allowed = Strings(FindPath(o, "allowedValues"));
    if (type == "enum" && allowed.empty())
      causes->push_back(
          {path + ".allowedValues", "an enum variable needs allowedValues", "FieldValueRequired"});
    bool sensitive = GetBool(o, "sensitive");
    if (o.contains("default") && !(sensitive && KeptSecret(GetString(o, "default")))) {
      if (auto err = TypeError(type, GetString(o, "default"), allowed, sensitive))
        causes->push_back({path + ".default", *err});
    }
  });
}

void ValidateProfileRules(const json::object& spec, std::vector<FieldCause>* causes) {
  ForEachVariable(spec, causes, [&](const json::object& o, const std::string& path) {
    std::string override_policy = GetString(o, "override", "allowed");
    auto allowed = Strings(FindPath(o, "allowedValues"));
    if (override_policy == "restricted" && allowed.empty())
      causes->push_back({path + ".allowedValues",
                         "override \"restricted\" needs the list of allowed values",
                         "FieldValueRequired"});
    if (override_policy != "restricted" && !allowed.empty())
      causes->push_back({path + ".allowedValues", "may only be set when override is \"restricted\"",
                         "FieldValueForbidden"});
    std::string def = GetString(o, "default");
    bool sensitive = GetBool(o, "sensitive");
    if (override_policy == "restricted" && o.contains("default") && !KeptSecret(def) &&
        !Contains(allowed, def))
      causes->push_back(
          {path + ".default",
           Shown(def, sensitive) + " is not one of the allowed values " + Quoted(allowed)});
  });
  const json::value* gpu = FindPath(spec, "resources.gpu");
  if (gpu && gpu->is_object()) {
    int64_t count = GetInt(gpu->get_object(), "count", 0);
    if (count < 0)
      causes->push_back({"spec.resources.gpu.count", "must be greater than or equal to 0"});
  }
  for (const char* f : {"cpu", "memoryGiB"}) {
    const json::value* v = FindPath(spec, std::string("resources.") + f);
    if (v && v->is_number() && v->to_number<double>() < 0)
      causes->push_back({std::string("spec.resources.") + f, "must be greater than or equal to 0"});
  }
}

void ValidateTemplateDriver(const json::object& spec, std::vector<FieldCause>* causes) {
  std::string driver = GetString(spec, "driver");
  if (driver.empty()) return;  // the schema reported it
  if (!spec.contains(driver) || !spec.at(driver).is_object()) {
    causes->push_back(
        {"spec." + driver,
         "Required value: driver \"" + driver + "\" needs its configuration in spec." + driver,
         "FieldValueRequired"});
    return;
  }
  for (const char* other : {"exec", "local", "slurm", "container"}) {
    if (other != driver && spec.contains(other) && !spec.at(other).is_null())
      causes->push_back({std::string("spec.") + other,
                         "may only be set when driver is \"" + std::string(other) + "\"",
                         "FieldValueForbidden"});
  }
  // The shape of spec.<driver> is the driver's to check (Driver::ValidateConfig, called by
  // the API when a template is saved: api/template_strategy.cc).
}

// spec.<ref>.namespace, when given, must be a project name.
void CheckRefNamespace(const json::object& spec, const std::string& ref,
                       std::vector<FieldCause>* causes) {
  std::string ns = GetString(spec, ref + ".namespace");
  if (ns.empty()) return;
  if (auto err = Dns1123LabelError(ns))
    causes->push_back({"spec." + ref + ".namespace", "Invalid value: \"" + ns + "\": " + *err});
}

// A service profile's computeSelector: label keys and values, and values exactly for In and
// NotIn (as metav1.LabelSelector).
void ValidateComputeSelector(const json::object& spec, std::vector<FieldCause>* causes) {
  if (const json::value* m = FindPath(spec, "computeSelector.matchLabels"); m && m->is_object())
    for (const auto& kv : m->get_object()) {
      std::string key(kv.key());
      if (auto err = LabelKeyError(key))
        causes->push_back(
            {"spec.computeSelector.matchLabels", "Invalid value: \"" + key + "\": " + *err});
      if (kv.value().is_string())
        if (auto err = LabelValueError(kv.value().get_string()))
          causes->push_back(
              {"spec.computeSelector.matchLabels." + key,
               "Invalid value: \"" + std::string(kv.value().get_string()) + "\": " + *err});
    }
  const json::value* e = FindPath(spec, "computeSelector.matchExpressions");
  if (!e || !e->is_array()) return;
  for (size_t i = 0; i < e->get_array().size(); ++i) {
    const json::value& x = e->get_array()[i];
    if (!x.is_object()) continue;
    std::string path = "spec.computeSelector.matchExpressions[" + std::to_string(i) + "]";
    std::string key = GetString(x.get_object(), "key");
    if (!key.empty())
      if (auto err = LabelKeyError(key))
        causes->push_back({path + ".key", "Invalid value: \"" + key + "\": " + *err});
    std::string op = GetString(x.get_object(), "operator");
    auto values = Strings(FindPath(x.get_object(), "values"));
    if ((op == "In" || op == "NotIn") && values.empty())
      causes->push_back({path + ".values",
                         "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                         "FieldValueRequired"});
    if ((op == "Exists" || op == "DoesNotExist") && !values.empty())
      causes->push_back({path + ".values",
                         "Forbidden: may not be specified when `operator` is 'Exists' or "
                         "'DoesNotExist'",
                         "FieldValueForbidden"});
    for (const auto& v : values)
      if (auto err = LabelValueError(v))
        causes->push_back({path + ".values", "Invalid value: \"" + v + "\": " + *err});
  }
}

}  // namespace

void ValidateMetadata(const json::object& metadata, std::vector<FieldCause>* causes) {
  std::string name = GetString(metadata, "name");
  if (name.empty()) {
    causes->push_back({"metadata.name", "Required value: name is required", "FieldValueRequired"});
  } else if (auto err = Dns1123LabelError(name)) {
    causes->push_back({"metadata.name", "Invalid value: \"" + name + "\": " + *err});
  }
  if (const json::value* labels = FindPath(metadata, "labels"); labels && labels->is_object()) {
    for (const auto& kv : labels->get_object()) {
      std::string key(kv.key());
      if (auto err = LabelKeyError(key))
        causes->push_back({"metadata.labels", "Invalid value: \"" + key + "\": " + *err});
      if (kv.value().is_string())
        if (auto err = LabelValueError(kv.value().get_string()))
          causes->push_back(
              {"metadata.labels." + key,
               "Invalid value: \"" + std::string(kv.value().get_string()) + "\": " + *err});
    }
  }
  if (const json::value* ann = FindPath(metadata, "annotations"); ann && ann->is_object()) {
    size_t total = 0;
    for (const auto& kv : ann->get_object()) {
      std::string key(kv.key());
      if (auto err = LabelKeyError(key))
        causes->push_back({"metadata.annotations", "Invalid value: \"" + key + "\": " + *err});
      total += key.size() + (kv.value().is_string() ? kv.value().get_string().size() : 0);
    }
    if (total > kMaxAnnotationBytes)
      causes->push_back({"metadata.annotations", "Too long: must have at most 262144 bytes",
                         "FieldValueTooLong"});
  }
}

void ValidateSpec(const KindInfo& kind, const json::object& spec, std::vector<FieldCause>* causes) {
  ValidateSharing(spec, causes);
  if (kind.kind == "Project") {
    if (const json::value* g = FindPath(spec, "quota.gpus"); g && g->is_object())
      for (const auto& kv : g->get_object()) {
        const json::value& v = kv.value();
        bool ok = (v.is_int64() && v.get_int64() >= 0) || (v.is_uint64()) ||
                  (v.is_string() && !v.get_string().empty() &&
                   std::string_view(v.get_string()).find_first_not_of("0123456789") ==
                       std::string_view::npos);
        if (!ok)
          causes->push_back({"spec.quota.gpus." + std::string(kv.key()),
                             "must be a whole number of GPUs, 0 or more"});
      }
    for (const char* f : {"instances", "instancesPerUser"})
      if (GetInt(spec, std::string("quota.") + f, 0) < 0)
        causes->push_back({std::string("spec.quota.") + f, "must be greater than or equal to 0"});
  }
  if (kind.kind == "EnvironmentTemplate") {
    ValidateTemplateVariables(spec, causes);
    ValidateTemplateDriver(spec, causes);
  } else if (kind.kind == "ComputeProfile") {
    ValidateProfileRules(spec, causes);
  } else if (kind.kind == "ServiceProfile") {
    ValidateProfileRules(spec, causes);
    ValidateComputeSelector(spec, causes);
    CheckRefNamespace(spec, "templateRef", causes);
    CheckRefNamespace(spec, "autoCreateCompute.profileRef", causes);
  } else if (kind.kind == "ComputeInstance") {
    CheckRefNamespace(spec, "profileRef", causes);
  } else if (kind.kind == "ServiceInstance") {
    CheckRefNamespace(spec, "profileRef", causes);
    CheckRefNamespace(spec, "computeRef", causes);
  }
}

LabelSelector ComputeSelector(const json::object& service_profile_spec) {
  LabelSelector out;
  if (const json::value* m = FindPath(service_profile_spec, "computeSelector.matchLabels");
      m && m->is_object())
    for (const auto& kv : m->get_object())
      if (kv.value().is_string())
        out.requirements.push_back(
            {std::string(kv.key()), SelectorOp::kEquals, {std::string(kv.value().get_string())}});
  if (const json::value* e = FindPath(service_profile_spec, "computeSelector.matchExpressions");
      e && e->is_array())
    for (const auto& x : e->get_array()) {
      if (!x.is_object()) continue;
      std::string op = GetString(x.get_object(), "operator");
      Requirement r;
      r.key = GetString(x.get_object(), "key");
      r.op = op == "In"       ? SelectorOp::kIn
             : op == "NotIn"  ? SelectorOp::kNotIn
             : op == "Exists" ? SelectorOp::kExists
                              : SelectorOp::kDoesNotExist;
      r.values = Strings(FindPath(x.get_object(), "values"));
      out.requirements.push_back(std::move(r));
    }
  return out;
}

std::string DescribeSelector(const LabelSelector& selector) {
  std::string out;
  for (const auto& r : selector.requirements) {
    if (!out.empty()) out += ",";
    std::string values;
    for (const auto& v : r.values) values += (values.empty() ? "" : ",") + v;
    switch (r.op) {
      case SelectorOp::kEquals:
        out += r.key + "=" + values;
        break;
      case SelectorOp::kNotEquals:
        out += r.key + "!=" + values;
        break;
      case SelectorOp::kIn:
        out += r.key + " in (" + values + ")";
        break;
      case SelectorOp::kNotIn:
        out += r.key + " notin (" + values + ")";
        break;
      case SelectorOp::kExists:
        out += r.key;
        break;
      case SelectorOp::kDoesNotExist:
        out += "!" + r.key;
        break;
    }
  }
  return out;
}

void ValidateProfileAgainstTemplate(const json::object& profile_spec,
                                    const json::object& template_spec,
                                    std::vector<FieldCause>* causes) {
  std::map<std::string, const json::object*> declared;
  if (const json::value* vars = FindPath(template_spec, "variables"); vars && vars->is_array())
    for (const auto& v : vars->get_array())
      if (v.is_object()) declared[GetString(v.get_object(), "name")] = &v.get_object();
  const json::value* rules = FindPath(profile_spec, "variables");
  if (!rules || !rules->is_array()) return;
  for (size_t i = 0; i < rules->get_array().size(); ++i) {
    const auto& r = rules->get_array()[i];
    if (!r.is_object()) continue;
    std::string name = GetString(r.get_object(), "name");
    std::string path = "spec.variables[" + std::to_string(i) + "]";
    auto it = declared.find(name);
    if (it == declared.end()) {
      std::vector<std::string> names;
      for (const auto& d : declared) names.push_back(d.first);
      causes->push_back({path + ".name",
                         "the template declares no variable \"" + name + "\"" +
                             (names.empty() ? "" : " (it declares " + Quoted(names) + ")"),
                         "FieldValueNotFound"});
      continue;
    }
    std::string type = GetString(*it->second, "type", "string");
    auto enum_values = Strings(FindPath(*it->second, "allowedValues"));
    bool sensitive = GetBool(*it->second, "sensitive") || GetBool(r.get_object(), "sensitive");
    std::vector<std::string> values = Strings(FindPath(r.get_object(), "allowedValues"));
    if (r.get_object().contains("default")) values.push_back(GetString(r.get_object(), "default"));
    for (const auto& value : values)
      if (auto err = TypeError(type, value, enum_values, sensitive))
        causes->push_back({path, "variable \"" + name + "\": " + *err});
  }
}

std::map<std::string, ResolvedVariable> ResolveVariables(const json::object& template_spec,
                                                         const json::object& profile_spec,
                                                         const json::object& instance_variables,
                                                         std::vector<FieldCause>* causes) {
  std::map<std::string, ResolvedVariable> out;
  std::map<std::string, const json::object*> rules;
  if (const json::value* v = FindPath(profile_spec, "variables"); v && v->is_array())
    for (const auto& r : v->get_array())
      if (r.is_object()) rules[GetString(r.get_object(), "name")] = &r.get_object();

  std::set<std::string> declared;
  const json::value* decls = FindPath(template_spec, "variables");
  if (decls && decls->is_array()) {
    for (const auto& d : decls->get_array()) {
      if (!d.is_object()) continue;
      const auto& decl = d.get_object();
      std::string name = GetString(decl, "name");
      declared.insert(name);
      std::string type = GetString(decl, "type", "string");
      auto enum_values = Strings(FindPath(decl, "allowedValues"));
      const json::object* rule = rules.count(name) ? rules[name] : nullptr;
      std::string path = "spec.variables." + name;

      std::optional<std::string> value;
      if (decl.contains("default")) value = GetString(decl, "default");
      if (rule && rule->contains("default")) value = GetString(*rule, "default");
      bool required = (decl.contains("required") && decl.at("required").is_bool() &&
                       decl.at("required").get_bool()) ||
                      (rule && rule->contains("required") && rule->at("required").is_bool() &&
                       rule->at("required").get_bool());
      bool sensitive = (decl.contains("sensitive") && decl.at("sensitive").is_bool() &&
                        decl.at("sensitive").get_bool()) ||
                       (rule && rule->contains("sensitive") && rule->at("sensitive").is_bool() &&
                        rule->at("sensitive").get_bool());

      auto given = instance_variables.find(name);
      if (given != instance_variables.end()) {
        std::string v = given->value().is_string()   ? std::string(given->value().get_string())
                        : given->value().is_number() ? NumberText(given->value())
                                                     : json::serialize(given->value());
        std::string policy = rule ? GetString(*rule, "override", "allowed") : "allowed";
        if (policy == "notallowed") {
          causes->push_back(
              {path, "Forbidden: the profile does not allow overriding variable \"" + name + "\"",
               "FieldValueForbidden"});
        } else if (policy == "restricted" &&
                   !Contains(Strings(FindPath(*rule, "allowedValues")), v)) {
          causes->push_back({path,
                             "Unsupported value: " + Shown(v, sensitive) + ": supported values: " +
                                 Quoted(Strings(FindPath(*rule, "allowedValues"))),
                             "FieldValueNotSupported"});
        } else if (auto err = TypeError(type, v, enum_values, sensitive)) {
          causes->push_back({path, "Invalid value: " + *err});
        } else {
          value = v;
        }
      }
      if (!value && required) {
        causes->push_back({path, "Required value: variable \"" + name + "\" has no default",
                           "FieldValueRequired"});
        continue;
      }
      if (value) out[name] = ResolvedVariable{*value, sensitive};
    }
  }
  for (const auto& kv : instance_variables) {
    std::string name(kv.key());
    if (!declared.count(name)) {
      std::vector<std::string> names(declared.begin(), declared.end());
      causes->push_back({"spec.variables." + name,
                         "Not found: the profile has no variable \"" + name + "\"" +
                             (names.empty() ? "" : " (it has " + Quoted(names) + ")"),
                         "FieldValueNotFound"});
    }
  }
  return out;
}

void NormalizeVariableValues(json::object& variables) {
  for (auto& kv : variables) {
    if (kv.value().is_string()) continue;
    if (kv.value().is_bool()) {
      kv.value() = kv.value().get_bool() ? "true" : "false";
    } else if (kv.value().is_number()) {
      kv.value() = NumberText(kv.value());
    }
  }
}

bool SharedWith(const json::object& obj, const std::string& ns) {
  std::string mode = GetString(obj, "spec.sharing.mode", "None");
  if (mode == "All") return true;
  if (mode != "Selected") return false;
  if (const json::value* p = FindPath(obj, "spec.sharing.projects"); p && p->is_array())
    for (const auto& e : p->get_array())
      if (e.is_string() && e.get_string() == ns) return true;
  return false;
}

}  // namespace gantry::model
