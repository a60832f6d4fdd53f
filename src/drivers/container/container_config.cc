#include "drivers/container/container_config.h"

#include <cctype>
#include <cmath>
#include <set>

namespace gantry::drivers::container {
namespace {

namespace json = boost::json;

constexpr std::string_view kKnown[] = {"image",   "command",    "args",
                                       "env",     "workingDir", "ports",
                                       "volumes", "readiness",  "timeoutSeconds"};

std::string Quote(std::string_view s) { return json::serialize(json::value(json::string(s))); }

bool AsPort(const json::value& v, int* out) {
  double d = 0;
  if (v.is_int64())
    d = static_cast<double>(v.get_int64());
  else if (v.is_uint64())
    d = static_cast<double>(v.get_uint64());
  else if (v.is_double())
    d = v.get_double();
  else
    return false;
  if (!std::isfinite(d) || std::floor(d) != d || d < 1 || d > 65535) return false;
  *out = static_cast<int>(d);
  return true;
}

void CheckKnownKeys(const json::object& config, ConfigProblems* problems) {
  std::string list;
  for (auto k : kKnown) list += (list.empty() ? "" : ", ") + std::string(k);
  for (const auto& kv : config) {
    bool known = false;
    for (auto k : kKnown) known = known || kv.key() == k;
    if (!known)
      problems->Add(std::string(kv.key()),
                    problems->Full(kv.key()) + " is not a known field (known: " + list + ")",
                    "FieldValueNotSupported");
  }
}

void CheckImage(const json::object& config, ContainerConfig* c, ConfigProblems* problems) {
  const json::value* image = config.if_contains("image");
  if (!image) {
    problems->Add("image",
                  problems->Full("image") +
                      " is required: the image to run, e.g. \"docker.io/library/python:3.12\" "
                      "or \"${image}\" for the template's image variable",
                  "FieldValueRequired");
    return;
  }
  if (!image->is_string() || image->get_string().empty() ||
      image->get_string().find_first_of(" \t\n") != json::string::npos) {
    problems->Add("image", problems->Full("image") +
                               " must be an image reference without spaces, e.g. "
                               "\"docker.io/library/python:3.12\"");
    return;
  }
  c->image = std::string(image->get_string());
}

// ports[i].containerPort (the names are the local checker's); fills c->ports by index.
void CheckContainerPorts(const json::value& ports, ContainerConfig* c, ConfigProblems* problems) {
  if (!ports.is_array()) return;  // the local checker reports it
  const json::array& a = ports.get_array();
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_object()) continue;
    const std::string f = "ports[" + std::to_string(i) + "].containerPort";
    ContainerPort port;
    if (const json::value* n = a[i].get_object().if_contains("name"); n && n->is_string())
      port.name = std::string(n->get_string());
    const json::value* cp = a[i].get_object().if_contains("containerPort");
    if (!cp) {
      problems->Add(f,
                    problems->Full(f) +
                        " is required: the port the workload listens on inside "
                        "the container, e.g. 8888",
                    "FieldValueRequired");
    } else if (!AsPort(*cp, &port.container_port)) {
      problems->Add(f, problems->Full(f) + " must be a whole number from 1 to 65535");
    }
    c->ports.push_back(std::move(port));
  }
}

