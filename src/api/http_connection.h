#pragma once

// One HTTP/1.1 connection's bytes, plain TCP or TLS. api/server.cc's request loop is written
// once against this interface, so Asio's composed operations are instantiated per stream
// type only for the few calls made here (read some, write all, the TLS handshake and
// shutdown), and not for every HTTP read and write of the loop: server.cc, the cold build's
// longest file, compiles in 14 s instead of 53 s (docs/performance.md). Requests are parsed
// with Beast's parser over a flat buffer; responses are written as bytes (SerializeHead and
// the body as it is, or chunk by chunk).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace gantry::api {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Clock = std::chrono::steady_clock;
  using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

  virtual ~Connection() = default;

  // Reads from the connection into `buffer` until `parser` holds a whole request (bytes of
  // a next, pipelined request stay in `buffer`). http::error::end_of_stream when the peer
  // closed before a request began; beast::error::timeout past the deadline; the parser's
  // errors (body_limit, header_limit, bad_*) for malformed or oversize requests.
  boost::asio::awaitable<boost::system::error_code> ReadRequest(boost::beast::flat_buffer& buffer,
                                                                RequestParser& parser);
  // Writes the pieces in order (any may be empty). The views must stay valid until done.
  virtual boost::asio::awaitable<boost::system::error_code> Write(std::string_view a,
                                                                  std::string_view b = {},
                                                                  std::string_view c = {}) = 0;
  // Writes `data` as one chunk of a chunked body; empty `data` is the last chunk, which ends
  // the body.
  boost::asio::awaitable<boost::system::error_code> WriteChunk(std::string_view data);
  // Ends the connection politely: the TLS close_notify (within 5 s), then no more sending.
  virtual boost::asio::awaitable<void> Finish() = 0;

  // Reads and writes still running `after` from now fail with beast::error::timeout (the
  // connection is closed then); ExpiresNever lifts the deadline.
  void ExpiresAfter(Clock::duration after);
  void ExpiresNever();
  // Starts watching the deadline (the factories below call it once the object is shared).
  void Start();
  // Stops the deadline's watch and closes the socket. Call once, when the session ends.
  void Close();
  // `ended` runs once, at the moment the peer can first see the connection end: just before
  // the deadline closes the socket, a plain connection's Finish, or Close. The server gives
  // the connection's slot back there, so a client that reconnects as soon as it sees its
  // connection closed finds the slot free (a TLS connection's slot stays taken through its
  // close_notify, which can last 5 s: releasing it earlier would let a peer that never
  // answers hold file descriptors beyond --max-connections).
  void OnEnd(std::function<void()> ended);

 protected:
  Connection(boost::asio::ip::tcp::socket& socket, boost::asio::any_io_executor executor);
  virtual boost::asio::awaitable<std::pair<boost::system::error_code, size_t>> ReadSome(
      boost::asio::mutable_buffer into) = 0;
  // What an operation that failed with `ec` reports: timeout once the deadline closed us.
  boost::system::error_code Failed(boost::system::error_code ec) const;
  // Runs OnEnd's function, the first time only.
  void Ending();

 private:
  // Waits for the timer; OnTimer closes the socket once the deadline has passed.
  void Watch();
  void OnTimer();

  boost::asio::ip::tcp::socket& socket_;  // the TCP socket under the stream
  boost::asio::steady_timer timer_;       // armed at or before deadline_
  Clock::time_point deadline_ = Clock::time_point::max();
  bool timed_out_ = false;
  bool closed_ = false;
  std::function<void()> ended_;  // OnEnd's; empty once it ran
};

// A plain TCP connection. `executor`: the session's strand (the deadline's watch runs on it).
std::shared_ptr<Connection> PlainConnection(boost::asio::ip::tcp::socket socket,
                                            boost::asio::any_io_executor executor);
// A TLS connection after the server's handshake (within 30 s); null when the handshake
// fails (logged at debug level with `remote`).
boost::asio::awaitable<std::shared_ptr<Connection>> TlsConnection(
    boost::asio::ip::tcp::socket socket, boost::asio::ssl::context& tls,
    boost::asio::any_io_executor executor, const std::string& remote);

// The status line and header fields of `head`, through the blank line that ends them, as
// Beast's serializer writes them.
std::string SerializeHead(const boost::beast::http::response_header<>& head);

}  // namespace gantry::api
