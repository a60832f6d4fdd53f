// The fixture the engine's unit tests share (engine_test.cc, lifecycle_controller_test.cc,
// gpu_sampler_test.cc): a real SqliteStore in a temporary directory, a SecretBox, a driver
// registry with the FakeDriver "fake" (drivers/fake; a test may register others instead), run
// logs, a FakeClock, metrics, the GPU allocator of a --gpus inventory, and the real Engine
// once a test starts it. Objects are written straight into the store as the API would leave
// them (CreateVersioned: an object and its revision 1).
//
// Nothing sleeps to let time pass: WaitInstance polls the store for a condition, bounded by
// kDeadline, which only a failure reaches. Time moves only by clock_.Advance.
//
// Test-only (gtest). Thread-safety: for the test's thread; the engine's workers read the
// store and call the fake driver on their own.
#pragma once

#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/fake_clock.h"
#include "drivers/fake/fake_driver.h"
#include "engine/engine.h"
#include "engine/store_test_fixture.h"
#include "gtest/gtest.h"
#include "model/codec.h"
#include "store/sqlite/sqlite_store.h"

namespace gantry::engine {

// Bounds every wait of these tests; a passing test never comes near it.
inline constexpr auto kDeadline = std::chrono::seconds(20);

class EngineFixture : public StoreFixture {
 protected:
  // GPUs of this host, in --gpus form ("h100:2"); none when empty.
  virtual std::string GpuFlag() { return ""; }
  // What the FakeDriver "fake" declares (RegisterDrivers).
  virtual drivers::Capabilities Caps() { return {.stop_start = true}; }
  // Registers the drivers of the test: by default "fake" with Caps(), kept in fake_.
  virtual void RegisterDrivers() {
    auto fake = std::make_unique<drivers::fake::FakeDriver>("fake", Caps());
    fake_ = fake.get();
    registry_.Register(std::move(fake));
  }

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore());
    auto box = SecretBox::Open(dir_ + "/key");
    ASSERT_TRUE(box.ok()) << box.status();
    secrets_ = std::move(*box);
    RegisterDrivers();
    logs_ = std::make_unique<RunLogs>(dir_ + "/logs");
    Inventory inventory;
    if (!GpuFlag().empty()) {
      auto parsed = ParseGpuFlag(GpuFlag());
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      inventory = *parsed;
    }
    gpus_ = std::make_unique<GpuAllocator>(inventory);
  }

  void TearDown() override {
    if (engine_) engine_->Stop();
    engine_.reset();
    CloseStore();
  }

  // The engine on store_, or on `store` (a StoreWrapper around store_ that injects faults;
  // it must outlive engine_).
  void StartEngine(int workers = 2, store::Store* store = nullptr) {
    EngineOptions o;
    o.workers = workers;
    o.holder = "replica-1";
    o.host = "host-1";
    o.state_dir = dir_ + "/state";
    o.drain = std::chrono::seconds(5);
    engine_ = std::make_unique<Engine>(store ? *store : *store_, registry_, *secrets_, *logs_,
                                       clock_, metrics_, *gpus_, o);
    ASSERT_TRUE(engine_->Start().ok());
  }

  // One write, committed; the stored object (empty, and a failure, when refused).
  boost::json::object Commit(store::Write w) {
    std::vector<store::Write> writes;
    writes.push_back(std::move(w));
    auto stored = store_->Commit(std::move(writes));
    EXPECT_TRUE(stored.ok()) << stored.status();
    return stored.ok() && !stored->empty() ? stored->front() : boost::json::object{};
  }

  // A versioned object `name` of `kind` in namespace "p" (uid = name) and its revision 1.
  void CreateVersioned(const std::string& kind, const std::string& name, boost::json::object spec) {
    boost::json::object o{
        {"apiVersion", "paas.gantry.dev/v1"},
        {"kind", kind},
        {"metadata", boost::json::object{{"name", name}, {"namespace", "p"}, {"uid", name}}},
        {"spec", spec},
        {"status", boost::json::object{{"revision", 1}}}};
    Commit({store::Write::Op::kCreate, kind, o, 0, 0});
    Commit({store::Write::Op::kPutRevision, kind, o, 0, 1});
  }

  // The stored compute instance p/`name` (empty when there is none).
  boost::json::object Instance(const std::string& name) {
    auto i = store_->Get("ComputeInstance", "p", name);
    return i.ok() ? *i : boost::json::object{};
  }

  // Polls until `pred` holds for the instance; fails the test at the deadline.
  boost::json::object WaitInstance(const std::string& name,
                                   const std::function<bool(const boost::json::object&)>& pred,
                                   const std::string& what) {
    auto until = std::chrono::steady_clock::now() + kDeadline;
    boost::json::object last;
    while (std::chrono::steady_clock::now() < until) {
      last = Instance(name);
      if (pred(last)) return last;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ADD_FAILURE() << "instance " << name << " never got " << what << "; last "
                  << boost::json::serialize(last);
    return last;
  }
  boost::json::object WaitPhase(const std::string& name, const std::string& phase) {
    return WaitInstance(
        name,
        [&](const boost::json::object& i) { return model::GetString(i, "status.phase") == phase; },
        "phase " + phase);
  }

  std::unique_ptr<SecretBox> secrets_;
  drivers::DriverRegistry registry_;
  drivers::fake::FakeDriver* fake_ = nullptr;  // "fake", when RegisterDrivers registered it
  std::unique_ptr<RunLogs> logs_;
  FakeClock clock_;
  Metrics metrics_;
  std::unique_ptr<GpuAllocator> gpus_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace gantry::engine
