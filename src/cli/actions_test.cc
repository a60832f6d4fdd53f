// deploy / destroy / cancel / upgrade / logs and `get runs`, driven through RunCli against an
// in-memory fake of gantryd whose watch and log streams are scripted, with a fake clock.
#include "cli/actions.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <deque>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/cli.h"
#include "client/absl_compat.h"

namespace gantry::cli {
namespace {

namespace json = boost::json;

constexpr char kCi[] = "/apis/paas.gantry.dev/v1/namespaces/default/computeinstances";
constexpr char kRuns[] = "/apis/paas.gantry.dev/v1/namespaces/default/runs";

// One scripted answer to Stream: these lines, then `end` (OK: the server ended the body).
// `server_timeout`: the server kept the stream open for the whole timeoutSeconds the request
// asked for (the fake clock advances by it) and then ended it.
struct StreamScript {
  StreamScript(std::vector<std::string> lines = {}, absl::Status end = absl::OkStatus())
      : lines(std::move(lines)), end(std::move(end)) {}
  std::vector<std::string> lines;
  absl::Status end;
  bool server_timeout = false;
};

class FakeApi : public client::HttpTransport {
 public:
  void On(const std::string& method, const std::string& target, int status, std::string body,
          std::string content_type = "application/json") {
    script_[method + " " + target].push_back({status, content_type, std::move(body), {}});
  }
  // Forgets every scripted answer (the last one of each queue otherwise repeats forever).
  void Reset() {
    script_.clear();
    streams_.clear();
  }
  void OnStream(const std::string& target, StreamScript s) {
    streams_[target].push_back(std::move(s));
  }
  absl::StatusOr<client::HttpResponse> Send(std::string_view method, std::string_view target,
                                            std::string_view body, std::string_view) override {
    const std::string key = std::string(method) + " " + std::string(target);
    requests.push_back(key);
    bodies.push_back(std::string(body));
    if (unreachable) {
      return absl::UnavailableError("cannot reach gantryd at http://fake:1: connection refused");
    }
    auto it = script_.find(key);
    if (it == script_.end() || it->second.empty()) {
      return client::HttpResponse{
          404,
          "application/json",
          R"({"kind":"Status","code":404,"reason":"NotFound","message":"not found: )" +
              std::string(target) + "\"}",
          {}};
    }
    client::HttpResponse r = it->second.front();
    if (it->second.size() > 1) it->second.pop_front();
    return r;
  }
  absl::Status Stream(std::string_view target,
                      const std::function<bool(std::string_view)>& on_line) override {
    requests.push_back("STREAM " + std::string(target));
    auto it = streams_.find(std::string(target));
    if (it == streams_.end() || it->second.empty()) {
      // Ends the command instead of letting a broken test loop.
      return absl::NotFoundError("no scripted stream for " + std::string(target));
    }
    StreamScript s = it->second.front();
    it->second.pop_front();
    for (const std::string& line : s.lines) {
      if (!on_line(line)) return absl::OkStatus();
    }
    if (s.server_timeout) {
      size_t pos = target.find("timeoutSeconds=");
      int64_t secs = 0;
      if (pos != std::string_view::npos && absl::SimpleAtoi(Sv(target.substr(pos + 15)), &secs)) {
        *now += absl::Seconds(secs);
      }
    }
    return s.end;
  }
  const std::string& base_url() const override { return url_; }

  std::vector<std::string> requests;
  std::vector<std::string> bodies;  // of each Send, in order
  bool unreachable = false;
  absl::Time* now = nullptr;

