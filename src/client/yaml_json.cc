#include "client/yaml_json.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <optional>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/absl_compat.h"
#include "common/status_macros.h"
#include "common/utf8.h"

namespace gantry::client {
namespace {

namespace json = boost::json;

// Upper bound on converted nodes: aliases can make a small text expand exponentially
// ("billion laughs"); a manifest never comes near this.
constexpr int64_t kMaxNodes = 500'000;

bool StartsWith(std::string_view s, std::string_view p) { return s.starts_with(p); }
bool EndsWith(std::string_view s, std::string_view p) { return s.ends_with(p); }
bool Contains(std::string_view s, std::string_view p) { return s.find(p) != s.npos; }
bool Contains(std::string_view s, char c) { return s.find(c) != s.npos; }
std::string_view View(const json::string& s) { return std::string_view(s.data(), s.size()); }

bool AllOf(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s)
    if (!pred(c)) return false;
  return true;
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsOctal(char c) { return c >= '0' && c <= '7'; }
bool IsHex(char c) { return absl::ascii_isxdigit(static_cast<unsigned char>(c)); }

bool IsNullWord(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

// YAML 1.2 core schema float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsCoreFloat(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && IsDigit(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i, ++frac_digits;
    if (int_digits == 0 && frac_digits == 0) return false;
  } else if (int_digits == 0) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && IsDigit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

bool IsInfOrNan(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return s == ".inf" || s == ".Inf" || s == ".INF" || s == ".nan" || s == ".NaN" || s == ".NAN";
}

// The value a plain scalar stands for under the core schema. Infinity and NaN have no JSON
// form, so they stay strings.
json::value TypePlain(const std::string& s) {
  if (IsNullWord(s)) return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  std::string_view digits = s;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (AllOf(digits, IsDigit)) {
    int64_t i64;
    auto r = std::from_chars(s.data() + (s[0] == '+' ? 1 : 0), s.data() + s.size(), i64);
    if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return i64;
    uint64_t u64;
    if (!negative) {
      auto ru = std::from_chars(digits.data(), digits.data() + digits.size(), u64);
      if (ru.ec == std::errc() && ru.ptr == digits.data() + digits.size()) return u64;
    }
    // Too large for 64 bits: fall through to a double, as JSON readers do.
  }
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
    std::string_view body(s.data() + 2, s.size() - 2);
    int base = s[1] == 'o' ? 8 : 16;
    if (AllOf(body, base == 8 ? IsOctal : IsHex)) {
      uint64_t u64;
      auto r = std::from_chars(body.data(), body.data() + body.size(), u64, base);
      if (r.ec == std::errc() && r.ptr == body.data() + body.size()) {
        if (u64 <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(u64);
        return u64;
      }
      return json::string(s);  // out of range: keep the text rather than invent a value
    }
  }
  if (IsCoreFloat(s)) {
    std::string_view f = s;
    if (f[0] == '+') f.remove_prefix(1);
    double d;
    auto r = std::from_chars(f.data(), f.data() + f.size(), d);
    if (r.ec == std::errc() && r.ptr == f.data() + f.size() && std::isfinite(d)) return d;
    return json::string(s);
  }
  return json::string(s);
}

std::string NodeKindName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence:
      return "a sequence";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "nothing";
  }
}

std::string At(const YAML::Mark& m) {
  if (m.is_null()) return "";
  return absl::StrCat("line ", m.line + 1, ", column ", m.column + 1, ": ");
}

