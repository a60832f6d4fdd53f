#include "model/codec.h"

#include "common/errors.h"

namespace gantry::model {

namespace json = boost::json;

absl::StatusOr<json::object> ParseObjectJson(std::string_view body) {
  if (body.empty()) return BadRequestError("the request body is empty; expected a JSON object");
  json::parse_options opts;
  opts.max_depth = kMaxJsonDepth;
  opts.allow_invalid_utf8 = false;
  boost::system::error_code ec;
  json::stream_parser p({}, opts);
  p.write(body.data(), body.size(), ec);
  if (!ec) p.finish(ec);
  if (ec) {
    std::string what = ec.message();
    if (ec == json::error::too_deep)
      what = "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    // Report the line and column of the failure: the parser consumed up to the error.
    return BadRequestError("the request body is not valid JSON: " + what);
  }
  json::value v = p.release();
  if (!v.is_object()) return BadRequestError("the request body must be a JSON object");
  return std::move(v.get_object());
}

std::string ToJson(const json::value& v) { return json::serialize(v); }

void ApplyMergePatch(json::value& target, const json::value& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::object();
  auto& t = target.get_object();
  for (const auto& kv : patch.get_object()) {
    if (kv.value().is_null()) {
      t.erase(kv.key());
    } else {
      ApplyMergePatch(t[kv.key()], kv.value());
    }
  }
}

const json::value* FindPath(const json::object& obj, std::string_view dotted) {
  const json::object* cur = &obj;
  while (true) {
    size_t dot = dotted.find('.');
    std::string_view key = dotted.substr(0, dot);
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    if (dot == std::string_view::npos) return &it->value();
    if (!it->value().is_object()) return nullptr;
    cur = &it->value().get_object();
    dotted.remove_prefix(dot + 1);
  }
}

std::string GetString(const json::object& obj, std::string_view dotted,
                      std::string_view fallback) {
  const json::value* v = FindPath(obj, dotted);
  if (v && v->is_string()) return std::string(v->get_string());
  return std::string(fallback);
}

int64_t GetInt(const json::object& obj, std::string_view dotted, int64_t fallback) {
  const json::value* v = FindPath(obj, dotted);
  if (!v) return fallback;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->get_uint64());
  if (v->is_double()) return static_cast<int64_t>(v->get_double());
  return fallback;
}

json::object& EnsureObject(json::object& obj, std::string_view dotted) {
  json::object* cur = &obj;
  while (true) {
    size_t dot = dotted.find('.');
    std::string_view key = dotted.substr(0, dot);
    json::value& v = (*cur)[key];
    if (!v.is_object()) v = json::object();
    cur = &v.get_object();
    if (dot == std::string_view::npos) return *cur;
    dotted.remove_prefix(dot + 1);
  }
}

}  // namespace gantry::model
