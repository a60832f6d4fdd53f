// Store unit tests: opening, writes and commits, revisions, lists and pages.
#include "common/utf8.h"
#include "store/store_test_fixture.h"

namespace gantry::store::store_tests {
namespace {

// Tests of what only SQLite has (a file, PRAGMA options).
class SqliteOnlyStoreTest : public StoreTest {};

TEST_P(StoreTest, FreshStoreIsEmptyAndAnswers) {
  EXPECT_EQ(store_->CurrentResourceVersion(), 0);
  EXPECT_TRUE(store_->Ping().ok());
  auto list = store_->List({.kind = kInstance});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(list->items, IsEmpty());
  EXPECT_EQ(list->resource_version, 0);
  EXPECT_EQ(list->continue_token, "");
  auto events = store_->EventsSince(0, 100);
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_THAT(*events, IsEmpty());
}

TEST_P(SqliteOnlyStoreTest, BadSynchronousOptionIsInvalidArgument) {
  SqliteOptions options;
  options.path = dir_ + "/other.db";
  options.synchronous = "OFF";
  auto s = SqliteStore::Open(options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusText(s.status()), "synchronous must be FULL or NORMAL, not \"OFF\"");
  EXPECT_FALSE(std::filesystem::exists(options.path));
}

TEST_P(SqliteOnlyStoreTest, SynchronousNormalWorks) {
  SqliteOptions options;
  options.path = dir_ + "/normal.db";
  options.synchronous = "NORMAL";
  auto s = SqliteStore::Open(options);
  ASSERT_TRUE(s.ok()) << s.status();
  auto r = (*s)->Commit(One(Create(Named("x"))));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE((*s)->Get(kInstance, "ml-research", "x").ok());
}

TEST_P(SqliteOnlyStoreTest, OpenInAMissingDirectoryIsUnavailable) {
  SqliteOptions options;
  options.path = dir_ + "/no/such/dir/gantry.db";
  auto s = SqliteStore::Open(options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(StatusText(s.status()),
            "cannot open database " + options.path + ": unable to open database file");
}

TEST_P(SqliteOnlyStoreTest, NonDatabaseFileIsUnavailable) {
  store_.reset();
  {
    std::ofstream f(path_, std::ios::binary | std::ios::trunc);
    f << std::string(8192, 'x') << "this is not an SQLite database\n";
  }
  SqliteOptions options;
  options.path = path_;
  auto s = SqliteStore::Open(options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(HttpCodeOf(s.status()), 503);
  EXPECT_THAT(StatusText(s.status()), HasSubstr("file is not a database"));
}

// Regression (fixed; was: src/store/sqlite/sqlite_store.cc, OpenConnection): for a file that is not
// an SQLite database, the first PRAGMA in OpenConnection (journal_mode=WAL) fails, so Open returns
// "database error: file is not a database": the message does not name the file, and Init's
// intended "<path> is not a Gantry database: ..." is never reached. OpenConnection also returns
// without sqlite3_close_v2(db) on that path, leaking the connection. Fix: close `db` on every
// error return of OpenConnection, and prefix PRAGMA failures with the path
// ("<path> is not a Gantry database: file is not a database"). Under ASan the leak shows as
// "LeakSanitizer: detected memory leaks" (101688 bytes in 105 allocations from libsqlite3).
TEST_P(SqliteOnlyStoreTest, NonDatabaseFileMessageNamesTheFile) {
  store_.reset();
  {
    std::ofstream f(path_, std::ios::binary | std::ios::trunc);
    f << std::string(8192, 'x');
  }
  SqliteOptions options;
  options.path = path_;
  auto s = SqliteStore::Open(options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(StatusText(s.status()), path_ + " is not a Gantry database: file is not a database");
}

TEST_P(SqliteOnlyStoreTest, NewerSchemaVersionIsRefused) {
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=7", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  SqliteOptions options;
  options.path = path_;
  auto s = SqliteStore::Open(options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(StatusText(s.status()),
            path_ +
                " has schema version 7, newer than this gantryd understands (2); run a "
                "newer gantryd");
}

// ------------------------------------------------------------------------------------------
// Create / Get / Update / Delete

TEST_P(StoreTest, CreateGetRoundTrip) {
  json::object obj = Make({.name = "gpu-1",
                           .labels = {{"env", "prod"}},
                           .phase = "NotDeployed",
                           .profile = "h100-x8",
                           .display_name = "GPU 1"});
  json::object stored = MustCreate(obj);
  EXPECT_EQ(Rv(stored), "1");
  ASSERT_TRUE(stored.at("metadata").as_object().at("resourceVersion").is_string());

  auto got = store_->Get(kInstance, "ml-research", "gpu-1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, stored);
  model::EnsureObject(obj, "metadata")["resourceVersion"] = "1";
  EXPECT_EQ(*got, obj);
  EXPECT_EQ(store_->CurrentResourceVersion(), 1);
}

TEST_P(StoreTest, ClusterScopedObjectsUseTheEmptyNamespace) {
  json::object project{{"kind", "Project"},
                       {"metadata", json::object{{"name", "ml-research"}}},
                       {"spec", json::object{{"displayName", "ML Research"}}}};
  MustCreate(project, kProject);
  auto got = store_->Get(kProject, "", "ml-research");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(model::GetString(*got, "spec.displayName"), "ML Research");
  EXPECT_THAT(ListNames({.kind = kProject}), ElementsAre("ml-research"));
  EXPECT_THAT(ListNames({.kind = kProject, .ns = ""}), ElementsAre("ml-research"));
}

TEST_P(StoreTest, GetMissingIsNotFound) {
  auto got = store_->Get(kInstance, "ml-research", "ghost");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(HttpCodeOf(got.status()), 404);
  EXPECT_EQ(ReasonOf(got.status()), "NotFound");
  EXPECT_EQ(StatusText(got.status()), "computeinstances.paas.gantry.dev \"ghost\" not found");
  // Same name, other namespace or other kind: still absent.
  MustCreate(Named("ghost", "vision"));
  EXPECT_EQ(store_->Get(kInstance, "ml-research", "ghost").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(StatusText(store_->Get(kProfile, "vision", "ghost").status()),
            "computeprofiles.paas.gantry.dev \"ghost\" not found");
}

// GetMany answers the keys that exist, in any order; a missing one, or one of another kind
// or project, is left out.
TEST_P(StoreTest, GetManyReturnsTheObjectsThatExist) {
  MustCreate(Named("a"));
  MustCreate(Named("b"));
  MustCreate(Named("c", "vision"));
  auto got = store_->GetMany({{kInstance, "ml-research", "b"},
                              {kInstance, "ml-research", "ghost"},
                              {kInstance, "ml-research", "a"},
                              {kProfile, "ml-research", "a"},
                              {kInstance, "ml-research", "c"},
                              {kInstance, "vision", "c"}});
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<std::string> names;
  for (const auto& o : *got)
    names.push_back(model::GetString(o, "metadata.namespace") + "/" +
                    model::GetString(o, "metadata.name"));
  EXPECT_THAT(names, UnorderedElementsAre("ml-research/a", "ml-research/b", "vision/c"));
  for (const auto& o : *got)  // each is the object Get returns
    EXPECT_EQ(o, *store_->Get(kInstance, model::GetString(o, "metadata.namespace"),
                              model::GetString(o, "metadata.name")));
  auto none = store_->GetMany({});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(*none, IsEmpty());
}

// GetText is the stored object as text: what Get returns, serialised (a GET sends it as it is).
TEST_P(StoreTest, GetTextIsTheStoredObject) {
  json::object stored = MustCreate(Make({.name = "gpu-1", .display_name = "Modèle ✓ 模型"}));
  auto text = store_->GetText(kInstance, "ml-research", "gpu-1");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, json::serialize(stored));
  EXPECT_EQ(json::parse(*text), json::value(stored));
  auto missing = store_->GetText(kInstance, "ml-research", "ghost");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(StatusText(missing.status()),
            StatusText(store_->Get(kInstance, "ml-research", "ghost").status()));
}

// A row written before invalid UTF-8 was refused: GetText scrubs it as Get does (U+FFFD),
// never sends the bad bytes.
TEST_P(SqliteOnlyStoreTest, GetTextScrubsARowWithInvalidUtf8AsGetDoes) {
  MustCreate(Make({.name = "old", .display_name = "ok"}));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  // "ok" becomes "o\xFFk": the raw byte, through a blob cast to text.
  ASSERT_EQ(sqlite3_exec(db,
                         "UPDATE objects SET body = CAST(replace(body, '\"ok\"', "
                         "CAST(X'226FFF6B22' AS TEXT)) AS TEXT) WHERE name = 'old'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto text = store_->GetText(kInstance, "ml-research", "old");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(IsValidUtf8(*text));
  EXPECT_THAT(*text, HasSubstr("o\xEF\xBF\xBDk"));
  auto got = store_->Get(kInstance, "ml-research", "old");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*text, json::serialize(*got));
}

TEST_P(StoreTest, DuplicateCreateIsAlreadyExists) {
  MustCreate(Named("x"));
  auto r = store_->Commit(One(Create(Named("x"))));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(HttpCodeOf(r.status()), 409);
  EXPECT_EQ(ReasonOf(r.status()), "AlreadyExists");
  EXPECT_EQ(StatusText(r.status()), "computeinstances.paas.gantry.dev \"x\" already exists");
  EXPECT_EQ(store_->CurrentResourceVersion(), 1);
}

TEST_P(StoreTest, SameNameInOtherNamespaceOrKindIsDistinct) {
  MustCreate(Named("x", "a"));
  MustCreate(Named("x", "b"));
  MustCreate(Named("x", "a"), kProfile);
  EXPECT_THAT(ListNames({.kind = kInstance}), ElementsAre("x", "x"));
  EXPECT_THAT(ListNames({.kind = kProfile}), ElementsAre("x"));
}

TEST_P(StoreTest, UpdateReplacesTheObject) {
  MustCreate(Make({.name = "x", .phase = "NotDeployed", .display_name = "old"}));
  json::object updated =
      MustCommit(Update(Make({.name = "x", .phase = "Success", .display_name = "new"})));
  EXPECT_EQ(Rv(updated), "2");
  auto got = store_->Get(kInstance, "ml-research", "x");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(model::GetString(*got, "spec.displayName"), "new");
  EXPECT_EQ(model::GetString(*got, "status.phase"), "Success");
  EXPECT_EQ(Rv(*got), "2");
}

TEST_P(StoreTest, UpdateOfMissingObjectIsNotFound) {
  auto r = store_->Commit(One(Update(Named("ghost"))));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(StatusText(r.status()), "computeinstances.paas.gantry.dev \"ghost\" not found");
  EXPECT_EQ(store_->CurrentResourceVersion(), 0);
}

TEST_P(StoreTest, UpdateWithExpectedResourceVersion) {
  MustCreate(Named("x"));                          // rv 1
  MustCommit(Update(Named("x"), /*expected=*/1));  // rv 2
  auto stale = store_->Commit(One(Update(Named("x"), /*expected=*/1)));
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAborted);  // a lost test-and-set
  EXPECT_EQ(HttpCodeOf(stale.status()), 409);
  EXPECT_EQ(ReasonOf(stale.status()), "Conflict");
  EXPECT_EQ(StatusText(stale.status()),
            "Operation cannot be fulfilled on computeinstances.paas.gantry.dev \"x\": the object "
            "has been modified; please apply your changes to the latest version and try again");
  EXPECT_EQ(store_->CurrentResourceVersion(), 2);
  EXPECT_EQ(Rv(MustCommit(Update(Named("x"), /*expected=*/2))), "3");
}

TEST_P(StoreTest, DeleteRemovesAndReturnsTheLastState) {
  MustCreate(Make({.name = "x", .display_name = "X"}));
  json::object last = MustCommit(Delete("x"));
  EXPECT_EQ(Rv(last), "2");
  EXPECT_EQ(model::GetString(last, "spec.displayName"), "X");
  EXPECT_EQ(store_->Get(kInstance, "ml-research", "x").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_THAT(ListNames({}), IsEmpty());
  // The name can be used again.
  EXPECT_EQ(Rv(MustCreate(Named("x"))), "3");
}

TEST_P(StoreTest, DeleteOfMissingObjectIsNotFound) {
  auto r = store_->Commit(One(Delete("ghost")));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(StatusText(r.status()), "computeinstances.paas.gantry.dev \"ghost\" not found");
}

TEST_P(StoreTest, DeleteWithStaleResourceVersionIsConflict) {
  MustCreate(Named("x"));
  MustCommit(Update(Named("x")));
  auto r = store_->Commit(One(Delete("x", "ml-research", /*expected=*/1)));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(HttpCodeOf(r.status()), 409);
  EXPECT_EQ(ReasonOf(r.status()), "Conflict");
  EXPECT_EQ(StatusText(r.status()),
            "Operation cannot be fulfilled on computeinstances.paas.gantry.dev \"x\": the object "
            "has been modified; please apply your changes to the latest version and try again");
  EXPECT_TRUE(store_->Get(kInstance, "ml-research", "x").ok());
  EXPECT_TRUE(store_->Commit(One(Delete("x", "ml-research", /*expected=*/2))).ok());
}

// ------------------------------------------------------------------------------------------
// resourceVersion and atomic commits

TEST_P(StoreTest, ResourceVersionStrictlyIncreasesAcrossCommits) {
  int64_t last = store_->CurrentResourceVersion();
  std::vector<std::string> seen;
  for (int i = 0; i < 5; ++i) {
    json::object o = MustCreate(Named("o" + std::to_string(i)));
    int64_t rv = std::stoll(Rv(o));
    EXPECT_GT(rv, last);
    EXPECT_EQ(store_->CurrentResourceVersion(), rv);
    last = rv;
  }
  json::object u = MustCommit(Update(Named("o0")));
  EXPECT_EQ(std::stoll(Rv(u)), last + 1);
  json::object d = MustCommit(Delete("o1"));
  EXPECT_EQ(std::stoll(Rv(d)), last + 2);
}

TEST_P(StoreTest, MultiWriteCommitGivesEachWriteTheNextVersionInOrder) {
  MustCreate(Named("existing"));  // rv 1
  std::vector<Write> writes;
  writes.push_back(Create(Named("a")));
  writes.push_back(Update(Named("existing")));
  writes.push_back(PutRevision("p", 1, json::object{{"x", 1}}));
  writes.push_back(Create(Named("b")));
  auto r = store_->Commit(std::move(writes));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ(Rv((*r)[0]), "2");
  EXPECT_EQ(Rv((*r)[1]), "3");
  EXPECT_TRUE((*r)[2].empty());  // a revision yields an empty object and no version
  EXPECT_EQ(Rv((*r)[3]), "4");
  EXPECT_EQ(store_->CurrentResourceVersion(), 4);
}

TEST_P(StoreTest, CommitIsAtomicWhenALaterWriteFails) {
  MustCreate(Named("taken"));  // rv 1
  std::vector<Write> writes;
  writes.push_back(Create(Named("first")));
  writes.push_back(Update(Named("taken", "ml-research")));
  writes.push_back(Create(Named("taken")));  // AlreadyExists
  auto r = store_->Commit(std::move(writes));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(StatusText(r.status()), "computeinstances.paas.gantry.dev \"taken\" already exists");

  EXPECT_EQ(store_->Get(kInstance, "ml-research", "first").status().code(),
            absl::StatusCode::kNotFound);
  auto taken = store_->Get(kInstance, "ml-research", "taken");
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(Rv(*taken), "1");  // the update was rolled back too
  EXPECT_EQ(store_->CurrentResourceVersion(), 1);
  auto events = store_->EventsSince(0, 100);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->size(), 1u);

  // No version was consumed: the next commit gets 2.
  EXPECT_EQ(Rv(MustCreate(Named("next"))), "2");
}

TEST_P(StoreTest, CommitIsAtomicWhenAnUpdateTargetIsMissing) {
  std::vector<Write> writes;
  writes.push_back(Create(Named("a")));
  writes.push_back(Update(Named("ghost")));
  auto r = store_->Commit(std::move(writes));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(ListNames({}), IsEmpty());
  EXPECT_EQ(store_->CurrentResourceVersion(), 0);
  // A failed commit is not sticky: the store keeps accepting writes.
  EXPECT_EQ(Rv(MustCreate(Named("a"))), "1");
}

TEST_P(StoreTest, CreateThenUpdateInOneCommit) {
  std::vector<Write> writes;
  writes.push_back(Create(Make({.name = "a", .display_name = "one"})));
  writes.push_back(Update(Make({.name = "a", .display_name = "two"}), /*expected=*/1));
  auto r = store_->Commit(std::move(writes));
  ASSERT_TRUE(r.ok()) << r.status();
  auto got = store_->Get(kInstance, "ml-research", "a");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(model::GetString(*got, "spec.displayName"), "two");
  EXPECT_EQ(Rv(*got), "2");
}

TEST_P(StoreTest, EmptyCommitChangesNothing) {
  auto r = store_->Commit({});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, IsEmpty());
  EXPECT_EQ(store_->CurrentResourceVersion(), 0);
}

// ------------------------------------------------------------------------------------------
// Revisions

TEST_P(StoreTest, RevisionsPutListGet) {
  MustCreate(json::object{{"metadata", json::object{{"name", "h100"}, {"namespace", "platform"}}}},
             kProfile);
  MustCommit(PutRevision("h100", 1, json::object{{"cpu", 32}}, "2026-11-30T14:00:00Z"));
  MustCommit(PutRevision("h100", 2, json::object{{"cpu", 64}}, "2026-12-01T09:30:00Z"));
  EXPECT_EQ(store_->CurrentResourceVersion(), 1);  // revisions consume no resourceVersion

  auto list = store_->ListRevisions(kProfile, "platform", "h100");
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].revision, 2);  // newest first
  EXPECT_EQ((*list)[0].created, "2026-12-01T09:30:00Z");
  EXPECT_EQ((*list)[0].spec, (json::object{{"cpu", 64}}));
  EXPECT_EQ((*list)[1].revision, 1);

  auto one = store_->GetRevision(kProfile, "platform", "h100", 1);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->revision, 1);
  EXPECT_EQ(one->created, "2026-11-30T14:00:00Z");
  EXPECT_EQ(one->spec, (json::object{{"cpu", 32}}));
}

TEST_P(StoreTest, RevisionErrors) {
  MustCommit(PutRevision("h100", 1, json::object{{"cpu", 32}}));
  auto missing = store_->GetRevision(kProfile, "platform", "h100", 3);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(StatusText(missing.status()),
            "revision 3 of computeprofiles.paas.gantry.dev \"h100\" not found");

  auto dup = store_->Commit(One(PutRevision("h100", 1, json::object{{"cpu", 99}})));
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(HttpCodeOf(dup.status()), 409);
  EXPECT_EQ(StatusText(dup.status()),
            "revision 1 of computeprofiles.paas.gantry.dev \"h100\" already exists");
  // Revisions are immutable: the first one is unchanged.
  auto one = store_->GetRevision(kProfile, "platform", "h100", 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->spec, (json::object{{"cpu", 32}}));

  auto none = store_->ListRevisions(kProfile, "platform", "other");
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(*none, IsEmpty());
}

TEST_P(StoreTest, RevisionsGoWithTheObject) {
  MustCreate(json::object{{"metadata", json::object{{"name", "h100"}, {"namespace", "platform"}}}},
             kProfile);
  MustCreate(json::object{{"metadata", json::object{{"name", "a100"}, {"namespace", "platform"}}}},
             kProfile);
  MustCommit(PutRevision("h100", 1, json::object{{"cpu", 32}}));
  MustCommit(PutRevision("a100", 1, json::object{}));
  for (int i = 0; i < 2; ++i)  // read before the delete (a store may keep what it read)
    ASSERT_TRUE(store_->GetRevision(kProfile, "platform", "h100", 1).ok());
  MustCommit(Delete("h100", "platform", 0, kProfile));
  auto list = store_->ListRevisions(kProfile, "platform", "h100");
  ASSERT_TRUE(list.ok());
  EXPECT_THAT(*list, IsEmpty());
  EXPECT_EQ(store_->GetRevision(kProfile, "platform", "h100", 1).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->GetRevision(kProfile, "platform", "a100", 1).ok());
  // An object made again under the name numbers its revisions from 1 again: its own.
  MustCreate(json::object{{"metadata", json::object{{"name", "h100"}, {"namespace", "platform"}}}},
             kProfile);
  MustCommit(PutRevision("h100", 1, json::object{{"cpu", 64}}, "2026-12-07T23:00:00Z"));
  auto again = store_->GetRevision(kProfile, "platform", "h100", 1);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->spec, (json::object{{"cpu", 64}}));
  EXPECT_EQ(again->created, "2026-12-07T23:00:00Z");
}

TEST_P(StoreTest, RevisionCommittedWithItsObjectIsAtomic) {
  MustCreate(Named("x"));
  std::vector<Write> writes;
  writes.push_back(PutRevision("p", 1, json::object{}));
  writes.push_back(Create(Named("x")));  // fails
  ASSERT_FALSE(store_->Commit(std::move(writes)).ok());
  EXPECT_EQ(store_->GetRevision(kProfile, "platform", "p", 1).status().code(),
            absl::StatusCode::kNotFound);
}

// ------------------------------------------------------------------------------------------
// List: order, namespaces, pages

TEST_P(StoreTest, ListNewestFirstAcrossAndWithinNamespaces) {
  MustCreate(Named("a", "one"));
  MustCreate(Named("b", "two"));
  MustCreate(Named("c", "one"));
  MustCommit(Update(Named("a", "one")));  // updates do not reorder: creation order counts
  EXPECT_THAT(ListNames({}), ElementsAre("c", "b", "a"));
  EXPECT_THAT(ListNames({.ns = "one"}), ElementsAre("c", "a"));
  EXPECT_THAT(ListNames({.ns = "two"}), ElementsAre("b"));
  EXPECT_THAT(ListNames({.ns = "three"}), IsEmpty());
  EXPECT_THAT(ListNames({.kind = kProfile}), IsEmpty());
}

TEST_P(StoreTest, ListReportsTheCurrentResourceVersion) {
  MustCreate(Named("a"));
  MustCreate(Named("b"));
  MustCommit(Delete("b"));
  auto r = store_->List({.kind = kInstance});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->resource_version, 3);
  EXPECT_EQ(r->resource_version, store_->CurrentResourceVersion());
  EXPECT_EQ(Rv(r->items[0]), "1");
}

TEST_P(StoreTest, LimitAndContinueWalkEveryPageOnce) {
  std::vector<std::string> created;
  for (int i = 0; i < 7; ++i) {
    created.push_back("o" + std::to_string(i));
    MustCreate(Named(created.back(), i % 2 ? "odd" : "even"));
  }
  std::vector<std::string> walked;
  std::vector<size_t> page_sizes;
  ListOptions o{.kind = kInstance, .limit = 3};
  for (int page = 0; page < 10; ++page) {
    auto r = store_->List(o);
    ASSERT_TRUE(r.ok()) << r.status();
    page_sizes.push_back(r->items.size());
    for (auto& n : Names(r->items)) walked.push_back(n);
    if (r->continue_token.empty()) break;
    o.continue_token = r->continue_token;
  }
  EXPECT_THAT(page_sizes, ElementsAre(3, 3, 1));
  EXPECT_THAT(walked, ElementsAre("o6", "o5", "o4", "o3", "o2", "o1", "o0"));
  EXPECT_EQ(std::set<std::string>(walked.begin(), walked.end()).size(), walked.size());
}

TEST_P(StoreTest, LastFullPageHasNoContinueToken) {
  for (int i = 0; i < 4; ++i) MustCreate(Named("o" + std::to_string(i)));
  auto first = store_->List({.kind = kInstance, .limit = 2});
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->continue_token.empty());
  auto second =
      store_->List({.kind = kInstance, .limit = 2, .continue_token = first->continue_token});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_THAT(Names(second->items), ElementsAre("o1", "o0"));
  EXPECT_EQ(second->continue_token, "");
  auto exact = store_->List({.kind = kInstance, .limit = 4});
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->items.size(), 4u);
  EXPECT_EQ(exact->continue_token, "");
}

