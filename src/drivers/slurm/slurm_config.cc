#include "drivers/slurm/slurm_config.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace gantry::drivers::slurm {
namespace {

namespace json = boost::json;

absl::Status Bad(const std::string& field, const std::string& what) {
  return absl::FailedPreconditionError("spec.slurm." + field + " " + what);
}

std::string Quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s.substr(0, 80)) out += c == '"' ? std::string("\\\"") : std::string(1, c);
  return out + (s.size() > 80 ? "...\"" : "\"");
}

// A name Slurm takes as a partition, account or QOS: no blanks, commas or control characters.
bool PlainName(std::string_view s) {
  return !s.empty() && s.size() <= 128 &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
         });
}

// Slurm's time formats: "minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours",
// "days-hours:minutes", "days-hours:minutes:seconds", or UNLIMITED / INFINITE.
bool SlurmTime(std::string_view s) {
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "unlimited" || lower == "infinite") return true;
  std::string_view rest = s;
  if (auto dash = s.find('-'); dash != std::string_view::npos) {
    std::string_view days = s.substr(0, dash);
    if (days.empty() || !std::all_of(days.begin(), days.end(), ::isdigit)) return false;
    rest = s.substr(dash + 1);
  }
  int parts = 0;
  size_t start = 0;
  while (true) {
    size_t colon = rest.find(':', start);
    std::string_view p = rest.substr(start, colon == std::string_view::npos ? rest.npos : colon - start);
    if (p.empty() || p.size() > 9 || !std::all_of(p.begin(), p.end(), ::isdigit)) return false;
    ++parts;
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return parts <= 3;
}

absl::StatusOr<std::string> OptionalName(const json::object& c, const std::string& field) {
  const json::value* v = c.if_contains(field);
  if (!v || v->is_null()) return std::string();
  if (!v->is_string()) return Bad(field, "must be a string");
  std::string s(v->get_string());
  if (!PlainName(s))
    return Bad(field, "must be a Slurm name (letters, digits, '_', '-', '.'; got " + Quoted(s) + ")");
  return s;
}

}  // namespace

absl::StatusOr<SlurmConfig> ParseSlurmConfig(const json::object& c) {
  static const std::set<std::string, std::less<>> kKnown = {
      "slurmConf", "partition", "account", "qos",        "timeLimit",     "nodes",
      "script",    "command",   "env",     "workingDir", "timeoutSeconds"};
  for (const auto& kv : c)
    if (!kKnown.count(kv.key()))
      return absl::FailedPreconditionError(
          "spec.slurm." + std::string(kv.key()) +
          " is not a field of the Slurm driver (known: slurmConf, partition, account, qos, "
          "timeLimit, nodes, script, command, env, workingDir, timeoutSeconds)");
  SlurmConfig out;
  if (const json::value* v = c.if_contains("slurmConf"); v && !v->is_null()) {
    if (!v->is_string()) return Bad("slurmConf", "must be a string (the path of slurm.conf)");
    out.slurm_conf = std::string(v->get_string());
    if (out.slurm_conf.empty() || out.slurm_conf[0] != '/')
      return Bad("slurmConf", "must be an absolute path (got " + Quoted(out.slurm_conf) + ")");
  }
  auto partition = OptionalName(c, "partition");
  if (!partition.ok()) return partition.status();
  out.partition = *partition;
  auto account = OptionalName(c, "account");
  if (!account.ok()) return account.status();
  out.account = *account;
  auto qos = OptionalName(c, "qos");
  if (!qos.ok()) return qos.status();
  out.qos = *qos;
  if (const json::value* v = c.if_contains("timeLimit"); v && !v->is_null()) {
    if (v->is_int64() && v->get_int64() > 0) {
      out.time_limit = std::to_string(v->get_int64());  // minutes
    } else if (v->is_string() && SlurmTime(v->get_string())) {
      out.time_limit = std::string(v->get_string());
    } else {
      return Bad("timeLimit",
                 "must be a Slurm time (minutes, \"HH:MM:SS\", \"D-HH:MM:SS\" or \"UNLIMITED\"; got " +
                     (v->is_string() ? Quoted(v->get_string()) : json::serialize(*v)) + ")");
    }
  }
  if (const json::value* v = c.if_contains("nodes"); v && !v->is_null()) {
    if (!v->is_int64()) return Bad("nodes", "must be a whole number");
    if (v->get_int64() < 1 || v->get_int64() > 100000)
      return Bad("nodes", "must be at least 1 (got " + std::to_string(v->get_int64()) + ")");
    out.nodes = static_cast<int>(v->get_int64());
  }
  const json::value* script = c.if_contains("script");
  const json::value* command = c.if_contains("command");
  if (script && script->is_null()) script = nullptr;
  if (command && command->is_null()) command = nullptr;
  if (script && command)
    return absl::FailedPreconditionError(
        "spec.slurm.script and spec.slurm.command are exclusive: give one");
  if (!script && !command)
    return absl::FailedPreconditionError(
        "spec.slurm needs the job: a batch script (script) or a command (command)");
  if (script) {
    if (!script->is_string()) return Bad("script", "must be a string (the batch script)");
    out.script = std::string(script->get_string());
    if (out.script.rfind("#!", 0) != 0)
      return Bad("script", "must start with \"#!\" (an interpreter line, as sbatch requires)");
  } else {
    if (!command->is_array() || command->get_array().empty())
      return Bad("command", "must be a non-empty list of strings");
    for (const auto& a : command->get_array()) {
      if (!a.is_string()) return Bad("command", "must be a non-empty list of strings");
      out.command.emplace_back(a.get_string());
    }
    if (out.command[0].empty()) return Bad("command", "must name a program first");
  }
  if (const json::value* v = c.if_contains("env"); v && !v->is_null()) {
    if (!v->is_object()) return Bad("env", "must be a map of names to values");
    for (const auto& kv : v->get_object()) {
      std::string key(kv.key());
      if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0])) ||
          !std::all_of(key.begin(), key.end(), [](char ch) {
            return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
          }))
        return Bad("env", "has an invalid variable name " + Quoted(key));
      const json::value& val = kv.value();
      out.env.emplace_back(key, val.is_string() ? std::string(val.get_string()) : json::serialize(val));
    }
  }
  if (const json::value* v = c.if_contains("workingDir"); v && !v->is_null()) {
    if (!v->is_string()) return Bad("workingDir", "must be a string");
    out.working_dir = std::string(v->get_string());
  }
  if (const json::value* v = c.if_contains("timeoutSeconds"); v && !v->is_null())
    if (!v->is_int64() || v->get_int64() <= 0) return Bad("timeoutSeconds", "must be greater than 0");
  return out;
}

