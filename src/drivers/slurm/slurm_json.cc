#include "drivers/slurm/slurm_json.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>

#include "common/json_member.h"
#include "drivers/driver.h"

namespace gantry::drivers::slurm {
namespace {

namespace json = boost::json;

// A number in either shape: plain, or {"set": bool, "infinite": bool, "number": n}.
int64_t Num(const json::value* v, int64_t fallback = 0) {
  if (!v) return fallback;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<int64_t>(std::min<uint64_t>(v->get_uint64(), INT64_MAX));
  if (v->is_double()) {
    // Outside input: a double beyond int64 (or NaN) must not be converted as is (UB).
    double d = v->get_double();
    if (!(d > -9.2e18 && d < 9.2e18)) return fallback;
    return static_cast<int64_t>(d);
  }
  if (v->is_object()) {
    const json::object& o = v->get_object();
    const json::value* set = o.if_contains("set");
    if (set && set->is_bool() && !set->get_bool()) return fallback;
    if (const json::value* inf = o.if_contains("infinite");
        inf && inf->is_bool() && inf->get_bool())
      return fallback;
    return Num(o.if_contains("number"), fallback);
  }
  return fallback;
}

int64_t Num(const json::object& o, std::string_view key, int64_t fallback = 0) {
  return Num(o.if_contains(key), fallback);
}

SlurmJob ParseJob(const json::object& j) {
  SlurmJob job;
  job.job_id = Num(j, "job_id");
  job.name = StringMember(j, "name");
  if (const json::value* s = j.if_contains("job_state")) {
    if (s->is_string()) {
      job.state = std::string(s->get_string());
    } else if (s->is_array() && !s->get_array().empty() && s->get_array()[0].is_string()) {
      // v0.0.39+: the base state first, then flags (COMPLETING, REQUEUED, ...). A completing
      // job still holds its nodes: report it as COMPLETING like 22.05 does.
      const json::array& a = s->get_array();
      job.state = std::string(a[0].get_string());
      for (const auto& f : a)
        if (f.is_string() && f.get_string() == "COMPLETING") job.state = "COMPLETING";
    }
  }
  job.reason = StringMember(j, "state_reason");
  job.description = StringMember(j, "state_description");
  job.cluster = StringMember(j, "cluster");
  job.partition = StringMember(j, "partition");
  job.account = StringMember(j, "account");
  job.qos = StringMember(j, "qos");
  job.user = StringMember(j, "user_name");
  job.comment = StringMember(j, "comment");
  job.nodes = StringMember(j, "nodes");
  job.node_count = Num(j, "node_count");
  if (const json::value* g = j.if_contains("gres_detail"); g && g->is_array())
    for (const auto& e : g->get_array())
      if (e.is_string() && !e.get_string().empty()) job.gres_detail.emplace_back(e.get_string());
  job.tres_per_node = StringMember(j, "tres_per_node");
  job.start_time = Num(j, "start_time");
  job.end_time = Num(j, "end_time");
  job.submit_time = Num(j, "submit_time");
  job.restart_count = static_cast<int>(std::clamp<int64_t>(Num(j, "restart_cnt"), 0, 1 << 30));
  if (const json::value* e = j.if_contains("exit_code")) {
    if (e->is_object()) {
      // v0.0.39+: {"status": ["EXITED"|"SIGNALED"|...], "return_code": n, "signal": {"id": n}}
      const json::object& o = e->get_object();
      job.exit_code = static_cast<int>(std::clamp<int64_t>(Num(o, "return_code"), 0, 255));
      if (const json::value* sig = o.if_contains("signal"); sig && sig->is_object())
        job.exit_signal =
            static_cast<int>(std::clamp<int64_t>(Num(sig->get_object(), "id"), 0, 127));
    } else {
      // v0.0.38: a wait(2) status: code in the high byte, the signal in the low bits.
      int64_t w = Num(e);
      job.exit_code = static_cast<int>((w >> 8) & 0xff);
      job.exit_signal = static_cast<int>(w & 0x7f);
    }
  }
  return job;
}

}  // namespace

absl::StatusOr<JobListing> ParseJobListing(std::string_view text) {
  boost::system::error_code ec;
  json::value doc = json::parse(text, ec);
  if (ec)
    return absl::InvalidArgumentError("Slurm's JSON output cannot be parsed: " + ec.message());
  if (!doc.is_object()) return absl::InvalidArgumentError("Slurm's JSON output is not an object");
  const json::object& root = doc.get_object();
  JobListing out;
  if (const json::value* errs = root.if_contains("errors"); errs && errs->is_array()) {
    for (const auto& e : errs->get_array()) {
      if (!e.is_object()) continue;
      const json::object& o = e.get_object();
      std::string text = StringMember(o, "description");
      std::string source = StringMember(o, "source");
      std::string error = StringMember(o, "error");
      if (!error.empty() && error != "Unspecified error")
        text += (text.empty() ? "" : " (") + error + (text.empty() ? "" : ")");
      if (!source.empty()) text = source + ": " + text;
      out.errors.push_back(text.empty() ? json::serialize(e) : text);
    }
  }
  const json::value* jobs = root.if_contains("jobs");
  if (!jobs) {
    if (!out.errors.empty()) return out;
    return absl::InvalidArgumentError("Slurm's JSON output has no \"jobs\"");
  }
  if (!jobs->is_array()) return absl::InvalidArgumentError("Slurm's JSON \"jobs\" is not a list");
  for (const auto& j : jobs->get_array())
    if (j.is_object()) out.jobs.push_back(ParseJob(j.get_object()));
  return out;
}

const SlurmJob* FindJob(const JobListing& listing, int64_t job_id) {
  for (const auto& j : listing.jobs)
    if (j.job_id == job_id) return &j;
  return nullptr;
}

bool IsPendingState(std::string_view s) {
  return s == "PENDING" || s == "REQUEUED" || s == "REQUEUE_HOLD" || s == "REQUEUE_FED" ||
         s == "CONFIGURING" || s == "RESV_DEL_HOLD";
}

bool IsRunningState(std::string_view s) {
  return s == "RUNNING" || s == "COMPLETING" || s == "SIGNALING" || s == "STAGE_OUT" ||
         s == "RESIZING";
}

bool IsTerminalState(std::string_view s) {
  return s == "COMPLETED" || s == "CANCELLED" || s == "FAILED" || s == "TIMEOUT" ||
         s == "NODE_FAIL" || s == "PREEMPTED" || s == "BOOT_FAIL" || s == "DEADLINE" ||
         s == "OUT_OF_MEMORY" || s == "REVOKED" || s == "SPECIAL_EXIT";
}

std::string EndReason(std::string_view state) {
  std::string out = "Job";
  bool upper = true;
  for (char c : state) {
    if (c == '_') {
      upper = true;
      continue;
    }
    if (!std::isalnum(static_cast<unsigned char>(c))) continue;
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                 : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    upper = false;
  }
  return out == "Job" ? "JobEnded" : out;
}

std::string ExplainPendingReason(std::string_view r) {
  // The common ones; Slurm's squeue(1) lists them all.
  if (r == "Resources") return "the resources the job asks for are in use";
  if (r == "Priority") return "jobs of higher priority are queued ahead of it";
  if (r == "Dependency") return "it waits for a job it depends on";
  if (r == "BeginTime") return "its start time has not come yet";
  if (r == "PartitionDown") return "its partition is down";
  if (r == "PartitionInactive") return "its partition is inactive";
  if (r == "PartitionNodeLimit") return "it asks for more nodes than its partition allows";
  if (r == "PartitionTimeLimit") return "its time limit exceeds its partition's";
  if (r == "ReqNodeNotAvail") return "a node it needs is not available";
  if (r == "NodeDown") return "a node it needs is down";
  if (r == "JobHeldAdmin") return "an administrator holds it";
  if (r == "JobHeldUser") return "it is held";
  if (r == "BadConstraints") return "its constraints cannot be met";
  if (r == "Reservation") return "it waits for its reservation";
  if (r == "Licenses") return "it waits for a license";
  if (r == "None") return "the scheduler has not looked at it yet";
  if (r.rfind("QOS", 0) == 0) return "a limit of its QOS is reached";
  if (r.rfind("Assoc", 0) == 0) return "a limit of its account is reached";
  return "";
}

absl::StatusOr<int64_t> ParseSubmittedJobId(std::string_view text) {
  // The id is the last non-empty line ("42" or "42;cluster").
  std::string_view line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view l = text.substr(start, nl == std::string_view::npos ? text.npos : nl - start);
    while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.remove_suffix(1);
    if (!l.empty()) line = l;
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  std::string_view id = line.substr(0, line.find(';'));
  if (id.empty() || id.size() > 18 ||
      !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return absl::InvalidArgumentError("sbatch did not print a job id (got \"" +
                                      std::string(text.substr(0, 200)) + "\")");
  return std::stoll(std::string(id));
}

}  // namespace gantry::drivers::slurm
