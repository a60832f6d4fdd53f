// StoreWrapper against a real SqliteStore in a temporary directory: calls are forwarded and
// counted; the Nth matching call fails with the injected Status (before or after reaching
// the store); the BeforeCommit hook can inject a concurrent write or hold a commit.
#include "store/store_wrapper.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <thread>

#include "store/sqlite/sqlite_store.h"

// Tests name only the fields they set (`{.call = ..., .status = ...}`); the rest keep their
// defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace gantry::store {
namespace {

namespace json = boost::json;

json::object Object(const std::string& name, const std::string& ns = "ml") {
  return json::object{{"apiVersion", "paas.gantry.dev/v1"},
                      {"kind", "ComputeInstance"},
                      {"metadata", json::object{{"name", name}, {"namespace", ns}}},
                      {"spec", json::object{}}};
}

Write Create(const std::string& name, const std::string& kind = "ComputeInstance") {
  Write w;
  w.kind = kind;
  w.object = Object(name);
  w.object["kind"] = kind;
  return w;
}

class StoreWrapperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::path(::testing::TempDir()) / "gantry-wrap-XXXXXX");
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    SqliteOptions options;
    options.path = dir_ + "/gantry.db";
    options.synchronous = "NORMAL";
    auto s = SqliteStore::Open(options);
    ASSERT_TRUE(s.ok()) << s.status();
    sqlite_ = std::move(*s);
    store_.emplace(*sqlite_);
  }
  void TearDown() override {
    store_.reset();
    sqlite_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  absl::Status CommitOne(const std::string& name, const std::string& kind = "ComputeInstance") {
    return store_->Commit({Create(name, kind)}).status();
  }
  bool Exists(const std::string& name, const std::string& kind = "ComputeInstance") {
    return sqlite_->Get(kind, "ml", name).ok();
  }

  std::string dir_;
  std::unique_ptr<SqliteStore> sqlite_;
  std::optional<StoreWrapper> store_;
};

TEST_F(StoreWrapperTest, ForwardsEveryCallAndCountsThem) {
  ASSERT_TRUE(CommitOne("a").ok());
  auto got = store_->Get("ComputeInstance", "ml", "a");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->at("metadata").at("name"), "a");
  auto list = store_->List({.kind = "ComputeInstance"});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->items.size(), 1u);
  EXPECT_EQ(*store_->Count("ComputeInstance", "ml", {}), 1);
  EXPECT_EQ(store_->CurrentResourceVersion(), sqlite_->CurrentResourceVersion());
  auto events = store_->EventsSince(0, 10);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->size(), 1u);
  EXPECT_TRUE(store_->Ping().ok());
  EXPECT_TRUE(absl::IsNotFound(store_->GetRevision("ComputeProfile", "ml", "p", 1).status()));
  auto revisions = store_->ListRevisions("ComputeProfile", "ml", "p");
  EXPECT_TRUE(revisions.ok() ? revisions->empty() : absl::IsNotFound(revisions.status()));

  EXPECT_EQ(store_->Calls(StoreCall::kCommit), 1);
  EXPECT_EQ(store_->Calls(StoreCall::kGet), 1);
  EXPECT_EQ(store_->Calls(StoreCall::kList), 1);
  EXPECT_EQ(store_->Calls(StoreCall::kCount), 1);
  EXPECT_EQ(store_->Calls(StoreCall::kCurrentResourceVersion), 1);
  EXPECT_EQ(store_->Calls(StoreCall::kEventsSince), 1);
  EXPECT_EQ(store_->Calls(StoreCall::kPing), 1);
  EXPECT_EQ(store_->Calls(StoreCall::kGetRevision), 1);
  EXPECT_EQ(store_->Calls(StoreCall::kListRevisions), 1);
  EXPECT_EQ(store_->Calls(StoreCall::kSetCommitObserver), 0);
}

TEST_F(StoreWrapperTest, TheObserverIsTheInnerStoresAndSeesForwardedCommits) {
  std::atomic<int> events = 0;
  store_->SetCommitObserver([&](const std::vector<Event>& e) { events += e.size(); });
  EXPECT_EQ(store_->Calls(StoreCall::kSetCommitObserver), 1);
  ASSERT_TRUE(CommitOne("a").ok());
  ASSERT_TRUE(sqlite_->Commit({Create("b")}).ok());  // around the wrapper: still observed
  EXPECT_EQ(events.load(), 2);
}

TEST_F(StoreWrapperTest, TheNthCommitFailsWithTheInjectedStatusAndWritesNothing) {
  store_->Inject({.call = StoreCall::kCommit, .nth = 2, .status = absl::UnavailableError("disk")});
  EXPECT_TRUE(CommitOne("first").ok());
  absl::Status second = CommitOne("second");
  EXPECT_TRUE(absl::IsUnavailable(second)) << second;
  EXPECT_EQ(second.message(), "disk");
  EXPECT_FALSE(Exists("second"));
  EXPECT_TRUE(CommitOne("third").ok());  // a fault fires once
  EXPECT_EQ(store_->Calls(StoreCall::kCommit), 3);
  EXPECT_EQ(sqlite_->CurrentResourceVersion(), 2);
}