absl::StatusOr<std::string> GresForResources(const json::object& resources) {
  const json::value* gpu = resources.if_contains("gpu");
  if (!gpu || !gpu->is_object()) return std::string();
  const json::object& g = gpu->get_object();
  int64_t count = 0;
  if (const json::value* n = g.if_contains("count"); n && n->is_int64()) count = n->get_int64();
  if (count <= 0) return std::string();
  std::string type;
  if (const json::value* t = g.if_contains("type"); t && t->is_string()) type = std::string(t->get_string());
  if (!type.empty() && !PlainName(type))
    return absl::FailedPreconditionError("the profile's GPU type " + Quoted(type) +
                                         " cannot be a Slurm GRES type");
  return "gpu:" + (type.empty() ? "" : type + ":") + std::to_string(count);
}

std::string ShellQuote(std::string_view s) {
  if (!s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_-./=:,@%+").find(c) != std::string_view::npos;
      }))
    return std::string(s);
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  return out + "'";
}

SbatchCall BuildSbatch(const SlurmConfig& c, const std::string& job_name, const std::string& comment,
                       const std::string& working_dir, const std::string& gres,
                       const WorkloadUser* run_as) {
  SbatchCall call;
  auto& a = call.args;
  a.push_back("--parsable");
  a.push_back("--job-name=" + job_name);
  a.push_back("--comment=" + comment);
  if (!c.partition.empty()) a.push_back("--partition=" + c.partition);
  if (!c.account.empty()) a.push_back("--account=" + c.account);
  if (!c.qos.empty()) a.push_back("--qos=" + c.qos);
  if (!c.time_limit.empty()) a.push_back("--time=" + c.time_limit);
  a.push_back("--nodes=" + std::to_string(c.nodes));
  if (!gres.empty()) a.push_back("--gres=" + gres);
  a.push_back("--chdir=" + working_dir);
  if (run_as) {
    a.push_back("--uid=" + std::to_string(run_as->uid));
    a.push_back("--gid=" + std::to_string(run_as->gid));
  }
  // The job's environment is the one sbatch runs with: ChildEnvironment, allow-listed, plus
  // what the driver sets (RunCommand); nothing else of gantryd's.
  a.push_back("--export=ALL");
  if (c.script.empty()) {
    std::string wrap;
    for (const auto& part : c.command) wrap += (wrap.empty() ? "" : " ") + ShellQuote(part);
    a.push_back("--wrap=" + wrap);
  } else {
    call.stdin_script = c.script;
  }
  return call;
}

}  // namespace gantry::drivers::slurm
