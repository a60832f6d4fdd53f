// libFuzzer target for the Slurm driver's readers of Slurm's output
// (drivers/slurm/slurm_json.h): `squeue --json` / `scontrol show job --json` documents and
// `sbatch --parsable` answers. Both come from another program, so they are outside input.
//
// Besides "no crash, no sanitizer report": a refusal is INVALID_ARGUMENT, a parsed job's
// exit code is a byte, and a submitted job id is never negative.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "drivers/slurm/slurm_json.h"

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace gantry::drivers::slurm;
  auto listing = ParseJobListing(text);
  if (!listing.ok()) {
    Check(listing.status().code() == absl::StatusCode::kInvalidArgument);
  } else {
    for (const auto& j : listing->jobs) {
      Check(j.exit_code >= 0 && j.exit_code <= 255);
      Check(j.exit_signal >= 0 && j.exit_signal <= 127);
      (void)IsTerminalState(j.state);
      (void)EndReason(j.state);
      (void)ExplainPendingReason(j.reason);
      if (j.job_id != 0) Check(FindJob(*listing, j.job_id) != nullptr);
    }
  }
  auto id = ParseSubmittedJobId(text);
  if (id.ok()) Check(*id >= 0);
  return 0;
}
