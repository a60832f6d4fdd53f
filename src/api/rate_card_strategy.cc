// RateCards (cluster-scoped, API.md "Usage and cost", docs/usage.md): the prices of an hour
// of a GPU per type, of a CPU core and of a GiB of memory. Admit refuses prices that are not
// numbers or are negative (422 naming each); the schema checks the rest.
#include <cmath>

#include "api/strategy.h"
#include "common/errors.h"
#include "model/codec.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

// A cause for `field` unless `v` is a finite number >= 0.
void CheckPrice(const std::string& field, const json::value& v, std::vector<FieldCause>* causes) {
  double d = 0;
  if (v.is_int64())
    d = static_cast<double>(v.as_int64());
  else if (v.is_uint64())
    d = static_cast<double>(v.as_uint64());
  else if (v.is_double())
    d = v.as_double();
  else
    return causes->push_back({field, "Invalid value: a price must be a number, such as 2.5"});
  if (!std::isfinite(d) || d < 0)
    causes->push_back(
        {field, "Invalid value: " + json::serialize(v) + ": a price must be zero or more"});
}

class RateCardStrategy : public KindStrategy {
 public:
  absl::Status Admit(const Target& t, const json::object*, json::object& next,
                     std::vector<store::Write>*) const override {
    std::vector<FieldCause> causes;
    const json::value* spec = model::FindPath(next, "spec");
    if (!spec || !spec->is_object()) return absl::OkStatus();  // the schema said so
    const json::object& s = spec->as_object();
    if (auto it = s.find("gpuHourly"); it != s.end()) {
      if (!it->value().is_object())
        causes.push_back({"spec.gpuHourly",
                          "Invalid value: a map of GPU type to price, such "
                          "as {h100: 2.5}"});
      else
        for (const auto& kv : it->value().as_object())
          CheckPrice("spec.gpuHourly." + std::string(kv.key()), kv.value(), &causes);
    }
    for (const char* key : {"cpuHourly", "memoryGiBHourly"})
      if (auto it = s.find(key); it != s.end())
        CheckPrice(std::string("spec.") + key, it->value(), &causes);
    if (!causes.empty()) return InvalidError("RateCard", t.name, std::move(causes));
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<KindStrategy> NewRateCardStrategy(StrategyContext&) {
  return std::make_unique<RateCardStrategy>();
}

}  // namespace gantry::api