TEST_P(StoreTest, PagesWithANamespaceAndASelector) {
  for (int i = 0; i < 6; ++i) {
    MustCreate(Make({.ns = i < 4 ? "a" : "b",
                     .name = "o" + std::to_string(i),
                     .labels = {{"tier", i % 2 ? "gpu" : "cpu"}}}));
  }
  auto sel = model::ParseLabelSelector("tier=gpu");
  ASSERT_TRUE(sel.ok());
  ListOptions o{.kind = kInstance, .ns = "a", .labels = *sel, .limit = 1};
  std::vector<std::string> walked;
  for (int page = 0; page < 10; ++page) {
    auto r = store_->List(o);
    ASSERT_TRUE(r.ok()) << r.status();
    for (auto& n : Names(r->items)) walked.push_back(n);
    if (r->continue_token.empty()) break;
    o.continue_token = r->continue_token;
  }
  EXPECT_THAT(walked, ElementsAre("o3", "o1"));
}

TEST_P(StoreTest, MalformedContinueTokenIsBadRequest) {
  MustCreate(Named("a"));
  for (std::string token : {"garbage", "c1.", "c1.abc", "c2.5", "c1.-5", "c1.5 ", "C1.5",
                            "c1.5; DROP TABLE objects", "c1.123456789012345678901"}) {
    auto r = store_->List({.kind = kInstance, .continue_token = token});
    ASSERT_FALSE(r.ok()) << token;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << token;
    EXPECT_EQ(HttpCodeOf(r.status()), 400) << token;
    EXPECT_EQ(ReasonOf(r.status()), "BadRequest") << token;
    EXPECT_EQ(StatusText(r.status()),
              "continue token \"" + token + "\" is not valid; start the list again");
  }
  EXPECT_THAT(ListNames({}), ElementsAre("a"));
}

