#include "client/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gantry::client {
namespace {

// A loopback HTTP server on port 0, driven by a script: for each request it calls `handler`
// with the raw request head + body and writes back what it returns; `close_after` closes the
// connection after the answer (as an idle keep-alive timeout would).
class ScriptedServer {
 public:
  struct Reply {
    std::string bytes;
    bool close_after = false;
    // When set: after `bytes`, the server calls pause() and then sends `then` (a stream that
    // goes on once the client has reacted to what came first).
    std::function<void()> pause;
    std::string then;
  };
  using Handler = std::function<Reply(const std::string& request)>;

  explicit ScriptedServer(Handler handler) : handler_(std::move(handler)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(fd_, 8);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~ScriptedServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }
  int accepted() const { return accepted_; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }

 private:
  void Loop() {
    while (!stop_) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      ++accepted_;
      Serve(c);
      ::close(c);
    }
  }
  void Serve(int c) {
    std::string buf;
    char tmp[4096];
    while (true) {
      size_t head_end;
      while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = ::recv(c, tmp, sizeof(tmp), 0);
        if (n <= 0) return;
        buf.append(tmp, static_cast<size_t>(n));
      }
      size_t body_len = 0;
      std::string head = buf.substr(0, head_end);
      size_t cl = head.find("Content-Length: ");
      if (cl != std::string::npos) {
        (void)absl::SimpleAtoi(head.substr(cl + 16, head.find("\r\n", cl) - cl - 16), &body_len);
      }
      while (buf.size() < head_end + 4 + body_len) {
        ssize_t n = ::recv(c, tmp, sizeof(tmp), 0);
        if (n <= 0) return;
        buf.append(tmp, static_cast<size_t>(n));
      }
      std::string request = buf.substr(0, head_end + 4 + body_len);
      buf.erase(0, request.size());
      {
        std::lock_guard<std::mutex> l(mu_);
        requests_.push_back(request);
      }
      Reply r = handler_(request);
      ::send(c, r.bytes.data(), r.bytes.size(), MSG_NOSIGNAL);
      if (r.pause) {
        r.pause();
        ::send(c, r.then.data(), r.then.size(), MSG_NOSIGNAL);
      }
      if (r.close_after) return;
    }
  }

  Handler handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

std::string Ok(const std::string& body) {
  return absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ",
                      body.size(), "\r\nX-Test: a\r\n\r\n", body);
}

TEST(HttpClient, SendsAndReusesTheConnection) {
  ScriptedServer server([](const std::string& req) {
    return ScriptedServer::Reply{Ok(absl::StrCat("{\"n\":", req.size(), "}")), false, {}, {}};
  });
  HttpClient client(server.url(), "tok123");
  auto r1 = client.Send("GET", "/apis/x?limit=500");
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ(r1->status, 200);
  EXPECT_EQ(r1->content_type, "application/json");
  EXPECT_EQ(r1->headers.at("x-test"), "a");
  auto r2 = client.Send("POST", "/apis/y", "{\"a\":1}");
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(client.connections_opened_for_test(), 1);
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_TRUE(absl::StartsWith(reqs[0], "GET /apis/x?limit=500 HTTP/1.1\r\n")) << reqs[0];
  EXPECT_TRUE(absl::StrContains(reqs[0], "Authorization: Bearer tok123\r\n"));
  EXPECT_TRUE(absl::StrContains(reqs[1], "Content-Type: application/json\r\n"));
  EXPECT_TRUE(absl::EndsWith(reqs[1], "\r\n\r\n{\"a\":1}"));
}

TEST(HttpClient, NoAuthorizationWithoutToken) {
  ScriptedServer server([](const std::string&) {
    return ScriptedServer::Reply{Ok("{}"), false, {}, {}};
  });
  HttpClient client(server.url());
  ASSERT_TRUE(client.Send("GET", "/x").ok());
  EXPECT_FALSE(absl::StrContains(server.requests()[0], "Authorization"));
}

TEST(HttpClient, ReconnectsOnceWhenTheServerDroppedAnIdleConnection) {
  ScriptedServer server([](const std::string&) {
    return ScriptedServer::Reply{Ok("{}"), /*close_after=*/true, {}, {}};
  });
  HttpClient client(server.url());
  for (int i = 0; i < 3; ++i) {
    auto r = client.Send("GET", "/x");
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
    EXPECT_EQ(r->status, 200);
  }
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(HttpClient, ConnectionRefusedNamesTheServer) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  ::close(fd);  // nothing listens there now
  std::string url = absl::StrCat("http://127.0.0.1:", port);
  HttpClient client(url);
  auto r = client.Send("GET", "/x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(),
            absl::StrCat("cannot reach gantryd at ", url, ": connection refused"));
  EXPECT_EQ(client.Stream("/x", [](std::string_view) { return true; }).code(),
            absl::StatusCode::kUnavailable);
}

