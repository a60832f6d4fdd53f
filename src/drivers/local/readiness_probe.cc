#include "drivers/local/readiness_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gantry::drivers::local {
namespace {

using SteadyClock = std::chrono::steady_clock;

int MillisLeft(SteadyClock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// A connected non-blocking socket, or -1 with `why` set.
int Connect(int port, SteadyClock::time_point deadline, std::string* why) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *why = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  if (rc != 0 && errno != EINPROGRESS) {
    *why = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (rc != 0) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, MillisLeft(deadline)) <= 0) {
      *why = "connect timed out";
      ::close(fd);
      return -1;
    }
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      *why = std::strerror(err);
      ::close(fd);
      return -1;
    }
  }
  return fd;
}

}  // namespace

absl::Status ProbeTcp(int port, std::chrono::milliseconds timeout) {
  std::string why;
  int fd = Connect(port, SteadyClock::now() + timeout, &why);
  if (fd < 0) return absl::UnavailableError(why);
  ::close(fd);
  return absl::OkStatus();
}

absl::Status ProbeHttp(int port, std::string_view path, std::chrono::milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  std::string why;
  int fd = Connect(port, deadline, &why);
  if (fd < 0) return absl::UnavailableError(why);
  std::string request = "GET " + std::string(path) +
                        " HTTP/1.0\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nUser-Agent: gantry-readiness\r\nConnection: close\r\n\r\n";
  size_t sent = 0;
  std::string response;
  absl::Status result = absl::UnavailableError("no answer");
  while (true) {
    short events = sent < request.size() ? POLLOUT : POLLIN;
    pollfd p{fd, events, 0};
    if (::poll(&p, 1, MillisLeft(deadline)) <= 0) {
      result = absl::UnavailableError("no answer within " + std::to_string(timeout.count()) + "ms");
      break;
    }
    if (sent < request.size()) {
      ssize_t w = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (w < 0 && errno != EAGAIN) {
        result = absl::UnavailableError(std::string("send: ") + std::strerror(errno));
        break;
      }
      if (w > 0) sent += static_cast<size_t>(w);
      continue;
    }
    char buf[512];
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r < 0 && errno == EAGAIN) continue;
    if (r > 0) response.append(buf, static_cast<size_t>(r));
    size_t eol = response.find("\r\n");
    if (eol == std::string::npos) eol = response.find('\n');
    if (eol != std::string::npos || r <= 0 || response.size() > 4096) {
      // "HTTP/1.1 200 OK"
      std::string line = response.substr(0, eol == std::string::npos ? response.size() : eol);
      int code = 0;
      if (line.rfind("HTTP/", 0) == 0) {
        size_t sp = line.find(' ');
        if (sp != std::string::npos) code = std::atoi(line.c_str() + sp + 1);
      }
      if (code >= 200 && code < 400)
        result = absl::OkStatus();
      else if (code > 0)
        result = absl::UnavailableError("answered " + std::to_string(code));
      else
        result = absl::UnavailableError(line.empty() ? "closed without answering"
                                                     : "did not answer with HTTP");
      break;
    }
  }
  ::close(fd);
  return result;
}

}  // namespace gantry::drivers::local
