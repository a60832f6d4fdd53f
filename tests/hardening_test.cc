// Integration tests of what someone on the network can make gantryd hold (issue 15, item 6):
// junk methods and paths add no metric series; audit records of unauthenticated callers are
// bounded and rate-limited per address; audit events are pruned after --audit-retention;
// --max-connections caps open connections; accept() backs off when out of file descriptors;
// writes waiting for the database hold no I/O thread (reads are still answered) and are
// committed together.
// Each runs against a real gantryd; nothing sleeps to synchronise (waits poll a condition
// with PollUntil, whose deadline only bounds a failure).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "engine_fixture.h"  // PollUntil
#include "gantryd_test.h"
#include "raw_socket.h"

namespace gantry::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;

// Sends one request (with Connection: close) on a fresh connection; returns the raw answer.
std::string Exchange(int port, const std::string& method, const std::string& target,
                     const std::string& headers = "") {
  int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers +
                    "Content-Length: 0\r\nConnection: close\r\n\r\n";
  (void)::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string out = ReadUntilClosed(fd);
  ::close(fd);
  return out;
}

int StatusOf(const std::string& raw) {
  return raw.rfind("HTTP/1.1 ", 0) == 0 && raw.size() >= 12 ? std::atoi(raw.c_str() + 9) : 0;
}

std::string BodyOf(const std::string& raw) {
  size_t end = raw.find("\r\n\r\n");
  return end == std::string::npos ? "" : raw.substr(end + 4);
}

// The sample lines of a /metrics text (no # HELP / # TYPE), as a set.
std::set<std::string> SeriesOf(const std::string& metrics) {
  std::set<std::string> out;
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out.insert(line.substr(0, line.rfind(' ')));
  return out;
}

// The value of the sample `series` (name and labels as rendered) in a /metrics text; -1 when
// absent.
double ValueOf(const std::string& metrics, const std::string& series) {
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return -1;
}

const std::string kBearer = "Authorization: Bearer " + std::string(kBootstrapToken) + "\r\n";

class HardeningTest : public GantrydTest {};

TEST_F(HardeningTest, JunkMethodsAndPathsAddNoMetricSeries) {
  const int port = gantryd_->port();
  int n = 0;
  // Every kind of junk: unknown methods, unknown /auth/ paths, unknown paths, unknown
  // subresources (authenticated), unauthenticated writes to unknown resources.
  auto junk = [&] {
    ++n;  // apart: the operands of + are unsequenced
    std::string r = std::to_string(n) + "x" + std::to_string(n * 7919);
    EXPECT_EQ(StatusOf(Exchange(port, "FOO" + r, "/")), 404);
    EXPECT_EQ(StatusOf(Exchange(port, "GET", "/auth/" + r)), 404);
    (void)Exchange(port, "GET", "/" + r + "/" + r);  // 404, or the web UI's index
    EXPECT_EQ(StatusOf(Exchange(port, "GET", NsPath("default", "computeinstances", "i") + "/" + r,
                                kBearer)),
              404);
    EXPECT_EQ(StatusOf(Exchange(port, "POST", std::string(kGroupPath) + "/" + r)), 401);
  };
  junk();                       // the first of each kind makes its (fixed) series
  (void)api().Get("/metrics");  // and so does the first look (counted after it is answered)
  std::string before = api().Get("/metrics").raw;
  for (int i = 0; i < 60; ++i) junk();  // 300 junk requests
  std::string after = api().Get("/metrics").raw;
  EXPECT_EQ(SeriesOf(before), SeriesOf(after)) << after;
  EXPECT_THAT(after, HasSubstr("gantry_http_requests_total{route=\"other\",method=\"other\","
                               "code=\"404\"} 61"));
  EXPECT_THAT(after, Not(HasSubstr("FOO")));
  EXPECT_THAT(after, Not(HasSubstr("x7919")));
}

