#include "common/utf8.h"

#include <cstdint>
#include <cstring>

namespace gantry {
namespace {

std::string ChildPath(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

// Whether the eight bytes at s[i] exist and are all ASCII.
bool AsciiWordAt(std::string_view s, size_t i) {
  if (i + 8 > s.size()) return false;
  uint64_t word;
  std::memcpy(&word, s.data() + i, sizeof word);
  return (word & 0x8080808080808080ULL) == 0;
}

}  // namespace

size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xC2 && c <= 0xDF   ? 2
             : c >= 0xE0 && c <= 0xEF ? 3
             : c >= 0xF0 && c <= 0xF4 ? 4
                                      : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  unsigned char c1 = byte(i + 1);
  if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
  if (c == 0xED && c1 > 0x9F) return 0;  // surrogates
  if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
  if (c == 0xF4 && c1 > 0x8F) return 0;  // above U+10FFFF
  return n;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    // ASCII eight bytes at a time: a stored object is mostly ASCII, and every GET checks one.
    if (AsciiWordAt(s, i)) {
      i += 8;
      continue;
    }
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string ScrubUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

namespace {

// The fast pass: no paths built (every write of the store goes through it).
bool AllValid(const boost::json::value& v) {
  if (v.is_string()) return IsValidUtf8(v.get_string());
  if (v.is_object()) {
    for (const auto& kv : v.get_object())
      if (!IsValidUtf8(kv.key()) || !AllValid(kv.value())) return false;
  } else if (v.is_array()) {
    for (const auto& e : v.get_array())
      if (!AllValid(e)) return false;
  }
  return true;
}

std::optional<std::string> PathOfInvalid(const boost::json::value& v, const std::string& path);

std::optional<std::string> PathOfInvalid(const boost::json::object& o, const std::string& path) {
  for (const auto& kv : o) {
    if (!IsValidUtf8(kv.key())) return ChildPath(path, ScrubUtf8(kv.key()));
    if (auto bad = PathOfInvalid(kv.value(), ChildPath(path, kv.key()))) return bad;
  }
  return std::nullopt;
}

std::optional<std::string> PathOfInvalid(const boost::json::value& v, const std::string& path) {
  if (v.is_string()) {
    if (!IsValidUtf8(v.get_string())) return path;
  } else if (v.is_object()) {
    return PathOfInvalid(v.get_object(), path);
  } else if (v.is_array()) {
    const auto& a = v.get_array();
    for (size_t i = 0; i < a.size(); ++i)
      if (auto bad = PathOfInvalid(a[i], path + "[" + std::to_string(i) + "]")) return bad;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> FindInvalidUtf8(const boost::json::value& v, const std::string& path) {
  if (AllValid(v)) return std::nullopt;
  return PathOfInvalid(v, path);
}

std::optional<std::string> FindInvalidUtf8(const boost::json::object& o, const std::string& path) {
  for (const auto& kv : o)
    if (!IsValidUtf8(kv.key()) || !AllValid(kv.value())) return PathOfInvalid(o, path);
  return std::nullopt;
}

void ScrubUtf8(boost::json::value& v) {
  if (v.is_string()) {
    if (!IsValidUtf8(v.get_string())) v = ScrubUtf8(v.get_string());
  } else if (v.is_object()) {
    boost::json::object& o = v.get_object();
    bool bad_key = false;
    for (auto& kv : o) {
      ScrubUtf8(kv.value());
      bad_key = bad_key || !IsValidUtf8(kv.key());
    }
    if (bad_key) {
      boost::json::object fixed;
      for (auto& kv : o) fixed[ScrubUtf8(kv.key())] = std::move(kv.value());
      o = std::move(fixed);
    }
  } else if (v.is_array()) {
    for (auto& e : v.get_array()) ScrubUtf8(e);
  }
}

}  // namespace gantry
