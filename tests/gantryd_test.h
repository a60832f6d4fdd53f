// The fixtures of the integration tests: a fresh gantryd (own data directory, own port) per
// test, and an Api client for it. Tests that need flags derive and override Args(); tests
// that need the process prepared otherwise before it starts (environment) override
// Configure(). TwoReplicaTest runs a second gantryd on the same PostgreSQL database.
//
// Thread-safety: for the test's thread, as gtest fixtures are.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "api_client.h"
#include "gantryd_process.h"
#include "store/postgres/pg_test_server.h"

namespace gantry::testing {

class GantrydTest : public ::testing::Test {
 protected:
  virtual std::vector<std::string> Args() { return {}; }
  // Called with the process before it starts (e.g. GantrydProcess::SetEnv).
  virtual void Configure(GantrydProcess& gantryd) {}

  void SetUp() override {
    if (std::string why = TestStoreUnavailable(); !why.empty()) {
      if (store::testing::PostgresRequired()) FAIL() << "PostgreSQL is required here: " << why;
      GTEST_SKIP() << "GANTRY_TEST_STORE=postgres but PostgreSQL is not available: " << why;
    }
    gantryd_ = std::make_unique<GantrydProcess>(Args());
    Configure(*gantryd_);
    absl::Status s = gantryd_->Start();
    ASSERT_TRUE(s.ok()) << s;
    api_ = std::make_unique<Api>(gantryd_->base_url());
  }

  void TearDown() override {
    // Whatever a test did, the server must still be up and answering (unless it stopped it).
    if (gantryd_ && gantryd_->running() && api_) {
      EXPECT_TRUE(api_->Healthy()) << gantryd_->Log();
    }
    api_.reset();
    gantryd_.reset();
  }

  // A new client after a restart (the port changes).
  void Reconnect() { api_ = std::make_unique<Api>(gantryd_->base_url()); }

  Api& api() { return *api_; }

  std::unique_ptr<GantrydProcess> gantryd_;
  std::unique_ptr<Api> api_;
};

// Two gantryd replicas on one fresh PostgreSQL database, over a GantrydTest fixture `Base`
// (GantrydTest, EngineTest, LocalTest, ...): gantryd_ and api() are the first replica,
// second_ and second_api() the second. Both run with `--store URL`, Base's own flags and
// ReplicaArgs(), then their own OneReplicaArgs(index); each has its own data directory, and
// the second a copy of the first one's secret.key (sealed variables must open on both). The
// second starts in SetUp unless StartSecondReplica() leaves that to the test
// (second_->Start()). Skipped where PostgreSQL cannot start, failed there when
// PostgresRequired() (CI).
template <typename Base>
class TwoReplicaTest : public Base {
 protected:
  // The flags of both replicas after --store and Base's.
  virtual std::vector<std::string> ReplicaArgs() { return {}; }
  // The flags of one replica (0: gantryd_, 1: second_) after ReplicaArgs(): --host-id.
  virtual std::vector<std::string> OneReplicaArgs(int index) { return {}; }
  // False: SetUp makes the second replica but does not start it (nor second_api()).
  virtual bool StartSecondReplica() { return true; }
  std::vector<std::string> Args() final {
    std::vector<std::string> args{"--store", url_};
    for (std::vector<std::string> part : {Base::Args(), ReplicaArgs(), OneReplicaArgs(building_)})
      for (std::string& a : part) args.push_back(std::move(a));
    return args;
  }

  void SetUp() override {
    auto server = store::testing::PgTestServer::Get();
    if (!server.ok()) {
      if (store::testing::PostgresRequired()) FAIL() << server.status();
      GTEST_SKIP() << "two replicas need PostgreSQL: " << server.status().message();
    }
    auto url = (*server)->CreateDatabase();
    ASSERT_TRUE(url.ok()) << url.status();
    url_ = *url;
    Base::SetUp();
    if (this->HasFatalFailure() || this->IsSkipped()) return;
    building_ = 1;
    second_ = std::make_unique<GantrydProcess>(Args());
    std::filesystem::copy_file(this->gantryd_->data_dir() + "/secret.key",
                               second_->data_dir() + "/secret.key",
                               std::filesystem::copy_options::overwrite_existing);
    if (!StartSecondReplica()) return;
    absl::Status s = second_->Start();
    ASSERT_TRUE(s.ok()) << s;
    second_api_ = std::make_unique<Api>(second_->base_url());
  }

  void TearDown() override {
    second_api_.reset();
    second_.reset();
    Base::TearDown();
  }

  Api& second_api() { return *second_api_; }

  std::unique_ptr<GantrydProcess> second_;

 private:
  std::string url_;
  int building_ = 0;  // the replica whose flags Args() gives
  std::unique_ptr<Api> second_api_;
};

}  // namespace gantry::testing
