#include "drivers/local/local_config.h"

#include <cctype>
#include <cmath>
#include <functional>
#include <set>

namespace gantry::drivers::local {
namespace {

namespace json = boost::json;

absl::Status Bad(std::string message) { return absl::FailedPreconditionError(std::move(message)); }

std::string Quote(std::string_view s) { return json::serialize(json::value(json::string(s))); }

const char* TypeName(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      return "a number";
    case json::kind::string:
      return "a string";
    case json::kind::array:
      return "a list";
    case json::kind::object:
      return "an object";
  }
  return "a value";
}

// An integer, whichever way the JSON (or YAML converted to JSON) spelled it.
bool AsInt(const json::value& v, long long* out) {
  if (v.is_int64()) {
    *out = v.get_int64();
    return true;
  }
  if (v.is_uint64() && v.get_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    *out = static_cast<long long>(v.get_uint64());
    return true;
  }
  if (v.is_double() && std::isfinite(v.get_double()) &&
      std::floor(v.get_double()) == v.get_double() && std::fabs(v.get_double()) < 1e15) {
    *out = static_cast<long long>(v.get_double());
    return true;
  }
  return false;
}

// A list of strings at `field` (relative); false on a problem.
bool StringList(const json::value& v, const std::string& field, std::vector<std::string>* out,
                ConfigProblems* problems) {
  const std::string full = problems->Full(field);
  if (!v.is_array()) {
    problems->Add(field, full + " must be a list of strings, not " + TypeName(v));
    return false;
  }
  const json::array& a = v.get_array();
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_string()) {
      std::string at = "[" + std::to_string(i) + "]";
      problems->Add(field + at, full + at + " must be a string, not " + TypeName(a[i]));
      return false;
    }
    out->emplace_back(a[i].get_string());
  }
  return true;
}

// Every key of `o` (at `field`, relative; "" for the configuration itself) is `known`;
// false when one is not.
bool CheckKeys(const json::object& o, const std::string& field,
               std::initializer_list<std::string_view> known, ConfigProblems* problems) {
  bool ok = true;
  for (const auto& kv : o) {
    bool found = false;
    for (auto k : known) found = found || kv.key() == k;
    if (found) continue;
    std::string list;
    for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    std::string at = (field.empty() ? "" : field + ".") + std::string(kv.key());
    problems->Add(at, problems->Full(at) + " is not a known field (known: " + list + ")",
                  "FieldValueNotSupported");
    ok = false;
  }
  return ok;
}

bool ValidPortName(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  return true;
}

bool ValidEnvName(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

}  // namespace

std::string_view RestartPolicyName(RestartPolicy policy) {
  switch (policy) {
    case RestartPolicy::kAlways:
      return "Always";
    case RestartPolicy::kOnFailure:
      return "OnFailure";
    case RestartPolicy::kNever:
      return "Never";
  }
  return "OnFailure";
}

std::string PortEnvName(std::string_view name) {
  std::string out = "GANTRY_PORT_";
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
  return out;
}

