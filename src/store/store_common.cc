#include "store/store_common.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/errors.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "model/codec.h"
#include "model/schema.h"
#include "store/store.h"

namespace gantry::store {

namespace {
constexpr char kTransactions[] = "gantry_store_transactions_total";
constexpr char kCommits[] = "gantry_store_commits_total";
constexpr char kWaiting[] = "gantry_store_commits_waiting";
}  // namespace

void DescribeGroupCommitMetrics(Metrics* m) {
  if (!m) return;
  m->Describe(kTransactions, "counter",
              "Transactions the store committed; a group commit of several calls is one.");
  m->Describe(kCommits, "counter",
              "Commit calls committed; per transaction: divided by " + std::string(kTransactions));
  m->Describe(kWaiting, "gauge",
              "Commit calls queued for the writer now, the one being committed included.");
  m->Add(kTransactions, {}, 0);
  m->Add(kCommits, {}, 0);
  m->Set(kWaiting, {}, 0);
}

void CountGroupCommit(Metrics* m, size_t calls) {
  if (!m) return;
  m->Add(kTransactions, {});
  m->Add(kCommits, {}, static_cast<double>(calls));
}

void SetCommitsWaiting(Metrics* m, size_t waiting) {
  if (m) m->Set(kWaiting, {}, static_cast<double>(waiting));
}

namespace json = boost::json;

namespace {
constexpr char kContinuePrefix[] = "c1.";
}  // namespace

absl::StatusOr<std::string> Store::GetText(const std::string& kind, const std::string& ns,
                                           const std::string& name) {
  ASSIGN_OR_RETURN(json::object obj, Get(kind, ns, name));
  return json::serialize(obj);
}

absl::StatusOr<std::vector<json::object>> Store::GetMany(const std::vector<ObjectKey>& keys) {
  std::vector<json::object> out;
  for (const auto& k : keys) {
    auto got = Get(k.kind, k.ns, k.name);
    if (absl::IsNotFound(got.status())) continue;
    if (!got.ok()) return got.status();
    out.push_back(*std::move(got));
  }
  return out;
}

absl::StatusOr<std::string> StoredText(std::string_view body) {
  if (body.starts_with('{') && IsValidUtf8(body)) return std::string(body);
  ASSIGN_OR_RETURN(json::object obj, model::ParseStoredObject(body));
  return json::serialize(obj);
}

std::string QualifiedResource(const std::string& kind) {
  const model::KindInfo* k = model::FindKindByName(kind);
  std::string plural = k ? k->plural : kind;
  return plural + "." + model::kGroup;
}

std::string LowerAscii(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Columns ColumnsOf(const json::object& obj) {
  Columns c;
  const json::value* labels = model::FindPath(obj, "metadata.labels");
  c.labels = labels && labels->is_object() ? json::serialize(*labels) : "{}";
  c.phase = model::GetString(obj, "status.phase");
  c.ref_name = model::GetString(obj, "spec.profileRef.name");
  if (c.ref_name.empty()) c.ref_name = model::GetString(obj, "spec.templateRef.name");
  if (c.ref_name.empty()) c.ref_name = model::GetString(obj, "spec.instanceRef.name");
  c.search = LowerAscii(model::GetString(obj, "metadata.name") + "\n" +
                        model::GetString(obj, "spec.displayName") + "\n" +
                        model::GetString(obj, "spec.description"));
  return c;
}

std::string ContinueToken(int64_t last_id) { return kContinuePrefix + std::to_string(last_id); }

absl::StatusOr<int64_t> ParseContinueToken(const std::string& t) {
  auto bad = [&] {
    return BadRequestError("continue token \"" + t + "\" is not valid; start the list again");
  };
  bool ok = t.rfind(kContinuePrefix, 0) == 0 && t.size() > 3 && t.size() < 24 &&
            std::all_of(t.begin() + 3, t.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!ok) return bad();
  int64_t id = 0;
  auto [ptr, ec] = std::from_chars(t.data() + 3, t.data() + t.size(), id);
  if (ec != std::errc() || ptr != t.data() + t.size()) return bad();
  return id;
}

absl::Status CheckStorable(const std::string& kind, const boost::json::object& obj) {
  auto bad = FindInvalidUtf8(obj);
  if (!bad) return absl::OkStatus();
  return BadRequestError(*bad + " of " + QualifiedResource(kind) +
                         " is not valid UTF-8; every text Gantry keeps must be");
}

absl::Status ObjectNotFound(const std::string& kind, const std::string& name) {
  return NotFoundError(QualifiedResource(kind) + " \"" + name + "\" not found");
}

absl::Status ObjectModified(const std::string& kind, const std::string& name) {
  return VersionConflictError("Operation cannot be fulfilled on " + QualifiedResource(kind) +
                              " \"" + name +
                              "\": the object has been modified; please apply your changes to the "
                              "latest version and try again");
}

absl::Status ObjectExists(const std::string& kind, const std::string& name) {
  return AlreadyExistsError(QualifiedResource(kind) + " \"" + name + "\" already exists");
}

absl::Status RevisionExists(const std::string& kind, const std::string& name, int64_t revision) {
  return VersionConflictError("revision " + std::to_string(revision) + " of " +
                              QualifiedResource(kind) + " \"" + name + "\" already exists");
}

absl::Status RevisionNotFound(const std::string& kind, const std::string& name, int64_t revision) {
  return NotFoundError("revision " + std::to_string(revision) + " of " + QualifiedResource(kind) +
                       " \"" + name + "\" not found");
}

absl::Status TooOldResourceVersion(int64_t after, int64_t compacted_through) {
  return ExpiredError("too old resource version: " + std::to_string(after) + " (" +
                      std::to_string(compacted_through + 1) + ")");
}

absl::Status UnsupportedField(const std::string& field) {
  return BadRequestError("field label not supported: " + field);
}

std::string FieldColumn(const std::string& field) {
  if (field == "metadata.name") return "name";
  if (field == "metadata.namespace") return "namespace";
  if (field == "status.phase") return "phase";
  if (field == "spec.profileRef.name" || field == "spec.templateRef.name" ||
      field == "spec.instanceRef.name")
    return "ref_name";
  return "";
}

bool IsPlainFieldPath(const std::string& field) {
  if (field.empty() || field.size() > 128 || field.front() == '.' || field.back() == '.')
    return false;
  for (size_t i = 0; i < field.size(); ++i) {
    char c = field[i];
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || (c == '.' && field[i - 1] != '.');
    if (!ok) return false;
  }
  return std::isalpha(static_cast<unsigned char>(field.front()));
}

}  // namespace gantry::store