class Converter {
 public:
  absl::StatusOr<json::value> Convert(const YAML::Node& n, int depth) {
    if (++nodes_ > kMaxNodes) {
      return absl::InvalidArgumentError("document too large (aliases expand too far)");
    }
    if (depth > kMaxDocumentDepth) {
      return absl::InvalidArgumentError(
          absl::StrCat(At(n.Mark()), "nesting deeper than ", kMaxDocumentDepth, " levels"));
    }
    switch (n.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return json::value(nullptr);
      case YAML::NodeType::Scalar:
        return Scalar(n);
      case YAML::NodeType::Sequence: {
        json::array arr;
        for (const YAML::Node& item : n) {
          ASSIGN_OR_RETURN(json::value v, Convert(item, depth + 1));
          arr.push_back(std::move(v));
        }
        return json::value(std::move(arr));
      }
      case YAML::NodeType::Map: {
        json::object obj;
        for (auto it = n.begin(); it != n.end(); ++it) {
          // yaml-cpp's iterator hands out a temporary pair: copy the nodes (they are handles).
          const YAML::Node key = it->first;
          const YAML::Node value = it->second;
          if (key.Type() != YAML::NodeType::Scalar) {
            return absl::InvalidArgumentError(absl::StrCat(
                At(key.Mark()), "mapping keys must be strings, got ", NodeKindName(key)));
          }
          const std::string& k = key.Scalar();
          if (obj.contains(k)) {
            return absl::InvalidArgumentError(
                absl::StrCat(At(key.Mark()), "duplicate key \"", k, "\""));
          }
          ASSIGN_OR_RETURN(json::value v, Convert(value, depth + 1));
          obj.emplace(k, std::move(v));
        }
        return json::value(std::move(obj));
      }
    }
    return json::value(nullptr);
  }

 private:
  static absl::StatusOr<json::value> Scalar(const YAML::Node& n) {
    const std::string& tag = n.Tag();
    const std::string& s = n.Scalar();
    if (tag == "?") return TypePlain(s);  // plain scalar: resolve by the core schema
    constexpr std::string_view kCore = "tag:yaml.org,2002:";
    if (StartsWith(tag, kCore)) {
      std::string_view t = std::string_view(tag).substr(kCore.size());
      if (t == "str") return json::value(s);
      json::value v = TypePlain(s);
      bool fits = (t == "int" && (v.is_int64() || v.is_uint64())) ||
                  (t == "float" && (v.is_number())) || (t == "bool" && v.is_bool()) ||
                  (t == "null" && v.is_null());
      if (!fits) {
        return absl::InvalidArgumentError(
            absl::StrCat(At(n.Mark()), "\"", s, "\" is not a valid !!", Sv(t)));
      }
      if (t == "float" && !v.is_double()) return json::value(v.to_number<double>());
      return v;
    }
    return json::value(s);  // quoted ("!") or a custom tag: a string
  }

  int64_t nodes_ = 0;
};

// Adds `doc` (a converted document) to `out`: a mapping as itself, a List's items and a JSON
// array's elements one by one.
absl::Status AddDocument(json::value doc, int index, const std::string& where,
                         std::vector<json::object>& out) {
  auto describe = [&](const json::value& v) -> std::string {
    if (v.is_array()) return "a sequence";
    if (v.is_string()) return "a string";
    if (v.is_bool()) return "a boolean";
    if (v.is_number()) return "a number";
    return "null";
  };
  if (doc.is_null()) return absl::OkStatus();  // empty document
  // yaml-cpp's decoding can turn valid input into bytes that are not UTF-8 (found by
  // fuzz_yaml_json); nothing that is not UTF-8 leaves this reader.
  if (std::optional<std::string> bad = FindInvalidUtf8(doc))
    return absl::InvalidArgumentError("document " + std::to_string(index) + where +
                                      ": the text at " + (bad->empty() ? "the top" : *bad) +
                                      " does not decode to valid UTF-8");
  if (doc.is_array()) {
    int i = 0;
    for (json::value& item : doc.get_array()) {
      if (!item.is_object()) {
        return absl::InvalidArgumentError(absl::StrCat("document ", index, where, ": item ", i,
                                                       " is ", describe(item),
                                                       ", expected a mapping (an API object)"));
      }
      out.push_back(std::move(item.get_object()));
      ++i;
    }
    return absl::OkStatus();
  }
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "document ", index, where, ": expected a mapping (an API object), got ", describe(doc)));
  }
  json::object& obj = doc.get_object();
  const json::value* kind = obj.if_contains("kind");
  const json::value* items = obj.if_contains("items");
  if (kind && kind->is_string() && EndsWith(View(kind->get_string()), "List") && items &&
      (items->is_array() || items->is_null())) {
    int i = 0;
    if (items->is_array()) {
      for (const json::value& item : items->get_array()) {
        if (!item.is_object()) {
          return absl::InvalidArgumentError(absl::StrCat("document ", index, where, ": items[", i,
                                                         "] is ", describe(item),
                                                         ", expected a mapping (an API object)"));
        }
        out.push_back(item.get_object());
        ++i;
      }
    }
    return absl::OkStatus();
  }
  out.push_back(std::move(obj));
  return absl::OkStatus();
}

