// The fixture and helpers of the store unit tests (store_test.cc, store_query_test.cc,
// store_events_test.cc): one suite, run once per backend (SQLite and PostgreSQL).
#pragma once

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <atomic>
#include <boost/json.hpp>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "common/errors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/codec.h"
#include "model/label_selector.h"
#include "store/postgres/pg_test_server.h"
#include "store/postgres/postgres_store.h"
#include "store/sqlite/sqlite_store.h"

// Tests name only the options they set (`{.kind = ..., .limit = 2}`); the rest keep their
// defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace boost::json {
// Readable JSON in gtest failure messages (gtest would otherwise dump the bytes).
inline void PrintTo(const object& o, std::ostream* os) { *os << serialize(o); }
inline void PrintTo(const value& v, std::ostream* os) { *os << serialize(v); }
}  // namespace boost::json

namespace gantry::store::store_tests {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

inline constexpr char kInstance[] = "ComputeInstance";
inline constexpr char kProfile[] = "ComputeProfile";
inline constexpr char kProject[] = "Project";

struct Obj {
  std::string ns = "ml-research";
  std::string name;
  json::object labels;
  std::string phase;
  std::string profile;
  std::string display_name;
  std::string description;
};

// A ComputeInstance-shaped object.
inline json::object Make(const Obj& o) {
  json::object obj;
  obj["apiVersion"] = "paas.gantry.dev/v1";
  obj["kind"] = kInstance;
  json::object meta{{"name", o.name}};
  if (!o.ns.empty()) meta["namespace"] = o.ns;
  if (!o.labels.empty()) meta["labels"] = o.labels;
  obj["metadata"] = std::move(meta);
  json::object spec;
  if (!o.profile.empty()) spec["profileRef"] = json::object{{"name", o.profile}};
  if (!o.display_name.empty()) spec["displayName"] = o.display_name;
  if (!o.description.empty()) spec["description"] = o.description;
  obj["spec"] = std::move(spec);
  if (!o.phase.empty()) obj["status"] = json::object{{"phase", o.phase}};
  return obj;
}

inline json::object Named(std::string name, std::string ns = "ml-research") {
  return Make({.ns = std::move(ns), .name = std::move(name)});
}

inline Write Create(json::object obj, std::string kind = kInstance) {
  Write w;
  w.op = Write::Op::kCreate;
  w.kind = std::move(kind);
  w.object = std::move(obj);
  return w;
}
inline Write Update(json::object obj, int64_t expected = 0, std::string kind = kInstance) {
  Write w = Create(std::move(obj), std::move(kind));
  w.op = Write::Op::kUpdate;
  w.expected_resource_version = expected;
  return w;
}
inline Write Delete(std::string name, std::string ns = "ml-research", int64_t expected = 0,
                    std::string kind = kInstance) {
  Write w = Create(Named(std::move(name), std::move(ns)), std::move(kind));
  w.op = Write::Op::kDelete;
  w.expected_resource_version = expected;
  return w;
}
inline Write PutRevision(std::string name, int64_t revision, json::object spec,
                         std::string created = "2026-11-30T14:00:00Z") {
  Write w;
  w.op = Write::Op::kPutRevision;
  w.kind = kProfile;
  w.revision = revision;
  w.object = json::object{
      {"metadata",
       json::object{{"name", name}, {"namespace", "platform"}, {"creationTimestamp", created}}},
      {"spec", std::move(spec)}};
  return w;
}

inline std::vector<Write> One(Write w) {
  std::vector<Write> v;
  v.push_back(std::move(w));
  return v;
}

inline std::string Rv(const json::object& o) {
  return model::GetString(o, "metadata.resourceVersion");
}

inline std::vector<std::string> Names(const std::vector<json::object>& items) {
  std::vector<std::string> out;
  for (const auto& o : items) out.push_back(model::GetString(o, "metadata.name"));
  return out;
}

inline std::string StatusText(const absl::Status& s) { return std::string(s.message()); }

// The suite runs once per backend: "sqlite" (a file in a temporary directory) and
// "postgres" (a fresh database on the throwaway server of pg_test_server.h; skipped with a
// message when PostgreSQL cannot start, unless PostgresRequired(), as in CI).
class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  bool postgres() const { return GetParam() == "postgres"; }
  // What the store's group commit did so far (both stores have one).
  GroupCommitStats CommitStats() {
    if (postgres()) return static_cast<PostgresStore&>(*store_).CommitStats();
    return static_cast<SqliteStore&>(*store_).CommitStats();
  }

