// ResourceService::Watch (api/resources.h): the history a watch asks for, then live events
// through the watch hub. The initial ADDED events are read from the store a page at a time,
// each page when the transport has sent the one before (LineStream::SetRefill), so that a
// watch of 100,000 objects never holds them all (docs/api.md, "A list without limit").
#include "api/resources.h"
#include "common/status_macros.h"

namespace gantry::api {

namespace json = boost::json;

absl::StatusOr<std::shared_ptr<LineStream>> ResourceService::Watch(const Target& t, const Query& q,
                                                                   Visibility visible) {
  ASSIGN_OR_RETURN(store::ListOptions opts, ListOptionsFor(t, q));
  if (t.kind->namespaced && !t.all_namespaces) RETURN_IF_ERROR(CheckProjectExists(t.ns));
  ASSIGN_OR_RETURN(int64_t timeout, QueryNonNegative(q, "timeoutSeconds"));
  ASSIGN_OR_RETURN(VersionOptions version, ParseVersionOptions(q, /*watch=*/true));
  const int64_t rv = version.resource_version.value_or(0);
  // Kubernetes' rule: without a resourceVersion (or with 0) the current objects come first,
  // unless sendInitialEvents=false; sendInitialEvents=true sends them whatever the version.
  const bool initial = version.send_initial_events.value_or(rv == 0);

  WatchFilter filter{opts.kind, opts.ns, opts.labels, opts.fields, opts.search, visible};
  if (!t.name.empty()) filter.fields.push_back({"metadata.name", true, t.name});
  auto stream = std::make_shared<LineStream>();
  if (timeout > 0) stream->timeout = std::chrono::seconds(std::min<int64_t>(timeout, 86400));
  auto sub = hub_.Subscribe(filter, stream, version.allow_bookmarks);
  // The subscription owns the stream; the stream must not own the subscription back.
  std::weak_ptr<WatchHub::Subscription> weak_sub = sub;
  stream->SetOnCancel([this, weak_sub] {
    if (auto s = weak_sub.lock()) hub_.Unsubscribe(s);
  });

  int64_t after = 0;
  if (initial) {
    // Current state first, as ADDED events, then changes after the first page's
    // resourceVersion. Pages after the first are read as the transport sends them.
    store::ListOptions all = opts;
    all.limit = page_size_;
    all.continue_token.clear();
    all.oldest_first = true;  // ADDED events in the order the objects were created
    if (!t.name.empty()) all.fields.push_back({"metadata.name", true, t.name});
    auto list = store_.List(all);
    if (!list.ok()) {
      hub_.Unsubscribe(sub);
      return list.status();
    }
    const bool end_bookmark = version.send_initial_events.value_or(false);
    PushInitialPage(*stream, sub, *list, list->resource_version, end_bookmark, visible);
    if (!list->continue_token.empty()) {
      all.continue_token = list->continue_token;
      StreamInitialEvents(stream, sub, std::move(all), list->resource_version, end_bookmark,
                          visible);
    }
    return stream;
  } else if (rv == 0) {
    after = store_.CurrentResourceVersion();  // sendInitialEvents=false: changes from now on
  } else {
    after = rv;
    while (true) {
      auto events = store_.EventsSince(after, 1000);
      if (!events.ok()) {
        if (absl::IsOutOfRange(events.status())) {
          // Kubernetes answers an expired watch with 200 and an ERROR event carrying 410.
          json::object status{{"kind", "Status"},
                              {"apiVersion", "v1"},
                              {"status", "Failure"},
                              {"reason", "Expired"},
                              {"code", 410},
                              {"message", std::string(events.status().message())},
                              {"metadata", json::object()}};
          stream->Push(json::serialize(json::object{{"type", "ERROR"}, {"object", status}}));
          stream->Close();
          hub_.Unsubscribe(sub);
          return stream;
        }
        hub_.Unsubscribe(sub);
        return events.status();
      }
      for (const auto& e : *events) {
        if (filter.Matches(e)) stream->Push(WatchLine(e.type, e.object));
        after = e.resource_version;
      }
      if (events->size() < 1000) break;
    }
  }
  hub_.Start(sub, after);
  return stream;
}

void ResourceService::PushInitialPage(LineStream& stream,
                                      const std::shared_ptr<WatchHub::Subscription>& sub,
                                      const store::ListResult& page, int64_t after,
                                      bool end_bookmark, const Visibility& visible) {
  for (const json::object& obj : page.items)
    if (!visible || visible(obj)) stream.Push(WatchLine("ADDED", obj));
  if (!page.continue_token.empty()) return;
  if (end_bookmark) stream.Push(BookmarkLine(sub->filter.kind, after, /*initial_events_end=*/true));
  hub_.Start(sub, after);
}

void ResourceService::StreamInitialEvents(const std::shared_ptr<LineStream>& stream,
                                          const std::shared_ptr<WatchHub::Subscription>& sub,
                                          store::ListOptions next, int64_t after, bool end_bookmark,
                                          Visibility visible) {
  // The stream owns the refill and the subscription owns the stream: both held weakly.
  auto state = std::make_shared<store::ListOptions>(std::move(next));
  std::weak_ptr<LineStream> weak_stream = stream;
  std::weak_ptr<WatchHub::Subscription> weak_sub = sub;
  stream->SetRefill([this, state, weak_stream, weak_sub, after, end_bookmark, visible] {
    auto s = weak_stream.lock();
    auto sub = weak_sub.lock();
    if (!s || !sub) return false;
    auto page = store_.List(*state);
    if (!page.ok()) {
      // Kubernetes ends a watch it cannot continue with an ERROR event.
      s->Push(ErrorLine(page.status()));
      s->Close();
      return false;
    }
    PushInitialPage(*s, sub, *page, after, end_bookmark, visible);
    state->continue_token = page->continue_token;
    return !page->continue_token.empty();
  });
}

}  // namespace gantry::api
