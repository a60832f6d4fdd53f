#include "drivers/driver.h"

#include <cctype>

#include "common/json_member.h"

namespace gantry::drivers {
namespace {

namespace json = boost::json;

std::string EnvSuffix(std::string_view key) {
  std::string out;
  for (char c : key)
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
  return out;
}

}  // namespace

std::string InstanceKey(const DeployRequest& r) {
  std::string uid = StringMember(r.instance, "uid");
  return uid.empty() ? StringMember(r.instance, "project") + "/" + StringMember(r.instance, "name")
                     : uid;
}

std::string Text(const json::value& v) {
  return v.is_string() ? std::string(v.get_string()) : json::serialize(v);
}

absl::Status Driver::CanStop(const json::object&) const {
  if (Caps().stop_start) return absl::OkStatus();
  return absl::FailedPreconditionError("the " + std::string(Name()) +
                                       " driver cannot stop an instance and start it again");
}

absl::Status Driver::Stop(const DeployRequest&, RunContext&) { return CanStop(json::object{}); }

absl::StatusOr<json::object> Driver::Start(const DeployRequest&, RunContext&) {
  auto can = CanStop(json::object{});
  if (!can.ok()) return can;
  return absl::UnimplementedError("the " + std::string(Name()) +
                                  " driver does not implement start");
}

std::map<std::string, std::string> ComputeEnvironment(const DeployRequest& request) {
  std::map<std::string, std::string> env;
  const json::object& c = request.compute;
  if (c.empty()) return env;
  if (const json::value* outputs = c.if_contains("outputs"); outputs && outputs->is_object())
    for (const auto& kv : outputs->get_object())
      env["GANTRY_COMPUTE_" + EnvSuffix(kv.key())] = Text(kv.value());
  // Set last: an output called "name" cannot hide which instance this is.
  if (const json::value* v = c.if_contains("name")) env["GANTRY_COMPUTE_NAME"] = Text(*v);
  if (const json::value* v = c.if_contains("project")) env["GANTRY_COMPUTE_PROJECT"] = Text(*v);
  std::string gpus;
  if (const json::value* g = c.if_contains("gpus"); g && g->is_array())
    for (const auto& e : g->get_array()) gpus += (gpus.empty() ? "" : ",") + Text(e);
  env["GANTRY_COMPUTE_GPUS"] = gpus;
  return env;
}

void DriverRegistry::Register(std::unique_ptr<Driver> driver) {
  std::string name(driver->Name());
  drivers_[name] = std::move(driver);
}

Driver* DriverRegistry::Find(std::string_view name) const {
  auto it = drivers_.find(name);
  return it == drivers_.end() ? nullptr : it->second.get();
}

void DriverRegistry::SetObserver(WorkloadObserver* observer) {
  for (auto& [name, d] : drivers_) d->SetObserver(observer);
}

void DriverRegistry::Shutdown() {
  for (auto& [name, d] : drivers_) d->Shutdown();
}

}  // namespace gantry::drivers
