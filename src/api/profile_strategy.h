// ProfileStrategy: the rules compute and service profiles share. A profile names a
// template (own or shared in) and pins its latest revision; its variable defaults must fit
// the template's variables and are sealed when sensitive; every spec change is a new
// revision. The kinds add their own checks (compute_profile_strategy.cc,
// service_profile_strategy.cc).
//
// Thread-safety: as every KindStrategy (strategy.h).
#pragma once

#include "api/strategy.h"

namespace gantry::api {

class ProfileStrategy : public KindStrategy {
 public:
  explicit ProfileStrategy(StrategyContext& ctx) : ctx_(ctx) {}

  KindTraits Traits() const override { return {.sharable = true}; }
  void PrepareForUpdate(const Target& t, const boost::json::object& current,
                        boost::json::object& next) const override;
  absl::Status Admit(const Target& t, const boost::json::object* current, boost::json::object& next,
                     std::vector<store::Write>* writes) const override;

 protected:
  // What the kind checks beyond the shared rules, after the defaults are sealed.
  virtual absl::Status AdmitMore(const Target& t, const boost::json::object& next) const {
    return absl::OkStatus();
  }

  StrategyContext& ctx_;

 private:
  // The template exists and is shared in; sensitive defaults sealed; defaults fit it.
  absl::Status CheckTemplate(const Target& t, const boost::json::object* current,
                             boost::json::object& next) const;
};

}  // namespace gantry::api