namespace {

// The sections of spec.local, in the order a deploy checks them: each records its problems
// and fills its part of `c`; the first problem recorded is the one a deploy refuses with.
void CheckCommand(const json::object& config, LocalConfig* c, ConfigProblems* problems) {
  const std::string p = problems->prefix();
  const json::value* command = config.if_contains("command");
  if (!command) {
    problems->Add("command",
                  p + ".command is required: the program to run and its arguments, e.g. "
                      "[\"python3\", \"-m\", \"http.server\"]",
                  "FieldValueRequired");
    return;
  }
  if (!StringList(*command, "command", &c->command, problems)) return;
  if (c->command.empty() || c->command[0].empty())
    problems->Add("command", p + ".command must name a program to run, e.g. [\"python3\", "
                                 "\"-m\", \"http.server\"]");
}

void CheckEnv(const json::value& env, LocalConfig* c, ConfigProblems* problems) {
  const std::string p = problems->prefix();
  if (!env.is_object()) {
    problems->Add("env", p + ".env must be an object of NAME: value, not " + TypeName(env));
    return;
  }
  for (const auto& kv : env.get_object()) {
    std::string name(kv.key());
    if (!ValidEnvName(name)) {
      problems->Add("env", p + ".env: " + Quote(name) +
                               " is not a valid variable name (letters, digits and '_', not "
                               "starting with a digit)");
      continue;
    }
    const json::value& v = kv.value();
    std::string value;
    if (v.is_string()) {
      value = std::string(v.get_string());
    } else if (v.is_number() || v.is_bool()) {
      value = json::serialize(v);
    } else {
      problems->Add("env." + name, p + ".env." + name +
                                       " must be a string, number or boolean, not " + TypeName(v));
      continue;
    }
    c->env.emplace_back(std::move(name), std::move(value));
  }
}

void CheckPort(const json::value& port, const std::string& f, std::set<std::string>* env_names,
               LocalConfig* c, ConfigProblems* problems) {
  const std::string full = problems->Full(f);
  if (!port.is_object()) {
    problems->Add(f, full + " must be an object like {name: http}, not " + TypeName(port));
    return;
  }
  const json::object& po = port.get_object();
  if (!CheckKeys(po, f, {"name"}, problems)) return;
  const json::value* name = po.if_contains("name");
  if (!name) {
    problems->Add(f + ".name", full + ".name is required", "FieldValueRequired");
    return;
  }
  if (!name->is_string()) {
    problems->Add(f + ".name", full + ".name must be a string, not " + TypeName(*name));
    return;
  }
  std::string n(name->get_string());
  if (!ValidPortName(n)) {
    problems->Add(f + ".name", full + ".name " + Quote(n) +
                                   " is not a valid port name (1 to 32 letters, digits, '-' "
                                   "or '_')");
    return;
  }
  if (!env_names->insert(PortEnvName(n)).second) {
    problems->Add(f + ".name", full + ".name " + Quote(n) +
                                   " clashes with another port (both would be " + PortEnvName(n) +
                                   ")");
    return;
  }
  c->ports.push_back(std::move(n));
}

// False when a port has a problem (the readiness check then does not guess which it was).
bool CheckPorts(const json::value& ports, LocalConfig* c, ConfigProblems* problems) {
  size_t before = problems->size();
  if (!ports.is_array()) {
    problems->Add("ports", problems->Full("ports") + " must be a list like [{name: http}], not " +
                               TypeName(ports));
    return false;
  }
  std::set<std::string> env_names;
  const json::array& a = ports.get_array();
  for (size_t i = 0; i < a.size(); ++i)
    CheckPort(a[i], "ports[" + std::to_string(i) + "]", &env_names, c, problems);
  return problems->size() == before;
}

// The probe's kind, path and port name as written; false on a problem.
bool CheckProbe(const json::object& ro, Readiness* r, ConfigProblems* problems) {
  const std::string f = problems->Full("readiness");
  const json::value* http = ro.if_contains("httpPath");
  const json::value* tcp = ro.if_contains("tcpPort");
  const json::value* port = ro.if_contains("port");
  auto bad = [&](std::string field, std::string message) {
    problems->Add(std::move(field), std::move(message));
    return false;
  };
  if (http && tcp) return bad("readiness", f + " takes httpPath or tcpPort, not both");
  if (tcp && port)
    return bad("readiness.port", f + ".port goes with httpPath; tcpPort already names the port");
  if (http) {
    if (!http->is_string())
      return bad("readiness.httpPath", f + ".httpPath must be a string, not " + TypeName(*http));
    r->kind = Readiness::Kind::kHttp;
    r->http_path = std::string(http->get_string());
    if (r->http_path.empty() || r->http_path[0] != '/')
      return bad("readiness.httpPath",
                 f + ".httpPath must start with '/' (got " + Quote(r->http_path) + ")");
    for (char ch : r->http_path)
      if (static_cast<unsigned char>(ch) <= ' ' || ch == 0x7f)
        return bad("readiness.httpPath",
                   f + ".httpPath must not contain spaces or control characters");
    if (port && !port->is_string())
      return bad("readiness.port", f + ".port must be a port name, not " + TypeName(*port));
    if (port) r->port = std::string(port->get_string());
  } else if (tcp) {
    if (!tcp->is_string())
      return bad("readiness.tcpPort", f + ".tcpPort must be a port name, not " + TypeName(*tcp));
    r->kind = Readiness::Kind::kTcp;
    r->port = std::string(tcp->get_string());
  } else if (port) {
    return bad("readiness", f + " needs httpPath or tcpPort");
  }
  return true;
}

// The probe's port must be one of the declared ports (the first by default).
void CheckProbePort(LocalConfig* c, ConfigProblems* problems) {
  const std::string f = problems->Full("readiness");
  Readiness& r = c->readiness;
  std::string which = r.kind == Readiness::Kind::kHttp ? "port" : "tcpPort";
  if (c->ports.empty()) {
    problems->Add("readiness", f + " needs a port to check: declare it in " +
                                   problems->Full("ports") + ", e.g. [{name: http}]");
    return;
  }
  if (r.port.empty()) r.port = c->ports[0];
  std::string names;
  bool known = false;
  for (const auto& n : c->ports) {
    known = known || n == r.port;
    names += (names.empty() ? "" : ", ") + n;
  }
  if (!known)
    problems->Add("readiness." + which, f + "." + which + " " + Quote(r.port) + " is not one of " +
                                            problems->Full("ports") + " (" + names + ")");
}

void CheckReadiness(const json::value& readiness, bool ports_ok, LocalConfig* c,
                    ConfigProblems* problems) {
  const std::string f = problems->Full("readiness");
  if (!readiness.is_object()) {
    problems->Add("readiness", f + " must be an object like {httpPath: /, port: http}, not " +
                                   TypeName(readiness));
    return;
  }
  const json::object& ro = readiness.get_object();
  if (!CheckKeys(ro, "readiness", {"httpPath", "tcpPort", "port", "timeoutSeconds"}, problems))
    return;
  if (!CheckProbe(ro, &c->readiness, problems)) return;
  if (const json::value* t = ro.if_contains("timeoutSeconds")) {
    long long secs = 0;
    if (!AsInt(*t, &secs) || secs < 1 || secs > 86400) {
      problems->Add("readiness.timeoutSeconds",
                    f + ".timeoutSeconds must be a whole number of seconds from 1 to 86400");
      return;
    }
    c->readiness.timeout = std::chrono::seconds(secs);
  }
  if (c->readiness.kind != Readiness::Kind::kNone && ports_ok) CheckProbePort(c, problems);
}

void CheckRestarts(const json::object& config, LocalConfig* c, ConfigProblems* problems) {
  const std::string p = problems->prefix();
  if (const json::value* rp = config.if_contains("restartPolicy")) {
    std::string v = rp->is_string() ? std::string(rp->get_string()) : json::serialize(*rp);
    if (v == "Always") {
      c->restart_policy = RestartPolicy::kAlways;
    } else if (v == "OnFailure") {
      c->restart_policy = RestartPolicy::kOnFailure;
    } else if (v == "Never") {
      c->restart_policy = RestartPolicy::kNever;
    } else {
      problems->Add("restartPolicy",
                    p + ".restartPolicy must be one of Always, OnFailure, Never (got " + v + ")",
                    "FieldValueNotSupported");
    }
  }
  if (const json::value* mr = config.if_contains("maxRestarts")) {
    long long n = 0;
    if (!AsInt(*mr, &n) || n < 0 || n > 1000000)
      problems->Add("maxRestarts", p + ".maxRestarts must be a whole number from 0 to 1000000");
    else
      c->max_restarts = static_cast<int>(n);
  }
  if (const json::value* t = config.if_contains("timeoutSeconds")) {
    long long n = 0;
    if (!AsInt(*t, &n) || n < 1)
      problems->Add("timeoutSeconds", p + ".timeoutSeconds must be a positive whole number");
  }
}

}  // namespace

