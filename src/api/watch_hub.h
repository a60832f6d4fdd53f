// WatchHub: fans committed store events out to open watch streams.
//
// The store calls Publish with each commit's events, in resourceVersion order. Each
// subscription filters by kind, project, label selector, field selectors and search text,
// and pushes `{"type":..., "object":...}` lines to its LineStream. A subscription only
// forwards events with resourceVersion greater than its `after` watermark, which the watch
// handler advances after replaying history, so no event is sent twice or skipped.
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
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

class WatchHub {
 public:
  class Subscription {
   public:
    // Lines for events held back until Start (while history is replayed).
    WatchFilter filter;
    std::shared_ptr<LineStream> stream;

   private:
    friend class WatchHub;
    std::mutex mu;
    bool started = false;
    int64_t after = 0;
    std::vector<store::Event> held;  // events that arrived before Start
  };

  // Registers a subscription; events published from now on are held until Start.
  std::shared_ptr<Subscription> Subscribe(WatchFilter filter, std::shared_ptr<LineStream> stream);
  // Releases held events with resourceVersion > `after` and forwards later ones directly.
  void Start(const std::shared_ptr<Subscription>& sub, int64_t after);
  void Unsubscribe(const std::shared_ptr<Subscription>& sub);
  // Closes every stream (shutdown).
  void CloseAll();

  void Publish(const std::vector<store::Event>& events);
  size_t SubscriberCount();

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<Subscription>> subs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gantry::api
