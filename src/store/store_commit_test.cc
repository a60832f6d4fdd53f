// Store unit tests: concurrent commits (both stores' group commit), SQLite's label index
// migration and query plans.
#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "store/sqlite/sqlite_query.h"
#include "store/store_test_fixture.h"

namespace gantry::store::store_tests {
namespace {

// Tests of what only SQLite has (the group commit's batches, its schema and its planner).
class SqliteCommitTest : public StoreTest {};

// Many threads commit at once; some of their commits fail their checks. Every successful
// commit gets its own resourceVersions, together they are gap-free, every failure fails
// with its own reason, and watchers see every change once, in order.
TEST_P(StoreTest, ConcurrentCommitsGetGapFreeVersionsAndFailAlone) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 12;
  std::mutex mu;
  std::vector<int64_t> observed;  // guarded by mu
  store_->SetCommitObserver([&](const std::vector<Event>& events) {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& e : events) observed.push_back(e.resource_version);
  });
  std::vector<std::vector<int64_t>> rvs(kThreads);
  std::vector<std::vector<std::string>> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string name = "t" + std::to_string(t) + "-" + std::to_string(i);
        // Two writes in one commit: a create and an update of it (consecutive versions).
        std::vector<Write> writes;
        writes.push_back(Create(Named(name)));
        writes.push_back(Update(Make({.name = name, .phase = "Success"})));
        auto r = store_->Commit(std::move(writes));
        if (!r.ok()) {
          errors[t].push_back(name + ": " + r.status().ToString());
          continue;
        }
        int64_t first = std::stoll(Rv((*r)[0]));
        EXPECT_EQ(std::stoll(Rv((*r)[1])), first + 1) << name;
        rvs[t].push_back(first);
        rvs[t].push_back(first + 1);
        // Taken: fails alone, with its own reason.
        auto again = store_->Commit(One(Create(Named(name))));
        if (again.ok()) {
          errors[t].push_back(name + ": created twice");
        } else if (HttpCodeOf(again.status()) != 409 ||
                   ReasonOf(again.status()) != "AlreadyExists") {
          errors[t].push_back(name + ": " + again.status().ToString());
        }
        // Stale: a conflict.
        auto stale = store_->Commit(One(Update(Named(name), first)));
        if (stale.ok() || ReasonOf(stale.status()) != "Conflict")
          errors[t].push_back(name + ": stale update: " + stale.status().ToString());
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<int64_t> all;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_THAT(errors[t], IsEmpty());
    all.insert(all.end(), rvs[t].begin(), rvs[t].end());
  }
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(2 * kThreads * kPerThread));
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], static_cast<int64_t>(i + 1));
  EXPECT_EQ(store_->CurrentResourceVersion(), static_cast<int64_t>(all.size()));
  auto events = store_->EventsSince(0, 10000);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), all.size());
  for (size_t i = 0; i < events->size(); ++i)
    EXPECT_EQ((*events)[i].resource_version, static_cast<int64_t>(i + 1));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(observed, all);  // every change once, in resourceVersion order
  EXPECT_EQ(ListNames({}).size(), static_cast<size_t>(kThreads * kPerThread));
}

