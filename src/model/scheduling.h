// Fair sharing of GPUs (API.md "Sharing GPUs fairly"): the typed parts of a Project's
// spec.quota.guaranteedGpus and a ComputeProfile's spec.scheduling, their defaults and their
// validation (422 causes naming the field). The engine's admission (engine/admission.h)
// reads them; the project and compute-profile strategies validate them.
//
//   guaranteedGpus         per GPU type, the GPUs always available to the project: others
//                          may borrow them while it does not use them and are preempted
//                          when it asks. Not negative, not above quota.gpus of that type.
//                          Guarantees summed over projects may exceed the fleet (allowed,
//                          with a warning: OvercommittedGuarantees).
//   scheduling.priority    orders the queue (higher first); default 0
//   scheduling.preemptible whether instances may be preempted while they borrow; default
//                          false: such an instance is admitted only within its project's
//                          guarantee (when the project has guarantees at all)
//   preemptionGracePeriod  SIGTERM, this long, then the kill; default 30s, at most 1h
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/errors.h"

namespace gantry::model {

struct Scheduling {
  int64_t priority = 0;
  bool preemptible = false;
  std::chrono::seconds grace_period{30};
};

inline constexpr std::chrono::seconds kMaxGracePeriod{3600};

// A ComputeProfile spec's scheduling, defaults filled (invalid values read as defaults).
Scheduling DecodeScheduling(const boost::json::object& profile_spec);
// Appends a cause per invalid field of spec.scheduling.
void ValidateScheduling(const boost::json::object& profile_spec, std::vector<FieldCause>* causes);

// A Project's spec.quota.guaranteedGpus by GPU type (absent: none).
std::map<std::string, int64_t> DecodeGuaranteedGpus(const boost::json::object& project);
// Appends a cause per invalid entry of spec.quota.guaranteedGpus.
void ValidateGuarantees(const boost::json::object& project_spec, std::vector<FieldCause>* causes);

// Guarantees summed over the projects may be above the GPUs of a type: allowed, since not
// every project uses its guarantee at once, but then they cannot all be kept together. By
// GPU type (only the overcommitted ones), the words that say so: "guaranteedGpus of h100 sum
// to 6 over 2 projects (a 3, b 3) but the fleet has 4 h100 GPUs: not every guarantee can
// be kept at once". `guarantees`: project -> DecodeGuaranteedGpus; `capacity`: GPUs by type.
using GuaranteesByProject = std::map<std::string, std::map<std::string, int64_t>>;
std::map<std::string, std::string> OvercommittedGuarantees(
    const GuaranteesByProject& guarantees, const std::map<std::string, int64_t>& capacity);
// The guarantees of stored Projects `projects`, by project name.
GuaranteesByProject GuaranteesOf(const std::vector<boost::json::object>& projects);
// What a project guaranteed `own` is told: the words of each of its overcommitted types,
// joined by "; "; empty when none of its types is.
std::string OvercommitWords(const std::map<std::string, int64_t>& own,
                            const std::map<std::string, std::string>& overcommitted);
// The Project condition that says so (engine/share_monitor.h keeps it; True: reason
// Overcommitted, False: reason WithinCapacity).
inline constexpr char kGuaranteesOvercommitted[] = "GuaranteesOvercommitted";

// "Guaranteed" or "Borrowed" (status.admission).
inline constexpr char kGuaranteed[] = "Guaranteed";
inline constexpr char kBorrowed[] = "Borrowed";

}  // namespace gantry::model
