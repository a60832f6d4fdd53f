// The deploy engine's runs, end to end with a real gantryd: one run however many deploy
// requests race, timeouts that take the script's whole process tree, watch events for every
// phase change, run logs (plain and followed), sensitive values kept out of every answer, log
// and file, /metrics, and graceful shutdown.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <latch>
#include <map>
#include <thread>

#include "engine_fixture.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

std::string Phase(const json::object& event) {
  const json::value* o = event.if_contains("object");
  return o && o->is_object() ? Str(o->get_object(), "status.phase") : "";
}

// "TYPE phase" per event, consecutive repeats dropped.
std::vector<std::string> PhaseChanges(const std::vector<json::object>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    std::string s = Str(e, "type") + " " + Phase(e);
    if (out.empty() || out.back() != s) out.push_back(s);
  }
  return out;
}

// The phase of the object in a watch line ("" when the line is not an event).
std::string PhaseOfLine(const std::string& line) {
  boost::system::error_code ec;
  json::value v = json::parse(line, ec);
  return !ec && v.is_object() ? Phase(v.get_object()) : "";
}

bool Contains(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

class RunsTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    CreateStandardProfile();
  }
  void Create(const std::string& name, json::object extra_spec = {}) {
    api().CreateInstance("default", name, "std", {}, std::move(extra_spec));
  }
};

TEST_F(RunsTest, FiftyConcurrentDeploysMakeExactlyOneRun) {
  Create("web");
  Touch("block-web");  // the one run cannot end while the requests race
  constexpr int kRequests = 50;
  const std::string base = gantryd_->base_url();
  const std::string target = NsPath("default", "computeinstances", "web") + "/deploy";
  std::vector<int> codes(kRequests, 0);
  std::vector<std::string> bodies(kRequests);
  std::latch go(kRequests);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      client::HttpClient client(base, kBootstrapToken);
      go.arrive_and_wait();
      auto r = client.Send("POST", target, "{}");
      if (r.ok()) {
        codes[i] = r->status;
        bodies[i] = r->body;
      } else {
        bodies[i] = r.status().ToString();
      }
    });
  }
  for (auto& t : threads) t.join();

  int accepted = 0, refused = 0;
  for (int i = 0; i < kRequests; ++i) {
    if (codes[i] == 202) {
      ++accepted;
      continue;
    }
    ++refused;
    Resp r;
    r.status = codes[i];
    r.raw = bodies[i];
    boost::system::error_code ec;
    r.body = json::parse(bodies[i], ec);
    EXPECT_TRUE(r.IsStatus(409, "InstanceWaiting") || r.IsStatus(409, "InstanceInProgress"))
        << "request " << i << ": " << codes[i] << " " << bodies[i];
  }
  EXPECT_EQ(accepted, 1);
  EXPECT_EQ(refused, kRequests - 1);
  std::vector<json::object> runs = RunsOf("web");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(Str(runs[0], "metadata.name"), "web-1");

  Touch("release-web-1");
  WaitPhase("web", "Success");
  EXPECT_EQ(RunsOf("web").size(), 1u);
}

TEST_F(RunsTest, TimeoutFailsTheRunAndKillsTheScriptsChildrenToo) {
  // The child ignores SIGTERM, so only a kill of the whole process group ends it.
  const std::string marker = "gantry-timeout-child-" + fs::path(dir()).filename().string();
  std::string script = WriteScript("timeout.sh", R"SH(D=')SH" + dir() + R"SH('
sh -c 'trap "" TERM; touch "$1"; sleep 300; :' )SH" + marker +
                                                     R"SH( "$D/child-started" &
while [ ! -f "$D/child-started" ]; do sleep 0.01; done
echo "child is up"
sleep 300
)SH");
  CreateExecTemplate("slow-tmpl", json::array{script}, json::object{{"timeoutSeconds", 1}});
  api().CreateProfile("default", "slow", "slow-tmpl");
  api().CreateInstance("default", "late", "slow");
  ASSERT_EQ(Action("late", "deploy").status, 202);

  json::object failed = WaitPhase("late", "Failed");
  EXPECT_EQ(Str(failed, "status.reason"), "Timeout");
  EXPECT_EQ(Str(failed, "status.message"), "deploy run late-1 failed: timed out after 1s");
  json::object run = GetRun("late-1");
  EXPECT_EQ(Str(run, "status.phase"), "Failed");
  EXPECT_EQ(Str(run, "status.reason"), "Timeout");
  EXPECT_TRUE(Exists("child-started")) << "the child never ran, so the test proves nothing";
  EXPECT_TRUE(PollUntil([&] { return ProcessesWith(marker).empty(); }))
      << "the script's child survived the timeout";
  EXPECT_TRUE(PollUntil([&] { return ProcessesWith(script).empty(); }))
      << "the script survived the timeout";
  Resp log = api().Get(NsPath("default", "runs", "late-1") + "/log");
  EXPECT_NE(log.raw.find("child is up\n"), std::string::npos) << log.raw;
  EXPECT_NE(log.raw.find("gantry: run failed (Timeout): timed out after 1s"), std::string::npos)
      << log.raw;
}

