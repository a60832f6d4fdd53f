#include "engine/fleet_gpus.h"

#include "common/clock.h"
#include "common/status_macros.h"
#include "engine/engine_internal.h"
#include "model/codec.h"

namespace gantry::engine {

namespace json = boost::json;

absl::Status PublishHostGpus(store::Store& store, const std::string& host, const GpusByType& gpus,
                             std::chrono::system_clock::time_point now) {
  json::object by_type;
  for (const auto& [type, n] : gpus) by_type[type] = n;
  json::object record{{"kind", kGpuHostKind},
                      {"metadata", json::object{{"name", host}}},
                      {"spec", json::object{{"gpus", std::move(by_type)}}},
                      {"status", json::object{{"renewTime", FormatRfc3339(now)}}}};
  // Unguarded: the host's own replica is its only writer.
  const bool exists = store.Get(kGpuHostKind, "", host).ok();
  auto op = exists ? store::Write::Op::kUpdate : store::Write::Op::kCreate;
  auto done =
      store.Commit({{op, kGpuHostKind, std::move(record), 0, 0}}, store::Durability::kRelaxed);
  return done.ok() ? absl::OkStatus() : done.status();
}

absl::StatusOr<GpusByType> FleetGpus(store::Store& store,
                                     std::chrono::system_clock::time_point now) {
  store::ListOptions q;
  q.kind = kGpuHostKind;
  ASSIGN_OR_RETURN(auto hosts, internal::ListAll(store, q));
  GpusByType fleet;
  for (const json::object& h : hosts) {
    auto renewed = internal::ParseRfc3339(model::GetString(h, "status.renewTime"));
    if (!renewed || *renewed + kFleetFresh < now) continue;
    const json::value* gpus = model::FindPath(h, "spec.gpus");
    if (!gpus || !gpus->is_object()) continue;
    for (const auto& kv : gpus->get_object())
      if (kv.value().is_int64()) fleet[std::string(kv.key())] += kv.value().get_int64();
  }
  return fleet;
}

}  // namespace gantry::engine
