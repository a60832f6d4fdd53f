// The meta.k8s.io Table form (what `kubectl get` prints) of service profiles and service
// instances: the same columns as `gantry get`, the wide-only ones with priority 1.
#include "api/table.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace gantry::api {
namespace {

namespace json = boost::json;

// 2027-01-15T08:00:00Z
const std::chrono::system_clock::time_point kNow =
    std::chrono::system_clock::from_time_t(1'800'000'000);

struct Shown {
  std::vector<std::string> columns;  // "Name" or "Name*" for a wide-only (priority 1) column
  std::vector<std::vector<std::string>> rows;
};

Shown Show(std::string_view kind, const std::string& body) {
  const model::KindInfo* info = model::FindKindByName(kind);
  EXPECT_NE(info, nullptr) << kind;
  json::object t = ToTable(*info, json::parse(body).as_object(), IncludeObject::kNone, "v1", kNow);
  EXPECT_EQ(t["kind"], "Table");
  Shown s;
  for (const auto& c : t["columnDefinitions"].as_array()) {
    std::string n(c.at("name").as_string());
    s.columns.push_back(c.at("priority").as_int64() == 1 ? n + "*" : n);
  }
  for (const auto& r : t["rows"].as_array()) {
    std::vector<std::string> cells;
    for (const auto& c : r.at("cells").as_array()) cells.emplace_back(c.as_string());
    s.rows.push_back(std::move(cells));
  }
  return s;
}

TEST(ServerTable, ServiceProfiles) {
  Shown s = Show("ServiceProfile", R"({"items":[
    {"metadata":{"name":"jupyter","namespace":"ml","creationTimestamp":"2027-01-15T05:00:00Z"},
     "spec":{"displayName":"Jupyter","serviceType":"notebook","templateRef":{"name":"nb",
       "namespace":"platform"},"computeSelector":{"matchLabels":{"tier":"gpu"},
       "matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]},
       {"key":"spot","operator":"DoesNotExist"}]},
       "autoCreateCompute":{"profileRef":{"name":"small"}},"sharing":{"mode":"All"}},
     "status":{"revision":2}},
    {"metadata":{"name":"ray","namespace":"ml","creationTimestamp":"2027-01-15T07:59:00Z"},
     "spec":{"serviceType":"ray","templateRef":{"name":"ray"}},"status":{"revision":1}}]})");
  EXPECT_EQ(s.columns,
            (std::vector<std::string>{"Name", "Display Name", "Type", "Template", "Revision", "Age",
                                      "Compute Selector*", "Auto-create Compute*", "Sharing*",
                                      "Description*"}));
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0],
            (std::vector<std::string>{"jupyter", "Jupyter", "notebook", "platform/nb", "2", "3h",
                                      "tier=gpu,zone in (a,b),!spot", "small", "All", ""}));
  EXPECT_EQ(s.rows[1], (std::vector<std::string>{"ray", "", "ray", "ray", "1", "60s", "<any>", "",
                                                 "None", ""}));
}

TEST(ServerTable, ProjectsShowTheMonthsSpendAgainstTheBudget) {
  Shown s = Show("Project", R"({"items":[
    {"metadata":{"name":"vision","creationTimestamp":"2027-01-15T07:00:00Z"},
     "spec":{"displayName":"Vision","budget":{"monthly":1000,"action":"Block"}},
     "status":{"phase":"Active","spend":{"month":"2027-01","cost":412.5,"currency":"EUR",
       "monthly":1000,"percent":41}}},
    {"metadata":{"name":"calm","creationTimestamp":"2027-01-15T07:59:00Z"},
     "spec":{"budget":{"monthly":20}},
     "status":{"phase":"Active","spend":{"month":"2027-01","cost":25,"currency":"",
       "monthly":20,"percent":125}}},
    {"metadata":{"name":"free","creationTimestamp":"2027-01-15T07:59:00Z"},
     "status":{"phase":"Active"}}]})");
  EXPECT_EQ(s.columns, (std::vector<std::string>{"Name", "Display Name", "Status", "Budget", "Age",
                                                 "Description*"}));
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(s.rows[0], (std::vector<std::string>{"vision", "Vision", "Active",
                                                 "412.50/1000 EUR (41%)", "60m", ""}));
  EXPECT_EQ(s.rows[1][3], "25/20 (125%)");  // no rate card currency; over the budget
  EXPECT_EQ(s.rows[2][3], "");              // no budget
}

TEST(ServerTable, ServiceInstances) {
  Shown s = Show("ServiceInstance", R"({
    "metadata":{"name":"nb","namespace":"ml","creationTimestamp":"2027-01-15T07:55:00Z"},
    "spec":{"displayName":"Notebook","profileRef":{"name":"jupyter"},
      "computeRef":{"name":"gpu-1","namespace":"platform"}},
    "status":{"phase":"Waiting","reason":"ComputeNotReady","profileRevision":2,
      "outputs":{"endpoint":"http://h:1","token":"t"}}})");
  EXPECT_EQ(s.columns, (std::vector<std::string>{"Name", "Display Name", "Profile", "Compute",
                                                 "Status", "Expires", "GPU%", "Age", "Revision*",
                                                 "Reason*", "Outputs*", "Sharing*"}));
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0],
            (std::vector<std::string>{"nb", "Notebook", "jupyter", "platform/gpu-1", "Waiting",
                                      "<none>", "<none>", "5m", "2", "ComputeNotReady",
                                      "endpoint=http://h:1,token=t", "None"}));
  Shown bare = Show("ServiceInstance", R"({"metadata":{"name":"x","namespace":"ml"},
    "spec":{"profileRef":{"name":"p"}}})");
  EXPECT_EQ(bare.rows[0][3], "");
  EXPECT_EQ(bare.rows[0][4], "Not Deployed");
}

