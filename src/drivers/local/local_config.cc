#include "drivers/local/local_config.h"

#include <cctype>
#include <cmath>
#include <set>

namespace gantry::drivers::local {
namespace {

namespace json = boost::json;

absl::Status Bad(std::string message) { return absl::FailedPreconditionError(std::move(message)); }

std::string Quote(std::string_view s) { return json::serialize(json::value(json::string(s))); }

const char* TypeName(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return "a number";
    case json::kind::string: return "a string";
    case json::kind::array: return "a list";
    case json::kind::object: return "an object";
  }
  return "a value";
}

// An integer, whichever way the JSON (or YAML converted to JSON) spelled it.
bool AsInt(const json::value& v, long long* out) {
  if (v.is_int64()) { *out = v.get_int64(); return true; }
  if (v.is_uint64() && v.get_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    *out = static_cast<long long>(v.get_uint64());
    return true;
  }
  if (v.is_double() && std::isfinite(v.get_double()) && std::floor(v.get_double()) == v.get_double() &&
      std::fabs(v.get_double()) < 1e15) {
    *out = static_cast<long long>(v.get_double());
    return true;
  }
  return false;
}

absl::Status StringList(const json::value& v, const std::string& field, std::vector<std::string>* out) {
  if (!v.is_array()) return Bad(field + " must be a list of strings, not " + TypeName(v));
  const json::array& a = v.get_array();
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_string())
      return Bad(field + "[" + std::to_string(i) + "] must be a string, not " + TypeName(a[i]));
    out->emplace_back(a[i].get_string());
  }
  return absl::OkStatus();
}

