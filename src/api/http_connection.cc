#include "api/http_connection.h"

#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/read_size.hpp>
#include <cstdio>
#include <utility>

namespace gantry::api {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using net::awaitable;
constexpr auto kTuple = net::as_tuple(net::use_awaitable);

// The most a read asks for at once (what Beast's http::async_read asks for).
constexpr size_t kReadSize = 64 * 1024;

Connection::Connection(tcp::socket& socket, net::any_io_executor executor)
    : socket_(socket), timer_(std::move(executor)) {}

void Connection::Start() {
  timer_.expires_at(Clock::time_point::max());
  Watch();
}

void Connection::Watch() {
  // The handler owns the connection until it runs (or the io_context is destroyed).
  timer_.async_wait([self = shared_from_this()](error_code) { self->OnTimer(); });
}

void Connection::OnTimer() {
  if (closed_) return;
  if (Clock::now() >= deadline_) {
    timed_out_ = true;
    Ending();
    error_code ignored;
    socket_.close(ignored);  // what is pending fails now
    return;
  }
  timer_.expires_at(deadline_);  // the deadline moved: wait again for the new one
  Watch();
}

void Connection::ExpiresAfter(Clock::duration after) {
  deadline_ = Clock::now() + after;
  // A later deadline is seen when the timer fires; an earlier one must move the timer.
  if (deadline_ < timer_.expiry()) timer_.expires_at(deadline_);
}

void Connection::ExpiresNever() { deadline_ = Clock::time_point::max(); }

void Connection::OnEnd(std::function<void()> ended) { ended_ = std::move(ended); }

void Connection::Ending() {
  if (auto ended = std::exchange(ended_, nullptr)) ended();
}

void Connection::Close() {
  closed_ = true;
  Ending();
  timer_.cancel();
  error_code ignored;
  socket_.close(ignored);
}

error_code Connection::Failed(error_code ec) const {
  return ec && timed_out_ ? error_code(beast::error::timeout) : ec;
}

awaitable<error_code> Connection::ReadRequest(beast::flat_buffer& buffer, RequestParser& parser) {
  parser.eager(true);
  error_code ec;
  while (!parser.is_done()) {
    if (buffer.size() > 0) {
      size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      if (!ec && (used > 0 || parser.is_done())) continue;
      if (ec && ec != http::error::need_more) co_return ec;
      ec = {};
    }
    size_t want = beast::read_size(buffer, kReadSize);
    if (want == 0) co_return http::error::buffer_overflow;
    auto [read, n] = co_await ReadSome(buffer.prepare(want));
    buffer.commit(n);
    if (read == net::error::eof || read == net::ssl::error::stream_truncated) {
      if (!parser.got_some()) co_return http::error::end_of_stream;
      parser.put_eof(ec);
      co_return ec ? ec : error_code(http::error::partial_message);
    }
    if (read) co_return Failed(read);
  }
  co_return ec;
}

awaitable<error_code> Connection::WriteChunk(std::string_view data) {
  char size_line[24];  // the size in hex, as chunked encoding writes it
  int n = std::snprintf(size_line, sizeof size_line, "%zx\r\n", data.size());
  co_return co_await Write(std::string_view(size_line, static_cast<size_t>(n)), data, "\r\n");
}

namespace {

// Base-from-member: the stream exists before Connection's constructor takes its socket.
struct PlainStream {
  tcp::socket socket;
};

class Plain final : private PlainStream, public Connection {
 public:
  Plain(tcp::socket socket, net::any_io_executor executor)
      : PlainStream{std::move(socket)}, Connection(PlainStream::socket, std::move(executor)) {}

  awaitable<error_code> Write(std::string_view a, std::string_view b, std::string_view c) override {
    std::array<net::const_buffer, 3> pieces{net::buffer(a.data(), a.size()),
                                            net::buffer(b.data(), b.size()),
                                            net::buffer(c.data(), c.size())};
    auto [ec, n] = co_await net::async_write(PlainStream::socket, pieces, kTuple);
    co_return Failed(ec);
  }

  awaitable<void> Finish() override {
    Ending();
    error_code ignored;
    PlainStream::socket.shutdown(tcp::socket::shutdown_send, ignored);
    co_return;
  }

 protected:
  awaitable<std::pair<error_code, size_t>> ReadSome(net::mutable_buffer into) override {
    auto [ec, n] = co_await PlainStream::socket.async_read_some(into, kTuple);
    co_return std::pair{ec, n};
  }
};

struct TlsStream {
  net::ssl::stream<tcp::socket> stream;
};

class Tls final : private TlsStream, public Connection {
 public:
  Tls(tcp::socket socket, net::ssl::context& tls, net::any_io_executor executor)
      : TlsStream{net::ssl::stream<tcp::socket>(std::move(socket), tls)},
        Connection(TlsStream::stream.next_layer(), std::move(executor)) {}

  awaitable<error_code> Handshake() {
    auto [ec] = co_await stream.async_handshake(net::ssl::stream_base::server, kTuple);
    co_return Failed(ec);
  }

  awaitable<error_code> Write(std::string_view a, std::string_view b, std::string_view c) override {
    // One buffer, so that a response goes out in as few TLS records as its size allows.
    std::string joined;
    std::string_view all = a;
    if (!b.empty() || !c.empty()) {
      joined.reserve(a.size() + b.size() + c.size());
      joined.append(a).append(b).append(c);
      all = joined;
    }
    auto [ec, n] = co_await net::async_write(stream, net::buffer(all.data(), all.size()), kTuple);
    co_return Failed(ec);
  }

  awaitable<void> Finish() override {
    ExpiresAfter(std::chrono::seconds(5));
    auto [ec] = co_await stream.async_shutdown(kTuple);
    (void)ec;
  }

 protected:
  awaitable<std::pair<error_code, size_t>> ReadSome(net::mutable_buffer into) override {
    auto [ec, n] = co_await stream.async_read_some(into, kTuple);
    co_return std::pair{ec, n};
  }
};

}  // namespace

std::shared_ptr<Connection> PlainConnection(tcp::socket socket, net::any_io_executor executor) {
  auto connection = std::make_shared<Plain>(std::move(socket), std::move(executor));
  connection->Start();
  return connection;
}

awaitable<std::shared_ptr<Connection>> TlsConnection(tcp::socket socket, net::ssl::context& tls,
                                                     net::any_io_executor executor,
                                                     const std::string& remote) {
  auto connection = std::make_shared<Tls>(std::move(socket), tls, std::move(executor));
  connection->Start();
  connection->ExpiresAfter(std::chrono::seconds(30));
  error_code ec = co_await connection->Handshake();
  if (ec) {
    spdlog::debug("TLS handshake with {} failed: {}", remote, ec.message());
    connection->Close();
    co_return nullptr;
  }
  co_return connection;
}

std::string SerializeHead(const http::response_header<>& head) {
  std::string out;
  out.reserve(256);
  unsigned version = head.version();
  out += "HTTP/";
  out += static_cast<char>('0' + version / 10);
  out += '.';
  out += static_cast<char>('0' + version % 10);
  out += ' ';
  out += std::to_string(head.result_int());
  out += ' ';
  auto reason = head.reason();
  out.append(reason.data(), reason.size());
  out += "\r\n";
  for (const auto& field : head) {
    auto name = field.name_string();
    auto value = field.value();
    out.append(name.data(), name.size());
    out += ": ";
    out.append(value.data(), value.size());
    out += "\r\n";
  }
  out += "\r\n";
  return out;
}

}  // namespace gantry::api
