// Store unit tests: events and watches, durability, several PostgreSQL replicas.
#include <chrono>

#include "store/store_test_fixture.h"

namespace gantry::store::store_tests {
namespace {

TEST_P(StoreTest, EventsSinceInOrderWithTypes) {
  MustCreate(Make({.name = "a", .display_name = "A"}));           // 1 ADDED
  MustCommit(Update(Make({.name = "a", .display_name = "A2"})));  // 2 MODIFIED
  MustCreate(Named("b", "other"));                                // 3 ADDED
  MustCommit(Delete("a"));                                        // 4 DELETED
  auto events = store_->EventsSince(0, 100);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 4u);
  const auto& e = *events;
  EXPECT_EQ(e[0].resource_version, 1);
  EXPECT_EQ(e[0].type, "ADDED");
  EXPECT_EQ(e[0].kind, kInstance);
  EXPECT_EQ(e[0].ns, "ml-research");
  EXPECT_EQ(e[0].name, "a");
  EXPECT_EQ(Rv(e[0].object), "1");
  EXPECT_EQ(model::GetString(e[0].object, "spec.displayName"), "A");
  EXPECT_EQ(e[1].type, "MODIFIED");
  EXPECT_EQ(e[1].resource_version, 2);
  EXPECT_EQ(model::GetString(e[1].object, "spec.displayName"), "A2");
  EXPECT_EQ(e[2].type, "ADDED");
  EXPECT_EQ(e[2].ns, "other");
  EXPECT_EQ(e[3].type, "DELETED");
  EXPECT_EQ(e[3].resource_version, 4);
  // The last state, stamped with the delete's resourceVersion.
  EXPECT_EQ(Rv(e[3].object), "4");
  EXPECT_EQ(model::GetString(e[3].object, "spec.displayName"), "A2");
}

TEST_P(StoreTest, EventsSinceResumesAndLimits) {
  for (int i = 0; i < 6; ++i) MustCreate(Named("o" + std::to_string(i)));
  auto after3 = store_->EventsSince(3, 100);
  ASSERT_TRUE(after3.ok());
  ASSERT_EQ(after3->size(), 3u);
  EXPECT_EQ((*after3)[0].resource_version, 4);
  EXPECT_EQ((*after3)[2].resource_version, 6);
  auto two = store_->EventsSince(0, 2);
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].resource_version, 1);
  EXPECT_EQ((*two)[1].resource_version, 2);
  auto none = store_->EventsSince(6, 100);
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(*none, IsEmpty());
  auto future = store_->EventsSince(1000, 100);
  ASSERT_TRUE(future.ok());
  EXPECT_THAT(*future, IsEmpty());
}

TEST_P(StoreTest, CompactionExpiresOldResourceVersions) {
  Reopen(/*retention=*/5);
  // Compaction runs every 100 commits; before that every event is kept.
  for (int i = 0; i < 99; ++i) MustCreate(Named("o" + std::to_string(i)));
  auto before = store_->EventsSince(0, 1000);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->size(), 99u);

  MustCreate(Named("o99"));  // commit 100: keeps the last 5 events (96..100)
  auto expired = store_->EventsSince(94, 1000);
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(HttpCodeOf(expired.status()), 410);
  EXPECT_EQ(ReasonOf(expired.status()), "Expired");
  EXPECT_EQ(StatusText(expired.status()), "too old resource version: 94 (96)");
  EXPECT_EQ(store_->EventsSince(0, 1000).status().code(), absl::StatusCode::kOutOfRange);

  auto kept = store_->EventsSince(95, 1000);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 5u);
  EXPECT_EQ(kept->front().resource_version, 96);
  EXPECT_EQ(kept->back().resource_version, 100);

  // Objects are not affected by compaction.
  EXPECT_EQ(ListNames({}).size(), 100u);

  // The watermark survives a restart.
  Reopen(/*retention=*/5);
  EXPECT_EQ(StatusText(store_->EventsSince(94, 1000).status()),
            "too old resource version: 94 (96)");
  EXPECT_TRUE(store_->EventsSince(95, 1000).ok());
  EXPECT_EQ(store_->CurrentResourceVersion(), 100);
}