bool ValidVolumeName(std::string_view name) {
  if (name.empty() || name.size() > 40 || !std::isalnum(static_cast<unsigned char>(name[0])))
    return false;
  for (char ch : name)
    if (!(std::islower(static_cast<unsigned char>(ch)) ||
          std::isdigit(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-'))
      return false;
  return true;
}

bool ValidMountPath(std::string_view path) {
  return path.size() > 1 && path[0] == '/' && path.find(':') == std::string_view::npos &&
         path.find(',') == std::string_view::npos && path.find("..") == std::string_view::npos;
}

void CheckVolume(const json::value& v, const std::string& f, std::set<std::string>* names,
                 std::set<std::string>* paths, ContainerConfig* c, ConfigProblems* problems) {
  const std::string full = problems->Full(f);
  if (!v.is_object()) {
    problems->Add(f, full + " must be an object like {name: data, mountPath: /data}");
    return;
  }
  const json::object& o = v.get_object();
  for (const auto& kv : o)
    if (kv.key() != "name" && kv.key() != "mountPath")
      problems->Add(
          f + "." + std::string(kv.key()),
          full + "." + std::string(kv.key()) + " is not a known field (known: name, mountPath)",
          "FieldValueNotSupported");
  ContainerVolume vol;
  const json::value* name = o.if_contains("name");
  const json::value* path = o.if_contains("mountPath");
  if (!name || !name->is_string() || !ValidVolumeName(name->get_string()))
    problems->Add(f + ".name", full +
                                   ".name must be 1 to 40 lower-case letters, digits, '_', '.' "
                                   "or '-', starting with a letter or digit");
  else if (!names->insert(vol.name = std::string(name->get_string())).second)
    problems->Add(f + ".name", full + ".name " + Quote(vol.name) + " is used twice",
                  "FieldValueDuplicate");
  if (!path || !path->is_string() || !ValidMountPath(path->get_string()))
    problems->Add(f + ".mountPath", full +
                                        ".mountPath must be an absolute path inside the "
                                        "container other than / (no ':', ',' or '..')");
  else if (!paths->insert(vol.mount_path = std::string(path->get_string())).second)
    problems->Add(f + ".mountPath", full + ".mountPath " + Quote(vol.mount_path) + " is used twice",
                  "FieldValueDuplicate");
  c->volumes.push_back(std::move(vol));
}

void CheckVolumes(const json::value& volumes, ContainerConfig* c, ConfigProblems* problems) {
  if (!volumes.is_array()) {
    problems->Add("volumes", problems->Full("volumes") +
                                 " must be a list like [{name: data, mountPath: /data}]");
    return;
  }
  std::set<std::string> names, paths;
  const json::array& a = volumes.get_array();
  for (size_t i = 0; i < a.size(); ++i)
    CheckVolume(a[i], "volumes[" + std::to_string(i) + "]", &names, &paths, c, problems);
}

void CheckWorkingDir(const json::object& config, ContainerConfig* c, ConfigProblems* problems) {
  const json::value* wd = config.if_contains("workingDir");
  if (!wd) return;
  if (!wd->is_string() || wd->get_string().empty() || wd->get_string()[0] != '/')
    problems->Add("workingDir",
                  problems->Full("workingDir") + " must be an absolute path inside the container");
  else
    c->working_dir = std::string(wd->get_string());
}

// What the local checker reads: command (a stand-in when the image's is used), args, env,
// ports without containerPort, readiness, timeoutSeconds.
json::object LocalView(const json::object& config) {
  json::object view;
  view["command"] = config.contains("command") ? config.at("command") : json::array{"image"};
  for (const char* key : {"args", "env", "readiness", "timeoutSeconds"})
    if (const json::value* v = config.if_contains(key)) view[key] = *v;
  if (const json::value* ports = config.if_contains("ports")) {
    json::value copy = *ports;
    if (copy.is_array())
      for (auto& p : copy.get_array())
        if (p.is_object()) p.get_object().erase("containerPort");
    view["ports"] = std::move(copy);
  }
  return view;
}

}  // namespace

ContainerConfig CheckContainerConfig(const json::object& config, ConfigProblems* problems) {
  ContainerConfig c;
  CheckKnownKeys(config, problems);
  CheckImage(config, &c, problems);
  local::LocalConfig shared = local::CheckLocalConfig(LocalView(config), problems);
  if (const json::value* ports = config.if_contains("ports"))
    CheckContainerPorts(*ports, &c, problems);
  CheckWorkingDir(config, &c, problems);
  if (const json::value* volumes = config.if_contains("volumes"))
    CheckVolumes(*volumes, &c, problems);
  if (!problems->ok()) return c;
  if (config.contains("command")) c.command = shared.command;
  c.args = shared.args;
  c.env = shared.env;
  c.readiness = shared.readiness;
  local::CheckVariableSyntax(shared, problems);
  for (const char* field : {"image", "workingDir"}) {
    const std::string& text = std::string_view(field) == "image" ? c.image : c.working_dir;
    auto expanded = local::ExpandVariables(text, {}, problems->Full(field));
    if (!expanded.ok() && expanded.status().message().find("is not closed") != std::string::npos)
      problems->Add(field, std::string(expanded.status().message()));
  }
  return c;
}

absl::StatusOr<ContainerConfig> ParseContainerConfig(const json::object& config) {
  ConfigProblems problems("spec.container");
  ContainerConfig c = CheckContainerConfig(config, &problems);
  if (!problems.ok()) return problems.FirstAsStatus();
  return c;
}

json::object ContainerConfigSchema() {
  json::object schema = local::LocalConfigSchema();
  json::object& props = schema["properties"].as_object();
  props.erase("restartPolicy");
  props.erase("maxRestarts");
  props["image"] = SchemaOf("string",
                            "The image to run; pulled when missing. ${VAR} expands from the "
                            "instance's variables, e.g. \"${image}\".");
  props["command"].as_object()["description"] =
      "The entrypoint and its arguments; default: the image's entrypoint.";
  props["workingDir"] =
      SchemaOf("string", "Working directory inside the container; default: the image's.");
  json::object port_number = SchemaOf("integer", "The port the workload listens on inside.");
  port_number["minimum"] = 1;
  port_number["maximum"] = 65535;
  json::object& port = props["ports"].as_object()["items"].as_object();
  port["properties"].as_object()["containerPort"] = std::move(port_number);
  port["required"] = json::array{"name", "containerPort"};
  props["ports"].as_object()["description"] =
      "Ports published on a host port of gantry's range, given to the workload as "
      "GANTRY_PORT_<NAME> (and PORT for the first).";
  json::object volume_name = SchemaOf("string", "Volume name, unique in the template.");
  volume_name["pattern"] = "^[a-z0-9][a-z0-9_.-]{0,39}$";
  json::object volumes = SchemaOf("array",
                                  "Named volumes, one per instance each: kept by stop and "
                                  "start, removed by destroy.");
  volumes["items"] =
      ObjectSchema("A volume.",
                   {{"name", std::move(volume_name)},
                    {"mountPath", SchemaOf("string", "Where it is mounted: an absolute path.")}},
                   {"name", "mountPath"});
  props["volumes"] = std::move(volumes);
  schema["required"] = json::array{"image"};
  schema["description"] =
      "Configuration of the container driver: one container run by Podman on gantryd's host.";
  return schema;
}

}  // namespace gantry::drivers::container