 private:
  std::map<std::string, std::deque<client::HttpResponse>> script_;
  std::map<std::string, std::deque<StreamScript>> streams_;
  std::string url_ = "http://fake:1";
};

// An instance as the server returns it.
std::string Instance(const std::string& phase, const std::string& run, int rv,
                     const std::string& reason = "", const std::string& message = "",
                     const std::string& action = "deploy") {
  json::object o{{"apiVersion", "paas.gantry.dev/v1"},
                 {"kind", "ComputeInstance"},
                 {"metadata", json::object{{"name", "x"},
                                           {"namespace", "default"},
                                           {"resourceVersion", std::to_string(rv)}}},
                 {"spec", json::object{{"profileRef", json::object{{"name", "p"}}}}},
                 {"status", json::object{{"phase", phase},
                                         {"action", action},
                                         {"reason", reason},
                                         {"message", message},
                                         {"profileRevision", 4}}}};
  if (!run.empty()) o["status"].as_object()["lastRunRef"] = json::object{{"name", run}};
  return json::serialize(o);
}

std::string Event(const std::string& type, const std::string& object) {
  return absl::StrCat(R"({"type":")", type, R"(","object":)", object, "}");
}

std::string Conflict(const std::string& reason, const std::string& message) {
  return json::serialize(json::object{{"kind", "Status"},
                                      {"apiVersion", "v1"},
                                      {"status", "Failure"},
                                      {"code", 409},
                                      {"reason", reason},
                                      {"message", message}});
}

std::string Watch(int rv) {
  std::string t = absl::StrCat(kCi, "?watch=true&fieldSelector=metadata.name%3Dx");
  if (rv > 0) absl::StrAppend(&t, "&resourceVersion=", rv);
  return t;
}

class ActionsTest : public ::testing::Test {
 protected:
  void SetUp() override { fake.now = &now; }

  int Run(std::vector<std::string> args) {
    out.str("");
    err.str("");
    fake.requests.clear();
    fake.bodies.clear();
    sleeps.clear();
    args.insert(args.begin(), "gantry");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    CliEnvironment env;
    env.out = &out;
    env.err = &err;
    env.in = &in;
    env.getenv = [](const std::string&) { return std::nullopt; };
    env.read_file = [](const std::string& p) -> absl::StatusOr<std::string> {
      return absl::NotFoundError(p);
    };
    env.now = [this] { return now; };
    env.sleep = [this](absl::Duration d) {
      sleeps.push_back(d);
      now += d;
    };
    env.connect = [this](const Settings&) {
      struct Borrowed : client::HttpTransport {
        FakeApi* f;
        explicit Borrowed(FakeApi* f) : f(f) {}
        absl::StatusOr<client::HttpResponse> Send(std::string_view m, std::string_view t,
                                                  std::string_view b, std::string_view c) override {
          return f->Send(m, t, b, c);
        }
        absl::Status Stream(std::string_view t,
                            const std::function<bool(std::string_view)>& l) override {
          return f->Stream(t, l);
        }
        const std::string& base_url() const override { return f->base_url(); }
      };
      return std::unique_ptr<client::HttpTransport>(new Borrowed(&fake));
    };
    return RunCli(static_cast<int>(argv.size()), argv.data(), env);
  }

