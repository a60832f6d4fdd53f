// The SQL SqliteStore runs for lists and counts, and the label index it keeps.
//
// label_index(kind, key, value, id) holds one row per string label of every object (id is
// objects.id, which names the object's kind, namespace and name and orders lists). It is
// written in the transaction that writes the object. A list whose selector has an equality
// or `in` requirement reads the index instead of every object of the kind:
//   - one value (`k=v`, `k in (v)`): the index is scanned in id order and joined to objects,
//     so a page stops after `limit` matches whatever share of the kind matches;
//   - several values (`k in (a,b)`): the matching ids are read from the index (sorted) and
//     the objects fetched by id, again in list order.
// Every requirement (the index's too) is also checked on the object's labels column, as are
// notin, !=, exists, !key, field selectors and search, on the rows the index yields.
//
// Thread-safety: plain functions over their arguments and the connection they are given.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "store/sqlite/sqlite_db.h"
#include "store/store.h"

namespace gantry::store::sqlite {

struct Query {
  std::string sql;
  std::vector<std::string> binds;  // ?1, ?2, ... (all text)
};

// SELECT id, body of one page (limit + 1 rows, to know whether another page follows).
// INVALID_ARGUMENT for a malformed continue token or an unsupported field.
absl::StatusOr<Query> ListQuery(const ListOptions& options);
// SELECT COUNT(*) of the objects of `kind` in `ns` matching `fields`.
absl::StatusOr<Query> CountQuery(const std::string& kind, const std::optional<std::string>& ns,
                                 const std::vector<FieldFilter>& fields);

// Writes the index rows of object `id` (of `kind`) from obj's metadata.labels, after removing
// its old ones when `replace`.
absl::Status IndexLabels(Connection& conn, const std::string& kind, int64_t id,
                         const boost::json::object& obj, bool replace);
// Removes the index rows of object `id`.
absl::Status UnindexLabels(Connection& conn, int64_t id);

}  // namespace gantry::store::sqlite
