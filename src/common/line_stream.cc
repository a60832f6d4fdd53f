#include "common/line_stream.h"

namespace gantry {

bool LineStream::Push(std::string line) {
  std::function<void()> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    if (pending_.size() >= max_pending) {
      closed_ = true;
    } else {
      line += '\n';
      pending_.push_back(std::move(line));
    }
    wake = wakeup_;
  }
  if (wake) wake();
  return true;
}

void LineStream::Close() {
  std::function<void()> wake;
  std::function<bool()> refill;  // destroyed outside the lock: it may own what locks it
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    wake = wakeup_;
    refill.swap(refill_);
  }
  if (wake) wake();
}

std::vector<std::string> LineStream::Drain(bool* closed) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  out.swap(pending_);
  *closed = closed_;
  return out;
}

void LineStream::SetWakeup(std::function<void()> wakeup) {
  std::lock_guard<std::mutex> lock(mu_);
  wakeup_ = std::move(wakeup);
}

void LineStream::SetOnCancel(std::function<void()> on_cancel) {
  std::lock_guard<std::mutex> lock(mu_);
  on_cancel_ = std::move(on_cancel);
}

void LineStream::Cancel() {
  std::function<void()> cancel;
  std::function<bool()> refill;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    wakeup_ = nullptr;
    cancel.swap(on_cancel_);
    refill.swap(refill_);
  }
  if (cancel) cancel();
}

bool LineStream::Closed() {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

void LineStream::SetRefill(std::function<bool()> refill) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!closed_) refill_ = std::move(refill);
}

bool LineStream::Refill() {
  std::function<bool()> refill;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || !refill_) return false;
    refill = refill_;  // a copy: Cancel may drop the member while it runs
  }
  if (!refill()) {
    std::function<bool()> done;  // destroyed outside the lock
    std::lock_guard<std::mutex> lock(mu_);
    done.swap(refill_);
  }
  return true;
}

}  // namespace gantry
