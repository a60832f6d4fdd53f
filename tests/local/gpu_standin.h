// The fixture of the local tests that need GPU utilisation (issue 17 item 4,
// docs/gpu-sampling.md): LocalTest (local_fixture.h: `--gpus h100:8`) plus
// `--gpu-sample-interval 1s` and the stand-in nvidia-smi of tests/local copied into the test's
// scratch directory and put first on gantryd's PATH, so that the test sets what each GPU
// reports (this machine has no GPUs; the stand-in is the one stand-in the tests allow).
//
//   Report("0 37\n1 [N/A]\n")   from now on GPU 0 reads 37 %, GPU 1 is unreadable, the others
//                               are left out (unreadable too)
//   Fail()                      nvidia-smi fails as without a driver (exit 9)
//   ExitWith(1)                 nvidia-smi prints nothing and exits 1
//
// Thread-safety: like LocalTest, for the test's thread.
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "local_fixture.h"

namespace gantry::testing {

class GpuStandinTest : public LocalTest {
 protected:
  std::vector<std::string> Args() override {
    std::vector<std::string> args = LocalTest::Args();
    args.insert(args.end(), {"--gpu-sample-interval", "1s"});
    return args;
  }
  void Configure(GantrydProcess& gantryd) override {
    bin_ = Path("bin");
    std::filesystem::create_directories(bin_);
    std::filesystem::copy_file(GANTRY_NVIDIA_SMI_STANDIN, bin_ + "/nvidia-smi");
    ::chmod((bin_ + "/nvidia-smi").c_str(), 0755);
    const char* path = std::getenv("PATH");
    gantryd.SetEnv("PATH", bin_ + ":" + (path ? path : "/usr/bin:/bin"));
  }

  // What the GPUs report from now on ("INDEX VALUE" lines, see tests/local/nvidia-smi).
  void Report(const std::string& lines) {
    std::filesystem::remove(bin_ + "/gpu-exit");
    Write("gpu-utilization", lines);
  }
  // nvidia-smi fails (as without a driver) until the next Report.
  void Fail() { std::filesystem::remove(bin_ + "/gpu-utilization"); }
  // nvidia-smi exits with `code` (printing nothing) until the next Report.
  void ExitWith(int code) { Write("gpu-exit", std::to_string(code) + "\n"); }

  static bool HasIdleSince(const boost::json::object& i) {
    const boost::json::value* st = i.if_contains("status");
    return st && st->is_object() && st->as_object().contains("idleSince");
  }
  boost::json::object WaitUtil(const std::string& name, int64_t percent, bool idle) {
    return WaitInstance(
        name,
        [&](const boost::json::object& i) {
          return Int(i, "status.gpuUtilization", -1) == percent && HasIdleSince(i) == idle;
        },
        "gpuUtilization " + std::to_string(percent) + (idle ? " and" : " without") + " idleSince");
  }

  std::string bin_;

 private:
  // Never half-written when sampled: a temp file, then a rename.
  void Write(const std::string& name, const std::string& text) {
    const std::string file = bin_ + "/" + name;
    std::ofstream(file + ".tmp", std::ios::trunc) << text;
    std::filesystem::rename(file + ".tmp", file);
  }
};

}  // namespace gantry::testing