TEST_F(HardeningTest, UnauthenticatedAuditRecordsAreBoundedAndRateLimited) {
  const int port = gantryd_->port();
  // Long, query-carrying, invalid-UTF-8 paths from one address, far over the limit.
  const std::string long_segment(4000, 'r');
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(StatusOf(Exchange(port, "DELETE",
                                std::string(kGroupPath) + "/namespaces/default/" + long_segment +
                                    "%FF%0A/x" + std::to_string(i) + "?secret=query-text")),
              401);
  // Authenticated callers are never limited: this one is recorded.
  ASSERT_EQ(api().Delete(ClusterPath("projects", "does-not-exist")).status, 404);

  Resp all = api().Get(ClusterPath("auditevents"));
  ASSERT_EQ(all.status, 200) << all.raw;
  int unauthenticated = 0;
  bool authenticated_seen = false;
  for (const auto& item : all.obj().at("items").as_array()) {
    const json::object& e = item.as_object();
    if (e.at("user") == "system:bootstrap") authenticated_seen = true;
    if (e.at("user") != "" || e.at("result") == "Dropped") continue;
    ++unauthenticated;
    EXPECT_EQ(e.at("code"), 401);
    std::string resource(e.at("objectRef").at("resource").as_string());
    EXPECT_LE(resource.size(), 63u) << resource;
    EXPECT_EQ(resource, std::string(63, 'r'));
  }
  EXPECT_TRUE(authenticated_seen) << all.raw;
  // The burst (20) got through; the rest were dropped, not recorded one by one.
  EXPECT_GE(unauthenticated, 20) << all.raw;
  EXPECT_LT(unauthenticated, 40) << all.raw;
  EXPECT_THAT(all.raw, Not(HasSubstr("query-text")));
  EXPECT_THAT(all.raw, Not(HasSubstr(std::string(64, 'r'))));
  std::string metrics = api().Get("/metrics").raw;
  EXPECT_GE(ValueOf(metrics, "gantry_audit_records_dropped_total"), 100 - 40) << metrics;

  // Once the address may record again, its next record comes after one summary of what was
  // dropped (polled: the bucket refills at 5 a second).
  ASSERT_TRUE(PollUntil([&] {
    Exchange(port, "POST", std::string(kGroupPath) + "/projects");
    Resp dropped = api().Get(ClusterPath("auditevents") + "?fieldSelector=result%3DDropped");
    return dropped.status == 200 && !dropped.obj().at("items").as_array().empty();
  }));
  Resp dropped = api().Get(ClusterPath("auditevents") + "?fieldSelector=result%3DDropped");
  const json::object& summary = dropped.obj().at("items").as_array().at(0).as_object();
  EXPECT_EQ(summary.at("code"), 429);
  EXPECT_EQ(summary.at("sourceAddress"), "127.0.0.1");
  EXPECT_THAT(std::string(summary.at("message").as_string()),
              HasSubstr(" of unauthenticated requests from 127.0.0.1 dropped: over the limit of "
                        "5 a second (bursts of 20)"));
}

class AuditRetentionTest : public GantrydTest {
 protected:
  std::vector<std::string> Args() override { return {"--audit-retention", "1s"}; }
};

TEST_F(AuditRetentionTest, EventsOlderThanTheRetentionArePruned) {
  Api anonymous(gantryd_->base_url(), "");
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(anonymous.Delete(ClusterPath("projects", "p" + std::to_string(i))).status, 401);
  ASSERT_EQ(api().Delete(ClusterPath("projects", "does-not-exist")).status, 404);
  // Pruned within a few seconds of being written: the count of pruned events proves they
  // were there, the empty list that they are gone.
  double pruned = 0;
  ASSERT_TRUE(PollUntil([&] {
    pruned = ValueOf(api().Get("/metrics").raw, "gantry_audit_events_pruned_total");
    Resp list = api().Get(ClusterPath("auditevents"));
    return pruned >= 4 && list.status == 200 && list.obj().at("items").as_array().empty();
  })) << "pruned "
      << pruned << "\n"
      << gantryd_->Log();
  EXPECT_TRUE(gantryd_->WaitForLog("audit events older than 1 s")) << gantryd_->Log();
}

class BadAuditRetentionTest : public ::testing::Test {};

TEST_F(BadAuditRetentionTest, AMalformedRetentionIsRefusedAtStartUp) {
  GantrydProcess gantryd({"--audit-retention", "forever"});
  absl::Status s = gantryd.Start();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(gantryd.Log(), HasSubstr("--audit-retention: \"forever\" is not a duration: use a "
                                       "whole number > 0 and one unit, s, m, h or d"));
}

class MaxConnectionsTest : public GantrydTest {
 protected:
  std::vector<std::string> Args() override { return {"--max-connections", "4"}; }

