#include "engine/inventory.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "drivers/common/process.h"

namespace gantry::engine {
namespace {

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(absl::string_view(s.data(), s.size()), sep))
    out.emplace_back(absl::StripAsciiWhitespace(part));
  return out;
}

bool ValidType(const std::string& t) {
  if (t.empty() || t.size() > 63) return false;
  for (char c : t)
    if (!std::islower(static_cast<unsigned char>(c)) &&
        !std::isdigit(static_cast<unsigned char>(c)) && c != '-')
      return false;
  return true;
}

}  // namespace

std::string GpuTypeOf(std::string_view product_name) {
  std::istringstream words{std::string(product_name)};
  std::string w;
  while (words >> w) {
    if (std::none_of(w.begin(), w.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      continue;
    std::string t;
    for (char c : w) {
      if (c == '-' || c == '_') break;
      t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (!t.empty()) return t;
  }
  return "gpu";
}

absl::StatusOr<Inventory> ParseNvidiaSmi(std::string_view csv) {
  Inventory inv;
  inv.source = "nvidia-smi";
  for (const std::string& line : Split(csv, '\n')) {
    if (line.empty()) continue;
    auto f = Split(line, ',');
    if (f.size() < 4) return absl::InvalidArgumentError("unexpected nvidia-smi output: " + line);
    Gpu g;
    try {
      g.index = std::stoi(f[0]);
      g.memory_mib = std::stoll(f[3]);
    } catch (const std::exception&) {
      return absl::InvalidArgumentError("unexpected nvidia-smi output: " + line);
    }
    g.uuid = f[1];
    g.name = f[2];
    g.type = GpuTypeOf(g.name);
    inv.gpus.push_back(std::move(g));
  }
  return inv;
}

absl::StatusOr<Inventory> ParseGpuFlag(std::string_view flag) {
  Inventory inv;
  inv.source = "configured";
  int index = 0;
  for (const std::string& part : Split(flag, ',')) {
    if (part.empty()) continue;
    auto colon = part.find(':');
    std::string type = part.substr(0, colon);
    int count = 1;
    if (colon != std::string::npos) {
      std::string n = part.substr(colon + 1);
      if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos)
        return absl::InvalidArgumentError("--gpus: \"" + part +
                                          "\" must be TYPE:COUNT, e.g. h100:8");
      count = std::stoi(n);
    }
    if (!ValidType(type))
      return absl::InvalidArgumentError("--gpus: GPU type \"" + type +
                                        "\" must be lower-case letters, digits or '-' (e.g. h100)");
    for (int i = 0; i < count; ++i) {
      Gpu g;
      g.index = index++;
      g.name = "configured " + type;
      g.type = type;
      inv.gpus.push_back(std::move(g));
    }
  }
  return inv;
}

Inventory DiscoverGpus(std::string* why) {
  drivers::ProcessSpec spec;
  spec.argv = {"nvidia-smi", "--query-gpu=index,uuid,name,memory.total",
               "--format=csv,noheader,nounits"};
  spec.timeout = std::chrono::seconds(30);
  std::string out;
  drivers::ProcessHooks hooks;
  hooks.on_line = [&](std::string_view line) { out += std::string(line) + "\n"; };
  auto result = drivers::RunProcess(spec, hooks);
  if (!result.ok()) {
    *why = std::string(result.status().message());
    return Inventory{};
  }
  if (result->exit_code != 0) {
    *why = "nvidia-smi exited with code " + std::to_string(result->exit_code) + ": " + out;
    return Inventory{};
  }
  auto inv = ParseNvidiaSmi(out);
  if (!inv.ok()) {
    *why = std::string(inv.status().message());
    return Inventory{};
  }
  return *inv;
}

namespace {
// An empty type asks for GPUs of any type.
bool Matches(const Gpu& g, const std::string& type) { return type.empty() || g.type == type; }
}  // namespace

GpuAllocator::GpuAllocator(Inventory inventory) : inventory_(std::move(inventory)) {}

int GpuAllocator::Total(const std::string& type) const {
  return static_cast<int>(std::count_if(inventory_.gpus.begin(), inventory_.gpus.end(),
                                        [&](const Gpu& g) { return Matches(g, type); }));
}

int GpuAllocator::Free(const std::string& type) {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& g : inventory_.gpus)
    if (Matches(g, type) && !owner_of_.count(g.index)) ++n;
  return n;
}

std::optional<std::vector<Gpu>> PickGpus(const std::vector<Gpu>& gpus,
                                         const std::map<int, std::string>& owner_of,
                                         const std::string& owner, const std::string& type,
                                         int count) {
  std::vector<Gpu> held, free;
  for (const auto& g : gpus) {
    if (!Matches(g, type)) continue;
    auto it = owner_of.find(g.index);
    if (it == owner_of.end())
      free.push_back(g);
    else if (it->second == owner)
      held.push_back(g);
  }
  if (static_cast<int>(held.size()) >= count) {
    held.resize(count);
    return held;
  }
  if (static_cast<int>(held.size() + free.size()) < count) return std::nullopt;
  for (const auto& g : free) {
    if (static_cast<int>(held.size()) == count) break;
    held.push_back(g);
  }
  std::sort(held.begin(), held.end(), [](const Gpu& a, const Gpu& b) { return a.index < b.index; });
  return held;
}

std::optional<std::vector<Gpu>> GpuAllocator::Assign(const std::string& owner,
                                                     const std::string& type, int count) {
  std::lock_guard<std::mutex> lock(mu_);
  auto picked = PickGpus(inventory_.gpus, owner_of_, owner, type, count);
  if (picked)
    for (const auto& g : *picked) owner_of_[g.index] = owner;
  return picked;
}

std::vector<int> GpuAllocator::Restore(const std::string& owner, const std::vector<int>& indices) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> rejected;
  for (int i : indices) {
    bool known = std::any_of(inventory_.gpus.begin(), inventory_.gpus.end(),
                             [&](const Gpu& g) { return g.index == i; });
    auto it = owner_of_.find(i);
    if (!known || (it != owner_of_.end() && it->second != owner)) {
      rejected.push_back(i);
      continue;
    }
    owner_of_[i] = owner;
  }
  return rejected;
}

void GpuAllocator::Release(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = owner_of_.begin(); it != owner_of_.end();)
    it = it->second == owner ? owner_of_.erase(it) : std::next(it);
}

std::map<int, std::string> GpuAllocator::Assignments() {
  std::lock_guard<std::mutex> lock(mu_);
  return owner_of_;
}

}  // namespace gantry::engine