// ---- output -----------------------------------------------------------------------------

std::string FormatDouble(double d, bool yaml) {
  if (std::isnan(d)) return yaml ? ".nan" : "null";
  if (std::isinf(d)) return yaml ? (d < 0 ? "-.inf" : ".inf") : "null";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, r.ptr);
  // Keep it a float when read back: "3" would come back as an integer.
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

void AppendDoubleQuoted(std::string_view s, std::string& out) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\r':
        out += "\\r";
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      continue;
    }
    // U+0085, U+2028, U+2029 and the BOM would be taken as line breaks or stripped.
    std::string_view rest = s.substr(i);
    if (StartsWith(rest, "\xC2\x85")) {
      out += "\\N";
      ++i;
      continue;
    }
    if (StartsWith(rest, "\xE2\x80\xA8")) {
      out += "\\L";
      i += 2;
      continue;
    }
    if (StartsWith(rest, "\xE2\x80\xA9")) {
      out += "\\P";
      i += 2;
      continue;
    }
    if (StartsWith(rest, "\xEF\xBB\xBF")) {
      out += "\\uFEFF";
      i += 2;
      continue;
    }
    out += static_cast<char>(c);
  }
  out += '"';
}

bool LiteralBlockFits(std::string_view s) {
  if (s.find('\n') == std::string_view::npos) return false;
  if (s.front() == ' ' || s.front() == '\n' || s.front() == '\t') return false;
  if (EndsWith(s, "\n\n")) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f) return false;
  }
  if (Contains(s, "\xC2\x85") || Contains(s, "\xE2\x80\xA8") || Contains(s, "\xE2\x80\xA9") ||
      Contains(s, "\xEF\xBB\xBF")) {
    return false;
  }
  // A line with trailing spaces before a line break survives a literal block, but a last
  // line of only spaces would be read as trailing whitespace: keep it simple and exact.
  size_t last_nl = s.rfind('\n', s.size() - 2);
  if (last_nl != std::string_view::npos) {
    std::string_view tail = s.substr(last_nl + 1);
    if (absl::StripAsciiWhitespace(Sv(tail)).empty()) return false;
  }
  return true;
}

void Indent(int n, std::string& out) { out.append(static_cast<size_t>(n), ' '); }

// A string in value position; `indent` is the column of its key or dash.
void AppendStringValue(std::string_view s, int indent, std::string& out) {
  if (LiteralBlockFits(s)) {
    const bool trailing_nl = s.back() == '\n';
    out += trailing_nl ? "|\n" : "|-\n";
    std::string_view body = trailing_nl ? s.substr(0, s.size() - 1) : s;
    size_t start = 0;
    while (true) {
      size_t nl = body.find('\n', start);
      std::string_view line = body.substr(start, nl == std::string_view::npos ? nl : nl - start);
      if (!line.empty()) Indent(indent + 2, out);
      out += line;
      out += '\n';
      if (nl == std::string_view::npos) break;
      start = nl + 1;
    }
    return;
  }
  if (YamlNeedsQuotes(s)) {
    AppendDoubleQuoted(s, out);
  } else {
    out += s;
  }
  out += '\n';
}

void AppendKey(std::string_view k, std::string& out) {
  if (YamlNeedsQuotes(k)) {
    AppendDoubleQuoted(k, out);
  } else {
    out += k;
  }
  out += ':';
}

void EmitValue(const json::value& v, int indent, std::string& out);

// Emits the entries of a non-empty mapping at `indent`; the first line's indentation is
// already written when `first_inline` (after "- ").
void EmitObject(const json::object& o, int indent, bool first_inline, std::string& out) {
  bool first = true;
  for (const auto& kv : o) {
    if (!(first && first_inline)) Indent(indent, out);
    first = false;
    AppendKey(kv.key(), out);
    const json::value& v = kv.value();
    if (v.is_object() && !v.get_object().empty()) {
      out += '\n';
      EmitObject(v.get_object(), indent + 2, false, out);
    } else if (v.is_array() && !v.get_array().empty()) {
      out += '\n';
      EmitValue(v, indent, out);  // kubectl style: "- " at the key's column
    } else {
      out += ' ';
      if (v.is_string()) {
        AppendStringValue(View(v.get_string()), indent, out);
      } else {
        EmitValue(v, indent, out);
      }
    }
  }
}

