#include "receiver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>

namespace gantry::testing {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One accepted connection: plain, or TLS once the handshake is done.
struct Io {
  int fd;
  SSL* ssl = nullptr;
  ssize_t Recv(char* buf, size_t n) const {
    return ssl ? SSL_read(ssl, buf, static_cast<int>(n)) : ::recv(fd, buf, n, 0);
  }
  void Send(const std::string& bytes) const {
    if (ssl)
      (void)SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size()));
    else
      (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
};

// Reads one request: its headers (lower-cased names) and body (Content-Length bytes).
bool ReadRequest(const Io& io, std::map<std::string, std::string>* headers, std::string* body) {
  std::string buf;
  char chunk[4096];
  size_t end = std::string::npos;
  while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = io.Recv(chunk, sizeof chunk);
    if (n <= 0) return false;
    buf.append(chunk, static_cast<size_t>(n));
  }
  size_t pos = buf.find("\r\n") + 2;
  while (pos < end) {
    size_t eol = buf.find("\r\n", pos);
    std::string line = buf.substr(pos, eol - pos);
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(' '));
      (*headers)[Lower(line.substr(0, colon))] = v;
    }
    pos = eol + 2;
  }
  size_t length =
      std::stoul((*headers)["content-length"].empty() ? "0" : (*headers)["content-length"]);
  *body = buf.substr(end + 4);
  while (body->size() < length) {
    ssize_t n = io.Recv(chunk, sizeof chunk);
    if (n <= 0) return false;
    body->append(chunk, static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string ExpectedSignature(const std::string& secret, const std::string& body) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), md, &len);
  char hex[3];
  std::string out = "sha256=";
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(hex, sizeof hex, "%02x", md[i]);
    out += hex;
  }
  return out;
}

Receiver::Receiver() = default;

Receiver::~Receiver() {
  Stop();
  if (tls_) SSL_CTX_free(tls_);
}

bool Receiver::UseTls(const std::string& cert_file, const std::string& key_file) {
  std::signal(SIGPIPE, SIG_IGN);  // SSL_write to a client that went away
  tls_ = SSL_CTX_new(TLS_server_method());
  return tls_ && SSL_CTX_use_certificate_chain_file(tls_, cert_file.c_str()) == 1 &&
         SSL_CTX_use_PrivateKey_file(tls_, key_file.c_str(), SSL_FILETYPE_PEM) == 1;
}

int Receiver::failed_handshakes() const {
  std::lock_guard lock(mu_);
  return failed_handshakes_;
}

int Receiver::Start() {
  std::lock_guard lock(mu_);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) {
    ::close(fd);
    return -1;
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  listen_fd_ = fd;
  stopping_ = false;
  acceptor_ = std::thread([this, fd] { AcceptLoop(fd); });
  return port_;
}

void Receiver::Stop() {
  std::vector<std::thread> servers;
  std::thread acceptor;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
    for (int c : conns_) ::shutdown(c, SHUT_RDWR);
    servers.swap(servers_);
    acceptor.swap(acceptor_);
  }
  cv_.notify_all();
  if (acceptor.joinable()) acceptor.join();
  for (auto& t : servers) t.join();
  std::lock_guard lock(mu_);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  conns_.clear();
}

std::string Receiver::url() const {
  std::lock_guard lock(mu_);
  return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) + "/hook";
}

void Receiver::FailNext(int n) {
  std::lock_guard lock(mu_);
  fail_next_ = n;
}

void Receiver::HangNext(int n) {
  std::lock_guard lock(mu_);
  hang_next_ = n;
}

std::vector<Received> Receiver::received() const {
  std::lock_guard lock(mu_);
  return received_;
}

bool Receiver::WaitFor(const std::function<bool(const std::vector<Received>&)>& pred) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, std::chrono::seconds(120), [&] { return pred(received_); });
}

void Receiver::AcceptLoop(int listen_fd) {
  for (;;) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    std::lock_guard lock(mu_);
    if (fd < 0 || stopping_) {
      if (fd >= 0) ::close(fd);
      return;
    }
    conns_.push_back(fd);
    servers_.emplace_back([this, fd] { Serve(fd); });
  }
}

void Receiver::Serve(int fd) {
  std::map<std::string, std::string> headers;
  std::string body;
  Io io{fd};
  bool ready = true;
  if (tls_) {
    io.ssl = SSL_new(tls_);
    SSL_set_fd(io.ssl, fd);
    ready = SSL_accept(io.ssl) == 1;
    if (!ready) {
      std::lock_guard lock(mu_);
      ++failed_handshakes_;
      cv_.notify_all();
    }
  }
  if (ready && ReadRequest(io, &headers, &body)) {
    int answer = 200;
    {
      std::unique_lock lock(mu_);
      if (hang_next_ > 0) {
        --hang_next_;
        answer = 0;
      } else if (fail_next_ > 0) {
        --fail_next_;
        answer = 500;
      }
      received_.push_back({headers["x-gantry-delivery"], headers["x-gantry-signature"],
                           headers["x-gantry-event"], body, answer});
      cv_.notify_all();
      if (answer == 0) cv_.wait(lock, [&] { return stopping_; });  // hangs until Stop
    }
    if (answer != 0) {
      std::string reply = "HTTP/1.1 " + std::to_string(answer) +
                          (answer == 200 ? " OK" : " Internal Server Error") +
                          "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      io.Send(reply);
    }
  }
  if (io.ssl) SSL_free(io.ssl);
  std::lock_guard lock(mu_);
  conns_.erase(std::remove(conns_.begin(), conns_.end(), fd), conns_.end());
  ::close(fd);
}

}  // namespace gantry::testing