LocalConfig CheckLocalConfig(const json::object& config, ConfigProblems* problems) {
  LocalConfig c;
  CheckKeys(config, "",
            {"command", "args", "env", "workingDir", "ports", "readiness", "restartPolicy",
             "maxRestarts", "timeoutSeconds"},
            problems);
  CheckCommand(config, &c, problems);
  if (const json::value* args = config.if_contains("args"))
    StringList(*args, "args", &c.args, problems);
  if (const json::value* env = config.if_contains("env")) CheckEnv(*env, &c, problems);
  if (const json::value* wd = config.if_contains("workingDir")) {
    if (wd->is_string())
      c.working_dir = std::string(wd->get_string());
    else
      problems->Add("workingDir",
                    problems->Full("workingDir") + " must be a string, not " + TypeName(*wd));
  }
  bool ports_ok = true;
  if (const json::value* ports = config.if_contains("ports"))
    ports_ok = CheckPorts(*ports, &c, problems);
  if (const json::value* r = config.if_contains("readiness"))
    CheckReadiness(*r, ports_ok, &c, problems);
  CheckRestarts(config, &c, problems);
  return c;
}

absl::StatusOr<LocalConfig> ParseLocalConfig(const json::object& config) {
  ConfigProblems problems("spec.local");
  LocalConfig c = CheckLocalConfig(config, &problems);
  if (!problems.ok()) return problems.FirstAsStatus();
  return c;
}

