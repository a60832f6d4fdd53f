// StoreWrapper: a Store that forwards every call to an inner Store and lets a test inject
// faults (STYLE.md #1, "Seams for tests" in ARCHITECTURE.md). With it a test fails the Nth
// commit with a chosen Status, answers an error for a commit that did happen (its outcome
// unknown to the caller), runs code just before a commit (a concurrent write from another
// replica, or a hang until the test releases it), and counts the calls each method got.
//
//   auto sqlite = SqliteStore::Open(options);
//   StoreWrapper store(**sqlite);
//   store.Inject({.call = StoreCall::kCommit, .nth = 2, .status = absl::UnavailableError("x"),
//                 .kind = "Run"});           // the second commit writing a Run fails
//   store.SetBeforeCommit([&](const std::vector<Write>& writes) { ... store.inner() ... });
//   EXPECT_EQ(store.Calls(StoreCall::kCommit), 3);
//
// The wrapper does not own the inner store, which must outlive it. Its commit observer is
// the inner store's (SetCommitObserver is forwarded), so a faulted commit notifies nobody
// and a commit made through inner() notifies as any other.
//
// Thread-safety: every method may be called from any thread, as the Store contract says.
// Hooks and faults may be set while other threads use the store; the BeforeCommit hook runs
// on the committing thread without any lock of the wrapper held, so it may block.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "store/store.h"

namespace gantry::store {

// The methods of Store, for Inject and Calls.
enum class StoreCall {
  kGet,
  kList,
  kCommit,
  kEventsSince,
  kCurrentResourceVersion,  // counted only: it returns no Status to fail
  kListRevisions,
  kGetRevision,
  kCount,
  kSetCommitObserver,  // counted only
  kPing,
};
inline constexpr size_t kStoreCallCount = 10;

class StoreWrapper final : public Store {
 public:
  explicit StoreWrapper(Store& inner) : inner_(inner) {}

  // The wrapped store: calls made on it directly bypass the faults, hooks and counters.
  Store& inner() { return inner_; }

  struct Fault {
    StoreCall call = StoreCall::kCommit;
    // The fault fires on the nth call that matches it, counted from Inject (1: the next).
    int nth = 1;
    // What that call returns (must not be OK).
    absl::Status status;
    // "": any call of `call`; else only calls about this kind (Get, List, Count, ...: their
    // kind argument; Commit: a commit with at least one write of the kind). EventsSince and
    // Ping name no kind and match only "".
    std::string kind;
    // false: the call does not reach the inner store. true: it does (a commit is applied
    // and its observers called) and then answers `status`, as when the connection to the
    // database breaks after the commit went through.
    bool after_inner = false;
  };
  // Adds a fault; each fires once. When several fire on the same call, the one injected
  // first decides the answer and all of them are used up.
  void Inject(Fault fault);
  // Drops every fault that has not fired.
  void ClearFaults();

  // Called with the writes of each Commit, before its faults are checked and it reaches the
  // inner store. An empty function removes the hook.
  using BeforeCommit = std::function<void(const std::vector<Write>& writes)>;
  void SetBeforeCommit(BeforeCommit hook);

  // How many times `call` was made on the wrapper (faulted calls included).
  int64_t Calls(StoreCall call) const;

  absl::StatusOr<boost::json::object> Get(const std::string& kind, const std::string& ns,
                                          const std::string& name) override;
  // Counted and faulted as a Get (StoreCall::kGet).
  absl::StatusOr<std::string> GetText(const std::string& kind, const std::string& ns,
                                      const std::string& name) override;
  // Counted and faulted as a Get (StoreCall::kGet), once.
  absl::StatusOr<std::vector<boost::json::object>> GetMany(
      const std::vector<ObjectKey>& keys) override;
  absl::StatusOr<ListResult> List(const ListOptions& options) override;
  absl::StatusOr<std::vector<boost::json::object>> Commit(
      std::vector<Write> writes, Durability durability = Durability::kDurable) override;
  absl::StatusOr<std::vector<Event>> EventsSince(int64_t after, size_t max) override;
  int64_t CurrentResourceVersion() override;
  absl::StatusOr<std::vector<Revision>> ListRevisions(const std::string& kind,
                                                      const std::string& ns,
                                                      const std::string& name) override;
  absl::StatusOr<Revision> GetRevision(const std::string& kind, const std::string& ns,
                                       const std::string& name, int64_t revision) override;
  absl::StatusOr<int64_t> Count(const std::string& kind, std::optional<std::string> ns,
                                const std::vector<FieldFilter>& fields) override;
  void SetCommitObserver(std::function<void(const std::vector<Event>&)> observer) override;
  absl::Status Ping() override;

 private:
  struct Armed {
    Fault fault;
    int remaining = 0;  // matching calls left before it fires
  };
  // Counts the call, then returns the fault that fires on it, if any. `kinds`: what the call
  // is about (empty for none).
  std::optional<Fault> Enter(StoreCall call, const std::vector<std::string>& kinds);
  // Forwards `forward` unless a fault fires on the call (see Fault::after_inner).
  template <typename T, typename F>
  T Forward(StoreCall call, const std::vector<std::string>& kinds, F forward);

  Store& inner_;
  std::array<std::atomic<int64_t>, kStoreCallCount> calls_{};
  mutable std::mutex mu_;
  std::vector<Armed> faults_ ABSL_GUARDED_BY(mu_);
  BeforeCommit before_commit_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gantry::store
