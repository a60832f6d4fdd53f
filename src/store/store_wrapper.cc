#include "store/store_wrapper.h"

#include <algorithm>
#include <utility>

namespace gantry::store {

void StoreWrapper::Inject(Fault fault) {
  std::lock_guard lock(mu_);
  int nth = fault.nth < 1 ? 1 : fault.nth;
  if (fault.status.ok()) fault.status = absl::InternalError("StoreWrapper: a fault needs an error");
  faults_.push_back(Armed{std::move(fault), nth});
}

void StoreWrapper::ClearFaults() {
  std::lock_guard lock(mu_);
  faults_.clear();
}

void StoreWrapper::SetBeforeCommit(BeforeCommit hook) {
  std::lock_guard lock(mu_);
  before_commit_ = std::move(hook);
}

int64_t StoreWrapper::Calls(StoreCall call) const {
  return calls_[static_cast<size_t>(call)].load();
}

std::optional<StoreWrapper::Fault> StoreWrapper::Enter(StoreCall call,
                                                       const std::vector<std::string>& kinds) {
  ++calls_[static_cast<size_t>(call)];
  std::lock_guard lock(mu_);
  std::optional<Fault> fired;
  for (auto it = faults_.begin(); it != faults_.end();) {
    const Fault& f = it->fault;
    bool matches = f.call == call &&
                   (f.kind.empty() || std::find(kinds.begin(), kinds.end(), f.kind) != kinds.end());
    if (matches && --it->remaining == 0) {
      if (!fired) fired = std::move(it->fault);
      it = faults_.erase(it);
    } else {
      ++it;
    }
  }
  return fired;
}

template <typename T, typename F>
T StoreWrapper::Forward(StoreCall call, const std::vector<std::string>& kinds, F forward) {
  std::optional<Fault> fault = Enter(call, kinds);
  if (!fault) return forward();
  if (fault->after_inner) (void)forward();
  return fault->status;
}

absl::StatusOr<boost::json::object> StoreWrapper::Get(const std::string& kind,
                                                      const std::string& ns,
                                                      const std::string& name) {
  return Forward<absl::StatusOr<boost::json::object>>(StoreCall::kGet, {kind},
                                                      [&] { return inner_.Get(kind, ns, name); });
}

absl::StatusOr<std::string> StoreWrapper::GetText(const std::string& kind, const std::string& ns,
                                                  const std::string& name) {
  return Forward<absl::StatusOr<std::string>>(StoreCall::kGet, {kind},
                                              [&] { return inner_.GetText(kind, ns, name); });
}

absl::StatusOr<std::vector<boost::json::object>> StoreWrapper::GetMany(
    const std::vector<ObjectKey>& keys) {
  std::vector<std::string> kinds;
  for (const auto& k : keys) kinds.push_back(k.kind);
  return Forward<absl::StatusOr<std::vector<boost::json::object>>>(
      StoreCall::kGet, kinds, [&] { return inner_.GetMany(keys); });
}

absl::StatusOr<ListResult> StoreWrapper::List(const ListOptions& options) {
  return Forward<absl::StatusOr<ListResult>>(StoreCall::kList, {options.kind},
                                             [&] { return inner_.List(options); });
}

absl::StatusOr<std::vector<boost::json::object>> StoreWrapper::Commit(std::vector<Write> writes,
                                                                      Durability durability) {
  BeforeCommit hook;
  {
    std::lock_guard lock(mu_);
    hook = before_commit_;
  }
  if (hook) hook(writes);
  std::vector<std::string> kinds;
  for (const Write& w : writes) kinds.push_back(w.kind);
  return Forward<absl::StatusOr<std::vector<boost::json::object>>>(
      StoreCall::kCommit, kinds, [&] { return inner_.Commit(std::move(writes), durability); });
}

absl::StatusOr<std::vector<Event>> StoreWrapper::EventsSince(int64_t after, size_t max) {
  return Forward<absl::StatusOr<std::vector<Event>>>(
      StoreCall::kEventsSince, {}, [&] { return inner_.EventsSince(after, max); });
}

int64_t StoreWrapper::CurrentResourceVersion() {
  ++calls_[static_cast<size_t>(StoreCall::kCurrentResourceVersion)];
  return inner_.CurrentResourceVersion();
}

absl::StatusOr<std::vector<Revision>> StoreWrapper::ListRevisions(const std::string& kind,
                                                                  const std::string& ns,
                                                                  const std::string& name) {
  return Forward<absl::StatusOr<std::vector<Revision>>>(
      StoreCall::kListRevisions, {kind}, [&] { return inner_.ListRevisions(kind, ns, name); });
}

absl::StatusOr<Revision> StoreWrapper::GetRevision(const std::string& kind, const std::string& ns,
                                                   const std::string& name, int64_t revision) {
  return Forward<absl::StatusOr<Revision>>(StoreCall::kGetRevision, {kind}, [&] {
    return inner_.GetRevision(kind, ns, name, revision);
  });
}

absl::StatusOr<int64_t> StoreWrapper::Count(const std::string& kind, std::optional<std::string> ns,
                                            const std::vector<FieldFilter>& fields) {
  return Forward<absl::StatusOr<int64_t>>(StoreCall::kCount, {kind},
                                          [&] { return inner_.Count(kind, ns, fields); });
}

void StoreWrapper::SetCommitObserver(std::function<void(const std::vector<Event>&)> observer) {
  ++calls_[static_cast<size_t>(StoreCall::kSetCommitObserver)];
  inner_.SetCommitObserver(std::move(observer));
}

absl::Status StoreWrapper::Ping() {
  return Forward<absl::Status>(StoreCall::kPing, {}, [&] { return inner_.Ping(); });
}

}  // namespace gantry::store
