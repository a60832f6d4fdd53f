#include "store/sqlite/sqlite_query.h"

#include <set>

#include "common/status_macros.h"
#include "model/codec.h"
#include "store/store_common.h"

namespace gantry::store::sqlite {
namespace {

namespace json = boost::json;

// Builds a query's text and its bind list together.
class Builder {
 public:
  // Appends `value` to the binds and returns its placeholder ("?N").
  std::string Bind(std::string value) {
    q_.binds.push_back(std::move(value));
    return "?" + std::to_string(q_.binds.size());
  }
  void Add(std::string_view sql) { q_.sql += sql; }
  Query Take() { return std::move(q_); }

 private:
  Query q_;
};

std::string JsonPathForLabel(const std::string& key) { return "$.\"" + key + "\""; }

// Appends the check of every requirement on o.labels.
void AppendSelector(const model::LabelSelector& sel, Builder& b) {
  for (const auto& r : sel.requirements) {
    std::string path = b.Bind(JsonPathForLabel(r.key));
    std::string extract = "json_extract(o.labels, " + path + ")";
    auto in_list = [&] {
      std::string list;
      for (const auto& v : r.values) list += (list.empty() ? "" : ",") + b.Bind(v);
      return list;
    };
    std::string first = r.values.empty() ? "" : r.values[0];
    switch (r.op) {
      case model::SelectorOp::kEquals:
        b.Add(" AND " + extract + " = " + b.Bind(first));
        break;
      case model::SelectorOp::kNotEquals:
        b.Add(" AND (" + extract + " IS NULL OR " + extract + " != " + b.Bind(first) + ")");
        break;
      case model::SelectorOp::kIn:
        b.Add(" AND " + extract + " IN (" + in_list() + ")");
        break;
      case model::SelectorOp::kNotIn: {
        std::string list = in_list();
        b.Add(" AND (" + extract + " IS NULL OR " + extract + " NOT IN (" + list + "))");
        break;
      }
      case model::SelectorOp::kExists:
        b.Add(" AND json_type(o.labels, " + path + ") IS NOT NULL");
        break;
      case model::SelectorOp::kDoesNotExist:
        b.Add(" AND json_type(o.labels, " + path + ") IS NULL");
        break;
    }
  }
}

absl::Status AppendFields(const std::vector<FieldFilter>& fields, Builder& b) {
  for (const auto& f : fields) {
    std::string column = FieldColumn(f.field);
    if (!column.empty()) {
      column = "o." + column;
    } else if (IsPlainFieldPath(f.field)) {
      // Any other field of the object (spec.user of RoleBindings, status.createdBy, ...):
      // read from the JSON body, unindexed; callers use it on small kinds or small pages.
      column = "COALESCE(json_extract(o.body, " + b.Bind("$." + f.field) + "), '')";
    } else {
      return UnsupportedField(f.field);
    }
    b.Add(" AND " + column + (f.equals ? " = " : " != ") + b.Bind(f.value));
  }
  return absl::OkStatus();
}

// The requirement the index answers: an equality, else the `in` with the fewest values.
const model::Requirement* IndexedRequirement(const model::LabelSelector& sel) {
  const model::Requirement* best = nullptr;
  for (const auto& r : sel.requirements) {
    bool usable = r.op == model::SelectorOp::kEquals || r.op == model::SelectorOp::kIn;
    if (!usable || r.values.empty()) continue;
    if (!best || std::set<std::string>(r.values.begin(), r.values.end()).size() <
                     std::set<std::string>(best->values.begin(), best->values.end()).size())
      best = &r;
  }
  return best;
}

// FROM and the first conditions: the kind, the namespace, and the index when it applies.
// Returns the column the page is ordered and continued by.
std::string AppendSource(const ListOptions& o, Builder& b) {
  const model::Requirement* r = IndexedRequirement(o.labels);
  std::set<std::string> values;
  if (r) values.insert(r->values.begin(), r->values.end());
  if (r && values.size() == 1) {
    std::string kind = b.Bind(o.kind);
    b.Add(
        "SELECT o.id, o.body FROM label_index l CROSS JOIN objects o ON o.id = l.id WHERE l.kind "
        "= " +
        kind + " AND l.key = " + b.Bind(r->key) + " AND l.value = " + b.Bind(*values.begin()) +
        " AND o.kind = " + kind);
    if (o.ns) b.Add(" AND o.namespace = " + b.Bind(*o.ns));
    return "l.id";
  }
  std::string kind = b.Bind(o.kind);
  // With the index, the unary + keeps SQLite from scanning objects by kind and testing each
  // id against the list: it fetches the listed ids instead.
  std::string plus = r ? "+" : "";
  b.Add("SELECT o.id, o.body FROM objects o WHERE " + plus + "o.kind = " + kind);
  if (o.ns) b.Add(" AND " + plus + "o.namespace = " + b.Bind(*o.ns));
  if (r) {
    std::string list;
    for (const auto& v : values) list += (list.empty() ? "" : ",") + b.Bind(v);
    b.Add(" AND o.id IN (SELECT l.id FROM label_index l WHERE l.kind = " + kind +
          " AND l.key = " + b.Bind(r->key) + " AND l.value IN (" + list + "))");
  }
  return "o.id";
}

}  // namespace

absl::StatusOr<Query> ListQuery(const ListOptions& options) {
  Builder b;
  std::string order = AppendSource(options, b);
  if (!options.continue_token.empty()) {
    ASSIGN_OR_RETURN(int64_t after_id, ParseContinueToken(options.continue_token));
    b.Add(" AND " + order + (options.oldest_first ? " > " : " < ") + "CAST(" +
          b.Bind(std::to_string(after_id)) + " AS INTEGER)");
  }
  AppendSelector(options.labels, b);
  RETURN_IF_ERROR(AppendFields(options.fields, b));
  if (!options.search.empty())
    b.Add(" AND instr(o.search, " + b.Bind(LowerAscii(options.search)) + ") > 0");
  b.Add(" ORDER BY " + order + (options.oldest_first ? " ASC" : " DESC"));
  if (options.limit > 0) b.Add(" LIMIT " + std::to_string(options.limit + 1));
  return b.Take();
}

absl::StatusOr<Query> CountQuery(const std::string& kind, const std::optional<std::string>& ns,
                                 const std::vector<FieldFilter>& fields) {
  Builder b;
  b.Add("SELECT COUNT(*) FROM objects o WHERE o.kind = " + b.Bind(kind));
  if (ns) b.Add(" AND o.namespace = " + b.Bind(*ns));
  RETURN_IF_ERROR(AppendFields(fields, b));
  return b.Take();
}

absl::Status IndexLabels(Connection& conn, const std::string& kind, int64_t id,
                         const json::object& obj, bool replace) {
  if (replace) RETURN_IF_ERROR(UnindexLabels(conn, id));
  const json::value* labels = model::FindPath(obj, "metadata.labels");
  if (!labels || !labels->is_object()) return absl::OkStatus();
  for (const auto& [key, value] : labels->as_object()) {
    if (!value.is_string()) continue;  // selectors match string values only
    Stmt s(conn, "INSERT INTO label_index(kind, key, value, id) VALUES (?1, ?2, ?3, ?4)");
    s.Bind(1, kind).Bind(2, std::string_view(key)).Bind(3, std::string_view(value.as_string()));
    s.Bind(4, id);
    if (s.Step() != SQLITE_DONE) return SqlError(conn.db(), "writing the label index");
  }
  return absl::OkStatus();
}

absl::Status UnindexLabels(Connection& conn, int64_t id) {
  Stmt s(conn, "DELETE FROM label_index WHERE id = ?1");
  s.Bind(1, id);
  if (s.Step() != SQLITE_DONE) return SqlError(conn.db(), "writing the label index");
  return absl::OkStatus();
}

}  // namespace gantry::store::sqlite
