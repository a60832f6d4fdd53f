// DriverWrapper around a small driver written here (it records what it was asked and
// answers from its fields): every call is forwarded and counted, the Nth Apply or Destroy
// fails with the injected Status, and a gate holds Apply until released or canceled.
#include "drivers/driver_wrapper.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <string>

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"  // {.call = ..., .status = ...}

namespace gantry::drivers {
namespace {

namespace json = boost::json;

// Applies by answering {"endpoint": "<run name>"}; remembers the last calls.
class EchoDriver final : public Driver {
 public:
  std::string_view Name() const override { return "echo"; }
  Capabilities Caps() const override { return {.host_bound = true, .long_running = true}; }
  void ValidateConfig(const json::object& config, std::vector<FieldCause>* causes) const override {
    if (!config.contains("command")) causes->push_back({"command", "Required value"});
  }
  json::object ConfigSchema() const override { return {{"type", "object"}}; }
  absl::StatusOr<json::object> Apply(const DeployRequest& request, RunContext& context) override {
    ++applied;
    context.Log("applying " + request.run_name);
    return json::object{{"endpoint", request.run_name}};
  }
  absl::Status Destroy(const DeployRequest& request, RunContext& context) override {
    ++destroyed;
    return absl::OkStatus();
  }
  bool Recover(const json::object& state) override { return state.contains("pid"); }
  void SetObserver(WorkloadObserver* o) override { observer = o; }
  bool Adopt(const DeployRequest& request, const json::object& state) override { return false; }
  void Shutdown() override { shut_down = true; }

  std::atomic<int> applied = 0, destroyed = 0;
  WorkloadObserver* observer = nullptr;
  bool shut_down = false;
};

// Shared by the concurrent Applies of a test, as a run's context is by its driver's threads.
class Context final : public RunContext {
 public:
  void Log(std::string_view line) override {
    std::lock_guard lock(mu_);
    lines_.emplace_back(line);
  }
  bool Canceled() const override { return canceled; }
  void SaveDriverState(const json::object& state) override {}
  std::vector<std::string> lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }
  std::atomic<bool> canceled = false;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

class NoObserver final : public WorkloadObserver {
 public:
  void OnWorkloadEvent(const WorkloadEvent&) override {}
};

class DriverWrapperTest : public ::testing::Test {
 protected:
  DriverWrapperTest() {
    auto inner = std::make_unique<EchoDriver>();
    echo_ = inner.get();
    driver_ = std::make_unique<DriverWrapper>(std::move(inner));
    request_.run_name = "gpu-1-1";
  }
  EchoDriver* echo_;
  std::unique_ptr<DriverWrapper> driver_;
  DeployRequest request_;
  Context context_;
};

TEST_F(DriverWrapperTest, ForwardsEveryCallAndCountsThem) {
  EXPECT_EQ(driver_->Name(), "echo");
  EXPECT_TRUE(driver_->Caps().host_bound);
  EXPECT_TRUE(driver_->Caps().long_running);
  EXPECT_FALSE(driver_->Caps().stop_start);
  std::vector<FieldCause> causes;
  driver_->ValidateConfig({}, &causes);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].field, "command");
  EXPECT_EQ(driver_->ConfigSchema().at("type"), "object");
  auto out = driver_->Apply(request_, context_);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->at("endpoint"), "gpu-1-1");
  EXPECT_EQ(context_.lines(), std::vector<std::string>{"applying gpu-1-1"});  // same context
  EXPECT_TRUE(driver_->Destroy(request_, context_).ok());
  EXPECT_TRUE(driver_->Recover(json::object{{"pid", 1}}));
  EXPECT_FALSE(driver_->Recover({}));
  EXPECT_FALSE(driver_->Adopt(request_, {}));
  NoObserver observer;
  driver_->SetObserver(&observer);
  EXPECT_EQ(echo_->observer, &observer);
  driver_->Shutdown();
  EXPECT_TRUE(echo_->shut_down);

  EXPECT_EQ(driver_->Calls(DriverCall::kCaps), 3);
  EXPECT_EQ(driver_->Calls(DriverCall::kValidateConfig), 1);
  EXPECT_EQ(driver_->Calls(DriverCall::kConfigSchema), 1);
  EXPECT_EQ(driver_->Calls(DriverCall::kApply), 1);
  EXPECT_EQ(driver_->Calls(DriverCall::kDestroy), 1);
  EXPECT_EQ(driver_->Calls(DriverCall::kRecover), 2);
  EXPECT_EQ(driver_->Calls(DriverCall::kAdopt), 1);
  EXPECT_EQ(driver_->Calls(DriverCall::kSetObserver), 1);
  EXPECT_EQ(driver_->Calls(DriverCall::kShutdown), 1);
}

