// Label/field selector parsing and Kubernetes name validation.
//
// The label selector is a port of apimachinery pkg/labels/selector.go (Lexer, Parser, Parse)
// and the validators follow pkg/util/validation (IsDNS1123Label, IsQualifiedName,
// IsValidLabelValue) message for message. The field selector follows pkg/fields/selector.go
// (splitTerms, splitTerm, UnescapeValue). Scanning is done over std::string_view by hand: no
// regex, no recursion, and every index is bounds-checked, because the input is an untrusted
// query string.
//
// Deliberate differences from Kubernetes, each for a reason:
//  * `key in ()` / `key notin ()` are refused ("values set can't be empty"); Kubernetes reads
//    "()" as the set {""}, which surprises users. `(,)` still means {""}, as in Kubernetes.
//  * `>` and `<` (gt/lt) are refused: Gantry has no numeric label comparisons (SelectorOp).
//  * Key and value errors read `invalid label key "k": ...` / `invalid label value "v" for key
//    "k": ...` instead of Kubernetes' `<nil>: Invalid value: "k": ...`, and only the first bad
//    value is reported; the validator text after the colon is Kubernetes' own.
//  * A NUL byte is an ordinary byte (Go's lexer treats it as end of input, silently ignoring
//    the rest of the selector); it then fails key/value validation.
//  * Offending text in messages is escaped when it is not printable ASCII, so error bodies stay
//    valid UTF-8. An unescaped ',' or '=' in a field value is named as a character, not as
//    Go's rune number.
#include "model/label_selector.h"

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/errors.h"

