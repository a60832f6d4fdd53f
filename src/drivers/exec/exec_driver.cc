#include "drivers/exec/exec_driver.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/status_macros.h"
#include "drivers/common/process.h"

namespace gantry::drivers::exec {
namespace {

namespace json = boost::json;

std::string EnvName(std::string_view key) {
  std::string out = "GANTRY_LABEL_";
  for (char c : key)
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
  return out;
}

// The outputs file the program wrote, read without following a symlink the program may have
// planted there (it runs as the workload user, gantryd may be root) and only when the
// program's user owns it. NOT_FOUND when there is none.
constexpr off_t kMaxOutputsBytes = 1 << 20;
absl::StatusOr<std::string> ReadOutputsFile(const std::string& path, const Sandbox& sandbox) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError("no outputs");
    return absl::AbortedError("the outputs file " + path +
                              " cannot be read: " + std::strerror(errno));
  }
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= kMaxOutputsBytes &&
            (!sandbox.user || st.st_uid == sandbox.user->uid);
  std::string text;
  if (ok) {
    text.resize(static_cast<size_t>(st.st_size));
    ssize_t got = ::pread(fd, text.data(), text.size(), 0);
    ok = got >= 0;
    text.resize(got > 0 ? static_cast<size_t>(got) : 0);
  }
  ::close(fd);
  if (!ok)
    return absl::AbortedError("the outputs file " + path +
                              " is not a regular file of at most 1 MiB written by the program");
  return text;
}

// The program's stdin: {action, instance, variables, resources, previousOutputs, compute,
// run: {name, attempt}}.
std::string ProgramInput(const DeployRequest& request) {
  json::object vars;
  for (const auto& [k, v] : request.variables) vars[k] = v;
  json::object input{
      {"action", request.action},
      {"instance", request.instance},
      {"variables", std::move(vars)},
      {"resources", request.resources},
      {"previousOutputs", request.previous_outputs},
      {"compute", request.compute},
      {"run", json::object{{"name", request.run_name}, {"attempt", request.attempt}}}};
  return json::serialize(input);
}

// The outputs file's text ("" when there is none) as outputs of string values.
absl::StatusOr<json::object> ParseOutputs(const std::string& text, const std::string& program) {
  json::object outputs;
  if (text.empty()) return outputs;
  boost::system::error_code jec;
  json::value v = json::parse(text, jec);
  if (jec || !v.is_object())
    return absl::AbortedError("the outputs file written by " + program + " is not a JSON object");
  for (const auto& kv : v.get_object()) outputs[kv.key()] = Text(kv.value());
  return outputs;
}

}  // namespace

namespace {

constexpr std::string_view kActions[] = {"apply", "destroy", "stop", "start"};

// spec.exec.actions: a list of distinct names out of kActions.
void CheckActions(const json::object& config, ExecConfig* out, ConfigProblems* problems) {
  const json::value* actions = config.if_contains("actions");
  if (!actions) return;
  if (!actions->is_array()) {
    problems->Add("actions", "must be a list of actions (apply, destroy, stop, start)",
                  "FieldValueTypeInvalid");
    return;
  }
  for (size_t i = 0; i < actions->get_array().size(); ++i) {
    const json::value& a = actions->get_array()[i];
    const std::string field = "actions[" + std::to_string(i) + "]";
    const std::string name = a.is_string() ? std::string(a.get_string()) : json::serialize(a);
    if (std::find(std::begin(kActions), std::end(kActions), name) == std::end(kActions)) {
      problems->Add(field,
                    "Unsupported value: \"" + name.substr(0, 40) +
                        "\": supported values: \"apply\", \"destroy\", \"stop\", \"start\"",
                    "FieldValueNotSupported");
    } else if (out->Lists(name)) {
      problems->Add(field, "Duplicate value: \"" + name + "\"", "FieldValueDuplicate");
    } else {
      out->actions.push_back(name);
    }
  }
}

}  // namespace

ExecConfig CheckExecConfig(const json::object& config, ConfigProblems* problems) {
  ExecConfig out;
  if (const json::value* cmd = config.if_contains("command"); cmd && cmd->is_array())
    for (const auto& a : cmd->get_array())
      if (a.is_string()) out.command.emplace_back(a.get_string());
  if (out.command.empty())
    problems->Add("command", "the template's spec.exec.command is empty", "FieldValueRequired");
  if (const json::value* wd = config.if_contains("workingDir"); wd && wd->is_string())
    out.working_dir = std::string(wd->get_string());
  if (const json::value* env = config.if_contains("env"); env && env->is_object())
    for (const auto& kv : env->get_object()) out.env[std::string(kv.key())] = Text(kv.value());
  CheckActions(config, &out, problems);
  if (const json::value* t = config.if_contains("timeoutSeconds"); t && !t->is_null())
    if (!t->is_int64() || t->get_int64() <= 0)
      problems->Add("timeoutSeconds", "must be greater than 0");
  return out;
}

bool ExecConfig::Lists(std::string_view action) const {
  return std::find(actions.begin(), actions.end(), action) != actions.end();
}

