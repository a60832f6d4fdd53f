#include "auth/audit.h"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>

#include "common/ids.h"

namespace gantry::auth {

namespace json = boost::json;

void AuditLog::Record(const AuditEntry& e) {
  std::string now = FormatRfc3339(clock_.Now());
  std::string uid = NewUid();
  std::string name = "ae-";
  for (char c : uid)
    if (c != '-' && name.size() < 23) name += c;
  json::object ref{{"resource", e.resource}, {"namespace", e.ns}, {"name", e.name}};
  if (!e.subresource.empty()) ref["subresource"] = e.subresource;
  json::object obj{{"apiVersion", "paas.gantry.dev/v1"},
                   {"kind", kAuditEvent},
                   {"metadata", json::object{{"name", name}, {"namespace", ""}, {"uid", uid},
                                             {"creationTimestamp", now}}},
                   {"time", now},
                   {"user", e.user},
                   {"verb", e.verb},
                   {"objectRef", std::move(ref)},
                   {"result", e.result},
                   {"code", e.code},
                   {"message", e.message.substr(0, 1024)},
                   {"sourceAddress", e.source}};
  auto out = store_.Commit({store::Write{store::Write::Op::kCreate, kAuditEvent, std::move(obj), 0, 0}},
                           store::Durability::kRelaxed);
  if (!out.ok())
    spdlog::error("could not record an audit event ({} {} {}): {}", e.user, e.verb, e.resource,
                  out.status().ToString());
}

}  // namespace gantry::auth
