#include "drivers/slurm/slurm_config.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace gantry::drivers::slurm {
namespace {

namespace json = boost::json;

std::string Quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s.substr(0, 80)) out += c == '"' ? std::string("\\\"") : std::string(1, c);
  return out + (s.size() > 80 ? "...\"" : "\"");
}

// A name Slurm takes as a partition, account or QOS: no blanks, commas or control characters.
bool PlainName(std::string_view s) {
  return !s.empty() && s.size() <= 128 && std::all_of(s.begin(), s.end(), [](char c) {
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
    std::string_view p =
        rest.substr(start, colon == std::string_view::npos ? rest.npos : colon - start);
    if (p.empty() || p.size() > 9 || !std::all_of(p.begin(), p.end(), ::isdigit)) return false;
    ++parts;
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return parts <= 3;
}

// "spec.slurm.<field> <what>", recorded.
void Bad(ConfigProblems* problems, const std::string& field, const std::string& what,
         std::string type = "FieldValueInvalid") {
  problems->Add(field, problems->Full(field) + " " + what, std::move(type));
}

std::string OptionalName(const json::object& c, const std::string& field,
                         ConfigProblems* problems) {
  const json::value* v = c.if_contains(field);
  if (!v || v->is_null()) return std::string();
  if (!v->is_string()) {
    Bad(problems, field, "must be a string");
    return std::string();
  }
  std::string s(v->get_string());
  if (!PlainName(s)) {
    Bad(problems, field,
        "must be a Slurm name (letters, digits, '_', '-', '.'; got " + Quoted(s) + ")");
    return std::string();
  }
  return s;
}

void CheckKnown(const json::object& c, ConfigProblems* problems) {
  static const std::set<std::string, std::less<>> kKnown = {
      "slurmConf", "partition", "account", "qos",        "timeLimit",     "nodes",
      "script",    "command",   "env",     "workingDir", "timeoutSeconds"};
  for (const auto& kv : c)
    if (!kKnown.count(kv.key()))
      Bad(problems, std::string(kv.key()),
          "is not a field of the Slurm driver (known: slurmConf, partition, account, qos, "
          "timeLimit, nodes, script, command, env, workingDir, timeoutSeconds)",
          "FieldValueNotSupported");
}

// slurmConf, partition, account, qos, timeLimit and nodes: where the job goes.
void CheckPlacement(const json::object& c, SlurmConfig* out, ConfigProblems* problems) {
  if (const json::value* v = c.if_contains("slurmConf"); v && !v->is_null()) {
    if (!v->is_string()) {
      Bad(problems, "slurmConf", "must be a string (the path of slurm.conf)");
    } else {
      out->slurm_conf = std::string(v->get_string());
      if (out->slurm_conf.empty() || out->slurm_conf[0] != '/')
        Bad(problems, "slurmConf",
            "must be an absolute path (got " + Quoted(out->slurm_conf) + ")");
    }
  }
  out->partition = OptionalName(c, "partition", problems);
  out->account = OptionalName(c, "account", problems);
  out->qos = OptionalName(c, "qos", problems);
  if (const json::value* v = c.if_contains("timeLimit"); v && !v->is_null()) {
    if (v->is_int64() && v->get_int64() > 0) {
      out->time_limit = std::to_string(v->get_int64());  // minutes
    } else if (v->is_string() && SlurmTime(v->get_string())) {
      out->time_limit = std::string(v->get_string());
    } else {
      Bad(problems, "timeLimit",
          "must be a Slurm time (minutes, \"HH:MM:SS\", \"D-HH:MM:SS\" or \"UNLIMITED\"; got " +
              (v->is_string() ? Quoted(v->get_string()) : json::serialize(*v)) + ")");
    }
  }
  if (const json::value* v = c.if_contains("nodes"); v && !v->is_null()) {
    if (!v->is_int64())
      Bad(problems, "nodes", "must be a whole number");
    else if (v->get_int64() < 1 || v->get_int64() > 100000)
      Bad(problems, "nodes", "must be at least 1 (got " + std::to_string(v->get_int64()) + ")");
    else
      out->nodes = static_cast<int>(v->get_int64());
  }
}

void CheckCommand(const json::value& command, SlurmConfig* out, ConfigProblems* problems) {
  if (!command.is_array() || command.get_array().empty()) {
    Bad(problems, "command", "must be a non-empty list of strings");
    return;
  }
  for (const auto& a : command.get_array()) {
    if (!a.is_string()) {
      Bad(problems, "command", "must be a non-empty list of strings");
      return;
    }
    out->command.emplace_back(a.get_string());
  }
  if (out->command[0].empty()) Bad(problems, "command", "must name a program first");
}

// script or command: what the job runs.
void CheckJob(const json::object& c, SlurmConfig* out, ConfigProblems* problems) {
  const json::value* script = c.if_contains("script");
  const json::value* command = c.if_contains("command");
  if (script && script->is_null()) script = nullptr;
  if (command && command->is_null()) command = nullptr;
  if (script && command) {
    problems->Add("command", "spec.slurm.script and spec.slurm.command are exclusive: give one",
                  "FieldValueForbidden");
  } else if (!script && !command) {
    problems->Add("script",
                  "spec.slurm needs the job: a batch script (script) or a command "
                  "(command)",
                  "FieldValueRequired");
  } else if (script) {
    if (!script->is_string()) {
      Bad(problems, "script", "must be a string (the batch script)");
      return;
    }
    out->script = std::string(script->get_string());
    if (out->script.rfind("#!", 0) != 0)
      Bad(problems, "script", "must start with \"#!\" (an interpreter line, as sbatch requires)");
  } else {
    CheckCommand(*command, out, problems);
  }
}

void CheckEnv(const json::value& env, SlurmConfig* out, ConfigProblems* problems) {
  if (!env.is_object()) {
    Bad(problems, "env", "must be a map of names to values");
    return;
  }
  for (const auto& kv : env.get_object()) {
    std::string key(kv.key());
    if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0])) ||
        !std::all_of(key.begin(), key.end(), [](char ch) {
          return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
        })) {
      Bad(problems, "env", "has an invalid variable name " + Quoted(key));
      continue;
    }
    const json::value& val = kv.value();
    out->env.emplace_back(key,
                          val.is_string() ? std::string(val.get_string()) : json::serialize(val));
  }
}

}  // namespace