namespace gantry::model {
namespace {

// String building over std::string_view. (absl::StrCat is avoided on purpose: the system
// Abseil may be built with its own string_view type, which std::string_view does not
// convert to.)
template <typename... Parts>
std::string Cat(const Parts&... parts) {
  std::string out;
  (out.append(std::string_view(parts)), ...);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Validation (k8s.io/apimachinery/pkg/util/validation).

constexpr size_t kDns1123LabelMaxLength = 63;
constexpr size_t kDns1123SubdomainMaxLength = 253;
constexpr size_t kQualifiedNameMaxLength = 63;
constexpr size_t kLabelValueMaxLength = 63;

constexpr std::string_view kDns1123LabelFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kDns1123LabelErrMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character";
constexpr std::string_view kDns1123SubdomainFmt =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr std::string_view kDns1123SubdomainErrMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character";
constexpr std::string_view kQualifiedNameFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr std::string_view kQualifiedNameErrMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";
constexpr std::string_view kLabelValueFmt = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
constexpr std::string_view kLabelValueErrMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character";

// validation.RegexError, including its double space before "or" (Kubernetes' exact text).
std::string RegexError(std::string_view msg, std::string_view fmt,
                       std::initializer_list<std::string_view> examples) {
  std::string out(msg);
  if (examples.size() == 0) {
    out += Cat(" (regex used for validation is '", fmt, "')");
    return out;
  }
  out += " (e.g. ";
  bool first = true;
  for (std::string_view e : examples) {
    if (!first) out += " or ";
    first = false;
    out += Cat("'", e, "', ");
  }
  out += Cat("regex used for validation is '", fmt, "')");
  return out;
}

std::string MaxLenError(size_t length) {
  return Cat("must be no more than ", std::to_string(length), " characters");
}

constexpr std::string_view kEmptyError = "must be non-empty";

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

// ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$
bool MatchesDns1123Label(std::string_view s) {
  if (s.empty() || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

// ^label(\.label)*$ with no per-label length limit (as the Kubernetes regex).
bool MatchesDns1123Subdomain(std::string_view s) {
  while (true) {
    size_t dot = s.find('.');
    if (!MatchesDns1123Label(s.substr(0, dot))) return false;
    if (dot == std::string_view::npos) return true;
    s.remove_prefix(dot + 1);
  }
}

// ^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$
bool MatchesQualifiedName(std::string_view s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

std::vector<std::string> IsDns1123Label(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDns1123LabelMaxLength) errs.push_back(MaxLenError(kDns1123LabelMaxLength));
  if (!MatchesDns1123Label(value)) {
    if (MatchesDns1123Subdomain(value)) {
      // A valid subdomain but not a valid label: the length was checked, so it must be dots.
      errs.emplace_back("must not contain dots");
    } else {
      errs.push_back(RegexError(kDns1123LabelErrMsg, kDns1123LabelFmt, {"my-name", "123-abc"}));
    }
  }
  return errs;
}

std::vector<std::string> IsDns1123Subdomain(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDns1123SubdomainMaxLength) {
    errs.push_back(MaxLenError(kDns1123SubdomainMaxLength));
  }
  if (!MatchesDns1123Subdomain(value)) {
    errs.push_back(RegexError(kDns1123SubdomainErrMsg, kDns1123SubdomainFmt, {"example.com"}));
  }
  return errs;
}

std::vector<std::string> IsQualifiedName(std::string_view value) {
  std::vector<std::string> errs;
  size_t slash = value.find('/');
  std::string_view name = value;
  if (slash != std::string_view::npos) {
    if (value.find('/', slash + 1) != std::string_view::npos) {
      errs.push_back(
          Cat("a qualified name ",
              RegexError(kQualifiedNameErrMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}),
              " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"));
      return errs;
    }
    std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      errs.push_back(Cat("prefix part ", kEmptyError));
    } else {
      for (std::string& m : IsDns1123Subdomain(prefix)) {
        errs.push_back(Cat("prefix part ", m));
      }
    }
  }
  if (name.empty()) {
    errs.push_back(Cat("name part ", kEmptyError));
  } else if (name.size() > kQualifiedNameMaxLength) {
    errs.push_back(Cat("name part ", MaxLenError(kQualifiedNameMaxLength)));
  }
  if (!MatchesQualifiedName(name)) {
    errs.push_back(Cat("name part ", RegexError(kQualifiedNameErrMsg, kQualifiedNameFmt,
                                                {"MyName", "my.name", "123-abc"})));
  }
  return errs;
}

std::vector<std::string> IsValidLabelValue(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelValueMaxLength) errs.push_back(MaxLenError(kLabelValueMaxLength));
  if (!value.empty() && !MatchesQualifiedName(value)) {
    errs.push_back(RegexError(kLabelValueErrMsg, kLabelValueFmt, {"MyValue", "my_value", "12345"}));
  }
  return errs;
}

// Kubernetes joins a validator's messages with "; " (labels.validateLabelKey).
std::optional<std::string> Joined(const std::vector<std::string>& errs) {
  if (errs.empty()) return std::nullopt;
  std::string out;
  for (const std::string& e : errs) {
    if (!out.empty()) out += "; ";
    out += e;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Message helpers.

bool IsPrintableAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

// Escapes like Go's %q body for bytes: \" \\ \n \r \t, other non-printable bytes as \xNN.
std::string Escaped(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c >= 0x20 && c < 0x7f) {
          out += c;
        } else {
          auto b = static_cast<unsigned char>(c);
          out += "\\x";
          out += kHex[b >> 4];
          out += kHex[b & 0xf];
        }
    }
  }
  return out;
}

// Text as it appears between '...' in a parser message: verbatim when printable ASCII (as
// Kubernetes prints it), escaped otherwise so the message stays valid, readable UTF-8.
std::string Shown(std::string_view s) { return IsPrintableAscii(s) ? std::string(s) : Escaped(s); }

// Go's %q for the ASCII range: double-quoted, escaped.
std::string Quoted(std::string_view s) { return Cat("\"", Escaped(s), "\""); }

// ---------------------------------------------------------------------------------------------
// Label selector lexer (labels.Lexer).

