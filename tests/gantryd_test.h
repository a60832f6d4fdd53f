// The fixture of the integration tests: a fresh gantryd (own data directory, own port) per
// test, and an Api client for it. Tests that need flags derive and override Args().
#pragma once

#include <gtest/gtest.h>

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

  void SetUp() override {
    if (std::string why = TestStoreUnavailable(); !why.empty()) {
      if (store::testing::PostgresRequired()) FAIL() << "PostgreSQL is required here: " << why;
      GTEST_SKIP() << "GANTRY_TEST_STORE=postgres but PostgreSQL is not available: " << why;
    }
    gantryd_ = std::make_unique<GantrydProcess>(Args());
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

}  // namespace gantry::testing
