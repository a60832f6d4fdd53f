// sqlite::Connection's cache of built statements: one prepare per shape of query, the bound
// values of each use, the same SQL held twice at once, and the bound on how many are kept
// (the least recently used closed first, never one a Stmt holds).
#include "store/sqlite/sqlite_db.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace gantry::store::sqlite {
namespace {

class SqliteDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
    conn_ = std::make_unique<Connection>(db);
    ASSERT_TRUE(Exec(db,
                     "CREATE TABLE t(k TEXT, v INTEGER);"
                     "INSERT INTO t VALUES ('a', 1), ('b', 2), ('c', 3);")
                    .ok());
  }

  // The v of the row whose k is `k`, through a built statement of `sql`; -1 when none.
  int64_t ValueOf(const std::string& sql, std::string_view k) {
    Stmt s(*conn_, BuiltSql{}, sql);
    EXPECT_TRUE(s.ok()) << s.Error();
    s.Bind(1, k);
    return s.Step() == SQLITE_ROW ? s.Int(0) : -1;
  }

  std::unique_ptr<Connection> conn_;
};

TEST_F(SqliteDbTest, AShapeOfQueryPreparesOnceAndBindsEachUsesValues) {
  const std::string sql = "SELECT v FROM t WHERE k = ?1";
  EXPECT_EQ(ValueOf(sql, "a"), 1);
  EXPECT_EQ(ValueOf(sql, "c"), 3);
  EXPECT_EQ(ValueOf(sql, "z"), -1);
  EXPECT_EQ(conn_->built_count(), 1u);
  // The cached statement was reset: it sees a row written after its last use.
  ASSERT_TRUE(Exec(conn_->db(), "INSERT INTO t VALUES ('z', 26)").ok());
  EXPECT_EQ(ValueOf(sql, "z"), 26);
}

TEST_F(SqliteDbTest, TheSameSqlHeldTwiceAtOnceGetsTwoStatements) {
  const std::string sql = "SELECT v FROM t WHERE k >= ?1 ORDER BY k";
  Stmt outer(*conn_, BuiltSql{}, sql);
  outer.Bind(1, std::string_view("a"));
  ASSERT_EQ(outer.Step(), SQLITE_ROW);
  EXPECT_EQ(outer.Int(0), 1);
  {
    Stmt inner(*conn_, BuiltSql{}, sql);  // the cached one is in use: a one-off
    ASSERT_TRUE(inner.ok());
    inner.Bind(1, std::string_view("c"));
    ASSERT_EQ(inner.Step(), SQLITE_ROW);
    EXPECT_EQ(inner.Int(0), 3);
  }
  ASSERT_EQ(outer.Step(), SQLITE_ROW);  // undisturbed
  EXPECT_EQ(outer.Int(0), 2);
  EXPECT_EQ(conn_->built_count(), 1u);
}

TEST_F(SqliteDbTest, AtMostTheBoundIsKeptAndTheLeastRecentlyUsedGoesFirst) {
  auto shape = [](size_t i) { return "SELECT v + " + std::to_string(i) + " FROM t WHERE k = ?1"; };
  const std::string held = "SELECT v * 10 FROM t WHERE k = ?1";
  Stmt holding(*conn_, BuiltSql{}, held);  // the oldest, but in use
  holding.Bind(1, std::string_view("b"));
  for (size_t i = 0; i < Connection::kMaxBuilt * 2; ++i) {
    EXPECT_EQ(ValueOf(shape(i), "a"), 1 + static_cast<int64_t>(i));
    EXPECT_EQ(ValueOf(shape(0), "b"), 2);  // used every time: stays
  }
  EXPECT_EQ(conn_->built_count(), Connection::kMaxBuilt);
  EXPECT_TRUE(conn_->HasBuilt(shape(0)));
  EXPECT_TRUE(conn_->HasBuilt(held));
  EXPECT_FALSE(conn_->HasBuilt(shape(1)));  // the least recently used went
  EXPECT_TRUE(conn_->HasBuilt(shape(Connection::kMaxBuilt * 2 - 1)));
  ASSERT_EQ(holding.Step(), SQLITE_ROW);  // not closed under its holder
  EXPECT_EQ(holding.Int(0), 20);
}

TEST_F(SqliteDbTest, SqlThatDoesNotPrepareIsAnErrorAndNotCached) {
  Stmt s(*conn_, BuiltSql{}, "SELECT nope FROM t WHERE k = ?1");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.Error().find("no such column"), std::string::npos) << s.Error();
  EXPECT_EQ(conn_->built_count(), 0u);
}

}  // namespace
}  // namespace gantry::store::sqlite
