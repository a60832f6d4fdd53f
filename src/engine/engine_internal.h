// What the parts of the Engine (engine.cc, actions.cc, dispatcher.cc, executor.cc,
// recovery.cc) share: typed reads and writes of runs and instances, and the small rules of
// the driver contract. Not part of the engine's interface.
//
// Thread-safety: free functions over a thread-safe Store.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/objects.h"
#include "store/store.h"

namespace gantry::engine::internal {

// How often a write lost to a concurrent one is read again and retried.
inline constexpr int kMaxRetries = 20;

// A lost test-and-set (errors.h VersionConflictError): read again and retry.
inline bool IsConflict(const absl::Status& s) { return absl::IsAborted(s); }

absl::StatusOr<model::Run> LoadRun(store::Store& store, const std::string& ns,
                                   const std::string& name);
absl::StatusOr<model::Instance> LoadInstance(store::Store& store, const std::string& kind,
                                             const std::string& ns, const std::string& name);
// The instance a run acts on; NOT_FOUND also when the name now belongs to another instance.
absl::StatusOr<model::Instance> InstanceOf(store::Store& store, const model::Run& run);

// Test-and-set updates on the resourceVersion the object was read at.
store::Write UpdateOf(const model::Run& run);
store::Write UpdateOf(const model::Instance& instance);
// The same from an object the caller is done with: its raw object is moved into the write.
store::Write UpdateOf(model::Run&& run);
store::Write UpdateOf(model::Instance&& instance);
// A periodic pass's own bookkeeping on a stored object (a Project's status.spend or
// conditions): updates `next` of `kind` on the resourceVersion its metadata was read at
// (none: nothing is written). A write that lost to a concurrent one is OK: that one wins and
// the next pass looks again.
absl::Status UpdateAsRead(store::Store& store, const std::string& kind, boost::json::object next);
// Commits `writes` relaxed (engine bookkeeping, store.h Durability).
absl::Status CommitRelaxed(store::Store& store, std::vector<store::Write> writes);

// Decodes every object of a listing; objects that do not decode are skipped.
std::vector<model::Instance> DecodeInstances(std::vector<boost::json::object> objects);
// Every object of `q`'s listing, all pages.
absl::StatusOr<std::vector<boost::json::object>> ListAll(store::Store& store, store::ListOptions q);
// Calls `each` with every page of `q`'s listing (q.limit objects at most), one page in memory
// at a time: for passes over every object of a kind, whose count has no bound.
absl::Status ForEachPage(store::Store& store, store::ListOptions q,
                         const std::function<void(std::vector<boost::json::object>& page)>& each);

// `text` with every sensitive value (3 characters or more) replaced by ******.
std::string Scrub(std::string text, const std::vector<std::string>& secrets);
// The run's reason for a driver's Status (driver.h's error contract).
std::string ReasonFor(const absl::Status& s);
// "2026-11-30T14:00:00Z" (FormatRfc3339's form); nullopt for anything else.
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& s);

}  // namespace gantry::engine::internal