TEST_P(StoreTest, CommitObserverSeesEachCommitsEventsInOrder) {
  std::vector<std::vector<std::pair<int64_t, std::string>>> calls;
  store_->SetCommitObserver([&](const std::vector<Event>& events) {
    std::vector<std::pair<int64_t, std::string>> call;
    for (const auto& e : events) call.emplace_back(e.resource_version, e.type + " " + e.name);
    calls.push_back(std::move(call));
  });
  MustCreate(Named("a"));
  std::vector<Write> writes;
  writes.push_back(Create(Named("b")));
  writes.push_back(Update(Named("a")));
  writes.push_back(PutRevision("p", 1, json::object{}));
  writes.push_back(Delete("b"));
  ASSERT_TRUE(store_->Commit(std::move(writes)).ok());
  // Failed commits and revision-only commits tell the observer nothing.
  ASSERT_FALSE(store_->Commit(One(Create(Named("a")))).ok());
  ASSERT_TRUE(store_->Commit(One(PutRevision("p", 2, json::object{}))).ok());

  using P = std::pair<int64_t, std::string>;
  EXPECT_THAT(calls,
              ElementsAre(ElementsAre(P{1, "ADDED a"}),
                          ElementsAre(P{2, "ADDED b"}, P{3, "MODIFIED a"}, P{4, "DELETED b"})));
}

TEST_P(StoreTest, ObserverEventsMatchEventsSince) {
  std::vector<Event> observed;
  store_->SetCommitObserver([&](const std::vector<Event>& events) {
    observed.insert(observed.end(), events.begin(), events.end());
  });
  MustCreate(Make({.name = "a", .labels = {{"env", "prod"}}}));
  MustCommit(Update(Make({.name = "a", .labels = {{"env", "dev"}}})));
  MustCommit(Delete("a"));
  auto stored = store_->EventsSince(0, 100);
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(observed.size(), stored->size());
  for (size_t i = 0; i < observed.size(); ++i) {
    EXPECT_EQ(observed[i].resource_version, (*stored)[i].resource_version);
    EXPECT_EQ(observed[i].type, (*stored)[i].type);
    EXPECT_EQ(observed[i].object, (*stored)[i].object) << i;
  }
}

// ------------------------------------------------------------------------------------------
// Durability across reopen

TEST_P(StoreTest, DataSurvivesCloseAndReopen) {
  Reopen(100000, "FULL");
  MustCreate(Make({.name = "keep",
                   .labels = {{"env", "prod"}},
                   .phase = "Success",
                   .display_name = "Kept Instance"}));
  MustCreate(Named("gone"));
  MustCommit(Update(Make({.name = "keep",
                          .labels = {{"env", "prod"}},
                          .phase = "Success",
                          .display_name = "Kept Instance v2"})));
  MustCommit(Delete("gone"));
  MustCreate(json::object{{"metadata", json::object{{"name", "h100"}, {"namespace", "platform"}}}},
             kProfile);
  MustCommit(PutRevision("h100", 1, json::object{{"cpu", 64}}));
  auto before = store_->Get(kInstance, "ml-research", "keep");
  ASSERT_TRUE(before.ok());
  const int64_t rv = store_->CurrentResourceVersion();
  EXPECT_EQ(rv, 5);

  Reopen(100000, "FULL");
  EXPECT_EQ(store_->CurrentResourceVersion(), rv);
  auto after = store_->Get(kInstance, "ml-research", "keep");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, *before);
  EXPECT_EQ(store_->Get(kInstance, "ml-research", "gone").status().code(),
            absl::StatusCode::kNotFound);
  auto rev = store_->GetRevision(kProfile, "platform", "h100", 1);
  ASSERT_TRUE(rev.ok()) << rev.status();
  EXPECT_EQ(rev->spec, (json::object{{"cpu", 64}}));
  auto events = store_->EventsSince(0, 100);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->size(), 5u);
  // Selector and search columns survive too.
  EXPECT_THAT(Selected("env=prod"), ElementsAre("keep"));
  EXPECT_THAT(Searched("v2"), ElementsAre("keep"));
  EXPECT_THAT(Filtered({{"status.phase", true, "Success"}}), ElementsAre("keep"));

  // Versions continue after the last one, even when the last change was a delete.
  EXPECT_EQ(Rv(MustCreate(Named("new"))), std::to_string(rv + 1));
  EXPECT_THAT(ListNames({}), ElementsAre("new", "keep"));
}