TEST_F(RunsTest, WatchSeesEveryPhaseChangeOfTheInstanceAndTheRun) {
  Create("web");
  LineStreamReader instances(gantryd_->port(),
                             NsPath("default", "computeinstances", "web") + "?watch=true",
                             [](const std::string& l) { return PhaseOfLine(l) == "Success"; });
  // The run does not exist yet: watch runs from the resourceVersion of an empty list, so
  // that its creation is replayed however late the stream starts.
  Resp list = api().Get(NsPath("default", "runs"));
  ASSERT_TRUE(list.names().empty()) << list.raw;
  LineStreamReader runs(gantryd_->port(),
                        NsPath("default", "runs") +
                            "?watch=true&resourceVersion=" + list.meta("resourceVersion") +
                            "&labelSelector=" + Escape("paas.gantry.dev/instance=web"),
                        [](const std::string& l) { return PhaseOfLine(l) == "Succeeded"; });
  // Both streams are live once the instance's current state arrived.
  ASSERT_TRUE(instances.WaitFor([](const auto& ev) { return !ev.empty(); }));
  ASSERT_EQ(Action("web", "deploy").status, 202);
  ASSERT_TRUE(instances.WaitDone());
  ASSERT_TRUE(runs.WaitDone());
  EXPECT_EQ(instances.http_status(), 200);
  EXPECT_EQ(PhaseChanges(instances.objects()),
            (std::vector<std::string>{"ADDED NotDeployed", "MODIFIED Waiting",
                                      "MODIFIED InProgress", "MODIFIED Success"}));
  EXPECT_EQ(PhaseChanges(runs.objects()),
            (std::vector<std::string>{"ADDED Queued", "MODIFIED Running", "MODIFIED Succeeded"}));
}

TEST_F(RunsTest, RunLogHasTheScriptsOutputAndFollowStreamsUntilTheRunEnds) {
  Create("web");
  std::string run = DeployBlocked("web");
  const std::string log_path = NsPath("default", "runs", run) + "/log";
  Resp plain = api().Get(log_path);
  ASSERT_EQ(plain.status, 200) << plain.raw;
  EXPECT_NE(plain.raw.find("gantry: deploy run web-1 (attempt 1) of instance web with driver "
                           "exec\n"),
            std::string::npos)
      << plain.raw;
  EXPECT_NE(plain.raw.find("hello from web-1 (apply)\n"), std::string::npos) << plain.raw;
  EXPECT_EQ(plain.raw.find("bye from web-1"), std::string::npos) << plain.raw;

  LineStreamReader follow(gantryd_->port(), log_path + "?follow=true");
  ASSERT_TRUE(follow.WaitFor(
      [](const auto& lines) { return Contains(lines, "hello from web-1 (apply)"); }));
  EXPECT_EQ(follow.http_status(), 200);
  EXPECT_FALSE(Contains(follow.lines(), "bye from web-1"));
  Touch("release-" + run);  // the script prints its last lines and ends
  ASSERT_TRUE(follow.WaitDone()) << "the followed log did not end with the run";
  EXPECT_TRUE(follow.complete());
  std::vector<std::string> lines = follow.lines();
  EXPECT_TRUE(Contains(lines, "bye from web-1")) << ::testing::PrintToString(lines);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "gantry: run succeeded");
  WaitPhase("web", "Success");

  // The whole log, plain, is what was streamed.
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_EQ(api().Get(log_path).raw, all);
  // Following a finished run gives the log and ends at once.
  LineStreamReader done(gantryd_->port(), log_path + "?follow=true");
  ASSERT_TRUE(done.WaitDone());
  EXPECT_TRUE(done.complete());
  EXPECT_EQ(done.lines(), lines);
  // A run that does not exist: 404.
  EXPECT_TRUE(api().Get(NsPath("default", "runs", "web-9") + "/log").IsStatus(404, "NotFound"));
}

