#include "store/postgres/pg_conn.h"

#include <poll.h>

namespace gantry::store {

using pg::Query;
using pg::Result;

const std::string* PostgresStore::Conn::Prepared(std::string_view sql, int params, Result* failed) {
  std::string key(sql);
  auto it = prepared_.find(key);
  if (it != prepared_.end()) return &it->second;
  std::string name = "g" + std::to_string(prepared_.size());
  Result p(PQprepare(pg_, name.c_str(), key.c_str(), params, nullptr));
  if (!p.ok()) {
    *failed = std::move(p);
    return nullptr;
  }
  return &prepared_.emplace(std::move(key), std::move(name)).first->second;
}

Result PostgresStore::Conn::Run(const std::string& sql, const std::vector<std::string>& params,
                                bool dynamic) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p.c_str());
  int n = static_cast<int>(params.size());
  if (dynamic)
    return Result(PQexecParams(pg_, sql.c_str(), n, nullptr, values.data(), nullptr, nullptr, 0));
  Result failed;
  const std::string* name = Prepared(sql, n, &failed);
  if (!name) return failed;
  return Result(PQexecPrepared(pg_, name->c_str(), n, values.data(), nullptr, nullptr, 0));
}

bool PostgresStore::Conn::FlushPipeline() {
  for (;;) {
    int f = PQflush(pg_);
    if (f == 0) return true;
    if (f < 0) return false;
    pollfd p{PQsocket(pg_), POLLIN | POLLOUT, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) return false;
    if ((p.revents & POLLIN) && !PQconsumeInput(pg_)) return false;
  }
}

std::vector<Result> PostgresStore::Conn::Pipeline(const std::vector<Query>& queries,
                                                  std::string* error) {
  auto fail = [&](std::string why) {
    broken_ = true;  // half a pipeline may be on the wire: never reuse this connection
    *error = std::move(why);
    return std::vector<Result>{};
  };
  if (queries.empty()) return fail("an empty pipeline");  // a caller's mistake
  // Statements are prepared before the pipeline starts (a failure there is the server's
  // answer to that statement, reported like a failed query).
  std::vector<const std::string*> names(queries.size(), nullptr);
  for (size_t i = 0; i < queries.size(); ++i) {
    if (!queries[i].prepare) continue;
    Result failed;
    names[i] = Prepared(queries[i].sql, static_cast<int>(queries[i].params.size()), &failed);
    if (!names[i]) return fail(failed.error());
  }
  if (PQenterPipelineMode(pg_) != 1 || PQsetnonblocking(pg_, 1) != 0)
    return fail(PQerrorMessage(pg_));
  std::vector<const char*> values;
  for (size_t i = 0; i < queries.size(); ++i) {
    const Query& q = queries[i];
    values.clear();
    for (const auto& p : q.params) values.push_back(p.c_str());
    int n = static_cast<int>(values.size());
    int sent = names[i] ? PQsendQueryPrepared(pg_, names[i]->c_str(), n, values.data(), nullptr,
                                              nullptr, 0)
                        : PQsendQueryParams(pg_, std::string(q.sql).c_str(), n, nullptr,
                                            values.data(), nullptr, nullptr, 0);
    if (sent != 1) return fail(PQerrorMessage(pg_));
  }
  if (PQpipelineSync(pg_) != 1 || !FlushPipeline()) return fail(PQerrorMessage(pg_));
  if (PQsetnonblocking(pg_, 0) != 0) return fail(PQerrorMessage(pg_));
  // Each query's result is followed by a null; then the sync point's result.
  std::vector<Result> results;
  results.reserve(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    Result r(PQgetResult(pg_));
    if (r.empty() || PQstatus(pg_) != CONNECTION_OK) return fail(PQerrorMessage(pg_));
    while (PGresult* extra = PQgetResult(pg_)) PQclear(extra);
    results.push_back(std::move(r));
  }
  Result sync(PQgetResult(pg_));
  if (!sync.pipeline_sync() || PQexitPipelineMode(pg_) != 1) return fail(PQerrorMessage(pg_));
  return results;
}

}  // namespace gantry::store
