// libFuzzer target for the YAML/JSON manifest reader (client/yaml_json.h), which parses the
// bodies of server-side apply (application/apply-patch+yaml) as well as `gantry apply -f`.
//
// Any input either is refused with INVALID_ARGUMENT or yields objects whose every key and
// string is valid UTF-8 (what the store requires, common/utf8.h) and whose JSON text reads
// back as an object: what the server would store can always be read and deleted again.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "client/yaml_json.h"
#include "common/utf8.h"
#include "model/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto docs = gantry::client::YamlToJsonObjects(text);
  if (!docs.ok()) {
    if (docs.status().code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
    return 0;
  }
  for (const auto& obj : *docs) {
    boost::json::value v(obj);
    if (gantry::FindInvalidUtf8(v)) __builtin_trap();  // the store would refuse it
    if (!gantry::model::ParseObjectJson(gantry::model::ToJson(v)).ok()) __builtin_trap();
  }
  return 0;
}