  void SetUp() override {
    std::string tmpl = (std::filesystem::path(::testing::TempDir()) / "gantry-store-XXXXXX");
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    ASSERT_NE(mkdtemp(buf.data()), nullptr);
    dir_ = buf.data();
    path_ = dir_ + "/gantry.db";
    if (postgres()) {
      auto server = testing::PgTestServer::Get();
      if (!server.ok()) {
        if (testing::PostgresRequired()) FAIL() << server.status();
        GTEST_SKIP() << "PostgreSQL is not available here: " << server.status().message();
      }
      auto url = (*server)->CreateDatabase();
      ASSERT_TRUE(url.ok()) << url.status();
      url_ = *url;
    }
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Opens another store on the same data (file or database).
  absl::StatusOr<std::unique_ptr<Store>> OpenAnother(int64_t retention = 100000,
                                                     std::string synchronous = "NORMAL") {
    if (postgres()) {
      PostgresOptions options;
      options.url = url_;
      options.event_retention = retention;
      auto s = PostgresStore::Open(options);
      if (!s.ok()) return s.status();
      return std::unique_ptr<Store>(std::move(*s));
    }
    SqliteOptions options;
    options.path = path_;
    options.event_retention = retention;
    options.synchronous = std::move(synchronous);
    auto s = SqliteStore::Open(options);
    if (!s.ok()) return s.status();
    return std::unique_ptr<Store>(std::move(*s));
  }

  // synchronous=NORMAL keeps the suite fast: a closed store's commits survive either way
  // (DataSurvivesCloseAndReopen uses the FULL default).
  void Reopen(int64_t retention = 100000, std::string synchronous = "NORMAL") {
    store_.reset();
    auto s = OpenAnother(retention, std::move(synchronous));
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }

  // Commits one write and returns the stored object; fails the test on error.
  json::object MustCommit(Write w) {
    auto r = store_->Commit(One(std::move(w)));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() && !r->empty() ? (*r)[0] : json::object{};
  }
  json::object MustCreate(json::object obj, std::string kind = kInstance) {
    return MustCommit(Create(std::move(obj), std::move(kind)));
  }

  std::vector<std::string> ListNames(ListOptions options) {
    if (options.kind.empty()) options.kind = kInstance;
    auto r = store_->List(options);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? Names(r->items) : std::vector<std::string>{"<error>"};
  }
  std::vector<std::string> Selected(std::string_view selector) {
    auto sel = model::ParseLabelSelector(selector);
    EXPECT_TRUE(sel.ok()) << selector << ": " << sel.status();
    ListOptions o;
    if (sel.ok()) o.labels = *sel;
    return ListNames(o);
  }
  std::vector<std::string> Filtered(std::vector<FieldFilter> fields, std::string kind = kInstance) {
    ListOptions o;
    o.kind = std::move(kind);
    o.fields = std::move(fields);
    return ListNames(o);
  }
  std::vector<std::string> Searched(std::string search) {
    ListOptions o;
    o.search = std::move(search);
    return ListNames(o);
  }

  std::string dir_;
  std::string path_;
  std::string url_;  // postgres
  std::unique_ptr<Store> store_;
};

// ------------------------------------------------------------------------------------------
// Open

std::string BackendName(const ::testing::TestParamInfo<std::string>& info);

}  // namespace gantry::store::store_tests