TEST_F(StoreWrapperTest, AFaultForAKindCountsOnlyCommitsThatWriteIt) {
  store_->Inject(
      {.call = StoreCall::kCommit, .nth = 2, .status = absl::AbortedError("lost"), .kind = "Run"});
  EXPECT_TRUE(CommitOne("i1").ok());
  EXPECT_TRUE(CommitOne("r1", "Run").ok());  // the first Run
  EXPECT_TRUE(CommitOne("i2").ok());
  EXPECT_TRUE(absl::IsAborted(CommitOne("r2", "Run")));
  EXPECT_FALSE(Exists("r2", "Run"));
  EXPECT_TRUE(CommitOne("r3", "Run").ok());
}

TEST_F(StoreWrapperTest, AnAfterInnerFaultAppliesTheCommitButAnswersTheError) {
  store_->Inject({.call = StoreCall::kCommit,
                  .status = absl::UnavailableError("connection lost"),
                  .after_inner = true});
  EXPECT_TRUE(absl::IsUnavailable(CommitOne("ghost")));
  EXPECT_TRUE(Exists("ghost"));  // the outcome the caller could not know
}

TEST_F(StoreWrapperTest, ReadsCanBeFaultedByKind) {
  ASSERT_TRUE(CommitOne("a").ok());
  store_->Inject({.call = StoreCall::kGet, .status = absl::UnavailableError("x"), .kind = "User"});
  EXPECT_TRUE(store_->Get("ComputeInstance", "ml", "a").ok());  // another kind
  EXPECT_TRUE(absl::IsUnavailable(store_->Get("User", "", "bob").status()));
  EXPECT_TRUE(absl::IsNotFound(store_->Get("User", "", "bob").status()));  // used up
  store_->Inject({.call = StoreCall::kPing, .status = absl::UnavailableError("down")});
  EXPECT_TRUE(absl::IsUnavailable(store_->Ping()));
  EXPECT_TRUE(store_->Ping().ok());
}

TEST_F(StoreWrapperTest, SeveralFaultsOnOneCallAreAllUsedUpAndTheFirstAnswers) {
  store_->Inject({.call = StoreCall::kCommit, .status = absl::UnavailableError("first")});
  store_->Inject({.call = StoreCall::kCommit, .status = absl::InternalError("second")});
  absl::Status s = CommitOne("a");
  EXPECT_EQ(s.message(), "first");
  EXPECT_TRUE(CommitOne("b").ok());
  store_->Inject({.call = StoreCall::kCommit, .nth = 1, .status = absl::InternalError("x")});
  store_->ClearFaults();
  EXPECT_TRUE(CommitOne("c").ok());
}

TEST_F(StoreWrapperTest, BeforeCommitCanInjectAConcurrentWriteThatWinsTheRace) {
  ASSERT_TRUE(CommitOne("shared").ok());
  auto stored = sqlite_->Get("ComputeInstance", "ml", "shared");
  ASSERT_TRUE(stored.ok());
  int64_t rv = std::stoll(std::string(stored->at("metadata").at("resourceVersion").as_string()));
  bool injected = false;
  store_->SetBeforeCommit([&](const std::vector<Write>& writes) {
    if (injected || writes[0].op != Write::Op::kUpdate) return;
    injected = true;
    Write other = Create("shared");
    other.op = Write::Op::kUpdate;
    ASSERT_TRUE(store_->inner().Commit({other}).ok());  // another replica got there first
  });
  Write mine = Create("shared");
  mine.op = Write::Op::kUpdate;
  mine.expected_resource_version = rv;
  auto out = store_->Commit({mine});
  EXPECT_TRUE(injected);
  EXPECT_TRUE(absl::IsAborted(out.status())) << out.status();
  EXPECT_EQ(store_->Calls(StoreCall::kCommit), 2);  // the injected one went around
}

TEST_F(StoreWrapperTest, BeforeCommitCanHoldACommitUntilTheTestReleasesIt) {
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  store_->SetBeforeCommit([&](const std::vector<Write>&) {
    entered.set_value();
    released.wait();
  });
  auto pending = std::async(std::launch::async, [&] { return CommitOne("held"); });
  entered.get_future().wait();
  EXPECT_FALSE(Exists("held"));  // held before the store
  EXPECT_TRUE(store_->Get("ComputeInstance", "ml", "held").status().code() ==
              absl::StatusCode::kNotFound);  // other calls are not blocked
  store_->SetBeforeCommit({});
  release.set_value();
  EXPECT_TRUE(pending.get().ok());
  EXPECT_TRUE(Exists("held"));
  EXPECT_TRUE(CommitOne("next").ok());  // the hook is gone
}

}  // namespace
}  // namespace gantry::store