TEST_P(StoreTest, ResourceVersionContinuesWhenTheLastChangeWasADelete) {
  MustCreate(Named("a"));
  MustCreate(Named("b"));
  MustCommit(Delete("b"));  // rv 3 exists only as an event
  Reopen();
  EXPECT_EQ(store_->CurrentResourceVersion(), 3);
  EXPECT_EQ(Rv(MustCreate(Named("c"))), "4");
}

TEST_P(StoreTest, AStoreOpenedLaterOnTheSameFileSeesAndExtendsTheData) {
  MustCreate(Named("a"));
  store_.reset();
  {
    auto other = OpenAnother();
    ASSERT_TRUE(other.ok()) << other.status();
    EXPECT_TRUE((*other)->Get(kInstance, "ml-research", "a").ok());
    ASSERT_TRUE((*other)->Commit(One(Create(Named("b")))).ok());
  }
  Reopen();
  EXPECT_THAT(ListNames({}), ElementsAre("b", "a"));
}

// ------------------------------------------------------------------------------------------
// PostgreSQL only: several stores (replicas) on one database

class PostgresStoreTest : public StoreTest {
 protected:
  // A plain libpq connection to the test database (to play another transaction).
  PGconn* Raw() {
    PGconn* c = PQconnectdb(url_.c_str());
    EXPECT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
    return c;
  }
  static bool Sql(PGconn* c, const std::string& sql) {
    PGresult* r = PQexec(c, sql.c_str());
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
    return ok;
  }
};

// Collects what a store's observer is given; waits (without a deadline: ctest bounds a hang)
// for a condition on it.
class Observed {
 public:
  void Attach(Store& store) {
    store.SetCommitObserver([this](const std::vector<Event>& events) {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(events);
      cv_.notify_all();
    });
  }
  std::vector<std::vector<Event>> WaitForEvents(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] {
      size_t total = 0;
      for (const auto& c : calls_) total += c.size();
      return total >= n;
    });
    return calls_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<Event>> calls_;
};

TEST_P(PostgresStoreTest, AnotherReplicasCommitsReachThisReplicasObserverInOrder) {
  auto other = OpenAnother();
  ASSERT_TRUE(other.ok()) << other.status();
  Observed here;
  here.Attach(*store_);
  MustCreate(Named("a"));                                       // here: rv 1
  ASSERT_TRUE((*other)->Commit(One(Create(Named("b")))).ok());  // the other replica: rv 2
  std::vector<Write> two;
  two.push_back(Create(Named("c")));
  two.push_back(Delete("b"));
  ASSERT_TRUE((*other)->Commit(std::move(two)).ok());  // rv 3, 4 in one commit
  MustCommit(Update(Named("a")));                      // here: rv 5
  auto calls = here.WaitForEvents(5);
  std::vector<std::string> seen;
  for (const auto& call : calls) {
    std::string line;
    for (const auto& e : call)
      line += (line.empty() ? "" : ", ") + std::to_string(e.resource_version) + " " + e.type + " " +
              e.name;
    seen.push_back(line);
  }
  // One call per commit, in resourceVersion order, whichever replica committed.
  EXPECT_THAT(seen,
              ElementsAre("1 ADDED a", "2 ADDED b", "3 ADDED c, 4 DELETED b", "5 MODIFIED a"));
  EXPECT_EQ(store_->CurrentResourceVersion(), 5);
}

TEST_P(PostgresStoreTest, AReplicaSeesTheOtherReplicasCommitsWithoutCommittingItself) {
  auto other = OpenAnother();
  ASSERT_TRUE(other.ok()) << other.status();
  Observed here;
  here.Attach(*store_);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE((*other)->Commit(One(Create(Named("o" + std::to_string(i))))).ok());
  auto calls = here.WaitForEvents(3);  // delivered by the LISTEN/NOTIFY tail thread
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[2][0].resource_version, 3);
  EXPECT_EQ(calls[2][0].name, "o2");
}