enum class Token {
  kError,
  kEndOfString,
  kClosedPar,
  kComma,
  kDoesNotExist,
  kDoubleEquals,
  kEquals,
  kGreaterThan,
  kIdentifier,
  kIn,
  kLessThan,
  kNotEquals,
  kNotIn,
  kOpenPar,
};

struct ScannedItem {
  Token tok = Token::kError;
  std::string_view literal;
};

// string2token: the literal tokens; everything else lexed from a word is an identifier.
std::optional<Token> LiteralToken(std::string_view s) {
  if (s == ")") return Token::kClosedPar;
  if (s == ",") return Token::kComma;
  if (s == "!") return Token::kDoesNotExist;
  if (s == "==") return Token::kDoubleEquals;
  if (s == "=") return Token::kEquals;
  if (s == ">") return Token::kGreaterThan;
  if (s == "in") return Token::kIn;
  if (s == "<") return Token::kLessThan;
  if (s == "!=") return Token::kNotEquals;
  if (s == "notin") return Token::kNotIn;
  if (s == "(") return Token::kOpenPar;
  return std::nullopt;
}

bool IsWhitespace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool IsSpecialSymbol(char c) {
  switch (c) {
    case '=':
    case '!':
    case '(':
    case ')':
    case ',':
    case '>':
    case '<':
      return true;
    default:
      return false;
  }
}