TEST_F(RunsTest, MetricsExposeRequestsRunsQueueDepthAndDurations) {
  Create("web");
  ASSERT_EQ(Action("web", "deploy").status, 202);
  WaitPhase("web", "Success");
  Create("bad");
  Touch("fail-bad");
  ASSERT_EQ(Action("bad", "deploy").status, 202);
  WaitPhase("bad", "Failed");

  // The engine counts a run (and then its duration) right after committing its end, so the
  // phase can be seen a moment before the counters move (longer on PostgreSQL, whose commits are
  // visible before the flush that Commit waits for): poll for the failed run's sample.
  Resp m;
  EXPECT_TRUE(PollUntil([&] {
    m = api().Get("/metrics");
    return m.raw.find("phase=\"Failed\"") != std::string::npos &&
           m.raw.find("gantry_run_duration_seconds_count{action=\"deploy\"} 2") !=
               std::string::npos;
  })) << m.raw;
  ASSERT_EQ(m.status, 200);
  const std::string& text = m.raw;
  // The value of the first sample of `name` whose labels hold every `k="v"` in `labels`.
  auto value = [&](const std::string& name, const std::vector<std::string>& labels) -> double {
    size_t pos = 0;
    while ((pos = text.find("\n" + name, pos)) != std::string::npos) {
      size_t eol = text.find('\n', pos + 1);
      std::string line = text.substr(pos + 1, eol - pos - 1);
      pos = eol;
      char next = line.size() > name.size() ? line[name.size()] : '\0';
      if (next != '{' && next != ' ') continue;
      bool all = true;
      for (const auto& l : labels) all = all && line.find(l) != std::string::npos;
      if (all) return std::stod(line.substr(line.rfind(' ') + 1));
    }
    ADD_FAILURE() << "no sample " << name << " with " << ::testing::PrintToString(labels)
                  << " in:\n"
                  << text;
    return -1;
  };
  for (const char* type :
       {"# TYPE gantry_http_requests_total counter", "# TYPE gantry_runs_total counter",
        "# TYPE gantry_run_queue_depth gauge", "# TYPE gantry_run_duration_seconds histogram"})
    EXPECT_NE(text.find(type), std::string::npos) << type << " missing in:\n" << text;
  EXPECT_GE(value("gantry_http_requests_total",
                  {R"(route="/namespaces/{ns}/computeinstances/{name}/deploy")", R"(method="POST")",
                   R"(code="202")"}),
            2);
  EXPECT_GE(value("gantry_runs_total", {R"(action="deploy")", R"(phase="Succeeded")"}), 1);
  EXPECT_GE(value("gantry_runs_total", {R"(action="deploy")", R"(phase="Failed")"}), 1);
  EXPECT_EQ(value("gantry_run_queue_depth", {}), 0);
  EXPECT_EQ(value("gantry_run_duration_seconds_count", {R"(action="deploy")"}), 2);
  EXPECT_EQ(value("gantry_run_duration_seconds_bucket", {R"(action="deploy")", R"(le="+Inf")"}), 2);
  EXPECT_GT(value("gantry_run_duration_seconds_sum", {R"(action="deploy")"}), 0);
}

