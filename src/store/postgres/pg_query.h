// The WHERE clauses of PostgreSQL list queries: a label selector over the label index and
// the jsonb `labels` column, and field selectors over the indexed columns (or the stored
// JSON), as numbered text parameters ($1::text, ...) so that no value is ever spliced into
// SQL. Pure functions, thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "model/label_selector.h"
#include "store/store.h"

namespace gantry::store {

// Appends " AND ..." for each requirement of `sel` to `sql`, its values to `params`:
// `key=value` and `key in (...)` through the label index (object_labels of the kind in the
// parameter `kind_param`, e.g. "$1::text"), the other forms over the jsonb `labels` column.
void AppendSelector(const model::LabelSelector& sel, const std::string& kind_param,
                    std::string* sql, std::vector<std::string>* params);

// Appends " AND column = $n" for each filter; 400 for a field that cannot be selected on.
absl::Status AppendFields(const std::vector<FieldFilter>& fields, std::string* sql,
                          std::vector<std::string>* params);

}  // namespace gantry::store
