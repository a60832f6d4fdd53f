// WatchHub: fans committed store events out to open watch streams.
//
// The store calls Publish with each commit's events, in resourceVersion order. Each
// subscription filters by kind, project, label selector, field selectors and search text,
// and pushes `{"type":..., "object":...}` lines to its LineStream. A subscription only
// forwards events with resourceVersion greater than its `after` watermark, which the watch
// handler advances after replaying history, so no event is sent twice or skipped.
//
// Bookmarks (Kubernetes' allowWatchBookmarks): a subscription that asks for them gets a
// `BOOKMARK` event every bookmark period (StartBookmarks) carrying the resourceVersion up to
// which it has been sent every event it matches: the highest of its own watermark and the
// last resourceVersion Publish has finished fanning out. A client that reconnects resumes
// from there instead of from the last object it happened to see, and never lists again
// while that version is kept (--event-retention).
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "api/http_types.h"
#include "store/store.h"

namespace gantry::api {

struct WatchFilter {
  std::string kind;
  std::optional<std::string> ns;
  model::LabelSelector labels;
  std::vector<store::FieldFilter> fields;
  std::string search;
  // When set, only objects it accepts (the caller's projects on a watch across projects).
  std::function<bool(const boost::json::object&)> visible;

  bool Matches(const store::Event& e) const;
};

// One watch line: {"type":"ADDED","object":{...}}.
std::string WatchLine(std::string_view type, const boost::json::object& object);
// The last event of a watch that cannot go on: {"type":"ERROR","object":<Status of why>}, as
// Kubernetes ends a watch.
std::string ErrorLine(const absl::Status& why);
// A bookmark: {"type":"BOOKMARK","object":{"kind":KIND,"apiVersion":...,"metadata":
// {"resourceVersion":"RV"}}}; with `initial_events_end` the annotation
// "k8s.io/initial-events-end": "true" that ends a watch's sendInitialEvents.
std::string BookmarkLine(const std::string& kind, int64_t resource_version,
                         bool initial_events_end = false);

class WatchHub {
 public:
  class Subscription {
   public:
    // Lines for events held back until Start (while history is replayed).
    WatchFilter filter;
    std::shared_ptr<LineStream> stream;
    bool bookmarks = false;  // constant after Subscribe

   private:
    friend class WatchHub;
    std::mutex mu;
    bool started = false;
    int64_t after = 0;
    std::vector<store::Event> held;  // events that arrived before Start
  };

  WatchHub() = default;
  ~WatchHub();  // stops the bookmark thread
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  // Registers a subscription; events published from now on are held until Start.
  // `bookmarks`: it gets BOOKMARK events once started (see above).
  std::shared_ptr<Subscription> Subscribe(WatchFilter filter, std::shared_ptr<LineStream> stream,
                                          bool bookmarks = false);
  // Releases held events with resourceVersion > `after` and forwards later ones directly.
  void Start(const std::shared_ptr<Subscription>& sub, int64_t after);
  void Unsubscribe(const std::shared_ptr<Subscription>& sub);
  // Closes every stream (shutdown).
  void CloseAll();

  void Publish(const std::vector<store::Event>& events);
  size_t SubscriberCount();

  // Sends one BOOKMARK to every started subscription that asked for bookmarks.
  void SendBookmarks();
  // Starts a thread that calls SendBookmarks every `period` until CloseAll or destruction.
  // Call once, at start-up (gantryd: --watch-bookmark-seconds, 60 s as Kubernetes).
  void StartBookmarks(std::chrono::milliseconds period);

 private:
  void StopBookmarks();

  std::mutex mu_;
  std::vector<std::shared_ptr<Subscription>> subs_ ABSL_GUARDED_BY(mu_);
  // Every event up to here was offered to every subscription registered when it came.
  int64_t published_ ABSL_GUARDED_BY(mu_) = 0;

  std::mutex ticker_mu_;
  std::condition_variable ticker_cv_;
  bool ticker_stop_ ABSL_GUARDED_BY(ticker_mu_) = false;
  std::thread ticker_;  // started by StartBookmarks, joined by StopBookmarks
};

}  // namespace gantry::api