// Splits `s` into tokens, always ending with kEndOfString. Literals point into `s`.
std::vector<ScannedItem> Scan(std::string_view s) {
  std::vector<ScannedItem> items;
  size_t pos = 0;
  while (true) {
    while (pos < s.size() && IsWhitespace(s[pos])) ++pos;
    if (pos >= s.size()) {
      items.push_back({Token::kEndOfString, {}});
      return items;
    }
    size_t start = pos;
    if (IsSpecialSymbol(s[pos])) {
      // scanSpecialSymbol: extend while the longer text is still a token ("!=", "==").
      // Every single special symbol is itself a token, so this never yields kError.
      ScannedItem last{Token::kError, s.substr(start, 1)};
      while (pos < s.size() && IsSpecialSymbol(s[pos])) {
        std::string_view candidate = s.substr(start, pos - start + 1);
        if (auto tok = LiteralToken(candidate)) {
          last = {*tok, candidate};
          ++pos;
        } else {
          break;
        }
      }
      if (last.tok == Token::kError) ++pos;  // unreachable; keeps the loop advancing
      items.push_back(last);
    } else {
      // scanIDOrKeyword.
      while (pos < s.size() && !IsSpecialSymbol(s[pos]) && !IsWhitespace(s[pos])) ++pos;
      std::string_view word = s.substr(start, pos - start);
      items.push_back({LiteralToken(word).value_or(Token::kIdentifier), word});
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Label selector parser (labels.Parser).

// Whether 'in'/'notin' are keywords (after a key) or plain identifiers (keys and values).
enum class Context { kKeyAndOperator, kValues };

// The binary operators Gantry supports, in Kubernetes' binaryOperators order.
constexpr std::string_view kBinaryOperators = "in, notin, =, ==, !=";

class Parser {
 public:
  explicit Parser(std::string_view text) : items_(Scan(text)) {}

  absl::StatusOr<LabelSelector> Parse() {
    LabelSelector selector;
    while (true) {
      auto [tok, lit] = Lookahead(Context::kValues);
      switch (tok) {
        case Token::kIdentifier:
        case Token::kDoesNotExist: {
          absl::StatusOr<Requirement> r = ParseRequirement();
          if (!r.ok()) {
            return BadRequestError(
                Cat("unable to parse requirement: ", std::string(r.status().message())));
          }
          selector.requirements.push_back(*std::move(r));
          auto [t, l] = Consume(Context::kValues);
          if (t == Token::kEndOfString) return Finish(std::move(selector));
          if (t == Token::kComma) {
            auto [t2, l2] = Lookahead(Context::kValues);
            if (t2 != Token::kIdentifier && t2 != Token::kDoesNotExist) {
              return BadRequestError(
                  Cat("found '", Shown(l2), "', expected: identifier after ','"));
            }
            break;
          }
          return BadRequestError(Cat("found '", Shown(l), "', expected: ',' or 'end of string'"));
        }
        case Token::kEndOfString:
          return Finish(std::move(selector));
        default:
          return BadRequestError(
              Cat("found '", Shown(lit), "', expected: !, identifier, or 'end of string'"));
      }
    }
  }

 private:
  // Kubernetes sorts requirements by key for a deterministic result; stable so equal keys keep
  // their written order.
  static LabelSelector Finish(LabelSelector selector) {
    std::stable_sort(selector.requirements.begin(), selector.requirements.end(),
                     [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
    return selector;
  }

  static ScannedItem InContext(ScannedItem item, Context context) {
    if (context == Context::kValues && (item.tok == Token::kIn || item.tok == Token::kNotIn)) {
      item.tok = Token::kIdentifier;
    }
    return item;
  }

  // items_ always ends with kEndOfString; positions past it read that item again, so no
  // sequence of calls can index out of range.
  ScannedItem Lookahead(Context context) const {
    return InContext(items_[std::min(position_, items_.size() - 1)], context);
  }
  ScannedItem Consume(Context context) {
    ScannedItem item = Lookahead(context);
    if (position_ < items_.size()) ++position_;
    return item;
  }

  // Errors below are returned without the "unable to parse requirement: " prefix.
  absl::StatusOr<Requirement> ParseRequirement() {
    Requirement r;
    bool inferred = false;  // exists / does-not-exist
    ScannedItem item = Consume(Context::kValues);
    bool negated = false;
    if (item.tok == Token::kDoesNotExist) {
      negated = true;
      item = Consume(Context::kValues);
    }
    std::string_view lit = item.literal;
    if (item.tok != Token::kIdentifier) {
      return absl::InvalidArgumentError(Cat("found '", Shown(lit), "', expected: identifier"));
    }
    if (auto err = LabelKeyError(lit)) {
      return absl::InvalidArgumentError(Cat("invalid label key ", Quoted(lit), ": ", *err));
    }
    r.key = std::string(lit);
    if (negated) {
      r.op = SelectorOp::kDoesNotExist;
      inferred = true;
    } else if (Token t = Lookahead(Context::kValues).tok;
               t == Token::kEndOfString || t == Token::kComma) {
      r.op = SelectorOp::kExists;
      inferred = true;
    }
    // "!key" is complete whatever follows; Parse() then refuses e.g. the '=' of "!key=v".
    if (inferred) return r;

    auto [op_tok, op_lit] = Consume(Context::kKeyAndOperator);
    switch (op_tok) {
      case Token::kIn:
        r.op = SelectorOp::kIn;
        break;
      case Token::kNotIn:
        r.op = SelectorOp::kNotIn;
        break;
      case Token::kEquals:
      case Token::kDoubleEquals:
        r.op = SelectorOp::kEquals;
        break;
      case Token::kNotEquals:
        r.op = SelectorOp::kNotEquals;
        break;
      case Token::kGreaterThan:
      case Token::kLessThan:
        return absl::InvalidArgumentError(
            Cat("operator '", op_lit, "' is not supported, expected: ", kBinaryOperators));
      default:
        return absl::InvalidArgumentError(
            Cat("found '", Shown(op_lit), "', expected: ", kBinaryOperators));
    }

    absl::Status st = (r.op == SelectorOp::kIn || r.op == SelectorOp::kNotIn)
                          ? ParseValues(r.values)
                          : ParseExactValue(r.values);
    if (!st.ok()) return st;

    // NewRequirement: set semantics (sorted, unique), then value validation.
    std::sort(r.values.begin(), r.values.end());
    r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
    for (const std::string& v : r.values) {
      if (auto err = LabelValueError(v)) {
        return absl::InvalidArgumentError(
            Cat("invalid label value ", Quoted(v), " for key ", Quoted(r.key), ": ", *err));
      }
    }
    return r;
  }

  // "(" identifiers ")".
  absl::Status ParseValues(std::vector<std::string>& out) {
    ScannedItem open = Consume(Context::kValues);
    if (open.tok != Token::kOpenPar) {
      return absl::InvalidArgumentError(Cat("found '", Shown(open.literal), "' expected: '('"));
    }
    auto [tok, lit] = Lookahead(Context::kValues);
    switch (tok) {
      case Token::kIdentifier:
      case Token::kComma: {
        absl::Status st = ParseIdentifiersList(out);
        if (!st.ok()) return st;
        if (Consume(Context::kValues).tok != Token::kClosedPar) {  // unreachable, as in Go
          return absl::InvalidArgumentError(Cat("found '", Shown(lit), "', expected: ')'"));
        }
        return absl::OkStatus();
      }
      case Token::kClosedPar:
        // Kubernetes reads "()" as {""}; Gantry refuses it (see the file comment).
        return absl::InvalidArgumentError("for 'in', 'notin' operators, values set can't be empty");
      default:
        return absl::InvalidArgumentError(
            Cat("found '", Shown(lit), "', expected: ',', ')' or identifier"));
    }
  }

  // A possibly empty, comma-separated list of possibly empty identifiers; stops before ")".
  absl::Status ParseIdentifiersList(std::vector<std::string>& out) {
    while (true) {
      auto [tok, lit] = Consume(Context::kValues);
      switch (tok) {
        case Token::kIdentifier: {
          out.emplace_back(lit);
          auto [tok2, lit2] = Lookahead(Context::kValues);
          if (tok2 == Token::kComma) continue;
          if (tok2 == Token::kClosedPar) return absl::OkStatus();
          return absl::InvalidArgumentError(Cat("found '", Shown(lit2), "', expected: ',' or ')'"));
        }
        case Token::kComma: {
          if (out.empty()) out.emplace_back();  // "(,"
          Token tok2 = Lookahead(Context::kValues).tok;
          if (tok2 == Token::kClosedPar) {
            out.emplace_back();  // ",)"
            return absl::OkStatus();
          }
          if (tok2 == Token::kComma) {
            Consume(Context::kValues);
            out.emplace_back();  // ",,"
          }
          break;
        }
        default:
          return absl::InvalidArgumentError(
              Cat("found '", Shown(lit), "', expected: ',', or identifier"));
      }
    }
  }

  // One value after =, ==, !=; nothing before "," or the end means the empty value.
  absl::Status ParseExactValue(std::vector<std::string>& out) {
    Token next = Lookahead(Context::kValues).tok;
    if (next == Token::kEndOfString || next == Token::kComma) {
      out.emplace_back();
      return absl::OkStatus();
    }
    auto [tok, lit] = Consume(Context::kValues);
    if (tok == Token::kIdentifier) {
      out.emplace_back(lit);
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(Cat("found '", Shown(lit), "', expected: identifier"));
  }

  const std::vector<ScannedItem> items_;
  size_t position_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Field selector (fields.ParseSelector).

// splitTerms: split on ',' not preceded by an escaping backslash.
std::vector<std::string_view> SplitTerms(std::string_view s) {
  std::vector<std::string_view> terms;
  if (s.empty()) return terms;
  size_t start = 0;
  bool in_slash = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (in_slash) {
      in_slash = false;
    } else if (s[i] == '\\') {
      in_slash = true;
    } else if (s[i] == ',') {
      terms.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  terms.push_back(s.substr(start));
  return terms;
}

// Length of the UTF-8 sequence led by `c`, for quoting one character in a message.
size_t Utf8Length(unsigned char c) {
  if (c >= 0xf0 && c < 0xf8) return 4;
  if (c >= 0xe0) return c < 0xf0 ? 3 : 1;
  if (c >= 0xc0) return 2;
  return 1;
}

// UnescapeValue: \\, \, and \= are the escapes; a bare ',' or '=' is refused.
absl::StatusOr<std::string> UnescapeValue(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\\') {
      if (i + 1 >= s.size()) {
        return BadRequestError("invalid field selector: invalid escape sequence: \\");
      }
      char next = s[i + 1];
      if (next != '\\' && next != ',' && next != '=') {
        size_t n = std::min(Utf8Length(static_cast<unsigned char>(next)), s.size() - (i + 1));
        return BadRequestError(
            Cat("invalid field selector: invalid escape sequence: \\", Shown(s.substr(i + 1, n))));
      }
      out += next;
      ++i;
    } else if (c == ',' || c == '=') {
      return BadRequestError(
          Cat("invalid field selector: unescaped character in value: '", std::string(1, c), "'"));
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  for (const Requirement& r : requirements) {
    auto it = labels.find(r.key);
    bool has = it != labels.end();
    auto in_values = [&] {
      return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    };
    bool ok = false;
    switch (r.op) {
      case SelectorOp::kEquals:
      case SelectorOp::kIn:
        ok = in_values();
        break;
      case SelectorOp::kNotEquals:
      case SelectorOp::kNotIn:
        ok = !has || !in_values();
        break;
      case SelectorOp::kExists:
        ok = has;
        break;
      case SelectorOp::kDoesNotExist:
        ok = !has;
        break;
    }
    if (!ok) return false;
  }
  return true;
}

absl::StatusOr<LabelSelector> ParseLabelSelector(std::string_view text) {
  return Parser(text).Parse();
}

absl::StatusOr<std::vector<FieldRequirement>> ParseFieldSelector(
    std::string_view text, const std::vector<std::string>& supported) {
  std::vector<std::string_view> parts = SplitTerms(text);
  // Kubernetes sorts the terms before parsing, which also fixes which error is reported first.
  std::sort(parts.begin(), parts.end());
  std::vector<FieldRequirement> out;
  for (std::string_view part : parts) {
    if (part.empty()) continue;
    // splitTerm: the first position where "!=", "==" or "=" starts, in that preference.
    size_t i = 0;
    size_t op_len = 0;
    bool equals = true;
    for (; i < part.size(); ++i) {
      std::string_view rest = part.substr(i);
      if (rest.starts_with("!=")) {
        op_len = 2;
        equals = false;
        break;
      }
      if (rest.starts_with("==")) {
        op_len = 2;
        break;
      }
      if (rest.starts_with("=")) {
        op_len = 1;
        break;
      }
    }
    if (op_len == 0) {
      return BadRequestError(
          Cat("invalid selector: '", Shown(text), "'; can't understand '", Shown(part), "'"));
    }
    absl::StatusOr<std::string> value = UnescapeValue(part.substr(i + op_len));
    if (!value.ok()) return value.status();
    out.push_back(FieldRequirement{std::string(part.substr(0, i)), equals, *std::move(value)});
  }
  // The field check comes after parsing, as in Kubernetes, where it happens when the
  // parsed selector is converted for the resource.
  for (const FieldRequirement& r : out) {
    if (std::find(supported.begin(), supported.end(), r.field) == supported.end()) {
      return BadRequestError(Cat("field label not supported: ", Shown(r.field)));
    }
  }
  return out;
}

std::optional<std::string> Dns1123LabelError(std::string_view name) {
  return Joined(IsDns1123Label(name));
}

std::optional<std::string> LabelKeyError(std::string_view key) {
  return Joined(IsQualifiedName(key));
}

std::optional<std::string> LabelValueError(std::string_view value) {
  return Joined(IsValidLabelValue(value));
}

}  // namespace gantry::model