SlurmConfig CheckSlurmConfig(const json::object& c, ConfigProblems* problems) {
  SlurmConfig out;
  CheckKnown(c, problems);
  CheckPlacement(c, &out, problems);
  CheckJob(c, &out, problems);
  if (const json::value* v = c.if_contains("env"); v && !v->is_null()) CheckEnv(*v, &out, problems);
  if (const json::value* v = c.if_contains("workingDir"); v && !v->is_null()) {
    if (v->is_string())
      out.working_dir = std::string(v->get_string());
    else
      Bad(problems, "workingDir", "must be a string");
  }
  if (const json::value* v = c.if_contains("timeoutSeconds"); v && !v->is_null())
    if (!v->is_int64() || v->get_int64() <= 0)
      Bad(problems, "timeoutSeconds", "must be greater than 0");
  return out;
}

absl::StatusOr<SlurmConfig> ParseSlurmConfig(const json::object& c) {
  ConfigProblems problems("spec.slurm");
  SlurmConfig out = CheckSlurmConfig(c, &problems);
  if (!problems.ok()) return problems.FirstAsStatus();
  return out;
}

json::object SlurmConfigSchema() {
  json::object nodes = SchemaOf("integer", "--nodes; default 1. The profile's GPUs are per node.");
  nodes["minimum"] = 1;
  nodes["maximum"] = 100000;
  json::object script = SchemaOf("string",
                                 "The batch script; starts with #!. Either script or "
                                 "command.");
  script["pattern"] = "^#!";
  json::object command =
      StringListSchema("One command run as the job (sbatch --wrap). Either script or command.");
  command["minItems"] = 1;
  json::object timeout =
      SchemaOf("integer", "How long a deploy waits for the job to start running.");
  timeout["minimum"] = 1;
  json::object time_limit{
      {"description",
       "--time: minutes, or Slurm's formats (\"90\", \"4:00:00\", "
       "\"2-00:00:00\", \"UNLIMITED\")."},
      {"anyOf", json::array{json::object{{"type", "string"}},
                            json::object{{"type", "integer"}, {"minimum", 1}}}}};
  json::object slurm_conf =
      SchemaOf("string",
               "Absolute path of the cluster's slurm.conf (SLURM_CONF for sbatch, squeue and "
               "scancel); default: gantryd's environment.");
  slurm_conf["pattern"] = "^/";
  json::object name = SchemaOf("string", "");
  name["pattern"] = "^[A-Za-z0-9_.-]{1,128}$";
  auto named = [&](std::string_view description) {
    json::object out = name;
    out["description"] = description;
    return out;
  };
  json::object properties{
      {"slurmConf", std::move(slurm_conf)},
      {"partition", named("--partition; default: the cluster's default partition.")},
      {"account", named("--account.")},
      {"qos", named("--qos.")},
      {"timeLimit", std::move(time_limit)},
      {"nodes", std::move(nodes)},
      {"script", std::move(script)},
      {"command", std::move(command)},
      {"env", MapSchema("Extra environment variables of the job.", json::object{})},
      {"workingDir", SchemaOf("string",
                              "--chdir; default: the instance's state directory on "
                              "gantryd's host.")},
      {"timeoutSeconds", std::move(timeout)}};
  return ObjectSchema("Configuration of the Slurm driver: one batch job on a Slurm cluster.",
                      std::move(properties));
}

absl::StatusOr<std::string> GresForResources(const json::object& resources) {
  const json::value* gpu = resources.if_contains("gpu");
  if (!gpu || !gpu->is_object()) return std::string();
  const json::object& g = gpu->get_object();
  int64_t count = 0;
  if (const json::value* n = g.if_contains("count"); n && n->is_int64()) count = n->get_int64();
  if (count <= 0) return std::string();
  std::string type;
  if (const json::value* t = g.if_contains("type"); t && t->is_string())
    type = std::string(t->get_string());
  if (!type.empty() && !PlainName(type))
    return absl::FailedPreconditionError("the profile's GPU type " + Quoted(type) +
                                         " cannot be a Slurm GRES type");
  return "gpu:" + (type.empty() ? "" : type + ":") + std::to_string(count);
}

std::string ShellQuote(std::string_view s) {
  if (!s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) ||
               std::string_view("_-./=:,@%+").find(c) != std::string_view::npos;
      }))
    return std::string(s);
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  return out + "'";
}

SbatchCall BuildSbatch(const SlurmConfig& c, const std::string& job_name,
                       const std::string& comment, const std::string& working_dir,
                       const std::string& gres, const WorkloadUser* run_as) {
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