// Sensitive variables: the script gets the value; nothing else does.
class SensitiveTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    secret_ = "Pw-" + fs::path(dir()).filename().string() + "-s3cret";
    script_ = WriteScript("secret.sh", R"SH(D=')SH" + dir() + R"SH('
IN=$(cat)
printf '%s' "$IN" > "$D/stdin-$GANTRY_RUN.json"
PW=$(printf '%s' "$IN" | sed -n 's/.*"pw":"\([^"]*\)".*/\1/p')
echo "the password is $PW"
touch "$D/started-$GANTRY_RUN"
if [ -f "$D/fail" ]; then echo "still $PW"; exit 1; fi
printf '{"endpoint": "http://db.example"}' > "$GANTRY_OUTPUTS"
)SH");
    CreateExecTemplate("sec-tmpl", json::array{script_}, {},
                       json::array{json::object{{"name", "pw"}, {"sensitive", true}},
                                   json::object{{"name", "user"}}});
    api().CreateProfile("default", "sec", "sec-tmpl");
  }

  // Every answer the test saw is checked, raw.
  void Saw(const Resp& r, const std::string& what) {
    EXPECT_EQ(r.raw.find(secret_), std::string::npos) << what << " shows the secret: " << r.raw;
  }
  void ExpectNotInDataDir() {
    std::error_code ec;
    int files = 0;
    for (const auto& e : fs::recursive_directory_iterator(gantryd_->data_dir(), ec)) {
      if (!e.is_regular_file()) continue;
      ++files;
      std::string bytes = ReadFile(e.path().string());
      EXPECT_EQ(bytes.find(secret_), std::string::npos)
          << e.path() << " holds the secret in plaintext";
    }
    EXPECT_GT(files, 0);
    if (gantryd_->store_url().empty()) {
      EXPECT_TRUE(fs::exists(gantryd_->data_dir() + "/gantry.db"));
      return;
    }
    // PostgreSQL: every stored text, as the database holds it.
    PGconn* c = PQconnectdb(gantryd_->store_url().c_str());
    ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
    PGresult* r = PQexec(c,
                         "SELECT body FROM objects UNION ALL SELECT body FROM events "
                         "UNION ALL SELECT spec FROM revisions");
    ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK);
    EXPECT_GT(PQntuples(r), 0);
    for (int i = 0; i < PQntuples(r); ++i)
      EXPECT_EQ(std::string(PQgetvalue(r, i, 0)).find(secret_), std::string::npos)
          << "the database holds the secret in plaintext: " << PQgetvalue(r, i, 0);
    PQclear(r);
    PQfinish(c);
  }

  std::string secret_;
};

TEST_F(SensitiveTest, AbsentFromApiLogsAndTheDataDirectory) {
  LineStreamReader watch(gantryd_->port(), NsPath("default", "computeinstances") + "?watch=true",
                         [](const std::string& l) { return PhaseOfLine(l) == "Success"; });
  Resp created = api().Post(NsPath("default", "computeinstances"),
                            json::object{{"apiVersion", "paas.gantry.dev/v1"},
                                         {"kind", "ComputeInstance"},
                                         {"metadata", {{"name", "db"}}},
                                         {"spec",
                                          {{"profileRef", {{"name", "sec"}}},
                                           {"variables", {{"pw", secret_}, {"user", "alice"}}}}}});
  ASSERT_EQ(created.status, 201) << created.raw;
  Saw(created, "create");
  EXPECT_EQ(Str(created.obj(), "spec.variables.pw"), "<sensitive>");
  EXPECT_EQ(Str(created.obj(), "spec.variables.user"), "alice");

  Resp deploy = Action("db", "deploy");
  ASSERT_EQ(deploy.status, 202);
  Saw(deploy, "deploy");
  WaitPhase("db", "Success");
  ASSERT_TRUE(watch.WaitDone());
  ASSERT_FALSE(watch.lines().empty());
  for (const auto& l : watch.lines())
    EXPECT_EQ(l.find(secret_), std::string::npos) << "watch event shows the secret: " << l;

  // The script did get it (so the checks below would see a leak).
  EXPECT_NE(ReadFile(Path("stdin-db-1.json")).find("\"pw\":\"" + secret_ + "\""),
            std::string::npos);
  Resp log = api().Get(NsPath("default", "runs", "db-1") + "/log");
  ASSERT_EQ(log.status, 200);
  Saw(log, "run log");
  EXPECT_NE(log.raw.find("the password is ******\n"), std::string::npos) << log.raw;

  Saw(api().Get(NsPath("default", "computeinstances", "db")), "get");
  Saw(api().Get(NsPath("default", "computeinstances")), "list");
  Saw(api().Get(ClusterPath("computeinstances")), "list across projects");
  Saw(api().Get(NsPath("default", "runs")), "run list");
  Saw(api().Get(NsPath("default", "runs", "db-1")), "run");
  Saw(api().Get("/metrics"), "metrics");

  // Saving the manifest again (plaintext value) and redeploying keeps it sealed and working.
  Resp patched = api().Patch(
      NsPath("default", "computeinstances", "db"),
      json::object{{"spec", {{"description", "again"}, {"variables", {{"pw", secret_}}}}}});
  ASSERT_EQ(patched.status, 200) << patched.raw;
  Saw(patched, "patch");
  ASSERT_EQ(Action("db", "deploy").status, 202);
  WaitInstance(
      "db",
      [](const json::object& o) {
        return Str(o, "status.phase") == "Success" && Str(o, "status.lastRunRef.name") == "db-2";
      },
      "Success by db-2");
  EXPECT_NE(ReadFile(Path("stdin-db-2.json")).find("\"pw\":\"" + secret_ + "\""),
            std::string::npos);
  Saw(api().Get(NsPath("default", "runs", "db-2") + "/log"), "second run log");

  ExpectNotInDataDir();
  EXPECT_EQ(gantryd_->Log().find(secret_), std::string::npos) << "gantryd's own log";
}