  // Polls until a new connection is served (the server notices closed ones on its own time).
  std::string ServedOnce(const std::string& target) {
    std::string raw;
    EXPECT_TRUE(PollUntil([&] {
      raw = Exchange(gantryd_->port(), "GET", target);
      return StatusOf(raw) == 200;
    })) << raw;
    return raw;
  }
};

TEST_F(MaxConnectionsTest, ConnectionsBeyondTheCapAreRefusedUntilOneCloses) {
  const int port = gantryd_->port();
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(ConnectLoopback(port));
  ASSERT_THAT(idle, Not(::testing::Contains(-1)));
  // The fifth is accepted after the four (one accept loop, in order) and refused at once.
  int fifth = ConnectLoopback(port);
  ASSERT_GE(fifth, 0);
  std::string refused = ReadUntilClosed(fifth);
  ::close(fifth);
  EXPECT_EQ(StatusOf(refused), 503) << refused;
  boost::system::error_code ec;
  json::value body = json::parse(BodyOf(refused), ec);
  ASSERT_FALSE(ec) << refused;
  EXPECT_EQ(body.at("kind"), "Status");
  EXPECT_EQ(body.at("reason"), "ServiceUnavailable");
  EXPECT_EQ(body.at("code"), 503);
  EXPECT_EQ(body.at("message"),
            "the server has the most open connections it allows (4); retry later, or close "
            "idle connections");

  // One closes: a new connection is served.
  ::close(idle[0]);
  idle.erase(idle.begin());
  EXPECT_THAT(ServedOnce("/healthz"), HasSubstr("ok"));
  std::string metrics = BodyOf(ServedOnce("/metrics"));
  EXPECT_GE(ValueOf(metrics, "gantry_http_connections_refused_total"), 1) << metrics;
  EXPECT_TRUE(gantryd_->WaitForLog(
      "4 connections are open, the most --max-connections allows: refusing new ones"))
      << gantryd_->Log();

  for (int fd : idle) ::close(fd);
  // Back to the one connection of this look (TearDown's client needs a free slot).
  EXPECT_TRUE(PollUntil([&] {
    return ValueOf(BodyOf(Exchange(port, "GET", "/metrics")), "gantry_http_open_connections") == 1;
  }));
}

class IdleTimeoutTest : public GantrydTest {
 protected:
  std::vector<std::string> Args() override {
    return {"--idle-timeout-seconds", "1", "--max-connections", "4"};
  }
};

