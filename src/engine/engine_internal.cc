#include "engine/engine_internal.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "common/status_macros.h"
#include "model/codec.h"

namespace gantry::engine::internal {

absl::StatusOr<model::Run> LoadRun(store::Store& store, const std::string& ns,
                                   const std::string& name) {
  ASSIGN_OR_RETURN(boost::json::object stored, store.Get(model::kRunKind, ns, name));
  return model::DecodeRun(std::move(stored));
}

absl::StatusOr<model::Instance> LoadInstance(store::Store& store, const std::string& kind,
                                             const std::string& ns, const std::string& name) {
  ASSIGN_OR_RETURN(boost::json::object stored, store.Get(kind, ns, name));
  ASSIGN_OR_RETURN(model::Instance instance, model::DecodeInstance(std::move(stored)));
  if (instance.kind.empty()) instance.kind = kind;
  return instance;
}

absl::StatusOr<model::Instance> InstanceOf(store::Store& store, const model::Run& run) {
  ASSIGN_OR_RETURN(model::Instance instance,
                   LoadInstance(store, run.instance_kind, run.metadata.ns, run.instance_name));
  if (instance.metadata.uid != run.instance_uid)
    return absl::NotFoundError("instance " + run.instance_name + " was replaced");
  return instance;
}

store::Write UpdateOf(const model::Run& run) {
  return {store::Write::Op::kUpdate, model::kRunKind, model::EncodeRun(run),
          run.metadata.resource_version, 0};
}

store::Write UpdateOf(const model::Instance& instance) {
  return {store::Write::Op::kUpdate, instance.kind, model::EncodeInstance(instance),
          instance.metadata.resource_version, 0};
}

store::Write UpdateOf(model::Run&& run) {
  const int64_t rv = run.metadata.resource_version;
  return {store::Write::Op::kUpdate, model::kRunKind, model::EncodeRun(std::move(run)), rv, 0};
}

store::Write UpdateOf(model::Instance&& instance) {
  const int64_t rv = instance.metadata.resource_version;
  std::string kind = instance.kind;
  return {store::Write::Op::kUpdate, std::move(kind), model::EncodeInstance(std::move(instance)),
          rv, 0};
}

absl::Status UpdateAsRead(store::Store& store, const std::string& kind, boost::json::object next) {
  const int64_t rv = std::atoll(model::GetString(next, "metadata.resourceVersion").c_str());
  if (rv == 0) return absl::OkStatus();
  auto stored = store.Commit({{store::Write::Op::kUpdate, kind, std::move(next), rv, 0}});
  return stored.ok() || IsConflict(stored.status()) ? absl::OkStatus() : stored.status();
}

absl::Status CommitRelaxed(store::Store& store, std::vector<store::Write> writes) {
  return store.Commit(std::move(writes), store::Durability::kRelaxed).status();
}

std::vector<model::Instance> DecodeInstances(std::vector<boost::json::object> objects) {
  std::vector<model::Instance> out;
  out.reserve(objects.size());
  for (auto& o : objects)
    if (auto i = model::DecodeInstance(std::move(o)); i.ok()) out.push_back(*std::move(i));
  return out;
}

absl::StatusOr<std::vector<boost::json::object>> ListAll(store::Store& store,
                                                         store::ListOptions q) {
  std::vector<boost::json::object> out;
  RETURN_IF_ERROR(ForEachPage(store, std::move(q), [&](std::vector<boost::json::object>& page) {
    for (auto& o : page) out.push_back(std::move(o));
  }));
  return out;
}

absl::Status ForEachPage(store::Store& store, store::ListOptions q,
                         const std::function<void(std::vector<boost::json::object>& page)>& each) {
  while (true) {
    ASSIGN_OR_RETURN(auto page, store.List(q));
    each(page.items);
    if (page.continue_token.empty()) return absl::OkStatus();
    q.continue_token = page.continue_token;
  }
}

std::string Scrub(std::string text, const std::vector<std::string>& secrets) {
  for (const auto& s : secrets) {
    if (s.size() < 3) continue;
    for (size_t pos; (pos = text.find(s)) != std::string::npos;)
      text.replace(pos, s.size(), "******");
  }
  return text;
}

std::string ReasonFor(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk:
      return "";
    case absl::StatusCode::kDeadlineExceeded:
      return "Timeout";
    case absl::StatusCode::kCancelled:
      return "Canceled";
    case absl::StatusCode::kUnavailable:
      return "DriverUnavailable";
    default:
      return "DriverError";
  }
}

std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& s) {
  std::tm tm{};
  char z = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &z) != 7 ||
      z != 'Z')
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return std::chrono::system_clock::from_time_t(::timegm(&tm));
}

}  // namespace gantry::engine::internal