// Regression (fixed; was: src/store/sqlite/sqlite_store.cc, List): a continue token of 19 or 20
// digits passes the shape check (`t.size() < 24`, digits only) but does not fit in int64_t, and
// std::stoll throws std::out_of_range: the exception escapes List (API.md: "No input, however
// malformed, yields a 5xx or a crash"). Fix: parse with std::from_chars (or absl::SimpleAtoi) and
// answer the same BadRequest when it does not fit.
TEST_P(StoreTest, HugeContinueTokenIsBadRequestNotAnException) {
  for (std::string token : {"c1.99999999999999999999", "c1.9223372036854775808"}) {
    absl::StatusOr<ListResult> r = absl::InternalError("threw");
    try {
      r = store_->List({.kind = kInstance, .continue_token = token});
    } catch (const std::exception& e) {
      ADD_FAILURE() << token << ": List threw " << e.what();
      continue;
    }
    ASSERT_FALSE(r.ok()) << token;
    EXPECT_EQ(StatusText(r.status()),
              "continue token \"" + token + "\" is not valid; start the list again");
  }
}

// ------------------------------------------------------------------------------------------
// Label selectors, evaluated inside SQLite

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values("sqlite", "postgres"), BackendName);
INSTANTIATE_TEST_SUITE_P(Sqlite, SqliteOnlyStoreTest, ::testing::Values("sqlite"), BackendName);

}  // namespace

std::string BackendName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

}  // namespace gantry::store::store_tests