void EmitArray(const json::array& a, int indent, bool first_inline, std::string& out) {
  bool first = true;
  for (const json::value& item : a) {
    if (!(first && first_inline)) Indent(indent, out);
    first = false;
    out += "- ";
    if (item.is_object() && !item.get_object().empty()) {
      EmitObject(item.get_object(), indent + 2, true, out);
    } else if (item.is_array() && !item.get_array().empty()) {
      EmitArray(item.get_array(), indent + 2, true, out);
    } else if (item.is_string()) {
      AppendStringValue(View(item.get_string()), indent, out);
    } else {
      EmitValue(item, indent + 2, out);
    }
  }
}

// Any value at the start of a line (after the key/dash for scalars), ending in "\n".
void EmitValue(const json::value& v, int indent, std::string& out) {
  switch (v.kind()) {
    case json::kind::null:
      out += "null\n";
      return;
    case json::kind::bool_:
      out += v.get_bool() ? "true\n" : "false\n";
      return;
    case json::kind::int64:
      out += std::to_string(v.get_int64()) + "\n";
      return;
    case json::kind::uint64:
      out += std::to_string(v.get_uint64()) + "\n";
      return;
    case json::kind::double_:
      out += FormatDouble(v.get_double(), true) + "\n";
      return;
    case json::kind::string:
      AppendStringValue(View(v.get_string()), indent, out);
      return;
    case json::kind::object:
      if (v.get_object().empty()) {
        out += "{}\n";
      } else {
        EmitObject(v.get_object(), indent, false, out);
      }
      return;
    case json::kind::array:
      if (v.get_array().empty()) {
        out += "[]\n";
      } else {
        EmitArray(v.get_array(), indent, false, out);
      }
      return;
  }
}

void EmitJson(const json::value& v, int indent, int level, std::string& out) {
  switch (v.kind()) {
    case json::kind::double_:
      out += FormatDouble(v.get_double(), false);
      return;
    case json::kind::object: {
      const json::object& o = v.get_object();
      if (o.empty()) {
        out += "{}";
        return;
      }
      out += "{\n";
      size_t i = 0;
      for (const auto& kv : o) {
        Indent(indent * (level + 1), out);
        out += json::serialize(json::string_view(kv.key()));
        out += ": ";
        EmitJson(kv.value(), indent, level + 1, out);
        if (++i < o.size()) out += ',';
        out += '\n';
      }
      Indent(indent * level, out);
      out += '}';
      return;
    }
    case json::kind::array: {
      const json::array& a = v.get_array();
      if (a.empty()) {
        out += "[]";
        return;
      }
      out += "[\n";
      for (size_t i = 0; i < a.size(); ++i) {
        Indent(indent * (level + 1), out);
        EmitJson(a[i], indent, level + 1, out);
        if (i + 1 < a.size()) out += ',';
        out += '\n';
      }
      Indent(indent * level, out);
      out += ']';
      return;
    }
    default:
      out += json::serialize(v);
      return;
  }
}

// JSON rather than flow-style YAML: an object whose first key is quoted, an empty object, or
// an array that opens with one of those.
bool LooksLikeJson(std::string_view t) {
  auto skip = [&](size_t i) {
    while (i < t.size() && absl::ascii_isspace(static_cast<unsigned char>(t[i]))) ++i;
    return i;
  };
  if (t.empty()) return false;
  if (t[0] == '[') {
    size_t i = skip(1);
    if (i >= t.size()) return false;
    if (t[i] == ']') return true;
    if (t[i] != '{') return false;
    t.remove_prefix(i);
  }
  if (t[0] != '{') return false;
  size_t i = skip(1);
  return i < t.size() && (t[i] == '"' || t[i] == '}');
}

}  // namespace

bool YamlNeedsQuotes(std::string_view s) {
  if (s.empty()) return true;
  // Anything the core schema (or a YAML 1.1 reader) would type: null, booleans, numbers.
  if (!TypePlain(std::string(s)).is_string() || IsInfOrNan(s)) return true;
  std::string lower = absl::AsciiStrToLower(Sv(s));
  if (lower == "yes" || lower == "no" || lower == "on" || lower == "off" || lower == "y" ||
      lower == "n" || s == "<<" || s == "=") {
    return true;
  }
  char c0 = s.front();
  // Indicators, and digits/signs/dots that start numbers, times and octals in YAML 1.1.
  if (Contains("-?:,[]{}#&*!|>'\"%@`.+ \t", c0) || IsDigit(c0)) return true;
  char cl = s.back();
  if (cl == ' ' || cl == '\t' || cl == ':') return true;
  if (Contains(s, ": ") || Contains(s, " #") || Contains(s, ":\t")) {
    return true;
  }
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) return true;
  }
  return Contains(s, "\xC2\x85") || Contains(s, "\xE2\x80\xA8") || Contains(s, "\xE2\x80\xA9") ||
         Contains(s, "\xEF\xBB\xBF");
}

