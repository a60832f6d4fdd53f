#include "model/codec.h"

#include <cmath>

#include "common/errors.h"
#include "common/utf8.h"

namespace gantry::model {

namespace json = boost::json;

namespace {
// Boost.JSON reads numbers beyond a double's range as infinity, which cannot be written
// back as JSON: such a body is refused rather than stored.
bool AllFinite(const json::value& v) {
  switch (v.kind()) {
    case json::kind::double_:
      return std::isfinite(v.get_double());
    case json::kind::array:
      for (const auto& e : v.get_array())
        if (!AllFinite(e)) return false;
      return true;
    case json::kind::object:
      for (const auto& kv : v.get_object())
        if (!AllFinite(kv.value())) return false;
      return true;
    default:
      return true;
  }
}
}  // namespace

absl::StatusOr<json::object> ParseObjectJson(std::string_view body) {
  if (body.empty()) return BadRequestError("the request body is empty; expected a JSON object");
  auto v = ParseJsonValue(body);
  if (!v.ok()) return v.status();
  if (!v->is_object()) return BadRequestError("the request body must be a JSON object");
  return std::move(v->get_object());
}

std::optional<double> AsNumber(const json::value& v) {
  double d;
  if (v.is_int64())
    d = static_cast<double>(v.get_int64());
  else if (v.is_uint64())
    d = static_cast<double>(v.get_uint64());
  else if (v.is_double())
    d = v.get_double();
  else
    return std::nullopt;
  return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
}

absl::StatusOr<json::object> ParseStoredObject(std::string_view text, json::storage_ptr storage) {
  // What the store holds was checked when it was written: one parse, into `storage`.
  json::parse_options opts;
  opts.max_depth = kMaxJsonDepth * 2;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec, storage, opts);
  if (!ec && v.is_object()) return std::move(v.get_object());
  // Written before invalid UTF-8 was refused: read, with the bad bytes replaced.
  opts.allow_invalid_utf8 = true;
  boost::system::error_code lenient;
  v = json::parse(text, lenient, storage, opts);
  if (lenient || !v.is_object())
    return absl::InternalError("a stored object cannot be read: " + ec.message());
  ScrubUtf8(v);
  return std::move(v.get_object());
}

absl::StatusOr<json::value> ParseJsonValue(std::string_view body) {
  if (body.empty()) return BadRequestError("the request body is empty; expected JSON");
  json::parse_options opts;
  opts.max_depth = kMaxJsonDepth;
  opts.allow_invalid_utf8 = false;
  boost::system::error_code ec;
  json::stream_parser p({}, opts);
  size_t consumed = p.write_some(body.data(), body.size(), ec);
  if (!ec && consumed < body.size()) ec = json::error::extra_data;
  if (!ec) p.finish(ec);
  if (ec) {
    std::string what = ec.message();
    if (ec == json::error::too_deep)
      what = "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    // Name the line and column where the parser stopped.
    size_t line = 1, column = 1;
    for (size_t i = 0; i < consumed && i < body.size(); ++i) {
      if (body[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return BadRequestError("the request body is not valid JSON: " + what + " at line " +
                           std::to_string(line) + ", column " + std::to_string(column));
  }
  json::value v = p.release();
  if (!AllFinite(v))
    return BadRequestError("the request body holds a number too large to represent");
  return v;
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

std::string GetString(const json::object& obj, std::string_view dotted, std::string_view fallback) {
  const json::value* v = FindPath(obj, dotted);
  if (v && v->is_string()) return std::string(v->get_string());
  return std::string(fallback);
}

bool GetBool(const json::object& obj, std::string_view dotted) {
  const json::value* v = FindPath(obj, dotted);
  return v && v->is_bool() && v->get_bool();
}

std::map<std::string, std::string> LabelsOf(const json::object& obj) {
  std::map<std::string, std::string> out;
  if (const json::value* l = FindPath(obj, "metadata.labels"); l && l->is_object())
    for (const auto& kv : l->get_object())
      if (kv.value().is_string()) out[std::string(kv.key())] = std::string(kv.value().get_string());
  return out;
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
