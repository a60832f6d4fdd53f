#include "model/json_patch.h"

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/errors.h"
#include "model/codec.h"

namespace gantry::model {
namespace {

namespace json = boost::json;

// RFC 6901: "" is the whole document; otherwise "/a/b" with ~1 for "/" and ~0 for "~".
absl::StatusOr<std::vector<std::string>> ParsePointer(std::string_view ptr) {
  std::vector<std::string> out;
  if (ptr.empty()) return out;
  if (ptr[0] != '/') return absl::InvalidArgumentError("must be empty or start with \"/\"");
  std::string token;
  for (size_t i = 1; i <= ptr.size(); ++i) {
    if (i == ptr.size() || ptr[i] == '/') {
      out.push_back(std::move(token));
      token.clear();
      continue;
    }
    if (ptr[i] == '~') {
      if (i + 1 < ptr.size() && ptr[i + 1] == '0')
        token += '~';
      else if (i + 1 < ptr.size() && ptr[i + 1] == '1')
        token += '/';
      else
        return absl::InvalidArgumentError("\"~\" must be followed by 0 or 1");
      ++i;
      continue;
    }
    token += ptr[i];
  }
  return out;
}

// An array index: digits without leading zeros (RFC 6901), below `limit`.
bool ParseIndex(const std::string& token, size_t limit, size_t* index) {
  if (token.empty() || token.size() > 9 ||
      token.find_first_not_of("0123456789") != std::string::npos ||
      (token.size() > 1 && token[0] == '0'))
    return false;
  *index = std::stoul(token);
  return *index < limit;
}

std::string Pointer(const std::vector<std::string>& tokens, size_t n) {
  std::string out;
  for (size_t i = 0; i < n && i < tokens.size(); ++i) {
    out += "/";
    for (char c : tokens[i]) {
      if (c == '~')
        out += "~0";
      else if (c == '/')
        out += "~1";
      else
        out += c;
    }
  }
  return out;
}

// The value at the first `n` tokens, or an error naming the missing part.
absl::StatusOr<json::value*> Resolve(json::value& doc, const std::vector<std::string>& tokens,
                                     size_t n) {
  json::value* cur = &doc;
  for (size_t i = 0; i < n; ++i) {
    if (cur->is_object()) {
      json::value* next = cur->get_object().if_contains(tokens[i]);
      if (!next) return absl::NotFoundError(Pointer(tokens, i + 1) + " does not exist");
      cur = next;
    } else if (cur->is_array()) {
      size_t index = 0;
      if (!ParseIndex(tokens[i], cur->get_array().size(), &index))
        return absl::NotFoundError(Pointer(tokens, i + 1) +
                                   " does not exist (no such index in "
                                   "a list of " +
                                   std::to_string(cur->get_array().size()) + ")");
      cur = &cur->get_array()[index];
    } else {
      return absl::NotFoundError(Pointer(tokens, i + 1) + " does not exist (" + Pointer(tokens, i) +
                                 " is not an object or a list)");
    }
  }
  return cur;
}

// The nesting depth of `v` (a scalar is 0), without recursion.
size_t Depth(const json::value& v) {
  size_t deepest = 0;
  std::vector<std::pair<const json::value*, size_t>> todo{{&v, 0}};
  while (!todo.empty()) {
    auto [cur, d] = todo.back();
    todo.pop_back();
    deepest = std::max(deepest, d);
    if (cur->is_object())
      for (const auto& kv : cur->get_object()) todo.push_back({&kv.value(), d + 1});
    else if (cur->is_array())
      for (const auto& e : cur->get_array()) todo.push_back({&e, d + 1});
  }
  return deepest;
}

absl::Status Add(json::value& doc, const std::vector<std::string>& path, json::value value) {
  // Nothing deeper than a request body may be: the result is walked recursively later.
  if (path.size() + Depth(value) > static_cast<size_t>(kMaxJsonDepth))
    return absl::InvalidArgumentError("the result would be nested deeper than " +
                                      std::to_string(kMaxJsonDepth) + " levels");
  if (path.empty()) {
    doc = std::move(value);
    return absl::OkStatus();
  }
  auto parent = Resolve(doc, path, path.size() - 1);
  if (!parent.ok()) return parent.status();
  const std::string& last = path.back();
  if ((*parent)->is_object()) {
    (*parent)->get_object()[last] = std::move(value);
    return absl::OkStatus();
  }
  if ((*parent)->is_array()) {
    json::array& arr = (*parent)->get_array();
    if (last == "-") {
      arr.push_back(std::move(value));
      return absl::OkStatus();
    }
    size_t index = 0;
    if (!ParseIndex(last, arr.size() + 1, &index))
      return absl::NotFoundError(Pointer(path, path.size()) + ": no such index in a list of " +
                                 std::to_string(arr.size()));
    arr.insert(arr.begin() + static_cast<long>(index), std::move(value));
    return absl::OkStatus();
  }
  return absl::NotFoundError(Pointer(path, path.size() - 1) + " is not an object or a list");
}

absl::StatusOr<json::value> Remove(json::value& doc, const std::vector<std::string>& path) {
  if (path.empty()) return absl::NotFoundError("the whole document cannot be removed");
  auto parent = Resolve(doc, path, path.size() - 1);
  if (!parent.ok()) return parent.status();
  const std::string& last = path.back();
  if ((*parent)->is_object()) {
    json::object& obj = (*parent)->get_object();
    auto it = obj.find(last);
    if (it == obj.end()) return absl::NotFoundError(Pointer(path, path.size()) + " does not exist");
    json::value out = std::move(it->value());
    obj.erase(it);
    return out;
  }
  if ((*parent)->is_array()) {
    json::array& arr = (*parent)->get_array();
    size_t index = 0;
    if (!ParseIndex(last, arr.size(), &index))
      return absl::NotFoundError(Pointer(path, path.size()) +
                                 " does not exist (no such index in "
                                 "a list of " +
                                 std::to_string(arr.size()) + ")");
    json::value out = std::move(arr[index]);
    arr.erase(arr.begin() + static_cast<long>(index));
    return out;
  }
  return absl::NotFoundError(Pointer(path, path.size() - 1) + " is not an object or a list");
}

}  // namespace

absl::Status ApplyJsonPatch(json::value& doc, const json::value& patch) {
  if (!patch.is_array())
    return BadRequestError(
        "a JSON patch must be a list of operations ([{\"op\": \"replace\", "
        "\"path\": \"/spec/...\", \"value\": ...}])");
  const json::array& ops = patch.get_array();
  if (ops.size() > kMaxJsonPatchOperations)
    return BadRequestError("the JSON patch has " + std::to_string(ops.size()) +
                           " operations; at most " + std::to_string(kMaxJsonPatchOperations) +
                           " are allowed");
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string at = "operation " + std::to_string(i + 1);
    if (!ops[i].is_object()) return BadRequestError("the JSON patch's " + at + " is not an object");
    const json::object& op = ops[i].get_object();
    auto str = [&](const char* key, std::string* out) {
      const json::value* v = op.if_contains(key);
      if (!v || !v->is_string()) return false;
      *out = std::string(v->get_string());
      return true;
    };
    std::string name, path_text, from_text;
    if (!str("op", &name)) return BadRequestError("the JSON patch's " + at + " has no \"op\"");
    at += " (" + name + ")";
    if (name != "add" && name != "remove" && name != "replace" && name != "move" &&
        name != "copy" && name != "test")
      return BadRequestError("the JSON patch's " + at +
                             " is unknown: use add, remove, replace, move, copy or test");
    if (!str("path", &path_text))
      return BadRequestError("the JSON patch's " + at + " has no \"path\"");
    auto path = ParsePointer(path_text);
    if (!path.ok())
      return BadRequestError("the JSON patch's " + at + ": path \"" + path_text + "\" " +
                             std::string(path.status().message()));
    const json::value* value = op.if_contains("value");
    if ((name == "add" || name == "replace" || name == "test") && !value)
      return BadRequestError("the JSON patch's " + at + " has no \"value\"");
    std::vector<std::string> from;
    if (name == "move" || name == "copy") {
      if (!str("from", &from_text))
        return BadRequestError("the JSON patch's " + at + " has no \"from\"");
      auto f = ParsePointer(from_text);
      if (!f.ok())
        return BadRequestError("the JSON patch's " + at + ": from \"" + from_text + "\" " +
                               std::string(f.status().message()));
      from = *std::move(f);
    }
    auto fail = [&](const absl::Status& s) {
      return UnprocessableError("the JSON patch's " + at + " failed: " + std::string(s.message()));
    };
    absl::Status s;
    if (name == "add") {
      s = Add(doc, *path, *value);
    } else if (name == "remove") {
      s = Remove(doc, *path).status();
    } else if (name == "replace") {
      auto target = Resolve(doc, *path, path->size());
      if (!target.ok())
        s = target.status();
      else if (path->size() + Depth(*value) > static_cast<size_t>(kMaxJsonDepth))
        s = absl::InvalidArgumentError("the result would be nested deeper than " +
                                       std::to_string(kMaxJsonDepth) + " levels");
      else
        **target = *value;
    } else if (name == "test") {
      auto target = Resolve(doc, *path, path->size());
      if (!target.ok())
        s = target.status();
      else if (**target != *value)
        s = absl::FailedPreconditionError("the value at " + path_text + " is not the one tested");
    } else if (name == "copy") {
      auto source = Resolve(doc, from, from.size());
      if (!source.ok())
        s = source.status();
      else
        s = Add(doc, *path, **source);
      if (s.ok() && json::serialize(doc).size() > kMaxJsonPatchResultBytes)
        return UnprocessableError("the JSON patch's " + at + " makes the object larger than " +
                                  std::to_string(kMaxJsonPatchResultBytes) + " bytes");
    } else {  // move
      if (path->size() > from.size() && std::equal(from.begin(), from.end(), path->begin()))
        s = absl::InvalidArgumentError("cannot move " + from_text + " into its own child " +
                                       path_text);
      else {
        auto moved = Remove(doc, from);
        if (!moved.ok())
          s = moved.status();
        else
          s = Add(doc, *path, *std::move(moved));
      }
    }
    if (!s.ok()) return fail(s);
  }
  return absl::OkStatus();
}

}  // namespace gantry::model