// A replica's own commits reach its observer from the committing call, not from a read of
// the events table by its tail thread (which passes over its own replica's NOTIFYs); another
// replica's commits are read. Only the tail thread's catch-ups (on start, then once a second)
// may read a commit of this replica, when one falls between its COMMIT and its delivery:
// at most one read per second the loop took, plus the one on start.
TEST_P(PostgresStoreTest, OwnCommitsAreDeliveredWithoutReadingTheEventsTable) {
  auto* here = dynamic_cast<PostgresStore*>(store_.get());
  ASSERT_NE(here, nullptr);
  Observed seen;
  seen.Attach(*store_);
  const PostgresStore::DeliveryStats before = here->Deliveries();
  const auto start = std::chrono::steady_clock::now();
  constexpr int kCommits = 40;
  for (int i = 0; i < kCommits; ++i) MustCreate(Named("own" + std::to_string(i)));
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start);
  seen.WaitForEvents(kCommits);
  PostgresStore::DeliveryStats own = here->Deliveries();
  // Before the tag, the tail thread raced every commit and read ~kCommits times.
  EXPECT_LE(own.reads - before.reads, 2 + seconds.count());
  EXPECT_GE(own.direct - before.direct, kCommits - 2 - seconds.count());

  auto other = OpenAnother();
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE((*other)->Commit(One(Create(Named("theirs")))).ok());
  auto calls = seen.WaitForEvents(41);
  EXPECT_EQ(calls.back()[0].name, "theirs");
  EXPECT_GT(here->Deliveries().reads, own.reads);
  EXPECT_EQ(store_->CurrentResourceVersion(), 41);
}