absl::Status CheckKeys(const json::object& o, const std::string& field,
                       std::initializer_list<std::string_view> known) {
  for (const auto& kv : o) {
    bool ok = false;
    for (auto k : known) ok = ok || kv.key() == k;
    if (ok) continue;
    std::string list;
    for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    return Bad(field + "." + std::string(kv.key()) + " is not a known field (known: " + list + ")");
  }
  return absl::OkStatus();
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
    case RestartPolicy::kAlways: return "Always";
    case RestartPolicy::kOnFailure: return "OnFailure";
    case RestartPolicy::kNever: return "Never";
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

absl::StatusOr<LocalConfig> ParseLocalConfig(const json::object& config) {
  const std::string p = "spec.local";
  if (auto s = CheckKeys(config, p,
                         {"command", "args", "env", "workingDir", "ports", "readiness",
                          "restartPolicy", "maxRestarts", "timeoutSeconds"});
      !s.ok())
    return s;
  LocalConfig c;
  const json::value* command = config.if_contains("command");
  if (!command)
    return Bad(p + ".command is required: the program to run and its arguments, e.g. "
               "[\"python3\", \"-m\", \"http.server\"]");
  if (auto s = StringList(*command, p + ".command", &c.command); !s.ok()) return s;
  if (c.command.empty() || c.command[0].empty())
    return Bad(p + ".command must name a program to run, e.g. [\"python3\", \"-m\", \"http.server\"]");
  if (const json::value* args = config.if_contains("args"))
    if (auto s = StringList(*args, p + ".args", &c.args); !s.ok()) return s;

  if (const json::value* env = config.if_contains("env")) {
    if (!env->is_object()) return Bad(p + ".env must be an object of NAME: value, not " + TypeName(*env));
    for (const auto& kv : env->get_object()) {
      std::string name(kv.key());
      if (!ValidEnvName(name))
        return Bad(p + ".env: " + Quote(name) +
                   " is not a valid variable name (letters, digits and '_', not starting with a digit)");
      const json::value& v = kv.value();
      std::string value;
      if (v.is_string()) value = std::string(v.get_string());
      else if (v.is_number() || v.is_bool()) value = json::serialize(v);
      else return Bad(p + ".env." + name + " must be a string, number or boolean, not " + TypeName(v));
      c.env.emplace_back(std::move(name), std::move(value));
    }
  }

  if (const json::value* wd = config.if_contains("workingDir")) {
    if (!wd->is_string()) return Bad(p + ".workingDir must be a string, not " + TypeName(*wd));
    c.working_dir = std::string(wd->get_string());
  }

  if (const json::value* ports = config.if_contains("ports")) {
    if (!ports->is_array()) return Bad(p + ".ports must be a list like [{name: http}], not " + TypeName(*ports));
    std::set<std::string> env_names;
    const json::array& a = ports->get_array();
    for (size_t i = 0; i < a.size(); ++i) {
      std::string f = p + ".ports[" + std::to_string(i) + "]";
      if (!a[i].is_object()) return Bad(f + " must be an object like {name: http}, not " + TypeName(a[i]));
      const json::object& po = a[i].get_object();
      if (auto s = CheckKeys(po, f, {"name"}); !s.ok()) return s;
      const json::value* name = po.if_contains("name");
      if (!name) return Bad(f + ".name is required");
      if (!name->is_string()) return Bad(f + ".name must be a string, not " + TypeName(*name));
      std::string n(name->get_string());
      if (!ValidPortName(n))
        return Bad(f + ".name " + Quote(n) +
                   " is not a valid port name (1 to 32 letters, digits, '-' or '_')");
      if (!env_names.insert(PortEnvName(n)).second)
        return Bad(f + ".name " + Quote(n) + " clashes with another port (both would be " +
                   PortEnvName(n) + ")");
      c.ports.push_back(std::move(n));
    }
  }

  if (const json::value* r = config.if_contains("readiness")) {
    std::string f = p + ".readiness";
    if (!r->is_object())
      return Bad(f + " must be an object like {httpPath: /, port: http}, not " + TypeName(*r));
    const json::object& ro = r->get_object();
    if (auto s = CheckKeys(ro, f, {"httpPath", "tcpPort", "port", "timeoutSeconds"}); !s.ok()) return s;
    const json::value* http = ro.if_contains("httpPath");
    const json::value* tcp = ro.if_contains("tcpPort");
    const json::value* port = ro.if_contains("port");
    if (http && tcp) return Bad(f + " takes httpPath or tcpPort, not both");
    if (tcp && port) return Bad(f + ".port goes with httpPath; tcpPort already names the port");
    if (http) {
      if (!http->is_string()) return Bad(f + ".httpPath must be a string, not " + TypeName(*http));
      c.readiness.kind = Readiness::Kind::kHttp;
      c.readiness.http_path = std::string(http->get_string());
      if (c.readiness.http_path.empty() || c.readiness.http_path[0] != '/')
        return Bad(f + ".httpPath must start with '/' (got " + Quote(c.readiness.http_path) + ")");
      for (char ch : c.readiness.http_path)
        if (static_cast<unsigned char>(ch) <= ' ' || ch == 0x7f)
          return Bad(f + ".httpPath must not contain spaces or control characters");
      if (port) {
        if (!port->is_string()) return Bad(f + ".port must be a port name, not " + TypeName(*port));
        c.readiness.port = std::string(port->get_string());
      }
    } else if (tcp) {
      if (!tcp->is_string()) return Bad(f + ".tcpPort must be a port name, not " + TypeName(*tcp));
      c.readiness.kind = Readiness::Kind::kTcp;
      c.readiness.port = std::string(tcp->get_string());
    } else if (port) {
      return Bad(f + " needs httpPath or tcpPort");
    }
    if (const json::value* t = ro.if_contains("timeoutSeconds")) {
      long long secs = 0;
      if (!AsInt(*t, &secs) || secs < 1 || secs > 86400)
        return Bad(f + ".timeoutSeconds must be a whole number of seconds from 1 to 86400");
      c.readiness.timeout = std::chrono::seconds(secs);
    }
    if (c.readiness.kind != Readiness::Kind::kNone) {
      std::string which = c.readiness.kind == Readiness::Kind::kHttp ? ".port" : ".tcpPort";
      if (c.ports.empty())
        return Bad(f + " needs a port to check: declare it in spec.local.ports, e.g. [{name: http}]");
      if (c.readiness.port.empty()) c.readiness.port = c.ports[0];
      bool known = false;
      std::string names;
      for (const auto& n : c.ports) {
        known = known || n == c.readiness.port;
        names += (names.empty() ? "" : ", ") + n;
      }
      if (!known)
        return Bad(f + which + " " + Quote(c.readiness.port) +
                   " is not one of spec.local.ports (" + names + ")");
    }
  }

  if (const json::value* rp = config.if_contains("restartPolicy")) {
    std::string v = rp->is_string() ? std::string(rp->get_string()) : json::serialize(*rp);
    if (v == "Always") c.restart_policy = RestartPolicy::kAlways;
    else if (v == "OnFailure") c.restart_policy = RestartPolicy::kOnFailure;
    else if (v == "Never") c.restart_policy = RestartPolicy::kNever;
    else return Bad(p + ".restartPolicy must be one of Always, OnFailure, Never (got " + v + ")");
  }
  if (const json::value* mr = config.if_contains("maxRestarts")) {
    long long n = 0;
    if (!AsInt(*mr, &n) || n < 0 || n > 1000000)
      return Bad(p + ".maxRestarts must be a whole number from 0 to 1000000");
    c.max_restarts = static_cast<int>(n);
  }
  if (const json::value* t = config.if_contains("timeoutSeconds")) {
    long long n = 0;
    if (!AsInt(*t, &n) || n < 1) return Bad(p + ".timeoutSeconds must be a positive whole number");
  }
  return c;
}

absl::StatusOr<std::string> ExpandVariables(std::string_view text,
                                            const std::map<std::string, std::string>& env,
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
      return Bad(std::string(field) + ": \"${\" is not closed by \"}\" (write \"$${\" for a literal \"${\")");
    std::string name(text.substr(i + 2, close - i - 2));
    auto it = env.find(name);
    if (it == env.end())
      return Bad(std::string(field) + ": ${" + name + "} is not set in the workload's environment");
    out += it->second;
    i = close + 1;
  }
  return out;
}

}  // namespace gantry::drivers::local
