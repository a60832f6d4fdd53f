// OutboxStore on a real SqliteStore: an instance's phase change through the decorator is
// told once per subscribed Webhook with the phase it had before, and two guarded changes from
// the same resourceVersion at once (the decorator no longer serialises their commits) are one
// success, one 409 and exactly one delivery naming the stored phase as before. A phase change
// in a project where no hook listens is neither read before nor told.
#include "webhooks/outbox_store.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "engine/store_test_fixture.h"
#include "gtest/gtest.h"
#include "model/codec.h"
#include "store/store_wrapper.h"
#include "webhooks/webhook_spec.h"

namespace gantry::webhooks {
namespace {

namespace json = boost::json;
using store::Write;

// The store of engine::StoreFixture (a real SQLite in a temporary directory), behind a
// StoreWrapper (to fail reads) and the outbox.
class OutboxStoreTest : public engine::StoreFixture {
 protected:
  void SetUp() override {
    OpenStore();
    if (HasFatalFailure()) return;
    auto wrapper = std::make_unique<store::StoreWrapper>(*store_);
    wrapper_ = wrapper.get();
    outbox_ = std::make_unique<OutboxStore>(std::move(wrapper), clock_);
    json::object hook{{"kind", kWebhookKind},
                      {"metadata", {{"name", "chat"}, {"namespace", "ml"}}},
                      {"spec", {{"url", "http://127.0.0.1:9/"}, {"events", {"PhaseChanged"}}}}};
    ASSERT_TRUE(outbox_->Commit({{Write::Op::kCreate, kWebhookKind, hook, 0, 0}}).ok());
    auto created =
        outbox_->Commit({{Write::Op::kCreate, "ComputeInstance", Instance("NotDeployed"), 0, 0}});
    ASSERT_TRUE(created.ok()) << created.status();
    rv_ = std::stoll(model::GetString((*created)[0], "metadata.resourceVersion"));
  }
  void TearDown() override {
    outbox_.reset();
    CloseStore();
  }

  static json::object Instance(const std::string& phase, const std::string& ns = "ml") {
    return {{"kind", "ComputeInstance"},
            {"metadata", {{"name", "web"}, {"namespace", ns}, {"uid", ns + "-web-uid"}}},
            {"spec", {{"profileRef", {{"name", "p"}}}}},
            {"status", {{"phase", phase}}}};
  }

  std::vector<json::object> Deliveries(const std::string& ns = "ml") {
    store::ListOptions q;
    q.kind = kDeliveryKind;
    q.ns = ns;
    auto l = outbox_->List(q);
    EXPECT_TRUE(l.ok()) << l.status();
    return l.ok() ? l->items : std::vector<json::object>{};
  }

  SystemClock clock_;
  store::StoreWrapper* wrapper_ = nullptr;  // owned by outbox_
  std::unique_ptr<OutboxStore> outbox_;
  int64_t rv_ = 0;
};

TEST_F(OutboxStoreTest, APhaseChangeIsToldWithThePhaseBefore) {
  ASSERT_TRUE(
      outbox_->Commit({{Write::Op::kUpdate, "ComputeInstance", Instance("Waiting"), rv_, 0}}).ok());
  auto ds = Deliveries();
  ASSERT_EQ(ds.size(), 1u);
  const std::string body = model::GetString(ds[0], "spec.body");
  EXPECT_NE(body.find("\"phase\":\"Waiting\""), std::string::npos) << body;
  EXPECT_NE(body.find("\"previousPhase\":\"NotDeployed\""), std::string::npos) << body;
}

TEST_F(OutboxStoreTest, APhaseChangeNoHookListensToIsNeitherReadBeforeNorTold) {
  auto created = outbox_->Commit(
      {{Write::Op::kCreate, "ComputeInstance", Instance("NotDeployed", "quiet"), 0, 0}});
  ASSERT_TRUE(created.ok()) << created.status();
  const int64_t rv = std::stoll(model::GetString((*created)[0], "metadata.resourceVersion"));
  // A read of the stored instance fails: a commit that reads its "before" fails with it.
  const absl::Status broken = absl::UnavailableError("read failed");
  wrapper_->Inject({store::StoreCall::kGet, 1, broken, "ComputeInstance"});
  EXPECT_TRUE(
      outbox_
          ->Commit({{Write::Op::kUpdate, "ComputeInstance", Instance("Waiting", "quiet"), rv, 0}})
          .ok());
  EXPECT_TRUE(Deliveries("quiet").empty());
  // Where a hook listens, the same change reads its "before" (the injected failure fires).
  EXPECT_EQ(outbox_->Commit({{Write::Op::kUpdate, "ComputeInstance", Instance("Waiting"), rv_, 0}})
                .status(),
            broken);
  wrapper_->ClearFaults();
  EXPECT_TRUE(Deliveries().empty());
}

TEST_F(OutboxStoreTest, ConcurrentGuardedChangesFromOneVersionTellOnlyTheOneThatLands) {
  for (int round = 0; round < 20; ++round) {
    auto stored = outbox_->Get("ComputeInstance", "ml", "web");
    ASSERT_TRUE(stored.ok());
    const int64_t rv = std::stoll(model::GetString(*stored, "metadata.resourceVersion"));
    const std::string before = model::GetString(*stored, "status.phase");
    const size_t told_before = Deliveries().size();
    std::vector<absl::Status> results(2);
    std::vector<std::thread> writers;
    for (int k = 0; k < 2; ++k)
      writers.emplace_back([&, k] {
        const std::string phase = "Phase" + std::to_string(round) + "x" + std::to_string(k);
        results[k] =
            outbox_->Commit({{Write::Op::kUpdate, "ComputeInstance", Instance(phase), rv, 0}})
                .status();
      });
    for (auto& t : writers) t.join();
    ASSERT_NE(results[0].ok(), results[1].ok()) << results[0] << " / " << results[1];
    for (const auto& r : results) {
      if (!r.ok()) {
        EXPECT_TRUE(absl::IsAborted(r)) << r;
      }
    }
    auto ds = Deliveries();
    ASSERT_EQ(ds.size(), told_before + 1) << "round " << round;
    auto after = outbox_->Get("ComputeInstance", "ml", "web");
    ASSERT_TRUE(after.ok());
    const std::string now = model::GetString(*after, "status.phase");
    int matching = 0;
    for (const auto& d : ds) {
      const std::string body = model::GetString(d, "spec.body");
      matching += body.find("\"phase\":\"" + now + "\"") != std::string::npos &&
                  body.find("\"previousPhase\":\"" + before + "\"") != std::string::npos;
    }
    EXPECT_EQ(matching, 1) << "round " << round << ": " << before << " -> " << now;
  }
}

}  // namespace
}  // namespace gantry::webhooks
