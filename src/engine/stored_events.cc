#include "engine/stored_events.h"

#include <boost/json.hpp>

#include "common/clock.h"
#include "common/ids.h"

namespace gantry::engine {

namespace json = boost::json;

absl::Status CreateStoredEvent(store::Store& store, const StoredEvent& e,
                               std::chrono::system_clock::time_point now) {
  const std::string stamp = FormatRfc3339(now);
  json::object involved{
      {"apiVersion", e.involved.api_version}, {"kind", e.involved.kind}, {"name", e.involved.name}};
  if (!e.involved.ns.empty()) involved["namespace"] = e.involved.ns;
  if (!e.involved.uid.empty()) involved["uid"] = e.involved.uid;
  json::object event{
      {"apiVersion", "v1"},
      {"kind", kStoredEventKind},
      {"metadata",
       json::object{
           {"name", e.name}, {"namespace", e.ns}, {"uid", NewUid()}, {"creationTimestamp", stamp}}},
      {"involvedObject", std::move(involved)},
      {"reason", e.reason},
      {"message", e.message},
      {"type", e.type},
      {"count", 1},
      {"firstTimestamp", stamp},
      {"lastTimestamp", stamp},
      {"source", json::object{{"component", e.component}}},
      {"reportingComponent", e.component}};
  auto s = store.Commit({{store::Write::Op::kCreate, kStoredEventKind, std::move(event), 0, 0}});
  if (s.ok() || absl::IsAlreadyExists(s.status())) return absl::OkStatus();
  return s.status();
}

}  // namespace gantry::engine
