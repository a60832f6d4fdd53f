// RunLogs: the log of every run, one append-only file per run under DIR/runs/<uid>.log,
// with live followers (GET …/runs/NAME/log?follow=true).
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/line_stream.h"

namespace gantry::engine {

class RunLogs {
 public:
  explicit RunLogs(std::string dir);

  // Appends one line (a newline is added) and forwards it to followers.
  void Append(const std::string& run_uid, std::string_view line);
  // Ends the log: followers get what is left and their streams close.
  void Finish(const std::string& run_uid);
  // The whole log so far ("" when none).
  std::string Read(const std::string& run_uid);
  // Sends the log so far to `stream`, then, while `active`, each new line until Finish.
  void Follow(const std::string& run_uid, bool active, std::shared_ptr<LineStream> stream);
  void Remove(const std::string& run_uid);

 private:
  std::string PathOf(const std::string& run_uid) const;

  const std::string dir_;
  std::mutex mu_;
  std::map<std::string, std::vector<std::shared_ptr<LineStream>>> followers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gantry::engine
