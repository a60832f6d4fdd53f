// A real SqliteStore in a fresh temporary directory, removed after the test: the base of the
// engine's unit-test fixtures (EngineFixture in engine_test_fixture.h, the budget and usage
// ledger tests). OpenStore in SetUp, CloseStore in TearDown.
//
// Test-only (gtest). Thread-safety: for the test's thread.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "store/sqlite/sqlite_store.h"

namespace gantry::engine {

class StoreFixture : public ::testing::Test {
 protected:
  // Makes dir_ and opens dir_/gantry.db with `synchronous`.
  void OpenStore(const std::string& synchronous = "NORMAL") {
    std::string tmpl = (std::filesystem::path(::testing::TempDir()) / "gantry-engine-XXXXXX");
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    ASSERT_NE(mkdtemp(buf.data()), nullptr);
    dir_ = buf.data();
    store::SqliteOptions options;
    options.path = dir_ + "/gantry.db";
    options.synchronous = synchronous;
    auto s = store::SqliteStore::Open(options);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }
  void CloseStore() {
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void SetUp() override { OpenStore(); }
  void TearDown() override { CloseStore(); }

  std::string dir_;
  std::unique_ptr<store::Store> store_;
};

}  // namespace gantry::engine
