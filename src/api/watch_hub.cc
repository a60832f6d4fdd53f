#include "api/watch_hub.h"

#include <algorithm>
#include <cctype>

#include "model/codec.h"
#include "model/sealed_fields.h"

namespace gantry::api {

namespace json = boost::json;

namespace {
std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

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
    std::string hay = Lower(model::GetString(e.object, "metadata.name") + "\n" +
                            model::GetString(e.object, "spec.displayName") + "\n" +
                            model::GetString(e.object, "spec.description"));
    if (hay.find(Lower(search)) == std::string::npos) return false;
  }
  return true;
}

std::string WatchLine(std::string_view type, const json::object& object) {
  json::object line{{"type", type}, {"object", object}};
  model::RedactSealed(line["object"].as_object());
  return json::serialize(line);
}

std::shared_ptr<WatchHub::Subscription> WatchHub::Subscribe(WatchFilter filter,
                                                            std::shared_ptr<LineStream> stream) {
  auto sub = std::make_shared<Subscription>();
  sub->filter = std::move(filter);
  sub->stream = std::move(stream);
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
}

}  // namespace gantry::api
