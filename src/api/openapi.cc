#include "api/openapi.h"

#include <algorithm>

#include "model/schema.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

json::object SchemaOf(const model::Field& f) {
  json::object s;
  if (!f.description.empty()) s["description"] = f.description;
  switch (f.type) {
    case model::FieldType::kString:
      s["type"] = "string";
      if (!f.enum_values.empty()) {
        json::array e;
        for (const auto& v : f.enum_values) e.push_back(json::string(v));
        s["enum"] = std::move(e);
      }
      break;
    case model::FieldType::kInteger:
      s["type"] = "integer";
      s["format"] = "int64";
      break;
    case model::FieldType::kNumber:
      s["type"] = "number";
      break;
    case model::FieldType::kBoolean:
      s["type"] = "boolean";
      break;
    case model::FieldType::kArray:
      s["type"] = "array";
      s["items"] = SchemaOf(f.children[0]);
      // Server-side apply owns and replaces a list as a whole (model/managed_fields.h).
      s["x-kubernetes-list-type"] = "atomic";
      break;
    case model::FieldType::kStringMap:
      s["type"] = "object";
      s["additionalProperties"] = json::object{{"type", "string"}};
      break;
    case model::FieldType::kScalarMap:
      s["type"] = "object";
      s["additionalProperties"] = json::object{{"x-kubernetes-int-or-string", true}};
      break;
    case model::FieldType::kFreeObject:
      s["type"] = "object";
      s["x-kubernetes-preserve-unknown-fields"] = true;
      break;
    case model::FieldType::kObject: {
      s["type"] = "object";
      s["x-kubernetes-map-type"] = "granular";
      json::object props;
      json::array required;
      for (const auto& c : f.children) {
        props[c.name] = SchemaOf(c);
        if (c.required) required.push_back(json::string(c.name));
      }
      s["properties"] = std::move(props);
      if (!required.empty()) s["required"] = std::move(required);
      s["additionalProperties"] = false;
      break;
    }
  }
  return s;
}

json::object ObjectMeta() {
  json::object props;
  for (const char* f : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"})
    props[f] = json::object{{"type", "string"}};
  props["generation"] = json::object{{"type", "integer"}, {"format", "int64"}};
  props["labels"] =
      json::object{{"type", "object"}, {"additionalProperties", json::object{{"type", "string"}}}};
  props["annotations"] = props["labels"];
  json::object entry_props;
  for (const char* f : {"manager", "operation", "apiVersion", "time", "fieldsType", "subresource"})
    entry_props[f] = json::object{{"type", "string"}};
  entry_props["fieldsV1"] = json::object{{"type", "object"}};
  props["managedFields"] = json::object{
      {"type", "array"},
      {"description", "Which manager owns which fields (server-side apply)."},
      {"items", json::object{{"type", "object"}, {"properties", std::move(entry_props)}}}};
  return json::object{{"type", "object"}, {"properties", std::move(props)}};
}

json::object Gvk(const std::string& kind) {
  return json::object{{"group", model::kGroup}, {"version", model::kVersion}, {"kind", kind}};
}

// The query parameters writes accept (see docs/api.md: fieldValidation always acts as
// Strict, fieldManager names the writer in managedFields, dryRun
// is refused).
json::array WriteParameters() {
  json::array out;
  for (const char* name : {"dryRun", "fieldManager", "fieldValidation"})
    out.push_back(json::object{{"name", name},
                               {"in", "query"},
                               {"schema", json::object{{"type", "string"}}},
                               {"uniqueItems", true}});
  return out;
}

}  // namespace

json::object OpenApiIndex() {
  return json::object{
      {"paths",
       json::object{{"apis/paas.gantry.dev/v1",
                     json::object{{"serverRelativeURL", "/openapi/v3/apis/paas.gantry.dev/v1"}}}}}};
}

namespace {

// The spec schema of a kind, with the schema each driver publishes for its configuration in
// place of the kind's own for spec.<driver> (the values of spec.driver name the drivers).
json::object SpecSchemaOf(const model::KindInfo& k, const drivers::DriverRegistry& drivers) {
  json::object spec = SchemaOf(k.spec);
  auto driver_field = std::find_if(k.spec.children.begin(), k.spec.children.end(),
                                   [](const model::Field& f) { return f.name == "driver"; });
  if (driver_field == k.spec.children.end()) return spec;
  json::value* props = spec.if_contains("properties");
  if (!props || !props->is_object()) return spec;
  for (const std::string& name : driver_field->enum_values) {
    const drivers::Driver* d = drivers.Find(name);
    if (!d) continue;
    json::object schema = d->ConfigSchema();
    if (schema.empty()) continue;
    json::value* own = props->get_object().if_contains(name);
    if (!schema.contains("description") && own && own->is_object())
      if (const json::value* text = own->get_object().if_contains("description"))
        schema["description"] = *text;
    props->get_object()[name] = std::move(schema);
  }
  return spec;
}

}  // namespace

