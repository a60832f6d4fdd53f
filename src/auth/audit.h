// AuditLog: the record of every mutation and of every refusal of one: who, when, which
// verb on which object, the result, and the source address. Stored as AuditEvent objects
// (cluster-scoped, read-only through the API, readable by admins).
//
// Nothing secret is recorded: the request body is never kept, only the answer's code and
// message, and Gantry's messages never carry secret values (sensitive variables are
// redacted before any message is made; passwords and tokens are never echoed).
//
// Records are committed with relaxed durability, after the answer is decided: a crash of
// gantryd keeps them (WAL), a power loss may lose the last ones together with other
// unsynced bookkeeping.
//
// Thread-safety: safe from any thread.
#pragma once

#include <string>

#include "common/clock.h"
#include "store/store.h"

namespace gantry::auth {

inline constexpr char kAuditEvent[] = "AuditEvent";

struct AuditEntry {
  std::string user;         // "" when the caller was not authenticated
  std::string verb;         // create, update, patch, delete, deploy, login, ...
  std::string resource;     // computeinstances, users, tokens, sessions, ...
  std::string ns;
  std::string name;
  std::string subresource;  // deploy, tokens, ...
  std::string result;       // Allowed, Denied, Failed
  int code = 0;             // the HTTP status answered
  std::string message;      // the Status message of a refusal
  std::string source;       // peer address
};

class AuditLog {
 public:
  AuditLog(store::Store& store, const Clock& clock) : store_(store), clock_(clock) {}
  // Best effort: a failure to record is logged, never turned into the request's answer.
  void Record(const AuditEntry& entry);

 private:
  store::Store& store_;
  const Clock& clock_;
};

}  // namespace gantry::auth
