// PostgresStore::Commit: a group commit of concurrent Commit calls, in four round trips per
// batch whatever its size (libpq pipelines; see postgres_store.h, "Commit").
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "store/postgres/pg_conn.h"
#include "store/store_common.h"

namespace gantry::store {

namespace json = boost::json;
using pg::Query;
using pg::Result;

namespace {

// The statements of a commit. Expected refusals (the object exists, changed or is gone) do
// not fail the statement, so that the transaction goes on: creates and revisions insert
// nothing ON CONFLICT, updates and deletes change no row and say whether it exists.
constexpr char kCreate[] =
    "WITH i AS (INSERT INTO objects (kind, namespace, name, rv, labels, phase, ref_name, "
    "search, body) VALUES ($1::text, $2::text, $3::text, $4::bigint, $5::jsonb, $6::text, "
    "$7::text, $8::text, $9::text) ON CONFLICT (kind, namespace, name) DO NOTHING RETURNING id), "
    "l AS (INSERT INTO object_labels (object_id, kind, key, value) SELECT i.id, $1::text, "
    "e.key, e.value FROM i, jsonb_each_text($5::jsonb) e) "
    "INSERT INTO events (rv, commit_rv, type, kind, namespace, name, body) "
    "SELECT $4::bigint, $10::bigint, 'ADDED', $1::text, $2::text, $3::text, $9::text FROM i";
constexpr char kUpdate[] =
    "WITH u AS (UPDATE objects SET rv = $4::bigint, labels = $5::jsonb, phase = $6::text, "
    "ref_name = $7::text, search = $8::text, body = $9::text WHERE kind = $1::text AND "
    "namespace = $2::text AND name = $3::text AND ($11::bigint = 0 OR rv = $11::bigint) "
    "RETURNING id), "
    // The label index: drop the keys the object no longer has, add or change the others
    // (nothing is written for labels that stay as they were: the conflict's WHERE). Not a
    // NOT EXISTS: its generic plan hash-joined a scan of the whole label index per update.
    "ld AS (DELETE FROM object_labels x USING u WHERE x.object_id = u.id AND "
    "NOT ($5::jsonb ? x.key)), "
    "la AS (INSERT INTO object_labels AS x (object_id, kind, key, value) SELECT u.id, "
    "$1::text, e.key, e.value FROM u, jsonb_each_text($5::jsonb) e "
    "ON CONFLICT (object_id, key) DO UPDATE SET value = excluded.value "
    "WHERE x.value <> excluded.value), "
    "e AS (INSERT INTO events (rv, commit_rv, type, kind, namespace, name, body) "
    "SELECT $4::bigint, $10::bigint, 'MODIFIED', $1::text, $2::text, $3::text, $9::text "
    "FROM u RETURNING 1) "
    "SELECT (SELECT count(*) FROM e), EXISTS (SELECT 1 FROM objects WHERE kind = $1::text AND "
    "namespace = $2::text AND name = $3::text)";
constexpr char kDelete[] =
    "WITH d AS (DELETE FROM objects WHERE kind = $1::text AND namespace = $2::text AND "
    "name = $3::text AND ($4::bigint = 0 OR rv = $4::bigint) RETURNING id, body), "
    "l AS (DELETE FROM object_labels WHERE object_id IN (SELECT id FROM d)), "
    "r AS (DELETE FROM revisions WHERE kind = $1::text AND namespace = $2::text AND "
    "name = $3::text AND EXISTS (SELECT 1 FROM d)) "
    "SELECT (SELECT body FROM d), EXISTS (SELECT 1 FROM objects WHERE kind = $1::text AND "
    "namespace = $2::text AND name = $3::text)";
constexpr char kDeleted[] =
    "INSERT INTO events (rv, commit_rv, type, kind, namespace, name, body) "
    "VALUES ($1::bigint, $2::bigint, 'DELETED', $3::text, $4::text, $5::text, $6::text)";
constexpr char kPutRevision[] =
    "INSERT INTO revisions (kind, namespace, name, revision, created, spec) "
    "VALUES ($1::text, $2::text, $3::text, $4::bigint, $5::text, $6::text) "
    "ON CONFLICT (kind, namespace, name, revision) DO NOTHING";
// Row locks: the rv when locked (null when not), and whether the row exists at all.
constexpr char kLock[] =
    "SELECT (SELECT rv FROM objects WHERE kind = $1::text AND namespace = $2::text AND "
    "name = $3::text FOR UPDATE), EXISTS (SELECT 1 FROM objects WHERE kind = $1::text AND "
    "namespace = $2::text AND name = $3::text)";
constexpr char kLockOrSkip[] =
    "SELECT (SELECT rv FROM objects WHERE kind = $1::text AND namespace = $2::text AND "
    "name = $3::text FOR UPDATE SKIP LOCKED), EXISTS (SELECT 1 FROM objects WHERE "
    "kind = $1::text AND namespace = $2::text AND name = $3::text)";
constexpr char kTakeRv[] = "SELECT rv FROM gantry_state WHERE id = 1 FOR UPDATE";
constexpr char kSetRv[] = "UPDATE gantry_state SET rv = $1::bigint WHERE id = 1";
constexpr char kNotify[] = "SELECT pg_notify($1::text, $2::text)";

using Key = std::tuple<std::string, std::string, std::string>;  // kind, namespace, name

Key KeyOf(const Write& w) {
  return {w.kind, model::GetString(w.object, "metadata.namespace"),
          model::GetString(w.object, "metadata.name")};
}

bool Versioned(const Write& w) { return w.op != Write::Op::kPutRevision; }

// The statement that makes `w` at resourceVersion `rv`, in a call whose last is `commit_rv`.
Query WriteQuery(Write& w, int64_t rv, int64_t commit_rv) {
  std::string ns = model::GetString(w.object, "metadata.namespace");
  std::string name = model::GetString(w.object, "metadata.name");
  switch (w.op) {
    case Write::Op::kPutRevision: {
      const json::value* spec = model::FindPath(w.object, "spec");
      return {kPutRevision,
              {w.kind, ns, name, std::to_string(w.revision),
               model::GetString(w.object, "metadata.creationTimestamp"),
               spec ? json::serialize(*spec) : "{}"}};
    }
    case Write::Op::kCreate:
    case Write::Op::kUpdate: {
      std::string rv_text = std::to_string(rv);
      model::EnsureObject(w.object, "metadata")["resourceVersion"] = rv_text;
      Columns col = ColumnsOf(w.object);
      std::vector<std::string> params = {w.kind,
                                         std::move(ns),
                                         std::move(name),
                                         std::move(rv_text),
                                         std::move(col.labels),
                                         std::move(col.phase),
                                         std::move(col.ref_name),
                                         std::move(col.search),
                                         json::serialize(w.object),
                                         std::to_string(commit_rv)};
      if (w.op == Write::Op::kCreate) return {kCreate, std::move(params)};
      params.push_back(std::to_string(w.expected_resource_version));
      return {kUpdate, std::move(params)};
    }
    case Write::Op::kDelete:
      return {kDelete, {w.kind, ns, name, std::to_string(w.expected_resource_version)}};
  }
  return {};
}

// OK when the statement of `w` made it; else why not (the refusals as SQLite gives them).
absl::Status WriteOutcome(const Write& w, const Result& r) {
  const std::string name = model::GetString(w.object, "metadata.name");
  if (!r.ok()) {
    if (pg::IsDeadlockOrSerialization(r.sqlstate())) return ObjectModified(w.kind, name);
    return pg::DbError(r, "write");
  }
  switch (w.op) {
    case Write::Op::kPutRevision:
      return r.affected() == 1 ? absl::OkStatus() : RevisionExists(w.kind, name, w.revision);
    case Write::Op::kCreate:
      return r.affected() == 1 ? absl::OkStatus() : ObjectExists(w.kind, name);
    case Write::Op::kUpdate:
      if (r.integer(0, 0) == 1) return absl::OkStatus();
      break;
    case Write::Op::kDelete:
      if (!r.null(0, 0)) return absl::OkStatus();
      break;
  }
  return r.boolean(0, 1) ? ObjectModified(w.kind, name) : ObjectNotFound(w.kind, name);
}

}  // namespace

absl::StatusOr<std::vector<json::object>> PostgresStore::Commit(std::vector<Write> writes,
                                                                Durability durability) {
  for (const Write& w : writes) RETURN_IF_ERROR(CheckStorable(w.kind, w.object));
  return queue_.Commit(
      std::move(writes), durability,
      [this](const std::vector<PendingCommit*>& batch) { return CommitBatch(batch); });
}

GroupCommitStats PostgresStore::CommitStats() { return queue_.Stats(); }

size_t PostgresStore::CommitBatch(const std::vector<PendingCommit*>& batch) {
  auto lease = Acquire();
  if (!lease.ok()) {
    FailCalls(batch, lease.status());
    return 0;
  }
  Conn& c = **lease;
  std::vector<absl::Status> refused(batch.size());
  absl::StatusOr<int64_t> base = BeginBatch(c, batch, &refused);
  if (!base.ok()) {
    c.Exec("ROLLBACK");  // a no-op on a broken connection, which is then not reused
    FailCalls(batch, base.status());
    return 0;
  }
  std::vector<PendingCommit*> live;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (refused[i].ok())
      live.push_back(batch[i]);
    else
      batch[i]->result = refused[i];
  }
  absl::Status applied = ApplyCalls(c, *base, &live);
  if (applied.ok() && !live.empty()) applied = EndBatch(c, *base, live);
  if (!applied.ok() || live.empty()) {
    c.Exec("ROLLBACK");
    FailCalls(live, applied);
    // The COMMIT may have been applied with its answer lost, or applied and not flushed:
    // its events are then the tail thread's to deliver (once durable), and its NOTIFY names
    // this replica, which the tail thread passes over.
    if (!applied.ok()) WakeTail();
    return 0;
  }
  int64_t last = *base;
  for (PendingCommit* call : live)
    for (const Write& w : call->writes) last += Versioned(w) ? 1 : 0;
  commits_since_compaction_ += static_cast<int64_t>(live.size());
  writes_since_analyze_ += last - *base;
  if (commits_since_compaction_ >= pg::kCompactEvery) {
    commits_since_compaction_ = 0;
    MaybeCompact(c);
  }
  std::vector<const std::vector<Event>*> events;
  for (PendingCommit* call : live) events.push_back(&call->events);
  DeliverThrough(c, last, events, *base + 1);
  for (PendingCommit* call : live) AnswerFromEvents(call);
  return live.size();
}

