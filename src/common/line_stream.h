// LineStream: newline-delimited chunks (watch events, followed run logs) handed from
// producers on any thread to the HTTP transport, which drains and writes them.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace gantry {

// A stream of newline-delimited chunks (watch events, followed logs) that outlives the
// handler call. Producers Push from any thread; the transport drains it and writes.
class LineStream {
 public:
  // Appends a line (a trailing newline is added). Returns false when the consumer is too
  // slow (more than `max_pending` lines queued): the stream is then closed, and the client
  // resumes from the last resourceVersion it saw, as Kubernetes clients do.
  bool Push(std::string line);
  // Marks the end of the stream after what was pushed.
  void Close();
  // Takes what is queued; `closed` tells whether the stream has ended.
  std::vector<std::string> Drain(bool* closed);
  // Called (from any thread) whenever lines are pushed or the stream closes. The transport
  // sets it before it starts draining.
  void SetWakeup(std::function<void()> wakeup);
  // Called by the transport when it stops reading (client gone, timeout, shutdown).
  void SetOnCancel(std::function<void()> on_cancel);
  void Cancel();
  // True once the stream ended: Close, Cancel, or a consumer too slow. Nothing pushed after
  // that reaches the client.
  bool Closed();
  // A producer of lines on demand, for what is read in pages (a watch's initial events): the
  // transport calls Refill whenever it has written everything pending, so that only one page
  // is ever queued. `refill` pushes the next lines and returns true, or returns false once it
  // has pushed its last ones (it is then dropped). Cancel and Close drop it too.
  void SetRefill(std::function<bool()> refill);
  // Called by the transport (one consumer) when nothing is pending: runs the refill, outside
  // the lock, unless there is none or the stream has ended. True when it ran (drain again).
  bool Refill();

  std::chrono::seconds timeout{1800};
  size_t max_pending = 100000;

 private:
  std::mutex mu_;
  std::vector<std::string> pending_;
  bool closed_ = false;
  std::function<void()> wakeup_;
  std::function<void()> on_cancel_;
  std::function<bool()> refill_;
};

}  // namespace gantry