// While one commit is being committed (its observer is held), the calls that arrive queue;
// the next leader commits all of them in ONE transaction. The ones that fail their checks
// fail alone, the others get consecutive resourceVersions (PostgreSQL: the batch rolls back to
// its savepoint and goes again without each refused call).
TEST_P(StoreTest, QueuedCommitsShareOneTransactionAndFailuresFailAlone) {
  MustCreate(Named("taken"));
  json::object taken = MustCreate(Named("updated"));
  const GroupCommitStats before = CommitStats();
  std::mutex mu;
  std::condition_variable cv;
  bool hold = true, held = false;           // guarded by mu
  std::vector<std::vector<int64_t>> calls;  // guarded by mu
  store_->SetCommitObserver([&](const std::vector<Event>& events) {
    std::unique_lock<std::mutex> lock(mu);
    std::vector<int64_t> call;
    for (const auto& e : events) call.push_back(e.resource_version);
    calls.push_back(call);
    if (!held) {
      held = true;
      cv.notify_all();
      cv.wait(lock, [&] { return !hold; });
    }
  });
  std::thread first([&] { EXPECT_TRUE(store_->Commit(One(Create(Named("first")))).ok()); });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return held; });
  }
  // The first commit's leader is in its observer: these queue behind it.
  constexpr int kCreates = 6;
  std::vector<absl::StatusOr<std::vector<json::object>>> results(kCreates + 4,
                                                                 absl::UnknownError("unset"));
  std::vector<std::thread> queued;
  for (int i = 0; i < kCreates + 4; ++i) {
    queued.emplace_back([&, i] {
      if (i == kCreates + 3) {
        // Two writes, the second refused: the first is undone with it.
        std::vector<Write> pair;
        pair.push_back(Create(Named("half")));
        pair.push_back(Create(Named("taken")));  // 409 AlreadyExists
        results[i] = store_->Commit(std::move(pair));
        return;
      }
      Write w = i < kCreates        ? Create(Named("q" + std::to_string(i)))
                : i == kCreates     ? Create(Named("taken"))       // 409 AlreadyExists
                : i == kCreates + 1 ? Update(Named("updated"), 1)  // 409 Conflict
                                    : Delete("missing");           // 404
      results[i] = store_->Commit(One(std::move(w)));
    });
  }
  while (CommitStats().waiting < kCreates + 5) std::this_thread::yield();
  {
    std::lock_guard<std::mutex> lock(mu);
    hold = false;
    cv.notify_all();
  }
  first.join();
  for (auto& t : queued) t.join();

  const GroupCommitStats after = CommitStats();
  EXPECT_EQ(after.transactions - before.transactions, 2);  // "first", then all the queued
  EXPECT_EQ(after.calls - before.calls, 1 + kCreates);
  EXPECT_EQ(ReasonOf(results[kCreates].status()), "AlreadyExists");
  EXPECT_EQ(ReasonOf(results[kCreates + 1].status()), "Conflict");
  EXPECT_EQ(HttpCodeOf(results[kCreates + 2].status()), 404);
  EXPECT_EQ(ReasonOf(results[kCreates + 3].status()), "AlreadyExists");
  EXPECT_EQ(store_->Get(kInstance, "ml-research", "half").status().code(),
            absl::StatusCode::kNotFound);
  std::vector<int64_t> rvs;
  for (int i = 0; i < kCreates; ++i) {
    ASSERT_TRUE(results[i].ok()) << i << ": " << results[i].status();
    rvs.push_back(std::stoll(Rv((*results[i])[0])));
  }
  std::sort(rvs.begin(), rvs.end());
  for (int i = 0; i < kCreates; ++i) EXPECT_EQ(rvs[i], 4 + i);  // after taken, updated, first
  EXPECT_EQ(Rv(*store_->Get(kInstance, "ml-research", "updated")), Rv(taken));
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(calls.size(), static_cast<size_t>(1 + kCreates));
  for (size_t i = 0; i < calls.size(); ++i)
    EXPECT_THAT(calls[i], ElementsAre(static_cast<int64_t>(3 + i)));
}

// A database of schema version 1 (before the label index) is migrated: the index is filled
// from the stored objects, and selectors find them.
TEST_P(SqliteCommitTest, MigrationFillsTheLabelIndexOfExistingObjects) {
  MustCreate(Make({.name = "a", .labels = {{"env", "prod"}, {"team", "llm"}}}));
  MustCreate(Make({.name = "b", .labels = {{"env", "dev"}, {"n", 7}}}));  // 7: not a string
  MustCreate(Make({.name = "c"}));
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "DROP TABLE label_index; PRAGMA user_version=1", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  Reopen();
  EXPECT_THAT(Selected("env=prod"), ElementsAre("a"));
  EXPECT_THAT(Selected("env in (dev,prod)"), ElementsAre("b", "a"));
  EXPECT_THAT(Selected("team=llm,env=prod"), ElementsAre("a"));
  EXPECT_THAT(Selected("!env"), ElementsAre("c"));
  store_.reset();
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM label_index", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(s, 0), 3);  // env, team of a; env of b
  sqlite3_finalize(s);
  sqlite3_close(db);
}