// Expires counts down to status.expiresAt the way kubectl prints ages (HumanDuration: 133m,
// 4h13m); GPU% is the last
// sample; a stopped instance shows its phase as the others do.
TEST(ServerTable, ComputeInstanceLifecycleColumns) {
  Shown s = Show("ComputeInstance", R"({"items":[
    {"metadata":{"name":"nb","namespace":"ml","creationTimestamp":"2027-01-15T06:00:00Z"},
     "spec":{"displayName":"Notebook","profileRef":{"name":"a100"}},
     "status":{"phase":"Success","expiresAt":"2027-01-15T12:13:00Z","gpuUtilization":37}},
    {"metadata":{"name":"short","namespace":"ml","creationTimestamp":"2027-01-15T07:59:00Z"},
     "spec":{"profileRef":{"name":"a100"}},
     "status":{"phase":"Success","expiresAt":"2027-01-15T08:00:45Z","gpuUtilization":0}},
    {"metadata":{"name":"old","namespace":"ml","creationTimestamp":"2027-01-14T08:00:00Z"},
     "spec":{"profileRef":{"name":"a100"}},
     "status":{"phase":"Stopped","reason":"TTLExpired","expiresAt":"2027-01-15T07:00:00Z"}},
    {"metadata":{"name":"bare","namespace":"ml","creationTimestamp":"2027-01-15T07:00:00Z"},
     "spec":{"profileRef":{"name":"a100"}}}]})");
  EXPECT_EQ(s.columns,
            (std::vector<std::string>{"Name", "Display Name", "Profile", "Expires", "GPU%", "Age",
                                      "Status", "Sharing", "Revision*", "Reason*", "Last Run*",
                                      "Admission*", "Position*"}));
  ASSERT_EQ(s.rows.size(), 4u);
  EXPECT_EQ(s.rows[0], (std::vector<std::string>{"nb", "Notebook", "a100", "4h13m", "37%", "120m",
                                                 "Success", "None", "", "", "", "", ""}));
  EXPECT_EQ(s.rows[1][3], "45s");
  EXPECT_EQ(s.rows[1][4], "0%");
  EXPECT_EQ(s.rows[2][3], "expired");
  EXPECT_EQ(s.rows[2][6], "Stopped");
  EXPECT_EQ(s.rows[2][9], "TTLExpired");
  EXPECT_EQ(s.rows[3][3], "<none>");
  EXPECT_EQ(s.rows[3][4], "<none>");
}

// Fair share: -o wide shows Guaranteed/Borrowed and a Waiting instance's place in the queue.
TEST(ServerTable, ComputeInstanceAdmissionAndPosition) {
  Shown s = Show("ComputeInstance", R"({"items":[
    {"metadata":{"name":"run","namespace":"ml"},"spec":{"profileRef":{"name":"a100"}},
     "status":{"phase":"Success","admission":"Borrowed"}},
    {"metadata":{"name":"wait","namespace":"ml"},"spec":{"profileRef":{"name":"a100"}},
     "status":{"phase":"Waiting","reason":"InsufficientCapacity","queuePosition":3}}]})");
  ASSERT_EQ(s.rows.size(), 2u);
  ASSERT_EQ(s.columns.size(), 13u);
  EXPECT_EQ(s.columns[11], "Admission*");
  EXPECT_EQ(s.columns[12], "Position*");
  EXPECT_EQ(s.rows[0][11], "Borrowed");
  EXPECT_EQ(s.rows[0][12], "");
  EXPECT_EQ(s.rows[1][11], "");
  EXPECT_EQ(s.rows[1][12], "3");
}

// A watch's initial events read in pages (LineStream::SetRefill): the transport asks the
// Table stream for more, the page goes into the events stream and comes out as Tables.
TEST(TableWatchTest, PagesOfInitialEventsAreRelayedOnRefill) {
  const model::KindInfo* kind = model::FindKindByName("ComputeInstance");
  ASSERT_NE(kind, nullptr);
  auto events = std::make_shared<LineStream>();
  int pages = 0;
  events->SetRefill([&events, &pages] {
    ++pages;
    events->Push(R"({"type":"ADDED","object":{"metadata":{"name":"i)" + std::to_string(pages) +
                 R"(","namespace":"p"},"spec":{"profileRef":{"name":"x"}}}})");
    return pages < 2;
  });
  auto tables = TableWatch(events, *kind, IncludeObject::kNone, "v1", [] { return kNow; });
  std::vector<std::string> names;
  bool closed = false;
  while (tables->Refill())
    for (const std::string& line : tables->Drain(&closed)) {
      json::value event = json::parse(line);
      EXPECT_EQ(event.at("object").at("kind"), "Table");
      names.emplace_back(event.at("object").at("rows").at(0).at("cells").at(0).as_string());
    }
  EXPECT_EQ(pages, 2);
  EXPECT_EQ(names, (std::vector<std::string>{"i1", "i2"}));
  EXPECT_FALSE(closed);
  EXPECT_FALSE(tables->Refill());  // the pages are done: nothing more to ask for
}

}  // namespace
}  // namespace gantry::api