TEST_P(PostgresStoreTest, ConcurrentGuardedClaimsFromTwoReplicasHaveOneWinner) {
  auto other = OpenAnother();
  ASSERT_TRUE(other.ok()) << other.status();
  constexpr int kRuns = 30;
  std::vector<json::object> queued;
  for (int i = 0; i < kRuns; ++i)
    queued.push_back(MustCreate(Make({.name = "run-" + std::to_string(i), .phase = "Queued"})));
  std::atomic<int> wins{0}, conflicts{0}, other_errors{0};
  auto claimer = [&](Store* store, std::string holder) {
    for (const auto& run : queued) {
      json::object claimed = run;
      claimed["status"] = json::object{{"phase", "Running"}, {"holder", holder}};
      auto r = store->Commit(One(Update(claimed, std::stoll(Rv(run)))));
      if (r.ok())
        ++wins;
      else if (ReasonOf(r.status()) == "Conflict")
        ++conflicts;
      else
        ++other_errors;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back(claimer, t % 2 ? store_.get() : other->get(), "h" + std::to_string(t));
  for (auto& t : threads) t.join();
  EXPECT_EQ(wins, kRuns);
  EXPECT_EQ(conflicts, 3 * kRuns);
  EXPECT_EQ(other_errors, 0);
  EXPECT_EQ(*store_->Count(kInstance, std::nullopt, {{"status.phase", true, "Running"}}), kRuns);
}

TEST_P(PostgresStoreTest, AGuardedWriteToARowAnotherTransactionHoldsIsAConflictAtOnce) {
  json::object a = MustCreate(Named("a"));
  PGconn* tx = Raw();
  ASSERT_TRUE(Sql(tx, "BEGIN"));
  ASSERT_TRUE(Sql(tx, "SELECT 1 FROM objects WHERE name = 'a' FOR UPDATE"));
  // SKIP LOCKED: no wait for the other transaction, a 409 now.
  auto r = store_->Commit(One(Update(a, std::stoll(Rv(a)))));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ReasonOf(r.status()), "Conflict");
  EXPECT_THAT(StatusText(r.status()), HasSubstr("the object has been modified"));
  // A missing object is still NotFound, whatever is locked.
  auto missing = store_->Commit(One(Update(Named("zz"), 3)));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(Sql(tx, "ROLLBACK"));
  PQfinish(tx);
  EXPECT_TRUE(store_->Commit(One(Update(a, std::stoll(Rv(a))))).ok());
}

TEST_P(PostgresStoreTest, NewerSchemaVersionIsRefused) {
  store_.reset();
  PGconn* c = Raw();
  ASSERT_TRUE(Sql(c, "UPDATE schema_version SET version = 7"));
  PQfinish(c);
  auto s = OpenAnother();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(StatusText(s.status()),
              HasSubstr(" has schema version 7, newer than this gantryd understands (3); run a "
                        "newer gantryd"));
}

TEST_P(PostgresStoreTest, MigrationsAreRecordedAndAnOlderSchemaIsMigrated) {
  PGconn* c = Raw();
  PGresult* r = PQexec(c, "SELECT version FROM schema_version");
  ASSERT_EQ(PQntuples(r), 1);
  EXPECT_STREQ(PQgetvalue(r, 0, 0), "3");
  PQclear(r);
  MustCreate(Named("kept"));
  // A database of the first release (schema version 1: no flushes table, no label index)
  // is migrated at start, its data kept.
  store_.reset();
  ASSERT_TRUE(Sql(c, "DROP TABLE flushes"));
  ASSERT_TRUE(Sql(c, "DROP TABLE object_labels"));
  ASSERT_TRUE(Sql(c, "UPDATE schema_version SET version = 1"));
  Reopen();
  EXPECT_TRUE(store_->Get(kInstance, "ml-research", "kept").ok());
  EXPECT_EQ(Rv(MustCreate(Named("new"))), "2");
  r = PQexec(c, "SELECT version, (SELECT COUNT(*) FROM flushes) > 0 FROM schema_version");
  ASSERT_EQ(PQntuples(r), 1);
  EXPECT_STREQ(PQgetvalue(r, 0, 0), "3");
  EXPECT_STREQ(PQgetvalue(r, 0, 1), "t");  // the durable create flushed through it
  PQclear(r);
  PQfinish(c);
}

// The label index (object_labels) against the labels of every stored object, both ways:
// "+ID key=value" is in the index only, "-ID key=value" is missing from it.
std::vector<std::string> LabelIndexDrift(PGconn* c) {
  PGresult* r = PQexec(c, R"sql(
    WITH truth AS (SELECT o.id, o.kind, l.key, l.value FROM objects o, jsonb_each_text(o.labels) l),
         idx AS (SELECT object_id AS id, kind, key, value FROM object_labels)
    SELECT '+' || id || ' ' || key || '=' || value FROM (SELECT * FROM idx EXCEPT
                                                         SELECT * FROM truth) a
    UNION ALL
    SELECT '-' || id || ' ' || key || '=' || value FROM (SELECT * FROM truth EXCEPT
                                                         SELECT * FROM idx) b)sql");
  EXPECT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(c);
  std::vector<std::string> out;
  for (int i = 0; i < PQntuples(r); ++i) out.push_back(PQgetvalue(r, i, 0));
  PQclear(r);
  return out;
}

TEST_P(PostgresStoreTest, TheLabelIndexFollowsCreatesLabelChangesDeletesAndFailedCommits) {
  MustCreate(Make({.name = "a", .labels = {{"tier", "gold"}, {"zone", "z1"}}}));
  json::object b = MustCreate(Make({.name = "b", .labels = {{"tier", "silver"}}}));
  json::object c = MustCreate(Make({.name = "c", .labels = {{"tier", "gold"}}}));
  // b changes a value and gains a key, c loses its only label, a is deleted.
  b["metadata"].as_object()["labels"] = json::object{{"tier", "gold"}, {"zone", "z2"}};
  MustCommit(Update(b, std::stoll(Rv(b))));
  c["metadata"].as_object().erase("labels");
  MustCommit(Update(c, std::stoll(Rv(c))));
  MustCommit(Delete("a"));
  // Two writes in one commit, the second refused: the first one's label change is undone.
  json::object changed = *store_->Get(kInstance, "ml-research", "b");
  changed["metadata"].as_object()["labels"] = json::object{{"tier", "copper"}};
  std::vector<Write> writes;
  writes.push_back(Update(changed, std::stoll(Rv(changed))));
  writes.push_back(Create(Make({.name = "c", .labels = {{"tier", "copper"}}})));
  ASSERT_FALSE(store_->Commit(std::move(writes)).ok());
  EXPECT_THAT(Selected("tier=gold"), ElementsAre("b"));
  EXPECT_THAT(Selected("tier in (copper,silver)"), IsEmpty());
  EXPECT_THAT(Selected("zone=z2"), ElementsAre("b"));
  PGconn* raw = Raw();
  EXPECT_THAT(LabelIndexDrift(raw), IsEmpty());
  PQfinish(raw);
}

TEST_P(PostgresStoreTest, ADatabaseWithoutTheLabelIndexIsIndexedByItsMigration) {
  MustCreate(Make({.name = "old-1", .labels = {{"tier", "gold"}, {"zone", "z1"}}}));
  MustCreate(Make({.name = "old-2", .labels = {{"tier", "silver"}}}));
  MustCreate(Named("old-3"));
  store_.reset();
  PGconn* c = Raw();
  ASSERT_TRUE(Sql(c, "DROP TABLE object_labels"));
  ASSERT_TRUE(Sql(c, "UPDATE schema_version SET version = 2"));
  Reopen();
  PGresult* r = PQexec(c, "SELECT COUNT(*) FROM object_labels");
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK);
  EXPECT_STREQ(PQgetvalue(r, 0, 0), "3");
  PQclear(r);
  EXPECT_THAT(LabelIndexDrift(c), IsEmpty());
  PQfinish(c);
  EXPECT_THAT(Selected("tier in (gold,silver)"), ElementsAre("old-2", "old-1"));
  MustCreate(Make({.name = "new", .labels = {{"zone", "z1"}}}));
  EXPECT_THAT(Selected("zone=z1"), ElementsAre("new", "old-1"));
}