// Connections that hold a slot without sending a whole request (slowloris) are closed after
// --idle-timeout-seconds, and so is a kept-alive connection between requests; their slots
// are given back.
TEST_F(IdleTimeoutTest, ConnectionsWithoutAWholeRequestAreClosedAndFreeTheirSlots) {
  const int port = gantryd_->port();
  int silent = ConnectLoopback(port);
  int half = ConnectLoopback(port);
  int kept = ConnectLoopback(port);
  ASSERT_GE(silent, 0);
  ASSERT_GE(half, 0);
  ASSERT_GE(kept, 0);
  const std::string partial = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
  ASSERT_EQ(::send(half, partial.data(), partial.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(partial.size()));
  const std::string whole = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  ASSERT_EQ(::send(kept, whole.data(), whole.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(whole.size()));

  // Each returns once the server closes it (the socket's own timeout is 120 s).
  EXPECT_EQ(ReadUntilClosed(silent), "");
  EXPECT_EQ(ReadUntilClosed(half), "");
  std::string answered = ReadUntilClosed(kept);
  EXPECT_EQ(StatusOf(answered), 200) << answered;
  for (int fd : {silent, half, kept}) ::close(fd);

  // All four slots are free again: four new connections, open at once, are all served (each
  // sends its request at once: one that waited a second would be closed unanswered).
  std::vector<int> fresh;
  for (int i = 0; i < 4; ++i) fresh.push_back(ConnectLoopback(port));
  for (int fd : fresh) {
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, whole.data(), whole.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(whole.size()));
  }
  for (int fd : fresh) {
    std::string raw = ReadUntilClosed(fd);
    EXPECT_EQ(StatusOf(raw), 200) << raw;
    ::close(fd);
  }
}

// Open file descriptors of process `pid`.
int OpenFds(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Makes gantryd fail a socket read (EAGAIN, then ECONNRESET): a connection sends half a
// request and is reset; returns once the server has closed it. Why: out of descriptors,
// UBSan's memory probe (it writes to a pipe() to test readability) fails too, and a vptr check
// that misses UBSan's type cache then reports a valid object (Boost's system error category,
// whose error codes asio makes for the failed accept) as invalid, which is fatal in a
// sanitizer build. A system error code made beforehand puts that type in the cache.
void WarmUpSystemErrors(int port) {
  int fd = ConnectLoopback(port);
  if (fd < 0) return;
  const std::string half = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  (void)::send(fd, half.data(), half.size(), MSG_NOSIGNAL);
  linger reset{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  ::close(fd);
  EXPECT_TRUE(PollUntil([&] {
    return ValueOf(BodyOf(Exchange(port, "GET", "/metrics")), "gantry_http_open_connections") == 1;
  }));
}

class AcceptBackoffTest : public GantrydTest {
 protected:
  // Belt and braces with WarmUpSystemErrors: a sanitizer's own misfire while the process is
  // out of descriptors is reported, not fatal; what this test checks is gantryd's.
  void Configure(GantrydProcess& gantryd) override {
    gantryd.SetEnv("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=0");
  }
};

TEST_F(AcceptBackoffTest, AcceptBacksOffWhenOutOfFileDescriptors) {
  WarmUpSystemErrors(gantryd_->port());
  // Leave gantryd a few descriptors more than it holds, then open more connections than that.
  rlimit keep{};
  ASSERT_EQ(::prlimit(gantryd_->pid(), RLIMIT_NOFILE, nullptr, &keep), 0) << std::strerror(errno);
  rlimit low = keep;
  low.rlim_cur = static_cast<rlim_t>(OpenFds(gantryd_->pid()) + 8);
  ASSERT_EQ(::prlimit(gantryd_->pid(), RLIMIT_NOFILE, &low, nullptr), 0) << std::strerror(errno);
  std::vector<int> held;
  for (int i = 0; i < 40; ++i) held.push_back(ConnectLoopback(gantryd_->port()));
  ASSERT_TRUE(PollUntil([&] {
    return gantryd_->Log().find("accept failed: ") != std::string::npos;
  })) << gantryd_->Log();
  for (int fd : held) ::close(fd);
  ASSERT_EQ(::prlimit(gantryd_->pid(), RLIMIT_NOFILE, &keep, nullptr), 0) << std::strerror(errno);
  std::string raw;
  ASSERT_TRUE(PollUntil([&] {
    raw = Exchange(gantryd_->port(), "GET", "/healthz");
    return StatusOf(raw) == 200;
  })) << raw;
  // One warning per episode of failures, each ended by a recovery: no busy loop of retries.
  std::string log = gantryd_->Log();
  EXPECT_THAT(log, HasSubstr("accept failed: Too many open files; backing off (100 ms doubling "
                             "to 1000 ms)"));
  EXPECT_GE(Count(log, "accept failed: "), 1) << log;
  EXPECT_EQ(Count(log, "accept failed: "), Count(log, "accepting connections again")) << log;
}

// One I/O thread: a write handled on it would hold it for as long as its commit waits.
class WritePathTest : public GantrydTest {
 protected:
  static constexpr int kWrites = 16;
  std::vector<std::string> Args() override { return {"--threads", "1"}; }
};

// Another process holds SQLite's write lock (as a slow disk or a long checkpoint would make
// the writer wait): 16 creates sent at once all wait in the store's queue, with one I/O
// thread, and GETs are answered meanwhile. Once the lock is gone, the waiting creates are
// committed together: 16 calls in at most 2 transactions (the leader's own, then the rest).
TEST_F(WritePathTest, WritesWaitingForTheDatabaseHoldNoIoThreadAndCommitTogether) {
  if (TestStoreIsPostgres()) GTEST_SKIP() << "holds the SQLite file's write lock";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((gantryd_->data_dir() + "/gantry.db").c_str(), &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 30000);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  const std::string before = api().Get("/metrics").raw;
  std::vector<int> codes(kWrites, 0);
  std::vector<std::thread> writers;
  for (int i = 0; i < kWrites; ++i)
    writers.emplace_back([&, i] {
      Api own(gantryd_->base_url());
      codes[i] = own.Post("/apis/paas.gantry.dev/v1/projects",
                          json::object{{"apiVersion", "paas.gantry.dev/v1"},
                                       {"kind", "Project"},
                                       {"metadata", {{"name", "queued-" + std::to_string(i)}}}})
                     .status;
    });
  // Served on the one I/O thread while every create waits for the writer.
  std::string during;
  EXPECT_TRUE(PollUntil([&] {
    during = api().Get("/metrics").raw;
    return ValueOf(during, "gantry_store_commits_waiting") >= kWrites;
  })) << during;
  EXPECT_EQ(api().Get("/apis/paas.gantry.dev/v1/projects").status, 200);
  ASSERT_EQ(sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  for (auto& t : writers) t.join();
  for (int i = 0; i < kWrites; ++i) EXPECT_EQ(codes[i], 201) << "create " << i;
  const std::string after = api().Get("/metrics").raw;
  const double calls =
      ValueOf(after, "gantry_store_commits_total") - ValueOf(before, "gantry_store_commits_total");
  const double transactions = ValueOf(after, "gantry_store_transactions_total") -
                              ValueOf(before, "gantry_store_transactions_total");
  // Writes after the creates (their audit records, the engine's) add a call and at most
  // one transaction each; the creates add 16 calls in at most 2.
  EXPECT_GE(calls - transactions, kWrites - 2) << before << "\n----\n" << after;
}

// A create and its audit record are one commit (docs/performance.md, issue 22): 20 creates
// one after another make 20 store calls, not 40, and each record is there with its name,
// code and caller. A refused create (409: the name is taken) is still recorded, on its own.
TEST_F(WritePathTest, ACreateAndItsAuditRecordAreCommittedTogether) {
  constexpr int kCreates = 20;
  auto project = [](const std::string& name) {
    return json::object{
        {"apiVersion", "paas.gantry.dev/v1"}, {"kind", "Project"}, {"metadata", {{"name", name}}}};
  };
  const std::string before = api().Get("/metrics").raw;
  for (int i = 0; i < kCreates; ++i)
    ASSERT_EQ(
        api().Post("/apis/paas.gantry.dev/v1/projects", project("one-" + std::to_string(i))).status,
        201);
  const std::string after = api().Get("/metrics").raw;
  const double calls =
      ValueOf(after, "gantry_store_commits_total") - ValueOf(before, "gantry_store_commits_total");
  // A few writes of gantryd's own monitors may fall in between; a second call per create
  // would be 20 more.
  EXPECT_GE(calls, kCreates);
  EXPECT_LT(calls, kCreates + 5) << before << "\n----\n" << after;
  EXPECT_EQ(api().Post("/apis/paas.gantry.dev/v1/projects", project("one-0")).status, 409);
  Resp audit = api().Get("/apis/paas.gantry.dev/v1/auditevents");
  ASSERT_EQ(audit.status, 200) << audit.raw;
  std::vector<std::string> records;  // of one-0's create and of the refused one (no name)
  for (const auto& e : audit.obj().at("items").as_array()) {
    const json::object& o = e.as_object();
    if (Str(o, "objectRef.resource") != "projects" || Str(o, "verb") != "create") continue;
    if (Str(o, "objectRef.name") != "one-0" && Int(o, "code") != 409) continue;
    records.push_back(Str(o, "objectRef.name") + " " + Str(o, "result") + " " +
                      std::to_string(Int(o, "code")) + " " + Str(o, "user"));
  }
  std::sort(records.begin(), records.end());
  EXPECT_EQ(records, (std::vector<std::string>{" Failed 409 system:bootstrap",
                                               "one-0 Allowed 201 system:bootstrap"}));
}

// Updates and patches are committed with their audit record too: 5 PUTs, 5 merge patches and
// 5 JSON patches that change a project make 15 store calls (not 30), each recorded with its
// verb and code. A patch that changes nothing commits no object and is still recorded (by
// Handle, one call); a PUT with a stale resourceVersion (409) likewise.
TEST_F(WritePathTest, AnUpdateAndItsAuditRecordAreCommittedTogether) {
  const std::string path = "/apis/paas.gantry.dev/v1/projects/up";
  api().CreateProject("up");
  auto with_label = [&](int i) {
    return json::object{{"apiVersion", "paas.gantry.dev/v1"},
                        {"kind", "Project"},
                        {"metadata", {{"name", "up"}, {"labels", {{"n", std::to_string(i)}}}}}};
  };
  const std::string before = api().Get("/metrics").raw;
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(api().Put(path, with_label(i)).status, 200);
    ASSERT_EQ(api()
                  .Patch(path, json::parse(R"({"metadata":{"labels":{"m":")" + std::to_string(i) +
                                           R"("}}})"))
                  .status,
              200);
    ASSERT_EQ(api()
                  .Call("PATCH", path,
                        R"([{"op":"add","path":"/metadata/annotations","value":{"a":")" +
                            std::to_string(i) + R"("}}])",
                        "application/json-patch+json")
                  .status,
              200);
  }
  const std::string after = api().Get("/metrics").raw;
  const double calls =
      ValueOf(after, "gantry_store_commits_total") - ValueOf(before, "gantry_store_commits_total");
  EXPECT_GE(calls, 15);
  EXPECT_LT(calls, 15 + 5) << before << "\n----\n" << after;

  const double no_op_before = ValueOf(api().Get("/metrics").raw, "gantry_store_commits_total");
  ASSERT_EQ(api().Patch(path, json::parse(R"({"metadata":{"labels":{"m":"4"}}})")).status, 200);
  json::object stale = with_label(9);
  stale["metadata"].as_object()["resourceVersion"] = "1";
  ASSERT_EQ(api().Put(path, stale).status, 409);
  const double no_op_calls =
      ValueOf(api().Get("/metrics").raw, "gantry_store_commits_total") - no_op_before;
  EXPECT_GE(no_op_calls, 2);  // the two records, each on its own
  EXPECT_LT(no_op_calls, 2 + 5);

  Resp audit = api().Get("/apis/paas.gantry.dev/v1/auditevents");
  ASSERT_EQ(audit.status, 200) << audit.raw;
  std::map<std::string, int> seen;  // "verb code result" -> records of project up
  for (const auto& e : audit.obj().at("items").as_array()) {
    const json::object& o = e.as_object();
    if (Str(o, "objectRef.resource") != "projects" || Str(o, "objectRef.name") != "up") continue;
    seen[Str(o, "verb") + " " + std::to_string(Int(o, "code")) + " " + Str(o, "result")] += 1;
  }
  EXPECT_EQ(seen, (std::map<std::string, int>{{"create 201 Allowed", 1},
                                              {"patch 200 Allowed", 11},
                                              {"update 200 Allowed", 5},
                                              {"update 409 Failed", 1}}));
}