// A port where the kernel completes connections that nobody accepts or answers: a server
// that hangs after accepting, as far as a client can tell.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(fd_, 8);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentListener() { ::close(fd_); }
  std::string url(const char* scheme) const { return absl::StrCat(scheme, "://127.0.0.1:", port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(HttpClient, ABoundedSendGivesUpOnAServerThatNeverAnswers) {
  SilentListener silent;
  HttpClient plain(silent.url("http"));
  plain.SetTimeout(std::chrono::milliseconds(200));
  auto r = plain.Send("GET", "/.well-known/openid-configuration");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_EQ(r.status().message(), absl::StrCat("no answer from ", silent.url("http"),
                                               " in time (waiting for the answer)"));
  // https://: the TLS handshake is bounded as well.
  HttpClient tls(silent.url("https"));
  tls.SetTimeout(std::chrono::milliseconds(200));
  r = tls.Send("GET", "/");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_EQ(r.status().message(), absl::StrCat("no answer from ", silent.url("https"),
                                               " in time (in the TLS handshake)"));
}

TEST(HttpClient, ABoundedSendAnswersAndKeepsTheConnection) {
  ScriptedServer server([](const std::string&) {
    return ScriptedServer::Reply{Ok("{\"a\":1}"), false, {}, {}};
  });
  HttpClient client(server.url());
  client.SetTimeout(std::chrono::seconds(30));
  for (int i = 0; i < 2; ++i) {
    auto r = client.Send("POST", "/x", "{}");
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "{\"a\":1}");
  }
  EXPECT_EQ(client.connections_opened_for_test(), 1);
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST(HttpClient, BadUrlsAndUnreadableCaFilesAreRefused) {
  HttpClient tls("https://example.com", "", TlsOptions{"/nonexistent/ca.pem"});
  auto r = tls.Send("GET", "/");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("cannot load CA certificates from /nonexistent/ca.pem"),
            std::string::npos)
      << r.status();
  HttpClient ftp("ftp://example.com");
  EXPECT_EQ(ftp.Send("GET", "/").status().code(), absl::StatusCode::kInvalidArgument);
  HttpClient bad("not a url");
  EXPECT_EQ(bad.Send("GET", "/").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(HttpClient, StreamsChunkedLinesAndStopsOnRequest) {
  ScriptedServer server([](const std::string&) {
    std::string body =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\n{\"a\":\r\n"
        "8\r\n1}\r\n{\"b\"\r\n"
        "6\r\n:2}\n{\"\r\n"
        "0\r\n\r\n";
    return ScriptedServer::Reply{body, true, {}, {}};
  });
  HttpClient client(server.url());
  std::vector<std::string> lines;
  absl::Status s = client.Stream("/w?watch=true", [&](std::string_view l) {
    lines.emplace_back(l);
    return true;
  });
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "{\"a\":1}");
  EXPECT_EQ(lines[1], "{\"b\":2}");
  EXPECT_EQ(lines[2], "{\"");

  lines.clear();
  s = client.Stream("/w", [&](std::string_view l) {
    lines.emplace_back(l);
    return false;
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(lines.size(), 1u);
}

// A watch event must reach on_line as soon as its line is complete, not when more bytes
// arrive behind it: the server sends the next chunk only once the client has seen the first
// line (the wait is bounded so that a regression fails instead of hanging).
TEST(HttpClient, StreamDeliversEachLineWithoutWaitingForMore) {
  std::mutex mu;
  std::condition_variable cv;
  bool seen_first = false;
  bool seen_in_time = false;
  ScriptedServer server([&](const std::string&) {
    ScriptedServer::Reply r;
    r.bytes = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{\"a\":1}\n\r\n";
    r.pause = [&] {
      std::unique_lock<std::mutex> l(mu);
      seen_in_time = cv.wait_for(l, std::chrono::seconds(30), [&] { return seen_first; });
    };
    r.then = "8\r\n{\"b\":2}\n\r\n0\r\n\r\n";
    r.close_after = true;
    return r;
  });
  HttpClient client(server.url());
  std::vector<std::string> lines;
  absl::Status s = client.Stream("/w?watch=true", [&](std::string_view l) {
    lines.emplace_back(l);
    std::lock_guard<std::mutex> g(mu);
    seen_first = true;
    cv.notify_all();
    return true;
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE(seen_in_time);
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
}

TEST(HttpClient, StreamsCloseDelimitedBodies) {
  ScriptedServer server([](const std::string&) {
    return ScriptedServer::Reply{
        "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nline 1\nline 2\n", true, {}, {}};
  });
  HttpClient client(server.url());
  std::vector<std::string> lines;
  absl::Status s = client.Stream("/log?follow=true", [&](std::string_view l) {
    lines.emplace_back(l);
    return true;
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(lines, (std::vector<std::string>{"line 1", "line 2"}));
}

TEST(HttpClient, StreamErrorAnswerBecomesStatus) {
  ScriptedServer server([](const std::string&) {
    std::string body = R"({"kind":"Status","code":404,"reason":"NotFound","message":"gone"})";
    return ScriptedServer::Reply{
        absl::StrCat("HTTP/1.1 404 Not Found\r\nContent-Length: ", body.size(), "\r\n\r\n", body),
        true,
        {},
        {}};
  });
  HttpClient client(server.url());
  absl::Status s = client.Stream("/x", [](std::string_view) { return true; });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "gone");
}

}  // namespace
}  // namespace gantry::client