absl::StatusOr<int64_t> PostgresStore::BeginBatch(Conn& c, const std::vector<PendingCommit*>& batch,
                                                  std::vector<absl::Status>* refusals) {
  // The rows that updates and deletes change (not those created earlier in the batch), in
  // key order so that two replicas' batches never wait for each other in a cycle; a row is
  // skipped rather than waited for when every write to it is guarded.
  std::set<Key> created;
  std::map<Key, bool> guarded;  // key -> every write to it is guarded
  for (PendingCommit* call : batch)
    for (const Write& w : call->writes) {
      if (!Versioned(w)) continue;
      Key key = KeyOf(w);
      if (w.op == Write::Op::kCreate) {
        created.insert(key);
      } else if (!created.count(key)) {
        auto [it, fresh] = guarded.emplace(key, true);
        it->second = it->second && w.expected_resource_version != 0;
      }
    }
  // Always committed asynchronously, so that the counter row is held only while the
  // transaction runs, never while the WAL is flushed; durable batches then wait for the
  // flush (Flush), where concurrent commits share one fsync.
  std::vector<Query> qs = {{"BEGIN", {}, false},
                           {"SET LOCAL synchronous_commit TO OFF", {}, false}};
  for (const auto& [key, skip] : guarded)
    qs.push_back(
        {skip ? kLockOrSkip : kLock, {std::get<0>(key), std::get<1>(key), std::get<2>(key)}});
  // The counter row last (see the header), then the savepoint a failed call rolls back to.
  qs.push_back({kTakeRv, {}});
  qs.push_back({"SAVEPOINT gantry_batch", {}, false});
  std::string error;
  std::vector<Result> rs = c.Pipeline(qs, &error);
  if (rs.empty()) return absl::UnavailableError("database error during begin: " + error);
  size_t i = 2;
  std::map<Key, absl::Status> refused;
  for (const auto& [key, skip] : guarded) {
    const Result& r = rs[i++];
    if (!r.ok()) {
      if (pg::IsDeadlockOrSerialization(r.sqlstate()))
        return ObjectModified(std::get<0>(key), std::get<2>(key));
      return pg::DbError(r, "write");
    }
    if (skip && r.null(0, 0))
      refused[key] = r.boolean(0, 1) ? ObjectModified(std::get<0>(key), std::get<2>(key))
                                     : ObjectNotFound(std::get<0>(key), std::get<2>(key));
  }
  for (const Result& r : rs)
    if (!r.ok()) return pg::DbError(r, "begin");
  for (size_t k = 0; k < batch.size(); ++k)
    for (const Write& w : batch[k]->writes) {
      if (!Versioned(w) || w.op == Write::Op::kCreate) continue;
      auto it = refused.find(KeyOf(w));
      if (it != refused.end()) {
        (*refusals)[k] = it->second;
        break;
      }
    }
  const Result& rv = rs[rs.size() - 2];
  if (rv.rows() != 1) return absl::UnavailableError("database error: no resourceVersion row");
  return rv.integer(0, 0);
}