// The plan SQLite chooses for a list on the index reads the index and fetches the matching
// objects by id, in list order: no scan of the kind, no sort.
TEST_P(SqliteCommitTest, IndexedSelectorsReadOnlyMatchingRows) {
  MustCreate(Make({.name = "a", .labels = {{"env", "prod"}}}));
  auto plan = [&](std::string_view selector, std::optional<std::string> ns) {
    auto sel = model::ParseLabelSelector(selector);
    EXPECT_TRUE(sel.ok());
    auto q = sqlite::ListQuery({.kind = kInstance,
                                .ns = std::move(ns),
                                .labels = *sel,
                                .fields = {{"status.phase", true, "Success"}},
                                .limit = 100,
                                .continue_token = "c1.5000"});
    EXPECT_TRUE(q.ok()) << q.status();
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    std::string sql = "EXPLAIN QUERY PLAN " + q->sql;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql;
    std::string steps;
    while (sqlite3_step(s) == SQLITE_ROW)
      steps += std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 3))) + "\n";
    sqlite3_finalize(s);
    sqlite3_close(db);
    return steps;
  };
  for (auto ns : {std::optional<std::string>(), std::optional<std::string>("ml-research")}) {
    for (std::string_view sel : {"env=prod", "env in (prod)", "env=prod,team notin (x)",
                                 "env in (prod,dev)", "env in (prod,dev),team"}) {
      std::string steps = plan(sel, ns);
      SCOPED_TRACE(std::string(sel) + "\n" + steps);
      EXPECT_THAT(steps, HasSubstr("SEARCH l USING PRIMARY KEY (kind=? AND key=? AND value"));
      EXPECT_THAT(steps, HasSubstr("o USING INTEGER PRIMARY KEY (rowid=?)"));
      EXPECT_THAT(steps, ::testing::Not(HasSubstr("SCAN")));
      EXPECT_THAT(steps, ::testing::Not(HasSubstr("TEMP B-TREE")));
    }
  }
}

// A read begun after a write was acknowledged returns that write or a later one, while other
// threads read the object all along: on SQLite those reads fill the object cache that each
// commit invalidates (store/object_cache.h); a stale text left in it would show here.
TEST_P(StoreTest, AReadBegunAfterAnAcknowledgedWriteSeesIt) {
  constexpr int kUpdates = 150;
  json::object obj = MustCreate(Make({.name = "hot", .display_name = "v0"}));
  std::atomic<int64_t> acknowledged{std::stoll(Rv(obj))};
  std::atomic<bool> done{false};
  std::atomic<int> stale{0};
  std::atomic<int> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t)
    readers.emplace_back([&, t] {
      while (!done) {
        const int64_t floor = acknowledged.load();
        absl::StatusOr<json::object> got;
        if (t == 0) {
          auto text = store_->GetText(kInstance, "ml-research", "hot");
          got = text.ok() ? absl::StatusOr<json::object>(json::parse(*text).as_object())
                          : text.status();
        } else {
          got = store_->Get(kInstance, "ml-research", "hot");
        }
        if (!got.ok() || std::stoll(Rv(*got)) < floor) ++stale;
        ++reads;
      }
    });
  for (int i = 1; i <= kUpdates; ++i) {
    json::object stored =
        MustCommit(Update(Make({.name = "hot", .display_name = "v" + std::to_string(i)})));
    acknowledged = std::stoll(Rv(stored));
    auto got = store_->Get(kInstance, "ml-research", "hot");  // this thread, at once
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(model::GetString(*got, "spec.displayName"), "v" + std::to_string(i));
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(stale.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_GT(reads.load(), 0);
  ASSERT_TRUE(store_->Commit(One(Delete("hot"))).ok());
  EXPECT_EQ(store_->Get(kInstance, "ml-research", "hot").status().code(),
            absl::StatusCode::kNotFound);
}

// Reads of an object read before are answered from the cache, which a commit that writes it
// keeps current (a call that fails leaves it as it was, a delete empties it); a store opened
// with no cache reads the database every time and answers the same.
TEST_P(SqliteCommitTest, RepeatedReadsComeFromTheCacheWhichWritesKeepCurrent) {
  auto* sqlite = dynamic_cast<SqliteStore*>(store_.get());
  ASSERT_NE(sqlite, nullptr);
  MustCreate(Make({.name = "a", .display_name = "one"}));
  ObjectCacheStats before = sqlite->CacheStats();
  ASSERT_TRUE(store_->Get(kInstance, "ml-research", "a").ok());
  auto text = store_->GetText(kInstance, "ml-research", "a");
  ASSERT_TRUE(text.ok());
  ObjectCacheStats after = sqlite->CacheStats();
  EXPECT_EQ(after.misses - before.misses, 1);
  EXPECT_EQ(after.hits - before.hits, 1);
  MustCommit(Update(Make({.name = "a", .display_name = "two"})));
  auto got = store_->Get(kInstance, "ml-research", "a");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(model::GetString(*got, "spec.displayName"), "two");
  EXPECT_EQ(sqlite->CacheStats().misses, after.misses);
  EXPECT_EQ(sqlite->CacheStats().hits - after.hits, 1);
  // A call whose second write fails is undone whole: the cache keeps "two".
  std::vector<Write> failing;
  failing.push_back(Update(Make({.name = "a", .display_name = "three"})));
  failing.push_back(Create(Make({.name = "a"})));
  EXPECT_EQ(store_->Commit(std::move(failing)).status().code(), absl::StatusCode::kAlreadyExists);
  auto kept = store_->Get(kInstance, "ml-research", "a");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, *got);
  MustCreate(Make({.name = "gone"}));
  ASSERT_TRUE(store_->Get(kInstance, "ml-research", "gone").ok());
  ASSERT_TRUE(store_->Commit(One(Delete("gone"))).ok());
  EXPECT_EQ(store_->Get(kInstance, "ml-research", "gone").status().code(),
            absl::StatusCode::kNotFound);

  store_.reset();
  SqliteOptions options;
  options.path = path_;
  options.object_cache_bytes = 0;
  auto uncached = SqliteStore::Open(options);
  ASSERT_TRUE(uncached.ok()) << uncached.status();
  for (int i = 0; i < 2; ++i) {
    auto again = (*uncached)->GetText(kInstance, "ml-research", "a");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(json::parse(*again), json::value(*got));
  }
  EXPECT_EQ((*uncached)->CacheStats().hits, 0);
  EXPECT_EQ((*uncached)->CacheStats().entries, 0u);
}