TEST_F(DriverWrapperTest, TheNthApplyFailsWithoutReachingTheDriver) {
  driver_->Inject({.call = DriverCall::kApply, .nth = 2, .status = absl::UnavailableError("gone")});
  EXPECT_TRUE(driver_->Apply(request_, context_).ok());
  auto second = driver_->Apply(request_, context_);
  EXPECT_TRUE(absl::IsUnavailable(second.status())) << second.status();
  EXPECT_EQ(second.status().message(), "gone");
  EXPECT_TRUE(driver_->Apply(request_, context_).ok());  // a fault fires once
  EXPECT_EQ(echo_->applied.load(), 2);
  EXPECT_EQ(driver_->Calls(DriverCall::kApply), 3);
}

TEST_F(DriverWrapperTest, DestroyFaultsAreCountedApartFromApply) {
  driver_->Inject({.call = DriverCall::kDestroy, .status = absl::DeadlineExceededError("slow")});
  EXPECT_TRUE(driver_->Apply(request_, context_).ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(driver_->Destroy(request_, context_)));
  EXPECT_TRUE(driver_->Destroy(request_, context_).ok());
  EXPECT_EQ(echo_->destroyed.load(), 1);
}

TEST_F(DriverWrapperTest, ABlockedApplyWaitsUntilReleased) {
  driver_->Block(DriverCall::kApply);
  auto pending = std::async(std::launch::async, [&] { return driver_->Apply(request_, context_); });
  ASSERT_TRUE(driver_->WaitForBlocked(DriverCall::kApply, 1));
  EXPECT_EQ(echo_->applied.load(), 0);
  EXPECT_TRUE(driver_->Destroy(request_, context_).ok());  // another gate: not held
  driver_->Release(DriverCall::kApply);
  auto out = pending.get();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(echo_->applied.load(), 1);
  EXPECT_EQ(driver_->Blocked(DriverCall::kApply), 0u);
  EXPECT_TRUE(driver_->Apply(request_, context_).ok());  // the gate stays open
}

TEST_F(DriverWrapperTest, ABlockedApplyEndsCanceledWhenItsRunIsCanceled) {
  driver_->Block(DriverCall::kApply);
  auto pending = std::async(std::launch::async, [&] { return driver_->Apply(request_, context_); });
  ASSERT_TRUE(driver_->WaitForBlocked(DriverCall::kApply, 1));
  context_.canceled = true;
  auto out = pending.get();
  EXPECT_TRUE(absl::IsCancelled(out.status())) << out.status();
  EXPECT_EQ(echo_->applied.load(), 0);
  EXPECT_EQ(driver_->Blocked(DriverCall::kApply), 0u);
}

TEST_F(DriverWrapperTest, ManyBlockedAppliesAreReleasedTogether) {
  driver_->Block(DriverCall::kApply);
  std::vector<std::future<absl::StatusOr<json::object>>> pending;
  for (int i = 0; i < 3; ++i)
    pending.push_back(
        std::async(std::launch::async, [&] { return driver_->Apply(request_, context_); }));
  ASSERT_TRUE(driver_->WaitForBlocked(DriverCall::kApply, 3));
  driver_->Inject({.call = DriverCall::kApply, .status = absl::InternalError("one fails")});
  driver_->Release(DriverCall::kApply);
  int failed = 0;
  for (auto& p : pending) failed += p.get().ok() ? 0 : 1;
  EXPECT_EQ(failed, 1);  // faults are checked after the gate
  EXPECT_EQ(echo_->applied.load(), 2);
}

TEST_F(DriverWrapperTest, WaitForBlockedTimesOutWhenNothingIsHeld) {
  EXPECT_FALSE(driver_->WaitForBlocked(DriverCall::kApply, 1, std::chrono::milliseconds(10)));
}

}  // namespace
}  // namespace gantry::drivers