// Server-side apply (creating, then changing) and a delete commit their audit record with
// the object too: three writes make three store calls, recorded with their codes.
TEST_F(WritePathTest, AnApplyAndADeleteAreCommittedWithTheirAuditRecord) {
  const std::string path = "/apis/paas.gantry.dev/v1/projects/applied";
  auto apply = [&](const std::string& team) {
    return api().Call("PATCH", path + "?fieldManager=hardening",
                      "apiVersion: paas.gantry.dev/v1\nkind: Project\nmetadata:\n  name: "
                      "applied\n  labels:\n    team: " +
                          team + "\n",
                      "application/apply-patch+yaml");
  };
  const std::string before = api().Get("/metrics").raw;
  Resp created = apply("a");
  ASSERT_EQ(created.status, 201) << created.raw;
  Resp changed = apply("b");
  ASSERT_EQ(changed.status, 200) << changed.raw;
  Resp deleted = api().Call("DELETE", path, "", "application/json");
  ASSERT_EQ(deleted.status, 200) << deleted.raw;
  const std::string after = api().Get("/metrics").raw;
  const double calls =
      ValueOf(after, "gantry_store_commits_total") - ValueOf(before, "gantry_store_commits_total");
  EXPECT_GE(calls, 3);
  EXPECT_LT(calls, 3 + 3) << before << "\n----\n" << after;

  Resp audit = api().Get("/apis/paas.gantry.dev/v1/auditevents");
  ASSERT_EQ(audit.status, 200) << audit.raw;
  std::map<std::string, int> seen;  // "verb code result" -> records of project applied
  for (const auto& e : audit.obj().at("items").as_array()) {
    const json::object& o = e.as_object();
    if (Str(o, "objectRef.resource") != "projects" || Str(o, "objectRef.name") != "applied")
      continue;
    seen[Str(o, "verb") + " " + std::to_string(Int(o, "code")) + " " + Str(o, "result")] += 1;
  }
  EXPECT_EQ(seen,
            (std::map<std::string, int>{
                {"patch 201 Allowed", 1}, {"patch 200 Allowed", 1}, {"delete 200 Allowed", 1}}));
}

}  // namespace
}  // namespace gantry::testing