// A revision read again comes from the object cache (revisions never change) until its
// object's delete takes it away; a failed delete leaves it cached.
TEST_P(SqliteCommitTest, ARevisionIsReadFromTheCacheUntilItsObjectIsDeleted) {
  auto* sqlite = dynamic_cast<SqliteStore*>(store_.get());
  ASSERT_NE(sqlite, nullptr);
  MustCreate(json::object{{"metadata", json::object{{"name", "h100"}, {"namespace", "platform"}}}},
             kProfile);
  MustCommit(PutRevision("h100", 1, json::object{{"cpu", 32}}, "2026-12-07T22:00:00Z"));
  ObjectCacheStats before = sqlite->CacheStats();
  for (int i = 0; i < 3; ++i) {
    auto got = store_->GetRevision(kProfile, "platform", "h100", 1);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->revision, 1);
    EXPECT_EQ(got->created, "2026-12-07T22:00:00Z");
    EXPECT_EQ(got->spec, (json::object{{"cpu", 32}}));
  }
  EXPECT_EQ(sqlite->CacheStats().misses - before.misses, 1);
  EXPECT_EQ(sqlite->CacheStats().hits - before.hits, 2);
  // A call whose delete is undone (its second write fails) keeps the revision.
  std::vector<Write> failing;
  failing.push_back(Delete("h100", "platform", 0, kProfile));
  failing.push_back(Create(Named("x")));
  failing.push_back(Create(Named("x")));  // fails
  ASSERT_FALSE(store_->Commit(std::move(failing)).ok());
  auto kept = store_->GetRevision(kProfile, "platform", "h100", 1);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->spec, (json::object{{"cpu", 32}}));
  MustCommit(Delete("h100", "platform", 0, kProfile));
  EXPECT_EQ(store_->GetRevision(kProfile, "platform", "h100", 1).status().code(),
            absl::StatusCode::kNotFound);
}

// The log is copied back into the database file by the store's checkpoint thread, not by the
// commit that filled it (store/sqlite/wal_checkpointer.h), and what was checkpointed reads
// back whole after a reopen.
TEST_P(SqliteCommitTest, TheWalIsCheckpointedOffTheCommitPath) {
  auto* sqlite = dynamic_cast<SqliteStore*>(store_.get());
  ASSERT_NE(sqlite, nullptr);
  const std::string big(3000, 'x');  // overflow pages: the log fills in a few hundred commits
  constexpr int kObjects = 400;
  for (int i = 0; i < kObjects; ++i)
    MustCreate(Make({.name = "o" + std::to_string(i), .display_name = big + std::to_string(i)}));
  // Writes go on until the log has started over: the thread copied it (and the writer the
  // rest, if commits came during the copy). No deadline: ctest bounds a hang.
  for (int i = 0; sqlite->CheckpointStats().restarts == 0; ++i) {
    MustCommit(Update(Make({.name = "o0", .display_name = big + "0"})));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  sqlite::WalCheckpointer::Stats stats = sqlite->CheckpointStats();
  EXPECT_GE(stats.background, 1);
  EXPECT_EQ(stats.on_writer, 0);  // the backstop, far off

  Reopen();
  for (int i = 0; i < kObjects; ++i) {
    auto got = store_->Get(kInstance, "ml-research", "o" + std::to_string(i));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(model::GetString(*got, "spec.displayName"), big + std::to_string(i));
  }
}

INSTANTIATE_TEST_SUITE_P(Sqlite, SqliteCommitTest, ::testing::Values("sqlite"), BackendName);

}  // namespace
}  // namespace gantry::store::store_tests
