// A real HTTP webhook receiver for the tests: a listening socket on 127.0.0.1 (port 0 on the
// first Start, the same port after a Stop), one thread per connection, that records every
// POST (headers and exact body) and answers by a script: the next N requests answer 500, or
// hang (no answer until Release or Stop), then 200. With UseTls it speaks HTTPS (OpenSSL)
// with the given certificate and counts the handshakes the client broke off.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct ssl_ctx_st;

namespace gantry::testing {

struct Received {
  std::string delivery;   // X-Gantry-Delivery
  std::string signature;  // X-Gantry-Signature
  std::string event;      // X-Gantry-Event
  std::string body;
  int answered = 0;  // the status sent back (0: none, it hung)
};

class Receiver {
 public:
  Receiver();
  ~Receiver();

  // HTTPS with this PEM certificate and key (call before Start); false when they do not load.
  bool UseTls(const std::string& cert_file, const std::string& key_file);
  // Listens (again, on the same port after Stop). Returns the port.
  int Start();
  // Closes the listener and every connection: senders see a refused connection.
  void Stop();
  // "http://127.0.0.1:PORT/hook" ("https://" with UseTls).
  std::string url() const;
  // TLS handshakes that failed (the client refused the certificate, say).
  int failed_handshakes() const;

  // The next `n` requests answer 500 / hang.
  void FailNext(int n);
  void HangNext(int n);

  std::vector<Received> received() const;
  // Waits until pred(received) holds (bounded by a generous deadline: only a failure).
  bool WaitFor(const std::function<bool(const std::vector<Received>&)>& pred);

 private:
  void AcceptLoop(int listen_fd);
  void Serve(int fd);

  ssl_ctx_st* tls_ = nullptr;  // SSL_CTX, with UseTls
  int failed_handshakes_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int port_ = 0;
  int listen_fd_ = -1;
  bool stopping_ = false;
  int fail_next_ = 0;
  int hang_next_ = 0;
  std::vector<Received> received_;
  std::vector<int> conns_;
  std::thread acceptor_;
  std::vector<std::thread> servers_;
};

// "sha256=<hex HMAC-SHA256(body, secret)>", computed here with OpenSSL's HMAC.
std::string ExpectedSignature(const std::string& secret, const std::string& body);

}  // namespace gantry::testing