json::object ExecConfigSchema() {
  json::object command = StringListSchema(
      "Program and arguments; called with the action appended (`apply`, "
      "`destroy`, `stop`, `start`).");
  command["minItems"] = 1;
  json::object timeout = SchemaOf("integer", "A run taking longer fails with reason Timeout.");
  timeout["minimum"] = 1;
  json::object properties{{"command", std::move(command)},
                          {"workingDir", SchemaOf("string", "Working directory of the program.")},
                          {"env", MapSchema("Extra environment variables.", json::object{})},
                          {"timeoutSeconds", std::move(timeout)},
                          {"actions", StringListSchema("The actions the program implements "
                                                       "(apply, destroy, stop, start); stop and "
                                                       "start are called only when both are "
                                                       "listed. Default: apply and destroy.")}};
  json::object schema = ObjectSchema(
      "Configuration of the exec driver: a program run with "
      "`apply` or `destroy`.",
      std::move(properties), {"command"});
  schema.erase("additionalProperties");  // a run ignores other fields
  return schema;
}

void ExecDriver::ValidateConfig(const json::object& config, std::vector<FieldCause>* causes) const {
  ConfigProblems problems("spec.exec");
  CheckExecConfig(config, &problems);
  problems.AppendCauses(causes);
}

absl::StatusOr<json::object> ExecDriver::Run(const DeployRequest& request, RunContext& context) {
  ConfigProblems problems("spec.exec");
  ExecConfig config = CheckExecConfig(request.config, &problems);
  if (!problems.ok()) return problems.FirstAsStatus();
  ProcessSpec spec;
  spec.argv = std::move(config.command);
  spec.argv.push_back(request.action);
  spec.working_dir = std::move(config.working_dir);
  spec.env = std::move(config.env);
  spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(request.timeout);

  std::error_code ec;
  std::filesystem::create_directories(request.state_dir, ec);
  auto workload_dir = PrepareWorkloadDir(sandbox_, request.state_dir);
  if (!workload_dir.ok()) return workload_dir.status();
  std::string outputs_path = *workload_dir + "/outputs-" + request.run_uid + ".json";
  std::filesystem::remove(outputs_path, ec);  // a symlink is removed, not followed
  spec.run_as = sandbox_.user;
  spec.env["GANTRY_ACTION"] = request.action;
  spec.env["GANTRY_RUN"] = request.run_name;
  spec.env["GANTRY_INSTANCE"] =
      Text(request.instance.contains("name") ? request.instance.at("name") : json::value(""));
  spec.env["GANTRY_PROJECT"] =
      Text(request.instance.contains("project") ? request.instance.at("project") : json::value(""));
  spec.env["GANTRY_OUTPUTS"] = outputs_path;
  spec.env["GANTRY_STATE_DIR"] = *workload_dir;
  if (const json::value* labels = request.instance.if_contains("labels");
      labels && labels->is_object())
    for (const auto& kv : labels->get_object()) spec.env[EnvName(kv.key())] = Text(kv.value());

  for (const auto& [k, v] : ComputeEnvironment(request)) spec.env[k] = v;
  spec.stdin_data = ProgramInput(request);

  std::deque<std::string> tail;
  ProcessHooks hooks;
  hooks.on_line = [&](std::string_view line) {
    context.Log(line);
    tail.emplace_back(line);
    if (tail.size() > 5) tail.pop_front();
  };
  hooks.canceled = [&] { return context.Canceled(); };
  hooks.on_started = [&](int pid, long long start) {
    context.SaveDriverState(json::object{{"pgid", pid}, {"startTime", start}});
  };
  auto result = RunProcess(spec, hooks, launcher_);
  if (!result.ok()) {
    std::filesystem::remove(outputs_path, ec);
    return result.status();
  }
  if (result->exit_code != 0) {
    std::filesystem::remove(outputs_path, ec);
    std::string how = result->signal ? "was killed by signal " + std::to_string(result->signal)
                                     : "exited with code " + std::to_string(result->exit_code);
    std::string last;
    for (const auto& l : tail) last += (last.empty() ? "" : "\n") + l;
    return absl::AbortedError(spec.argv[0] + " " + request.action + " " + how +
                              (last.empty() ? "" : ": " + last));
  }
  auto read = ReadOutputsFile(outputs_path, sandbox_);
  std::filesystem::remove(outputs_path, ec);
  if (!read.ok() && !absl::IsNotFound(read.status())) return read.status();
  return ParseOutputs(read.ok() ? *read : std::string(), spec.argv[0]);
}

absl::StatusOr<json::object> ExecDriver::Apply(const DeployRequest& request, RunContext& context) {
  return Run(request, context);
}

absl::Status ExecDriver::Destroy(const DeployRequest& request, RunContext& context) {
  return Run(request, context).status();
}

absl::Status ExecDriver::CanStop(const json::object& config) const {
  ConfigProblems problems("spec.exec");
  ExecConfig c = CheckExecConfig(config, &problems);
  if (c.Lists("stop") && c.Lists("start")) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "its template's spec.exec.actions does not list both stop and start (the program is "
      "called only with the actions it lists)");
}

absl::Status ExecDriver::Stop(const DeployRequest& request, RunContext& context) {
  RETURN_IF_ERROR(CanStop(request.config));
  return Run(request, context).status();
}

absl::StatusOr<json::object> ExecDriver::Start(const DeployRequest& request, RunContext& context) {
  RETURN_IF_ERROR(CanStop(request.config));
  return Run(request, context);
}

bool ExecDriver::Recover(const json::object& state) {
  auto pgid = state.if_contains("pgid");
  auto start = state.if_contains("startTime");
  if (pgid && pgid->is_int64() && start && start->is_int64())
    KillGroupIfAlive(static_cast<int>(pgid->get_int64()), start->get_int64());
  return true;  // every action is idempotent by contract: re-run from the start
}

}  // namespace gantry::drivers::exec
