#include "api/watch_hub.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "api/status_http.h"
#include "model/codec.h"
#include "model/schema.h"
#include "model/sealed_fields.h"

namespace gantry::api {

namespace json = boost::json;

bool WatchFilter::Matches(const store::Event& e) const {
  if (e.kind != kind) return false;
  if (ns && e.ns != *ns) return false;
  if (visible && !visible(e.object)) return false;
  if (!labels.Empty() && !labels.Matches(model::LabelsOf(e.object))) return false;
  for (const auto& f : fields) {
    std::string have = model::GetString(e.object, f.field);
    if ((have == f.value) != f.equals) return false;
  }
  if (!search.empty()) {
    std::string hay = absl::AsciiStrToLower(model::GetString(e.object, "metadata.name") + "\n" +
                                            model::GetString(e.object, "spec.displayName") + "\n" +
                                            model::GetString(e.object, "spec.description"));
    if (hay.find(absl::AsciiStrToLower(search)) == std::string::npos) return false;
  }
  return true;
}

std::string WatchLine(std::string_view type, const json::object& object) {
  json::object line{{"type", type}, {"object", object}};
  model::RedactSealed(line["object"].as_object());
  return json::serialize(line);
}

std::string ErrorLine(const absl::Status& why) {
  boost::system::error_code ec;
  json::value status = json::parse(ErrorResponse(why).body, ec);
  return json::serialize(
      json::object{{"type", "ERROR"}, {"object", ec ? json::value(json::object{}) : status}});
}

std::string BookmarkLine(const std::string& kind, int64_t resource_version,
                         bool initial_events_end) {
  json::object meta{{"resourceVersion", std::to_string(resource_version)}};
  if (initial_events_end) meta["annotations"] = json::object{{"k8s.io/initial-events-end", "true"}};
  return json::serialize(json::object{{"type", "BOOKMARK"},
                                      {"object", json::object{{"kind", kind},
                                                              {"apiVersion", model::kApiVersion},
                                                              {"metadata", std::move(meta)}}}});
}

WatchHub::~WatchHub() { StopBookmarks(); }

std::shared_ptr<WatchHub::Subscription> WatchHub::Subscribe(WatchFilter filter,
                                                            std::shared_ptr<LineStream> stream,
                                                            bool bookmarks) {
  auto sub = std::make_shared<Subscription>();
  sub->filter = std::move(filter);
  sub->stream = std::move(stream);
  sub->bookmarks = bookmarks;
  std::lock_guard<std::mutex> lock(mu_);
  subs_.push_back(sub);
  return sub;
}

void WatchHub::Start(const std::shared_ptr<Subscription>& sub, int64_t after) {
  std::lock_guard<std::mutex> lock(sub->mu);
  sub->after = after;
  sub->started = true;
  for (const auto& e : sub->held)
    if (e.resource_version > after) {
      sub->stream->Push(WatchLine(e.type, e.object));
      sub->after = e.resource_version;
    }
  sub->held.clear();
}

void WatchHub::Unsubscribe(const std::shared_ptr<Subscription>& sub) {
  std::lock_guard<std::mutex> lock(mu_);
  subs_.erase(std::remove(subs_.begin(), subs_.end(), sub), subs_.end());
}

void WatchHub::CloseAll() {
  StopBookmarks();
  std::vector<std::shared_ptr<Subscription>> subs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    subs.swap(subs_);
  }
  for (auto& s : subs) s->stream->Close();
}

size_t WatchHub::SubscriberCount() {
  std::lock_guard<std::mutex> lock(mu_);
  return subs_.size();
}

void WatchHub::Publish(const std::vector<store::Event>& events) {
  std::vector<std::shared_ptr<Subscription>> subs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    subs = subs_;
  }
  for (auto& sub : subs) {
    std::lock_guard<std::mutex> lock(sub->mu);
    for (const auto& e : events) {
      if (!sub->filter.Matches(e)) continue;
      if (!sub->started) {
        sub->held.push_back(e);
        continue;
      }
      if (e.resource_version <= sub->after) continue;
      sub->after = e.resource_version;
      if (!sub->stream->Push(WatchLine(e.type, e.object))) break;
    }
  }
  if (events.empty()) return;
  // Only now is every event up to here offered to every subscription that was registered
  // when it was published (later ones read it from the store while replaying history).
  std::lock_guard<std::mutex> lock(mu_);
  published_ = std::max(published_, events.back().resource_version);
}

void WatchHub::SendBookmarks() {
  std::vector<std::shared_ptr<Subscription>> subs;
  int64_t published = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    subs = subs_;
    published = published_;
  }
  for (auto& sub : subs) {
    if (!sub->bookmarks) continue;
    std::lock_guard<std::mutex> lock(sub->mu);
    if (!sub->started) continue;  // still replaying history: its watermark is not known yet
    sub->stream->Push(BookmarkLine(sub->filter.kind, std::max(sub->after, published)));
  }
}

void WatchHub::StartBookmarks(std::chrono::milliseconds period) {
  std::lock_guard<std::mutex> lock(ticker_mu_);
  if (ticker_.joinable() || ticker_stop_) return;
  ticker_ = std::thread([this, period] {
    std::unique_lock<std::mutex> lock(ticker_mu_);
    while (!ticker_cv_.wait_for(lock, period, [this] { return ticker_stop_; })) {
      lock.unlock();
      SendBookmarks();
      lock.lock();
    }
  });
}

void WatchHub::StopBookmarks() {
  std::thread ticker;
  {
    std::lock_guard<std::mutex> lock(ticker_mu_);
    ticker_stop_ = true;
    ticker.swap(ticker_);
  }
  ticker_cv_.notify_all();
  if (ticker.joinable()) ticker.join();
}

}  // namespace gantry::api
