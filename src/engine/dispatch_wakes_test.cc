// DispatchWakes: the commits that wake the dispatcher (runs queued or ended, services,
// projects, rate cards, a compute instance reaching Success) and those that do not (a run
// starting, a write to an instance already in Success, anything else).
#include "engine/dispatch_wakes.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace gantry::engine {
namespace {

namespace json = boost::json;

store::Event EventOf(const std::string& kind, const std::string& name, const std::string& phase,
                     const std::string& type = "MODIFIED") {
  store::Event e;
  e.type = type;
  e.kind = kind;
  e.ns = "ml";
  e.name = name;
  e.object = {{"kind", kind},
              {"metadata", {{"name", name}, {"namespace", "ml"}}},
              {"status", {{"phase", phase}}}};
  return e;
}

TEST(DispatchWakesTest, RunsQueuedOrEndedWakeAndARunStartingDoesNot) {
  DispatchWakes w;
  EXPECT_TRUE(w.Wakes({EventOf("Run", "r1", "Queued", "ADDED")}));
  EXPECT_FALSE(w.Wakes({EventOf("Run", "r1", "Running")}));
  EXPECT_TRUE(w.Wakes({EventOf("Run", "r1", "Succeeded")}));
  EXPECT_TRUE(w.Wakes({EventOf("Run", "r1", "Failed")}));
  EXPECT_FALSE(w.Wakes({EventOf("Run", "r1", "Succeeded", "DELETED")}));
}

TEST(DispatchWakesTest, ServicesProjectsAndRateCardsWakeOtherKindsDoNot) {
  DispatchWakes w;
  EXPECT_TRUE(w.Wakes({EventOf("ServiceInstance", "s", "Success")}));
  EXPECT_TRUE(w.Wakes({EventOf("Project", "ml", "")}));
  EXPECT_TRUE(w.Wakes({EventOf("RateCard", "default", "")}));
  EXPECT_FALSE(w.Wakes({EventOf("ComputeProfile", "p", "")}));
  EXPECT_FALSE(w.Wakes({EventOf("Event", "e", "")}));
  EXPECT_FALSE(w.Wakes({}));
}

TEST(DispatchWakesTest, AComputeInstanceWakesWhenItReachesSuccessNotWhileItStaysThere) {
  DispatchWakes w;
  EXPECT_FALSE(w.Wakes({EventOf("ComputeInstance", "a", "InProgress")}));
  EXPECT_TRUE(w.Wakes({EventOf("ComputeInstance", "a", "Success")}));
  EXPECT_FALSE(w.Wakes({EventOf("ComputeInstance", "a", "Success")}));  // a label patch
  EXPECT_TRUE(w.Wakes({EventOf("ComputeInstance", "b", "Success")}));   // another instance
  EXPECT_FALSE(w.Wakes({EventOf("ComputeInstance", "a", "Stopped")}));
  EXPECT_TRUE(w.Wakes({EventOf("ComputeInstance", "a", "Success")}));  // started again
  EXPECT_FALSE(w.Wakes({EventOf("ComputeInstance", "a", "Success", "DELETED")}));
  EXPECT_TRUE(w.Wakes({EventOf("ComputeInstance", "a", "Success", "ADDED")}));  // a new one
}

TEST(DispatchWakesTest, ACommitWakesWhenAnyOfItsEventsDoesAndNotesEveryInstance) {
  DispatchWakes w;
  EXPECT_TRUE(w.Wakes({EventOf("Run", "r1", "Running"), EventOf("ComputeInstance", "a", "Success"),
                       EventOf("ComputeInstance", "b", "Success")}));
  // Both were noted in that commit, though the first already made it wake.
  EXPECT_FALSE(w.Wakes({EventOf("ComputeInstance", "b", "Success")}));
  EXPECT_FALSE(w.Wakes({EventOf("ComputeInstance", "a", "Success")}));
}

}  // namespace
}  // namespace gantry::engine