absl::Status PostgresStore::ApplyCalls(Conn& c, int64_t base, std::vector<PendingCommit*>* live) {
  // Every call's writes go in one pipeline. When one fails, the batch rolls back to its
  // savepoint and goes again without the first call that failed (the calls before it did
  // not cause a later one's failure; a later one's cannot be trusted, as its
  // resourceVersions and what it saw depended on the failed call). Each round answers one
  // failed call, so the loop ends.
  for (bool again = false;; again = true) {
    if (live->empty()) return absl::OkStatus();
    std::vector<Query> qs;
    if (again) qs.push_back({"ROLLBACK TO SAVEPOINT gantry_batch", {}, false});
    const size_t offset = qs.size();
    int64_t rv = base;
    for (PendingCommit* call : *live) {
      int64_t commit_rv = rv;
      for (const Write& w : call->writes) commit_rv += Versioned(w) ? 1 : 0;
      for (Write& w : call->writes) {
        rv += Versioned(w) ? 1 : 0;
        qs.push_back(WriteQuery(w, rv, commit_rv));
      }
    }
    std::vector<Result> rs;
    if (!qs.empty()) {  // calls without writes have nothing to send
      std::string error;
      rs = c.Pipeline(qs, &error);
      if (rs.empty()) return absl::UnavailableError("database error during write: " + error);
    }
    if (again && !rs[0].ok()) return pg::DbError(rs[0], "write");
    size_t failed = live->size();
    absl::Status why;
    for (size_t k = 0, q = offset; k < live->size() && failed == live->size(); ++k)
      for (const Write& w : (*live)[k]->writes) {
        why = WriteOutcome(w, rs[q++]);
        if (!why.ok()) {
          failed = k;
          break;
        }
      }
    if (failed == live->size()) {
      Collect(base, *live, rs, offset);
      return absl::OkStatus();
    }
    (*live)[failed]->result = why;
    live->erase(live->begin() + static_cast<std::ptrdiff_t>(failed));
  }
}