TEST_P(PostgresStoreTest, BadUrlAndUnreachableServer) {
  PostgresOptions bad;
  bad.url = "mysql://localhost/gantry";
  auto s = PostgresStore::Open(bad);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusText(s.status()),
            "the PostgreSQL store needs a postgres://… URL, not \"mysql://localhost/gantry\"");
  PostgresOptions away;
  away.url = "postgresql://gantry:secret@/gantry?host=" + dir_ + "/nowhere";
  s = PostgresStore::Open(away);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(StatusText(s.status()),
              HasSubstr("cannot connect to PostgreSQL at postgresql://gantry:***@"));
  EXPECT_THAT(StatusText(s.status()), ::testing::Not(HasSubstr("secret")));
}

// A burst of writes into a fresh database gets the planner statistics that make a lookup by
// name use the (kind, namespace, name) index (PostgresStore::MaybeAnalyze): without them, a
// Get or update read every object of the project. Waits (ctest bounds a hang) for the
// replica's tail thread to analyze, then asks PostgreSQL for the plan of the Get.
TEST_P(PostgresStoreTest, ABurstOfWritesIsAnalyzedSoLookupsByNameUseTheNameIndex) {
  PGconn* c = Raw();
  auto text = [&](const std::string& sql) {
    PGresult* r = PQexec(c, sql.c_str());
    std::string out;
    for (int i = 0; i < PQntuples(r); ++i) out += std::string(PQgetvalue(r, i, 0)) + "\n";
    PQclear(r);
    return out;
  };
  text("ALTER TABLE objects SET (autovacuum_enabled = false)");  // only the store analyzes
  for (int batch = 0; batch < 6; ++batch) {
    std::vector<Write> writes;
    for (int i = 0; i < 100; ++i)
      writes.push_back(Create(Named("i-" + std::to_string(batch * 100 + i))));
    ASSERT_TRUE(store_->Commit(std::move(writes)).ok());
  }
  while (text("SELECT reltuples >= 0 FROM pg_class WHERE oid = 'objects'::regclass") != "t\n")
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_THAT(text("EXPLAIN SELECT body FROM objects WHERE kind = 'ComputeInstance' AND "
                   "namespace = 'ml-research' AND name = 'i-42'"),
              HasSubstr("objects_kind_namespace_name_key"));
  PQfinish(c);
}

INSTANTIATE_TEST_SUITE_P(Postgres, PostgresStoreTest, ::testing::Values("postgres"), BackendName);

}  // namespace
}  // namespace gantry::store::store_tests