  FakeApi fake;
  absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  std::vector<absl::Duration> sleeps;
  std::ostringstream out, err;
  std::istringstream in;
};

TEST_F(ActionsTest, DeployPrintsTheQueuedRun) {
  fake.On("POST", std::string(kCi) + "/x/deploy", 202, Instance("Waiting", "x-3", 10));
  EXPECT_EQ(Run({"deploy", "x"}), 0) << err.str();
  EXPECT_EQ(out.str(), "computeinstance/x deploy queued (run x-3)\n");
  EXPECT_EQ(err.str(), "");
  EXPECT_EQ(fake.requests, std::vector<std::string>{"POST " + std::string(kCi) + "/x/deploy"});
}

TEST_F(ActionsTest, DeployInAnotherProject) {
  fake.On("POST", "/apis/paas.gantry.dev/v1/namespaces/ml/computeinstances/x/deploy", 202,
          Instance("Waiting", "x-1", 10));
  EXPECT_EQ(Run({"deploy", "x", "-n", "ml"}), 0) << err.str();
  EXPECT_EQ(out.str(), "computeinstance/x deploy queued (run x-1)\n");
}

TEST_F(ActionsTest, DeployWaitPrintsPhasesUntilSuccess) {
  fake.On("POST", std::string(kCi) + "/x/deploy", 202, Instance("Waiting", "x-3", 10));
  fake.OnStream(Watch(10), {{Event("MODIFIED", Instance("InProgress", "x-3", 11)),
                             Event("MODIFIED", Instance("InProgress", "x-3", 12)),
                             Event("MODIFIED", Instance("Success", "x-3", 13))}});
  EXPECT_EQ(Run({"deploy", "x", "--wait"}), 0) << err.str();
  EXPECT_EQ(out.str(),
            "computeinstance/x deploy queued (run x-3)\nWaiting\nIn Progress\nSuccess\n");
  EXPECT_EQ(err.str(), "");
  EXPECT_TRUE(sleeps.empty());
}

TEST_F(ActionsTest, DeployWaitResumesADroppedWatchFromTheLastResourceVersion) {
  fake.On("POST", std::string(kCi) + "/x/deploy", 202, Instance("Waiting", "x-3", 10));
  fake.OnStream(Watch(10), {{Event("MODIFIED", Instance("InProgress", "x-3", 11))},
                            absl::UnavailableError("lost connection to gantryd")});
  fake.OnStream(Watch(11), {{}, absl::UnavailableError("cannot reach gantryd")});
  fake.OnStream(Watch(11), {{Event("MODIFIED", Instance("Success", "x-3", 14))}});
  EXPECT_EQ(Run({"deploy", "x", "-w"}), 0) << err.str();
  EXPECT_EQ(out.str(),
            "computeinstance/x deploy queued (run x-3)\nWaiting\nIn Progress\nSuccess\n");
  // Backoff grows only while reconnections fail in a row.
  EXPECT_EQ(sleeps,
            (std::vector<absl::Duration>{absl::Milliseconds(250), absl::Milliseconds(500)}));
}

TEST_F(ActionsTest, DeployWaitResumesAfterTheServerEndsTheWatch) {
  fake.On("POST", std::string(kCi) + "/x/deploy", 202, Instance("Waiting", "x-3", 10));
  fake.OnStream(Watch(10), {{Event("MODIFIED", Instance("InProgress", "x-3", 11))}});
  fake.OnStream(Watch(11), {{Event("MODIFIED", Instance("Success", "x-3", 12))}});
  EXPECT_EQ(Run({"deploy", "x", "--wait"}), 0) << err.str();
  EXPECT_TRUE(absl::EndsWith(out.str(), "In Progress\nSuccess\n")) << out.str();
  EXPECT_TRUE(sleeps.empty());
}

TEST_F(ActionsTest, DeployWaitStartsAFreshWatchWhenTheResourceVersionExpired) {
  fake.On("POST", std::string(kCi) + "/x/deploy", 202, Instance("Waiting", "x-3", 10));
  fake.OnStream(Watch(10), {{R"({"type":"ERROR","object":{"kind":"Status","code":410,)"
                             R"("reason":"Expired","message":"too old"}})"}});
  fake.OnStream(Watch(0), {{Event("ADDED", Instance("Success", "x-3", 900))}});
  EXPECT_EQ(Run({"deploy", "x", "--wait"}), 0) << err.str();
  EXPECT_EQ(out.str(), "computeinstance/x deploy queued (run x-3)\nWaiting\nSuccess\n");
}

TEST_F(ActionsTest, DeployWaitFailedPrintsReasonAndMessageAndExits1) {
  fake.On("POST", std::string(kCi) + "/x/deploy", 202, Instance("Waiting", "x-3", 10));
  fake.OnStream(Watch(10), {{Event("MODIFIED", Instance("InProgress", "x-3", 11)),
                             Event("MODIFIED", Instance("Failed", "x-3", 12, "DriverError",
                                                        "deploy run x-3 failed: exit status 3"))}});
  EXPECT_EQ(Run({"deploy", "x", "--wait"}), 1);
  EXPECT_EQ(out.str(), "computeinstance/x deploy queued (run x-3)\nWaiting\nIn Progress\nFailed\n");
  EXPECT_EQ(err.str(), "error: DriverError: deploy run x-3 failed: exit status 3\n");
}

TEST_F(ActionsTest, DeployWaitCanceledByAnotherUserExits1) {
  fake.On("POST", std::string(kCi) + "/x/deploy", 202, Instance("Waiting", "x-3", 10));
  fake.OnStream(Watch(10),
                {{Event("MODIFIED", Instance("NotDeployed", "x-3", 11, "Canceled",
                                             "deploy run x-3 was canceled before it started"))}});
  EXPECT_EQ(Run({"deploy", "x", "--wait"}), 1);
  EXPECT_EQ(err.str(), "error: Canceled: deploy run x-3 was canceled before it started\n");
}

TEST_F(ActionsTest, DeployWaitAfterANewerRunReadsHowOursEnded) {
  fake.On("POST", std::string(kCi) + "/x/deploy", 202, Instance("Waiting", "x-3", 10));
  fake.OnStream(Watch(10),
                {{Event("MODIFIED", Instance("Waiting", "x-4", 15, "", "", "destroy"))}});
  fake.On("GET", std::string(kRuns) + "/x-3", 200,
          R"({"kind":"Run","metadata":{"name":"x-3"},"status":{"phase":"Succeeded"}})");
  EXPECT_EQ(Run({"deploy", "x", "--wait"}), 0) << err.str();
  EXPECT_EQ(out.str(), "computeinstance/x deploy queued (run x-3)\nWaiting\n");
}

TEST_F(ActionsTest, DeployWaitTimesOutAndExits1) {
  fake.On("POST", std::string(kCi) + "/x/deploy", 202, Instance("Waiting", "x-3", 10));
  StreamScript quiet;
  quiet.lines = {Event("MODIFIED", Instance("InProgress", "x-3", 11))};
  quiet.server_timeout = true;
  fake.OnStream(Watch(10) + "&timeoutSeconds=90", quiet);
  // --timeout implies --wait.
  EXPECT_EQ(Run({"deploy", "x", "--timeout", "90s"}), 1);
  EXPECT_EQ(out.str(), "computeinstance/x deploy queued (run x-3)\nWaiting\nIn Progress\n");
  EXPECT_EQ(err.str(),
            "error: timed out after 1m30s waiting for deploy run x-3 (computeinstance/x is In "
            "Progress); the run goes on: `gantry logs x -f` follows it\n");
}

TEST_F(ActionsTest, DeployWaitGivesUpAfterRepeatedConnectionFailures) {
  fake.On("POST", std::string(kCi) + "/x/deploy", 202, Instance("Waiting", "x-3", 10));
  for (int i = 0; i <= kMaxReconnects; ++i) {
    fake.OnStream(Watch(10), {{}, absl::UnavailableError("cannot reach gantryd at http://fake:1")});
  }
  EXPECT_EQ(Run({"deploy", "x", "--wait"}), 1);
  EXPECT_EQ(sleeps.size(), static_cast<size_t>(kMaxReconnects));
  EXPECT_EQ(sleeps.back(), absl::Seconds(5));
  EXPECT_EQ(err.str(),
            "error: cannot reach gantryd at http://fake:1 (gave up waiting for deploy run x-3 "
            "after 8 failed reconnections; the run goes on: `gantry logs x -f`)\n");
}

TEST_F(ActionsTest, RefusalsArePrintedVerbatimAndExit1) {
  const std::string msg =
      "instance x is In Progress (deploy run x-7); it cannot be destroyed until the run ends";
  fake.On("POST", std::string(kCi) + "/x/destroy", 409, Conflict("InstanceInProgress", msg));
  EXPECT_EQ(Run({"destroy", "x", "--wait"}), 1);
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(err.str(), "error: " + msg + "\n");

  fake.On("POST", std::string(kCi) + "/x/deploy", 409,
          Conflict("InstanceInProgress", "instance x is In Progress (deploy run x-7)"));
  EXPECT_EQ(Run({"deploy", "x"}), 1);
  EXPECT_EQ(err.str(), "error: instance x is In Progress (deploy run x-7)\n");

  EXPECT_EQ(Run({"deploy", "nope"}), 1);
  EXPECT_EQ(err.str(), "error: not found: " + std::string(kCi) + "/nope/deploy\n");

  fake.unreachable = true;
  EXPECT_EQ(Run({"deploy", "x"}), 1);
  EXPECT_EQ(err.str(), "error: cannot reach gantryd at http://fake:1: connection refused\n");
}

TEST_F(ActionsTest, DestroyWaitEndsNotDeployed) {
  fake.On("POST", std::string(kCi) + "/x/destroy", 202,
          Instance("Waiting", "x-4", 20, "Queued", "", "destroy"));
  fake.OnStream(Watch(20),
                {{Event("MODIFIED", Instance("InProgress", "x-4", 21, "", "", "destroy")),
                  Event("MODIFIED", Instance("NotDeployed", "x-4", 22, "", "destroyed by run x-4",
                                             "destroy"))}});
  EXPECT_EQ(Run({"destroy", "x", "--wait"}), 0) << err.str();
  EXPECT_EQ(out.str(),
            "computeinstance/x destroy queued (run x-4)\nWaiting\nIn Progress\nNot Deployed\n");
}

TEST_F(ActionsTest, DestroyWaitFailedExits1) {
  fake.On("POST", std::string(kCi) + "/x/destroy", 202,
          Instance("Waiting", "x-4", 20, "Queued", "", "destroy"));
  fake.OnStream(Watch(20),
                {{Event("MODIFIED", Instance("Failed", "x-4", 22, "Timeout",
                                             "destroy run x-4 failed: timed out", "destroy"))}});
  EXPECT_EQ(Run({"destroy", "x", "--wait"}), 1);
  EXPECT_EQ(err.str(), "error: Timeout: destroy run x-4 failed: timed out\n");
}

TEST_F(ActionsTest, DestroyOfAWaitingInstanceCancelsItsQueuedDeploy) {
  fake.On("POST", std::string(kCi) + "/x/destroy", 202,
          Instance("NotDeployed", "x-3", 12, "Canceled",
                   "deploy run x-3 was canceled before it started"));
  EXPECT_EQ(Run({"destroy", "x", "--wait"}), 0) << err.str();
  EXPECT_EQ(out.str(),
            "computeinstance/x Not Deployed: deploy run x-3 was canceled before it started\n"
            "Not Deployed\n");
  EXPECT_EQ(fake.requests.size(), 1u);  // nothing to watch
}

TEST_F(ActionsTest, Cancel) {
  fake.On("POST", std::string(kCi) + "/x/cancel", 202,
          Instance("NotDeployed", "x-3", 12, "Canceled",
                   "deploy run x-3 was canceled before it started"));
  EXPECT_EQ(Run({"cancel", "x"}), 0) << err.str();
  EXPECT_EQ(out.str(), "computeinstance/x deploy run x-3 canceled (Not Deployed)\n");

  const std::string msg =
      "instance x is In Progress (deploy run x-3); only a Waiting run can "
      "be canceled";
  fake.Reset();
  fake.On("POST", std::string(kCi) + "/x/cancel", 409, Conflict("InstanceInProgress", msg));
  EXPECT_EQ(Run({"cancel", "x"}), 1);
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(err.str(), "error: " + msg + "\n");
  EXPECT_EQ(Run({"cancel", "x", "--wait"}), 2);  // nothing to wait for
}

TEST_F(ActionsTest, UpgradePrintsTheNewRevision) {
  auto inst = [](const std::string& phase, int profile_rev, int template_rev) {
    return json::serialize(
        json::object{{"metadata", json::object{{"name", "x"}}},
                     {"status", json::object{{"phase", phase},
                                             {"profileRevision", profile_rev},
                                             {"templateRevision", template_rev}}}});
  };
  fake.On("GET", std::string(kCi) + "/x", 200, inst("Success", 4, 2));
  fake.On("POST", std::string(kCi) + "/x/upgrade", 200, inst("Success", 5, 2));
  EXPECT_EQ(Run({"upgrade", "x"}), 0) << err.str();
  EXPECT_EQ(out.str(),
            "computeinstance/x upgraded to profile revision 5 (was 4); `gantry deploy x` "
            "applies it\n");

  fake.Reset();
  fake.On("GET", std::string(kCi) + "/x", 200, inst("NotDeployed", 5, 2));
  fake.On("POST", std::string(kCi) + "/x/upgrade", 200, inst("NotDeployed", 6, 3));
  EXPECT_EQ(Run({"upgrade", "x"}), 0) << err.str();
  EXPECT_EQ(out.str(),
            "computeinstance/x upgraded to profile revision 6 (was 5), template revision 3 "
            "(was 2)\n");

  fake.Reset();
  fake.On("GET", std::string(kCi) + "/x", 200, inst("NotDeployed", 6, 3));
  fake.On("POST", std::string(kCi) + "/x/upgrade", 200, inst("NotDeployed", 6, 3));
  EXPECT_EQ(Run({"upgrade", "x"}), 0) << err.str();
  EXPECT_EQ(out.str(),
            "computeinstance/x is already at the latest revision (profile revision 6)\n");

  const std::string msg =
      "instance x is In Progress (deploy run x-9); it cannot be upgraded "
      "until the run ends";
  fake.Reset();
  fake.On("GET", std::string(kCi) + "/x", 200, inst("InProgress", 6, 3));
  fake.On("POST", std::string(kCi) + "/x/upgrade", 409, Conflict("InstanceInProgress", msg));
  EXPECT_EQ(Run({"upgrade", "x"}), 1);
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(err.str(), "error: " + msg + "\n");
}

TEST_F(ActionsTest, LogsOfARunAndOfAnInstance) {
  fake.On("GET", std::string(kRuns) + "/x-3", 200,
          R"({"kind":"Run","metadata":{"name":"x-3"},"status":{"phase":"Succeeded"}})");
  fake.On("GET", std::string(kRuns) + "/x-3/log", 200, "line 1\nline 2\n", "text/plain");
  EXPECT_EQ(Run({"logs", "x-3"}), 0) << err.str();
  EXPECT_EQ(out.str(), "line 1\nline 2\n");

  // An instance: its last run.
  fake.On("GET", std::string(kCi) + "/x", 200, Instance("Success", "x-3", 5));
  EXPECT_EQ(Run({"logs", "x"}), 0) << err.str();
  EXPECT_EQ(out.str(), "line 1\nline 2\n");
  EXPECT_EQ(fake.requests,
            (std::vector<std::string>{
                "GET " + std::string(kRuns) + "/x", "GET " + std::string(kCi) + "/x",
                "GET " + std::string(kRuns) + "/x-3", "GET " + std::string(kRuns) + "/x-3/log"}));
}

TEST_F(ActionsTest, LogsErrors) {
  EXPECT_EQ(Run({"logs", "ghost"}), 1);
  EXPECT_EQ(err.str(), "error: no run or computeinstance named \"ghost\" in project \"default\"\n");

  fake.On("GET", std::string(kCi) + "/fresh", 200,
          R"({"metadata":{"name":"fresh"},"status":{"phase":"NotDeployed"}})");
  EXPECT_EQ(Run({"logs", "fresh"}), 1);
  EXPECT_EQ(err.str(),
            "error: computeinstance/fresh has no runs yet; `gantry deploy fresh` starts one\n");

  EXPECT_EQ(Run({"logs"}), 2);
}

TEST_F(ActionsTest, LogsFollowReconnectsWithoutRepeatingLines) {
  fake.On("GET", std::string(kRuns) + "/x-3", 200,
          R"({"kind":"Run","metadata":{"name":"x-3"},"status":{"phase":"Running"}})");
  fake.On("GET", std::string(kRuns) + "/x-3", 200,
          R"({"kind":"Run","metadata":{"name":"x-3"},"status":{"phase":"Running"}})");
  fake.On("GET", std::string(kRuns) + "/x-3", 200,
          R"({"kind":"Run","metadata":{"name":"x-3"},"status":{"phase":"Succeeded"}})");
  const std::string log = std::string(kRuns) + "/x-3/log?follow=true";
  fake.OnStream(log, {{"a", "b"}, absl::UnavailableError("lost connection")});
  fake.OnStream(log, {{"a", "b", "c"}});  // ended by the server while the run still runs
  fake.OnStream(log, {{"a", "b", "c", "d"}});
  EXPECT_EQ(Run({"logs", "x-3", "-f"}), 0) << err.str();
  EXPECT_EQ(out.str(), "a\nb\nc\nd\n");
  EXPECT_EQ(sleeps, std::vector<absl::Duration>{absl::Milliseconds(250)});
}

TEST_F(ActionsTest, UsageErrors) {
  EXPECT_EQ(Run({"deploy"}), 2);
  EXPECT_EQ(Run({"deploy", "x", "--timeout", "soon"}), 2);
  EXPECT_EQ(err.str(),
            "error: invalid --timeout \"soon\": use a duration such as 90s, 5m or 1h30m\n");
  EXPECT_EQ(Run({"destroy", "x", "--timeout", "0"}), 2);
  EXPECT_EQ(err.str(), "error: invalid --timeout \"0\": it must be more than zero\n");
  EXPECT_TRUE(fake.requests.empty());
  EXPECT_EQ(Run({"--help"}), 0);
  for (const char* c : {"deploy", "destroy", "cancel", "upgrade", "logs"}) {
    EXPECT_TRUE(absl::StrContains(out.str(), c)) << c;
  }
}

constexpr char kSi[] = "/apis/paas.gantry.dev/v1/namespaces/default/serviceinstances";

// A service instance named nb as the server returns it.
std::string Service(const std::string& phase, const std::string& run, int rv,
                    const std::string& reason = "", const std::string& message = "") {
  json::object o = json::parse(Instance(phase, run, rv, reason, message)).as_object();
  o["kind"] = "ServiceInstance";
  o["metadata"].as_object()["name"] = "nb";
  o["spec"].as_object()["computeRef"] = json::object{{"name", "x"}};
  return json::serialize(o);
}

TEST_F(ActionsTest, ServiceInstanceDeployWaitsForItsCompute) {
  fake.On("POST", std::string(kSi) + "/nb/deploy", 202,
          Service("Waiting", "nb-1", 20, "ComputeNotReady",
                  "compute instance default/x is In Progress"));
  const std::string watch =
      absl::StrCat(kSi, "?watch=true&fieldSelector=metadata.name%3Dnb", "&resourceVersion=20");
  fake.OnStream(watch, {{Event("MODIFIED", Service("InProgress", "nb-1", 21)),
                         Event("MODIFIED", Service("Success", "nb-1", 22))}});
  EXPECT_EQ(Run({"deploy", "si/nb", "--wait"}), 0) << err.str();
  EXPECT_EQ(out.str(),
            "serviceinstance/nb deploy queued (run nb-1)\nWaiting\nIn Progress\nSuccess\n");
  EXPECT_EQ(fake.requests, (std::vector<std::string>{"POST " + std::string(kSi) + "/nb/deploy",
                                                     "STREAM " + watch}));
  // Any alias of the kind names it.
  fake.On("POST", std::string(kSi) + "/nb/cancel", 200, Service("NotDeployed", "nb-1", 23));
  EXPECT_EQ(Run({"cancel", "serviceinstance/nb"}), 0) << err.str();
  EXPECT_EQ(out.str(), "serviceinstance/nb deploy run nb-1 canceled (Not Deployed)\n");
  fake.On("POST", std::string(kSi) + "/nb/destroy", 202, Service("Waiting", "nb-2", 24));
  EXPECT_EQ(Run({"destroy", "service/nb"}), 0) << err.str();
  EXPECT_EQ(out.str(), "serviceinstance/nb destroy queued (run nb-2)\n");
}

TEST_F(ActionsTest, ServiceInstanceWaitTimeoutNamesItAsTyped) {
  // A wait that times out names the service the way the commands take it.
  fake.On("POST", std::string(kSi) + "/nb/deploy", 202, Service("Waiting", "nb-2", 30));
  StreamScript still;
  still.server_timeout = true;
  fake.OnStream(absl::StrCat(kSi, "?watch=true&fieldSelector=metadata.name%3Dnb&resourceVersion=30",
                             "&timeoutSeconds=5"),
                still);
  EXPECT_EQ(Run({"deploy", "si/nb", "--timeout", "5s"}), 1);
  EXPECT_EQ(
      err.str(),
      "error: timed out after 5s waiting for deploy run nb-2 (serviceinstance/nb is Waiting); "
      "the run goes on: `gantry logs si/nb -f` follows it\n");
}

TEST_F(ActionsTest, CascadeDestroyAndDeleteOfAComputeInstance) {
  fake.On("POST", std::string(kCi) + "/x/destroy?cascade=true", 202,
          Instance("Waiting", "x-4", 30, "ServicesDestroying", "", "destroy"));
  EXPECT_EQ(Run({"destroy", "x", "--cascade"}), 0) << err.str();
  EXPECT_EQ(out.str(), "computeinstance/x destroy queued (run x-4)\n");
  EXPECT_EQ(fake.requests,
            std::vector<std::string>{"POST " + std::string(kCi) + "/x/destroy?cascade=true"});

  // Without --cascade the server's refusal names the services.
  fake.On("DELETE", std::string(kCi) + "/x", 409,
          Conflict("Conflict", "computeinstance x has service instances: default/nb"));
  EXPECT_EQ(Run({"delete", "ci", "x"}), 1);
  EXPECT_EQ(err.str(), "error: computeinstance x has service instances: default/nb\n");
  EXPECT_EQ(fake.bodies, std::vector<std::string>{""});
  fake.Reset();
  fake.On("DELETE", std::string(kCi) + "/x", 202, Instance("Waiting", "x-5", 31));
  EXPECT_EQ(Run({"delete", "ci", "x", "--cascade"}), 0) << err.str();
  EXPECT_EQ(out.str(), "computeinstance/x deleted\n");
  ASSERT_EQ(fake.bodies.size(), 1u);
  EXPECT_EQ(fake.bodies.back(),
            R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"})");
}

TEST_F(ActionsTest, KindPrefixAndCascadeUsageErrors) {
  EXPECT_EQ(Run({"deploy", "sp/nb"}), 2);
  EXPECT_EQ(err.str(),
            "error: \"sp/nb\": actions apply to compute instances (NAME or ci/NAME) and service "
            "instances (si/NAME)\n");
  EXPECT_EQ(Run({"deploy", "si/"}), 2);
  EXPECT_EQ(Run({"destroy", "si/nb", "--cascade"}), 2);
  EXPECT_EQ(err.str(), "error: --cascade applies to destroying a compute instance\n");
  EXPECT_EQ(Run({"deploy", "x", "--cascade"}), 2);  // destroy only
  EXPECT_TRUE(fake.requests.empty());
}

TEST(ParseTimeout, Forms) {
  EXPECT_EQ(*ParseTimeout("90s"), absl::Seconds(90));
  EXPECT_EQ(*ParseTimeout("1h30m"), absl::Minutes(90));
  EXPECT_EQ(*ParseTimeout("120"), absl::Seconds(120));
  EXPECT_FALSE(ParseTimeout("-5s").ok());
  EXPECT_FALSE(ParseTimeout("inf").ok());
  EXPECT_FALSE(ParseTimeout("").ok());
}

TEST_F(ActionsTest, GetRunsTable) {
  fake.On("GET", std::string(kRuns) + "?limit=500&labelSelector=paas.gantry.dev%2Finstance%3Dx",
          200,
          R"({"kind":"RunList","metadata":{},"items":[)"
          R"({"metadata":{"name":"x-1"},"spec":{"instanceRef":{"name":"x"},"action":"deploy"},)"
          R"("status":{"phase":"Succeeded","attempt":1,"startTime":"2027-01-15T07:55:00Z",)"
          R"("completionTime":"2027-01-15T07:55:02Z"}},)"
          R"({"metadata":{"name":"x-2"},"spec":{"instanceRef":{"name":"x"},"action":"deploy"},)"
          R"("status":{"phase":"Failed","attempt":1,"reason":"DriverError",)"
          R"("startTime":"2027-01-15T07:57:00Z","completionTime":"2027-01-15T07:58:30Z"}},)"
          R"({"metadata":{"name":"x-3"},"spec":{"instanceRef":{"name":"x"},"action":"destroy"},)"
          R"("status":{"phase":"Running","attempt":2,"startTime":"2027-01-15T07:59:00Z"}},)"
          R"({"metadata":{"name":"x-4"},"spec":{"instanceRef":{"name":"x"},"action":"deploy"},)"
          R"("status":{"phase":"Queued","attempt":0}}]})");
  // `now` is 2027-01-15T08:00:00Z.
  EXPECT_EQ(Run({"get", "runs", "-l", "paas.gantry.dev/instance=x"}), 0) << err.str();
  EXPECT_EQ(out.str(),
            "NAME  INSTANCE  ACTION   STATUS     ATTEMPT  STARTED  DURATION  REASON\n"
            "x-1   x         deploy   Succeeded  1        5m       2s        <none>\n"
            "x-2   x         deploy   Failed     1        3m       90s       DriverError\n"
            "x-3   x         destroy  Running    2        1m       60s       <none>\n"
            "x-4   x         deploy   Queued     0        <none>   <none>    <none>\n");
}

}  // namespace
}  // namespace gantry::cli