json::object OpenApiGroupDocument(const drivers::DriverRegistry& drivers) {
  json::object schemas;
  schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"] = ObjectMeta();
  json::object paths;
  const std::string base = "/apis/paas.gantry.dev/v1";
  for (const auto& k : model::AllKinds()) {
    std::string ref = "dev.gantry.paas.v1." + k.kind;
    json::object props{
        {"apiVersion", json::object{{"type", "string"}}},
        {"kind", json::object{{"type", "string"}}},
        {"metadata",
         json::object{
             {"$ref", "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}}},
        {"spec", SpecSchemaOf(k, drivers)},
        {"status", SchemaOf(k.status)}};
    schemas[ref] = json::object{{"type", "object"},
                                {"description", k.spec.description},
                                {"properties", std::move(props)},
                                {"x-kubernetes-group-version-kind", json::array{Gvk(k.kind)}}};
    schemas[ref + "List"] = json::object{
        {"type", "object"},
        {"properties",
         json::object{
             {"apiVersion", json::object{{"type", "string"}}},
             {"kind", json::object{{"type", "string"}}},
             {"metadata", json::object{{"type", "object"}}},
             {"items",
              json::object{{"type", "array"},
                           {"items", json::object{{"$ref", "#/components/schemas/" + ref}}}}}}},
        {"x-kubernetes-group-version-kind", json::array{Gvk(k.ListKind())}}};
    json::object obj_ref{{"$ref", "#/components/schemas/" + ref}};
    auto op = [&](const std::string& id, bool with_body, const std::string& list_or_obj) {
      json::object schema{{"$ref", "#/components/schemas/" + list_or_obj}};
      json::object content{{"application/json", json::object{{"schema", schema}}}};
      json::object ok{{"description", "OK"}, {"content", content}};
      // kubectl finds an operation's kind by this extension, and decides from the PATCH
      // operation's parameters whether the server validates fields (fieldValidation) and
      // from its body types which patch to send (merge patch: no strategic merge listed).
      json::object o{{"operationId", id},
                     {"responses", json::object{{"200", ok}}},
                     {"x-kubernetes-group-version-kind", Gvk(k.kind)}};
      bool write = with_body || id.rfind("patch", 0) == 0 || id.rfind("delete", 0) == 0;
      if (write && !k.read_only) o["parameters"] = WriteParameters();
      if (with_body)
        o["requestBody"] = json::object{
            {"content", json::object{{"application/json", json::object{{"schema", obj_ref}}}}}};
      if (id.rfind("patch", 0) == 0)
        o["requestBody"] = json::object{
            {"content",
             json::object{{"application/merge-patch+json",
                           json::object{{"schema", json::object{{"type", "object"}}}}},
                          {"application/json-patch+json",
                           json::object{{"schema", json::object{{"type", "array"}}}}},
                          {"application/apply-patch+yaml",
                           json::object{{"schema", json::object{{"type", "object"}}}}}}}};
      return o;
    };
    std::string coll =
        k.namespaced ? base + "/namespaces/{namespace}/" + k.plural : base + "/" + k.plural;
    paths[coll] = json::object{{"get", op("list" + k.kind, false, ref + "List")},
                               {"post", op("create" + k.kind, true, ref)}};
    paths[coll + "/{name}"] = json::object{{"get", op("read" + k.kind, false, ref)},
                                           {"put", op("replace" + k.kind, true, ref)},
                                           {"patch", op("patch" + k.kind, false, ref)},
                                           {"delete", op("delete" + k.kind, false, ref)}};
  }
  return json::object{{"openapi", "3.0.0"},
                      {"info", json::object{{"title", "Gantry"}, {"version", "v1"}}},
                      {"paths", std::move(paths)},
                      {"components", json::object{{"schemas", std::move(schemas)}}}};
}

json::object ApiGroup() {
  json::object gv{{"groupVersion", model::kApiVersion}, {"version", model::kVersion}};
  return json::object{{"kind", "APIGroup"},
                      {"apiVersion", "v1"},
                      {"name", model::kGroup},
                      {"versions", json::array{gv}},
                      {"preferredVersion", gv}};
}

json::object ApiGroupList() {
  json::object g = ApiGroup();
  g.erase("kind");
  g.erase("apiVersion");
  return json::object{{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", json::array{g}}};
}

json::object ApiResourceList() {
  json::array resources;
  for (const auto& k : model::AllKinds()) {
    json::array verbs;
    if (k.read_only) {
      verbs = {"get", "list", "watch"};
    } else {
      verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
    }
    json::array shorts;
    for (const auto& s : k.short_names) shorts.push_back(json::string(s));
    resources.push_back(json::object{{"name", k.plural},
                                     {"singularName", k.singular},
                                     {"namespaced", k.namespaced},
                                     {"kind", k.kind},
                                     {"verbs", std::move(verbs)},
                                     {"shortNames", std::move(shorts)},
                                     {"categories", json::array{"gantry"}}});
    if (k.versioned)
      resources.push_back(json::object{{"name", k.plural + "/revisions"},
                                       {"singularName", ""},
                                       {"namespaced", k.namespaced},
                                       {"kind", k.kind + "Revision"},
                                       {"verbs", json::array{"get", "list"}}});
  }
  return json::object{{"kind", "APIResourceList"},
                      {"apiVersion", "v1"},
                      {"groupVersion", model::kApiVersion},
                      {"resources", std::move(resources)}};
}

}  // namespace gantry::api
