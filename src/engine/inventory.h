// GPU inventory of this host and the allocation of its GPUs to instances.
//
// The inventory is discovered with `nvidia-smi --query-gpu=index,uuid,name,memory.total
// --format=csv,noheader` when nvidia-smi is present, or configured with `--gpus h100:8,a100:2`
// (clearly reported as configured: for machines without GPUs and for tests). A GPU's type is
// the first word of its product name that holds a digit, lower-cased ("NVIDIA H100 80GB
// HBM3" -> "h100"), which is how profiles name types (spec.resources.gpu.type).
//
// GpuAllocator hands out GPUs exclusively: a GPU belongs to at most one instance at a time.
// The engine assigns and releases under the dispatcher's control and rebuilds the
// assignment from the store at start-up.
//
// Thread-safety: Inventory is a value; GpuAllocator is safe from any thread.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"

namespace gantry::engine {

struct Gpu {
  int index = 0;
  std::string uuid;  // "" when configured
  std::string name;  // product name
  std::string type;  // h100
  int64_t memory_mib = 0;
};

struct Inventory {
  std::vector<Gpu> gpus;
  std::string source = "none";  // nvidia-smi, configured, none
};

// "NVIDIA H100 80GB HBM3" -> "h100"; "Tesla V100-SXM2-16GB" -> "v100".
std::string GpuTypeOf(std::string_view product_name);
// Parses nvidia-smi's CSV (index, uuid, name, memory.total "81559 MiB").
absl::StatusOr<Inventory> ParseNvidiaSmi(std::string_view csv);
// Parses `--gpus h100:8,a100:2`. INVALID_ARGUMENT with a clear message otherwise.
absl::StatusOr<Inventory> ParseGpuFlag(std::string_view flag);
// Runs nvidia-smi; an Inventory with source "none" when it is absent or fails (the reason
// is logged by the caller from `why`).
Inventory DiscoverGpus(std::string* why);

// The GPUs of `type` ("" = any) that `owner` gets when it asks for `count` of them, given who
// holds which (index -> owner): those it holds already first, then the lowest free indices;
// nullopt when not enough are free. Pure: GpuAllocator::Assign and the dispatcher's
// admission (engine/admission.h) decide with it.
std::optional<std::vector<Gpu>> PickGpus(const std::vector<Gpu>& gpus,
                                         const std::map<int, std::string>& owner_of,
                                         const std::string& owner, const std::string& type,
                                         int count);

class GpuAllocator {
 public:
  explicit GpuAllocator(Inventory inventory);

  const Inventory& inventory() const { return inventory_; }
  int Total(const std::string& type) const;
  int Free(const std::string& type);
  // Type "" means any type (Total, Free, Assign).
  // Assigns `count` free GPUs of `type` to `owner` (lowest indices first); nullopt when not
  // enough are free. An owner holding GPUs already keeps them (they are returned again).
  std::optional<std::vector<Gpu>> Assign(const std::string& owner, const std::string& type,
                                         int count);
  // Marks GPUs as held by `owner` (start-up rebuild from the store). Indices that are
  // unknown or held by someone else are ignored and reported in the return value.
  std::vector<int> Restore(const std::string& owner, const std::vector<int>& indices);
  void Release(const std::string& owner);
  // index -> owner, for the API.
  std::map<int, std::string> Assignments();

 private:
  const Inventory inventory_;
  std::mutex mu_;
  std::map<int, std::string> owner_of_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gantry::engine
