#include "store/postgres/pg_query.h"

#include "store/store_common.h"

namespace gantry::store {

void AppendSelector(const model::LabelSelector& sel, const std::string& kind_param,
                    std::string* sql, std::vector<std::string>* params) {
  auto param = [&](const std::string& v) {
    params->push_back(v);
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) at -O3 on
    // "literal" + std::string&& here and in in_list.
    std::string placeholder = "$";
    placeholder += std::to_string(params->size());
    placeholder += "::text";
    return placeholder;
  };
  for (const auto& r : sel.requirements) {
    std::string key = param(r.key);
    std::string value = "(labels->>" + key + ")";
    auto in_list = [&] {
      std::string list;
      for (const auto& v : r.values) {
        if (!list.empty()) list += ',';
        list += param(v);
      }
      return list;
    };
    // Equality and `in`: the objects the label index names (object_labels, written in the
    // transaction that writes each object), so that a selective selector reads only the
    // rows it matches.
    auto indexed = [&](const char* op, const std::string& values) {
      *sql += " AND id IN (SELECT object_id FROM object_labels WHERE kind = " + kind_param +
              " AND key = " + key + " AND value ";
      *sql += op;
      *sql += values;
      *sql += ")";
    };
    switch (r.op) {
      case model::SelectorOp::kEquals:
        indexed("= ", param(r.values.empty() ? "" : r.values[0]));
        break;
      case model::SelectorOp::kNotEquals:
        *sql += " AND (" + value + " IS NULL OR " + value + " <> " +
                param(r.values.empty() ? "" : r.values[0]) + ")";
        break;
      case model::SelectorOp::kIn:
        indexed("IN (", in_list() + ")");
        break;
      case model::SelectorOp::kNotIn:
        *sql += " AND (" + value + " IS NULL OR " + value + " NOT IN (" + in_list() + "))";
        break;
      case model::SelectorOp::kExists:
        *sql += " AND labels ? " + key;
        break;
      case model::SelectorOp::kDoesNotExist:
        *sql += " AND NOT (labels ? " + key + ")";
        break;
    }
  }
}

absl::Status AppendFields(const std::vector<FieldFilter>& fields, std::string* sql,
                          std::vector<std::string>* params) {
  for (const auto& f : fields) {
    std::string column = FieldColumn(f.field);
    if (column.empty() && IsPlainFieldPath(f.field)) {
      // Any other field (spec.user of RoleBindings, ...): read from the stored JSON,
      // unindexed, as SQLite does; absent fields compare as "".
      std::string path = "{";
      for (char ch : f.field) path += ch == '.' ? ',' : ch;
      params->push_back(path + "}");
      column = "COALESCE(body::jsonb #>> $" + std::to_string(params->size()) + "::text[], '')";
    }
    if (column.empty()) return UnsupportedField(f.field);
    params->push_back(f.value);
    *sql += " AND " + column + (f.equals ? " = $" : " <> $") + std::to_string(params->size()) +
            "::text";
  }
  return absl::OkStatus();
}

}  // namespace gantry::store
