// libFuzzer target for JSON patch (model/json_patch.h) and field sets
// (model/managed_fields.h), both fed from request bodies.
//
// The input is one JSON value; when it is [DOC, PATCH] the patch is applied to the document:
// it either succeeds or is refused with INVALID_ARGUMENT (400/422), never anything else, and
// the result stays within the depth and size limits. Any object met (the document before and
// after) must survive FieldsV1 encoding: LeafSet -> EncodeFieldsV1 -> DecodeFieldsV1 gives the
// same set. PATCH is also read as metadata.managedFields (any outcome but a crash is fine),
// and the two documents are compared and merged as server-side apply does.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/codec.h"
#include "model/json_patch.h"
#include "model/managed_fields.h"

namespace {

namespace json = boost::json;
using namespace gantry::model;

void CheckFieldsRoundTrip(const json::value& v) {
  if (!v.is_object()) return;
  FieldSet set = LeafSet(v.get_object());
  auto back = DecodeFieldsV1(EncodeFieldsV1(set));
  if (!back.ok() || *back != set) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseJsonValue(body);
  if (!parsed.ok()) return 0;
  if (!parsed->is_array() || parsed->get_array().size() != 2) {
    (void)DecodeManagedFields(*parsed);
    return 0;
  }
  json::value doc = parsed->get_array()[0];
  const json::value& patch = parsed->get_array()[1];
  (void)DecodeManagedFields(patch);
  CheckFieldsRoundTrip(doc);
  json::value patched = doc;
  absl::Status s = ApplyJsonPatch(patched, patch);
  if (!s.ok()) {
    if (s.code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
    return 0;
  }
  if (json::serialize(patched).size() > kMaxJsonPatchResultBytes + size) __builtin_trap();
  // The result must read back within the parser's depth limit (plus the wrapper's level).
  if (!ParseJsonValue("[" + json::serialize(patched) + "]").ok()) __builtin_trap();
  CheckFieldsRoundTrip(patched);
  if (doc.is_object() && patched.is_object()) {
    json::object before = TrackedFields(doc.get_object());
    json::object merged = MergeApplied(doc.get_object(), patched.get_object());
    FieldChange change = CompareFields(before, TrackedFields(merged));
    Managers managers;
    RecordUpdate(managers, change, "fuzz", "v1", "t");
    (void)RecordApply(managers, change, LeafSet(TrackedFields(patched.get_object())), "other", "v1",
                      "t", false);
    RemoveFields(merged, FieldsToPrune(managers, "fuzz", {}));
  }
  return 0;
}