// Regression (fixed): src/drivers/exec/exec_driver.cc:74 keeps the script's last five
// output lines unscrubbed, line 92 puts them into the error, and Engine::Finish
// (src/engine/engine.cc:543 for the run, :598 for the instance) copies that error into
// status.message. The run log masks the value as ******, but status.message of the Run and the
// ComputeInstance carries the sensitive value in plaintext: in GET answers, watch events, and
// gantry.db / gantry.db-wal. Input: a script that echoes a sensitive variable and exits 1.
// Expected: "…: the password is ******\nstill ******", as in the log.
TEST_F(SensitiveTest, AbsentFromStatusMessageWhenTheScriptFails) {
  Resp created = api().Post(
      NsPath("default", "computeinstances"),
      json::object{
          {"apiVersion", "paas.gantry.dev/v1"},
          {"kind", "ComputeInstance"},
          {"metadata", {{"name", "db"}}},
          {"spec", {{"profileRef", {{"name", "sec"}}}, {"variables", {{"pw", secret_}}}}}});
  ASSERT_EQ(created.status, 201) << created.raw;
  Touch("fail");
  ASSERT_EQ(Action("db", "deploy").status, 202);
  json::object failed = WaitPhase("db", "Failed");
  EXPECT_EQ(Str(failed, "status.reason"), "DriverError");
  Saw(api().Get(NsPath("default", "computeinstances", "db")), "get of the failed instance");
  Saw(api().Get(NsPath("default", "runs", "db-1")), "failed run");
  Saw(api().Get(NsPath("default", "runs", "db-1") + "/log"), "failed run's log");
  EXPECT_NE(Str(failed, "status.message").find("still ******"), std::string::npos)
      << Str(failed, "status.message");
  ExpectNotInDataDir();
}

// Graceful shutdown: a run in progress when SIGTERM arrives finishes, and gantryd exits 0.
class DrainTest : public RunsTest {
 protected:
  std::vector<std::string> Args() override { return {"--drain-seconds", "120"}; }
};

