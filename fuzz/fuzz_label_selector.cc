// libFuzzer target for the label and field selector parsers (model/label_selector.h), which
// read untrusted `labelSelector=` / `fieldSelector=` query parameters.
//
// Besides "no crash, no sanitizer report", it checks invariants the API relies on, trapping
// when one breaks:
//  * every refusal is INVALID_ARGUMENT with a printable-ASCII message (it goes into a JSON
//    Status body verbatim);
//  * a parsed label selector only holds keys and values that the validators accept, and
//    in/notin requirements are never empty;
//  * a parsed field selector only names supported fields.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "model/label_selector.h"

namespace {

using gantry::model::SelectorOp;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

bool PrintableAscii(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

void CheckRefusal(const absl::Status& status) {
  Check(status.code() == absl::StatusCode::kInvalidArgument);
  Check(!status.message().empty());
  Check(PrintableAscii(std::string_view(status.message().data(), status.message().size())));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  auto selector = gantry::model::ParseLabelSelector(text);
  if (selector.ok()) {
    for (const auto& r : selector->requirements) {
      Check(!gantry::model::LabelKeyError(r.key).has_value());
      for (const auto& v : r.values) Check(!gantry::model::LabelValueError(v).has_value());
      switch (r.op) {
        case SelectorOp::kEquals:
        case SelectorOp::kNotEquals:
          Check(r.values.size() == 1);
          break;
        case SelectorOp::kIn:
        case SelectorOp::kNotIn:
          Check(!r.values.empty());
          break;
        case SelectorOp::kExists:
        case SelectorOp::kDoesNotExist:
          Check(r.values.empty());
          break;
      }
    }
    static const std::map<std::string, std::string> kLabels = {
        {"app", "web"}, {"tier", "frontend"}, {"gantry.dev/gpu", "h100"}, {"empty", ""}};
    (void)selector->Matches(kLabels);
    (void)selector->Matches({});
  } else {
    CheckRefusal(selector.status());
  }

  static const std::vector<std::string> kSupported = {"metadata.name", "status.phase"};
  auto fields = gantry::model::ParseFieldSelector(text, kSupported);
  if (fields.ok()) {
    for (const auto& f : *fields) Check(f.field == kSupported[0] || f.field == kSupported[1]);
  } else {
    CheckRefusal(fields.status());
  }

  // The validators see arbitrary bytes too (object names and label maps from request bodies).
  (void)gantry::model::Dns1123LabelError(text);
  (void)gantry::model::LabelKeyError(text);
  (void)gantry::model::LabelValueError(text);
  return 0;
}
