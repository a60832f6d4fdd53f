// A driver's record of a workload in the instance's state directory (DeployRequest::
// state_dir), kept beside the engine's copy in status.driverState: what a driver needs to find
// its workload again when the store's copy is behind (a crash between starting the workload
// and saving the state). One JSON object per driver and instance, written atomically (a temp
// file, then rename), so a reader sees the old or the new record, never half of one.
//
// Thread-safety: free functions; concurrent writers of one file must be serialized by the
// caller (a driver writes an instance's record from one thread at a time).
#pragma once

#include <boost/json.hpp>
#include <string>

namespace gantry::drivers {

// Writes `state` to STATE_DIR/FILE (creating the directory). Best effort: a failure leaves
// the previous record. Nothing happens when `state_dir` is empty.
void WriteStateFile(const std::string& state_dir, const char* file,
                    const boost::json::object& state);
// The record, or an empty object when there is none or it does not parse.
boost::json::object ReadStateFile(const std::string& state_dir, const char* file);
void RemoveStateFile(const std::string& state_dir, const char* file);

}  // namespace gantry::drivers