// yaml-cpp (0.7) never leaves a stray flow entry in block context (",-", "- a\n,"): each
// HandleNextDocument returns one more empty document without consuming it, so LoadAll runs
// until memory is gone. A first pass with an event handler that builds nothing counts the
// documents; every real document uses at least one byte, so more than that is the loop.
class DocumentCounter final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Throws what yaml-cpp throws for malformed input.
absl::Status CheckDocumentsEnd(std::string_view text) {
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  DocumentCounter counter;
  for (size_t documents = 0; parser.HandleNextDocument(counter);)
    if (++documents > text.size() + 1)
      return absl::InvalidArgumentError(
          "a \",\" outside a flow collection ([...] or {...}) is not valid YAML");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<json::object>> YamlToJsonObjects(std::string_view text) {
  // YAML streams are Unicode (YAML 1.2, 5.2); yaml-cpp would pass invalid bytes through into
  // strings that no JSON reader accepts afterwards.
  if (!IsValidUtf8(text)) return absl::InvalidArgumentError("the text is not valid UTF-8");
  // YAML 1.2 (5.1) allows no C0 control characters but tab, line feed and carriage return.
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
      return absl::InvalidArgumentError("byte " + std::to_string(i) +
                                        " is a control character, which YAML does not allow");
  }
  std::vector<json::object> out;
  std::string_view trimmed = StdSv(absl::StripLeadingAsciiWhitespace(Sv(text)));
  if (LooksLikeJson(trimmed)) {
    // JSON: Boost.JSON keeps numbers exact and is strict (YAML would read `"b": }` as null).
    json::parse_options opts;
    opts.max_depth = kMaxDocumentDepth;
    json::stream_parser parser({}, opts);
    boost::system::error_code ec;
    size_t used = parser.write_some(text.data(), text.size(), ec);
    if (!ec) {
      // Anything after the value (besides whitespace) is an error too.
      std::string_view rest = text.substr(used);
      if (!StdSv(absl::StripAsciiWhitespace(Sv(rest))).empty()) {
        ec = json::error::extra_data;
      } else {
        parser.finish(ec);
      }
    }
    if (ec) {
      std::string_view before = text.substr(0, std::min(used, text.size()));
      size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
      size_t last_nl = before.rfind('\n');
      size_t column = before.size() - (last_nl == std::string_view::npos ? 0 : last_nl + 1) + 1;
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line, ", column ", column, ": ", ec.message()));
    }
    RETURN_IF_ERROR(AddDocument(parser.release(), 1, "", out));
    return out;
  }
  std::vector<YAML::Node> docs;
  try {
    RETURN_IF_ERROR(CheckDocumentsEnd(text));
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(At(e.mark), e.msg));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("cannot parse YAML: ", e.what()));
  }
  Converter conv;
  int index = 0;
  for (const YAML::Node& doc : docs) {
    ++index;
    absl::StatusOr<json::value> v;
    try {
      v = conv.Convert(doc, 0);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat("cannot convert YAML: ", e.what()));
    }
    RETURN_IF_ERROR(v.status());
    std::string where;
    if (!doc.Mark().is_null()) where = absl::StrCat(" (line ", doc.Mark().line + 1, ")");
    RETURN_IF_ERROR(AddDocument(*std::move(v), index, where, out));
  }
  return out;
}

std::string JsonToYaml(const json::value& value) {
  std::string out;
  if (value.is_string()) {
    AppendStringValue(View(value.get_string()), 0, out);
    return out;
  }
  EmitValue(value, 0, out);
  return out;
}

std::string PrettyJson(const json::value& value, int indent) {
  std::string out;
  EmitJson(value, indent, 0, out);
  out += '\n';
  return out;
}

}  // namespace gantry::client