void PostgresStore::Collect(int64_t base, const std::vector<PendingCommit*>& live,
                            const std::vector<Result>& rs, size_t q) {
  // What each call answers and tells watchers. Deleted objects come back from the database;
  // their events are written by EndBatch.
  // The objects go to the events, and from there to the answers (AnswerFromEvents).
  int64_t rv = base;
  for (PendingCommit* call : live) {
    call->events.clear();
    for (size_t i = 0; i < call->writes.size(); ++i, ++q) {
      Write& w = call->writes[i];
      if (!Versioned(w)) continue;
      ++rv;
      auto [kind, ns, name] = KeyOf(w);
      if (w.op == Write::Op::kDelete) {
        auto obj = model::ParseStoredObject(rs[q].text(0, 0));
        json::object last = obj.ok() ? std::move(*obj) : json::object();
        model::EnsureObject(last, "metadata")["resourceVersion"] = std::to_string(rv);
        call->events.push_back(Event{rv, "DELETED", kind, ns, name, std::move(last)});
      } else {
        call->events.push_back(Event{rv, w.op == Write::Op::kCreate ? "ADDED" : "MODIFIED", kind,
                                     ns, name, std::move(w.object)});
      }
    }
    call->result = std::vector<json::object>();
  }
}

absl::Status PostgresStore::EndBatch(Conn& c, int64_t base,
                                     const std::vector<PendingCommit*>& live) {
  std::vector<Query> qs;
  int64_t last = base;
  for (PendingCommit* call : live) {
    const int64_t commit_rv = call->events.empty() ? 0 : call->events.back().resource_version;
    for (const Event& e : call->events) {
      last = e.resource_version;
      if (e.type == "DELETED")
        qs.push_back({kDeleted,
                      {std::to_string(e.resource_version), std::to_string(commit_rv), e.kind, e.ns,
                       e.name, json::serialize(e.object)}});
    }
  }
  if (last != base) {
    qs.push_back({kSetRv, {std::to_string(last)}});
    qs.push_back({kNotify, {pg::kEventsChannel, absl::StrCat(last, " ", replica_tag_)}});
  }
  qs.push_back({"COMMIT", {}, false});
  std::string error;
  std::vector<Result> rs = c.Pipeline(qs, &error);
  for (size_t i = 0; i + 1 < rs.size(); ++i)
    if (!rs[i].ok()) return pg::DbError(rs[i], "commit");
  if (rs.empty() || !rs.back().ok())
    // The answer is lost or the commit failed: either way the caller re-reads.
    return absl::UnavailableError(
        "database error during commit (the change may or may not have been applied): " +
        (rs.empty() ? error : rs.back().error()));
  bool durable = std::any_of(live.begin(), live.end(), [](PendingCommit* call) {
    return call->durability == Durability::kDurable;
  });
  if (durable) {
    if (absl::Status f = Flush(c); !f.ok())
      return absl::UnavailableError(
          "database error while making a commit durable (it may be lost if the database "
          "server crashes): " +
          std::string(f.message()));
  }
  return absl::OkStatus();
}

absl::Status PostgresStore::Flush(Conn& c) {
  // A synchronous commit that wrote WAL flushes the WAL up to its commit record, and so
  // every commit before it. It needs a transaction id and a WAL record: a write to this
  // connection's own row (no two connections contend for it).
  Result r = c.Run(
      "INSERT INTO flushes (pid, n) VALUES (pg_backend_pid(), 1) "
      "ON CONFLICT (pid) DO UPDATE SET n = flushes.n + 1");
  if (!r.ok()) return pg::DbError(r, "flush");
  return absl::OkStatus();
}

}  // namespace gantry::store