TEST_F(DrainTest, SigtermLetsARunInProgressFinishAndExitsZero) {
  Create("web");
  std::string run = DeployBlocked("web");
  // Release the script only once gantryd has begun to drain, from a helper thread, while the
  // test thread waits in Terminate().
  std::atomic<bool> released{false};
  std::thread releaser([&] {
    if (PollUntil([&] { return gantryd_->Log().find("received signal") != std::string::npos; })) {
      Touch("release-" + run);
      released = true;
    }
  });
  int code = gantryd_->Terminate();
  releaser.join();
  EXPECT_TRUE(released);
  EXPECT_EQ(code, 0) << gantryd_->Log();
  EXPECT_NE(gantryd_->Log().find("stopped"), std::string::npos) << gantryd_->Log();

  // The run's end was recorded before the exit: nothing to recover.
  ASSERT_TRUE(gantryd_->Restart().ok());
  Reconnect();
  json::object o = Get("web");
  EXPECT_EQ(Str(o, "status.phase"), "Success") << json::serialize(o);
  json::object r = GetRun(run);
  EXPECT_EQ(Str(r, "status.phase"), "Succeeded");
  EXPECT_EQ(Int(r, "status.attempt"), 1);
  EXPECT_EQ(gantryd_->Log().find("recovery:"), std::string::npos) << gantryd_->Log();
}

// A run longer than the drain period is left for the next start, which re-runs it (exec
// scripts are idempotent by contract) after killing what the old attempt left.
class NoDrainTest : public RunsTest {
 protected:
  std::vector<std::string> Args() override { return {"--drain-seconds", "0"}; }
};

TEST_F(NoDrainTest, SigtermLeavesALongRunRecoverable) {
  Create("web");
  std::string run = DeployBlocked("web");
  std::vector<int> old_scripts = ProcessesWith(script_);
  ASSERT_FALSE(old_scripts.empty());
  EXPECT_EQ(gantryd_->Terminate(), 0) << gantryd_->Log();
  fs::remove(Path("started-" + run));

  ASSERT_TRUE(gantryd_->Restart().ok());
  Reconnect();
  EXPECT_TRUE(PollUntil([&] {
    std::vector<int> now = ProcessesWith(script_);
    for (int pid : old_scripts)
      if (std::find(now.begin(), now.end(), pid) != now.end()) return false;
    return true;
  })) << "a script of the first attempt survived the restart";
  ASSERT_TRUE(WaitFile("started-" + run));  // attempt 2 runs
  Touch("release-" + run);
  json::object o = WaitPhase("web", "Success");
  EXPECT_EQ(Str(o, "status.lastRunRef.name"), run);
  json::object r = GetRun(run);
  EXPECT_EQ(Str(r, "status.phase"), "Succeeded");
  EXPECT_EQ(Int(r, "status.attempt"), 2);
  EXPECT_EQ(RunsOf("web").size(), 1u);
  std::string log = api().Get(NsPath("default", "runs", run) + "/log").raw;
  EXPECT_NE(log.find("gantry: gantryd restarted during attempt 1; the run is queued again (the "
                     "driver says re-running is safe)"),
            std::string::npos)
      << log;
}

// One worker held by a blocked deploy, so that other deploys stay queued.
class QueuedRunsTest : public RunsTest {
 protected:
  int Workers() override { return 1; }
};

// Regression (fixed): Engine::Cancel (src/engine/engine.cc:244-272) marks the queued
// run Canceled but never calls RunLogs::Finish (only Execute's end does, engine.cc:434). A
// client that followed the run's log while it was Queued (GET …/runs/NAME/log?follow=true;
// src/api/router.cc:114 registers it because the run is active) is never told the run ended:
// the stream stays open until gantryd stops. Expected: the stream ends on cancel.
TEST_F(QueuedRunsTest, FollowOfAQueuedRunEndsWhenItIsCanceled) {
  Create("hold");
  std::string hold = DeployBlocked("hold");
  Create("b");
  ASSERT_EQ(Action("b", "deploy").status, 202);
  ASSERT_EQ(Str(GetRun("b-1"), "status.phase"), "Queued");
  LineStreamReader follow(gantryd_->port(), NsPath("default", "runs", "b-1") + "/log?follow=true");
  // The answer's header arrives after the follower is registered.
  ASSERT_TRUE(PollUntil([&] { return follow.http_status() == 200; }));
  ASSERT_EQ(Action("b", "cancel").status, 202);
  EXPECT_TRUE(follow.WaitDone()) << "the followed log of a canceled run never ended";
  Touch("release-" + hold);
  WaitPhase("hold", "Success");
}

}  // namespace
}  // namespace gantry::testing
