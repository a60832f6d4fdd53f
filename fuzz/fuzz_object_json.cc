// libFuzzer target for the request-body JSON codec (model/codec.h).
//
// Any input either is refused with INVALID_ARGUMENT or parses to an object; a parsed object
// must survive ToJson -> ParseObjectJson (so what the server stores and echoes can always be
// read back) and come back the same. Doubles may drift by a few ulps: Boost.JSON 1.81's default
// number parser is not correctly rounded (a 45-digit integer literal re-reads 1 ulp off), which
// is accepted here; anything else breaking the round trip traps.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "model/codec.h"

namespace {

namespace json = boost::json;

bool CloseEnough(double a, double b) {
  if (a == b) return true;
  if (!std::isfinite(a) || !std::isfinite(b)) return false;
  return std::fabs(a - b) <= 1e-15 * std::max(std::fabs(a), std::fabs(b));
}

// Structural equality with CloseEnough doubles. Recursion is bounded by kMaxJsonDepth, which
// ParseObjectJson enforces on both sides.
bool Same(const json::value& a, const json::value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case json::kind::double_:
      return CloseEnough(a.get_double(), b.get_double());
    case json::kind::array: {
      const json::array& x = a.get_array();
      const json::array& y = b.get_array();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!Same(x[i], y[i])) return false;
      }
      return true;
    }
    case json::kind::object: {
      const json::object& x = a.get_object();
      const json::object& y = b.get_object();
      if (x.size() != y.size()) return false;
      for (const auto& kv : x) {
        const json::value* other = y.if_contains(kv.key());
        if (other == nullptr || !Same(kv.value(), *other)) return false;
      }
      return true;
    }
    default:
      return a == b;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto parsed = gantry::model::ParseObjectJson(body);
  if (!parsed.ok()) {
    if (parsed.status().code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
    return 0;
  }
  json::value original(std::move(*parsed));
  std::string once = gantry::model::ToJson(original);
  auto again = gantry::model::ParseObjectJson(once);
  if (!again.ok()) __builtin_trap();                           // our own output must parse
  if (!Same(original, json::value(*again))) __builtin_trap();  // ... to the same object
  return 0;
}