namespace {

// ExpandVariables over `lookup` (nullptr: the variable is not set).
absl::StatusOr<std::string> Expand(
    std::string_view text, const std::function<const std::string*(const std::string&)>& lookup,
    std::string_view field) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, 3, "$${") == 0) {
      out += "${";
      i += 3;
      continue;
    }
    if (text.compare(i, 2, "${") != 0) {
      out += text[i++];
      continue;
    }
    size_t close = text.find('}', i + 2);
    if (close == std::string_view::npos)
      return Bad(std::string(field) +
                 ": \"${\" is not closed by \"}\" (write \"$${\" for a literal \"${\")");
    std::string name(text.substr(i + 2, close - i - 2));
    const std::string* value = lookup(name);
    if (!value)
      return Bad(std::string(field) + ": ${" + name + "} is not set in the workload's environment");
    out += *value;
    i = close + 1;
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> ExpandVariables(std::string_view text,
                                            const std::map<std::string, std::string>& env,
                                            std::string_view field) {
  return Expand(
      text,
      [&env](const std::string& name) -> const std::string* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : &it->second;
      },
      field);
}

void CheckVariableSyntax(const LocalConfig& c, ConfigProblems* problems) {
  static const std::string kAnyValue;
  auto check = [&](const std::string& text, const std::string& field) {
    auto expanded = Expand(
        text, [](const std::string&) { return &kAnyValue; }, problems->Full(field));
    if (!expanded.ok()) problems->Add(field, std::string(expanded.status().message()));
  };
  for (size_t i = 0; i < c.command.size(); ++i)
    check(c.command[i], "command[" + std::to_string(i) + "]");
  for (size_t i = 0; i < c.args.size(); ++i) check(c.args[i], "args[" + std::to_string(i) + "]");
  for (const auto& [name, value] : c.env) check(value, "env." + name);
}

json::object LocalConfigSchema() {
  json::object env_value{
      {"description", "A string, number or boolean (numbers and booleans as JSON writes them)."},
      {"anyOf", json::array{json::object{{"type", "string"}}, json::object{{"type", "number"}},
                            json::object{{"type", "boolean"}}}}};
  json::object port_name = SchemaOf("string", "Port name: 1 to 32 letters, digits, '-' or '_'.");
  port_name["pattern"] = "^[A-Za-z0-9_-]{1,32}$";
  json::object ports = SchemaOf("array",
                                "TCP ports allocated for the workload, given to it as "
                                "GANTRY_PORT_<NAME> (and PORT for the first).");
  ports["items"] = ObjectSchema("A port.", {{"name", port_name}}, {"name"});
  json::object http_path = SchemaOf("string", "HTTP GET this path; ready on a 2xx or 3xx.");
  http_path["pattern"] = "^/[!-~]*$";
  json::object probe_timeout =
      SchemaOf("integer", "How long the workload may take to become ready (default 60).");
  probe_timeout["minimum"] = 1;
  probe_timeout["maximum"] = 86400;
  json::object policy =
      SchemaOf("string", "When the workload is restarted after it exits (default OnFailure).");
  policy["enum"] = json::array{"Always", "OnFailure", "Never"};
  json::object max_restarts =
      SchemaOf("integer", "Restarts in a row before CrashLoopBackOff (default 5).");
  max_restarts["minimum"] = 0;
  max_restarts["maximum"] = 1000000;
  json::object timeout = SchemaOf("integer", "A deploy taking longer fails with reason Timeout.");
  timeout["minimum"] = 1;
  json::object command = StringListSchema(
      "The program to run and its arguments; ${VAR} expands from the workload's environment.");
  command["minItems"] = 1;
  json::object properties{
      {"command", std::move(command)},
      {"args", StringListSchema("More arguments after command; ${VAR} expands too.")},
      {"env", MapSchema("Extra environment variables; values may use ${VAR}.", env_value)},
      {"workingDir", SchemaOf("string",
                              "Working directory; default: the instance's state "
                              "directory.")},
      {"ports", std::move(ports)},
      {"readiness",
       ObjectSchema("When the workload is ready: httpPath (with port) or tcpPort; default: as "
                    "soon as it started.",
                    {{"httpPath", std::move(http_path)},
                     {"port", SchemaOf("string",
                                       "The port of httpPath: a name from ports; "
                                       "default the first.")},
                     {"tcpPort", SchemaOf("string",
                                          "Ready once this port (a name from ports) "
                                          "accepts connections.")},
                     {"timeoutSeconds", std::move(probe_timeout)}})},
      {"restartPolicy", std::move(policy)},
      {"maxRestarts", std::move(max_restarts)},
      {"timeoutSeconds", std::move(timeout)}};
  return ObjectSchema(
      "Configuration of the local driver: one supervised process on gantryd's "
      "host.",
      std::move(properties), {"command"});
}

}  // namespace gantry::drivers::local
