#include "drivers/exec/exec_driver.h"

#include <unistd.h>

#include <cctype>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>

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

std::string Str(const json::value& v) {
  return v.is_string() ? std::string(v.get_string()) : json::serialize(v);
}

}  // namespace

absl::StatusOr<json::object> ExecDriver::Run(const DeployRequest& request, RunContext& context) {
  ProcessSpec spec;
  if (const json::value* cmd = request.config.if_contains("command"); cmd && cmd->is_array())
    for (const auto& a : cmd->get_array())
      if (a.is_string()) spec.argv.emplace_back(a.get_string());
  if (spec.argv.empty())
    return absl::FailedPreconditionError("the template's spec.exec.command is empty");
  spec.argv.push_back(request.action);
  if (const json::value* wd = request.config.if_contains("workingDir"); wd && wd->is_string())
    spec.working_dir = std::string(wd->get_string());
  if (const json::value* env = request.config.if_contains("env"); env && env->is_object())
    for (const auto& kv : env->get_object()) spec.env[std::string(kv.key())] = Str(kv.value());
  spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(request.timeout);

  std::error_code ec;
  std::filesystem::create_directories(request.state_dir, ec);
  std::string outputs_path = request.state_dir + "/outputs-" + request.run_uid + ".json";
  std::filesystem::remove(outputs_path, ec);
  spec.env["GANTRY_ACTION"] = request.action;
  spec.env["GANTRY_RUN"] = request.run_name;
  spec.env["GANTRY_INSTANCE"] = Str(request.instance.contains("name") ? request.instance.at("name") : json::value(""));
  spec.env["GANTRY_PROJECT"] = Str(request.instance.contains("project") ? request.instance.at("project") : json::value(""));
  spec.env["GANTRY_OUTPUTS"] = outputs_path;
  spec.env["GANTRY_STATE_DIR"] = request.state_dir;
  if (const json::value* labels = request.instance.if_contains("labels"); labels && labels->is_object())
    for (const auto& kv : labels->get_object()) spec.env[EnvName(kv.key())] = Str(kv.value());

  for (const auto& [k, v] : ComputeEnvironment(request)) spec.env[k] = v;

  json::object vars;
  for (const auto& [k, v] : request.variables) vars[k] = v;
  json::object input{{"action", request.action},
                     {"instance", request.instance},
                     {"variables", std::move(vars)},
                     {"resources", request.resources},
                     {"previousOutputs", request.previous_outputs},
                     {"compute", request.compute},
                     {"run", json::object{{"name", request.run_name}, {"attempt", request.attempt}}}};
  spec.stdin_data = json::serialize(input);

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
  auto result = RunProcess(spec, hooks);
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
  json::object outputs;
  std::ifstream in(outputs_path);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    std::filesystem::remove(outputs_path, ec);
    if (!text.empty()) {
      boost::system::error_code jec;
      json::value v = json::parse(text, jec);
      if (jec || !v.is_object())
        return absl::AbortedError("the outputs file written by " + spec.argv[0] +
                                  " is not a JSON object");
      for (const auto& kv : v.get_object()) outputs[kv.key()] = Str(kv.value());
    }
  }
  return outputs;
}

absl::StatusOr<json::object> ExecDriver::Apply(const DeployRequest& request, RunContext& context) {
  return Run(request, context);
}

absl::Status ExecDriver::Destroy(const DeployRequest& request, RunContext& context) {
  return Run(request, context).status();
}

bool ExecDriver::Recover(const json::object& state) {
  auto pgid = state.if_contains("pgid");
  auto start = state.if_contains("startTime");
  if (pgid && pgid->is_int64() && start && start->is_int64())
    KillGroupIfAlive(static_cast<int>(pgid->get_int64()), start->get_int64());
  return true;  // apply and destroy are idempotent by contract: re-run from the start
}

}  // namespace gantry::drivers::exec
