#include "cli/actions.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <optional>
#include <ostream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/approve.h"
#include "cli/kinds.h"
#include "cli/table.h"
#include "client/absl_compat.h"
#include "client/kube_status.h"

namespace gantry::cli {
namespace {

namespace json = boost::json;

constexpr absl::Duration kFirstBackoff = absl::Milliseconds(250);
constexpr absl::Duration kMaxBackoff = absl::Seconds(5);

KindInfo InstanceKind() { return KindFromObjectKind("ComputeInstance"); }

// What an action names: "NAME" (a compute instance) or "KIND/NAME" with KIND a compute or
// service instance kind (ci/, si/, serviceinstance/…).
struct ActionTarget {
  KindInfo kind;
  std::string name;
  std::string object;  // "computeinstance/NAME", as printed
};

absl::StatusOr<ActionTarget> InstanceTarget(const std::string& arg) {
  ActionTarget t{InstanceKind(), arg, ""};
  if (size_t slash = arg.find('/'); slash != std::string::npos) {
    absl::StatusOr<KindInfo> kind = ResolveKind(arg.substr(0, slash));
    if (!kind.ok()) return kind.status();
    if (kind->plural != "computeinstances" && kind->plural != "serviceinstances") {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", arg, "\": actions apply to compute instances (NAME or ci/NAME) ",
                       "and service instances (si/NAME)"));
    }
    t.kind = *kind;
    t.name = arg.substr(slash + 1);
  }
  if (t.name.empty()) return absl::InvalidArgumentError(absl::StrCat("\"", arg, "\": no name"));
  t.object = absl::StrCat(t.kind.singular, "/", t.name);
  return t;
}
KindInfo RunKind() { return KindFromObjectKind("Run"); }

std::string Backquoted(std::string_view command) { return absl::StrCat("`", Sv(command), "`"); }

// POSTs an action and returns the object the server answered with, or its refusal.
absl::StatusOr<json::object> Post(CommandContext& ctx, const std::string& path) {
  absl::StatusOr<client::HttpResponse> res = ctx.api->Send("POST", path, "");
  if (!res.ok()) return res.status();
  if (absl::Status s = client::StatusFromResponse(*res); !s.ok()) return s;
  return ParseObject(*res);
}

absl::Duration Backoff(int failures) {
  absl::Duration d = kFirstBackoff;
  for (int i = 1; i < failures && d < kMaxBackoff; ++i) d *= 2;
  return std::min(d, kMaxBackoff);
}

// Waits, by watching the instance, for run `run` (started by `action`) to end. `instance` is
// the object the action answered with: its phase is the first one printed and its
// resourceVersion is where the watch starts, so no change after the action is missed.
class RunWaiter {
 public:
  RunWaiter(CommandContext& ctx, KindInfo kind, std::string name, std::string action,
            std::string run, std::optional<absl::Time> deadline, absl::Duration timeout)
      : ctx_(ctx),
        kind_(std::move(kind)),
        name_(std::move(name)),
        action_(std::move(action)),
        run_(std::move(run)),
        deadline_(deadline),
        timeout_(timeout) {}

  int Wait(const json::object& instance) {
    rv_ = FieldText(instance, "metadata.resourceVersion");
    if (std::optional<int> done = Evaluate(instance)) return *done;
    int failures = 0;
    while (true) {
      if (deadline_ && Clock(ctx_) >= *deadline_) return TimedOut();
      std::string target =
          absl::StrCat(CollectionPath(kind_, ctx_.settings.project, false),
                       "?watch=true&fieldSelector=", PercentEncode("metadata.name=" + name_));
      if (!rv_.empty()) absl::StrAppend(&target, "&resourceVersion=", rv_);
      if (deadline_) {
        double left = absl::ToDoubleSeconds(*deadline_ - Clock(ctx_));
        absl::StrAppend(&target, "&timeoutSeconds=",
                        std::max<int64_t>(1, static_cast<int64_t>(std::ceil(left))));
      }
      std::optional<int> result;
      bool expired = false;
      bool progressed = false;
      absl::Status s = ctx_.api->Stream(target, [&](std::string_view line) {
        return OnEvent(line, &result, &expired, &progressed);
      });
      if (result) return *result;
      if (expired) {
        // The server no longer holds events that far back: start over from the current state.
        rv_.clear();
        continue;
      }
      if (progressed) failures = 0;
      if (s.ok()) {
        // The server ended the watch (its timeout); resume from the last event. A pause only
        // when nothing came, so that a server closing at once cannot make this spin.
        if (!progressed) Pause(ctx_, kFirstBackoff);
        continue;
      }
      if (!absl::IsUnavailable(s)) return Fail(ctx_, s);
      if (++failures > kMaxReconnects) {
        PrintError(ctx_, absl::StrCat(s.message(), " (gave up waiting for ", action_, " run ", run_,
                                      " after ", kMaxReconnects,
                                      " failed reconnections; the run goes on: ",
                                      Backquoted("gantry logs " + Typed() + " -f"), ")"));
        return kExitError;
      }
      absl::Duration pause = Backoff(failures);
      if (deadline_)
        pause = std::max(absl::ZeroDuration(), std::min(pause, *deadline_ - Clock(ctx_)));
      Pause(ctx_, pause);
    }
  }

 private:
  // One watch line. Returns false to stop the stream.
  bool OnEvent(std::string_view line, std::optional<int>* result, bool* expired, bool* progressed) {
    boost::system::error_code ec;
    json::value v = json::parse(json::string_view(line.data(), line.size()), ec);
    if (ec || !v.is_object()) return true;  // not an event (a blank keep-alive line)
    const json::object& event = v.get_object();
    std::string type = FieldText(event, "type");
    const json::value* obj = event.if_contains("object");
    if (obj == nullptr || !obj->is_object()) return true;
    const json::object& object = obj->get_object();
    if (type == "ERROR") {
      if (FieldText(object, "code") == "410") {
        *expired = true;
      } else {
        *result = Fail(ctx_, absl::UnknownError(
                                 absl::StrCat("the watch failed: ", FieldText(object, "message"))));
      }
      return false;
    }
    *progressed = true;
    if (std::string rv = FieldText(object, "metadata.resourceVersion"); !rv.empty()) rv_ = rv;
    if (type == "DELETED") {
      *result = Fail(ctx_, absl::NotFoundError(absl::StrCat(kind_.singular, "/", name_,
                                                            " was deleted while waiting for ",
                                                            action_, " run ", run_)));
      return false;
    }
    *result = Evaluate(object);
    return !result->has_value();
  }

  // Prints a phase change of our run; returns the exit status once the run has ended.
  std::optional<int> Evaluate(const json::object& instance) {
    std::string phase = FieldText(instance, "status.phase");
    std::string ref = FieldText(instance, "status.lastRunRef.name");
    if (ref != run_) return FromRun();  // a newer run replaced ours: ours has ended
    if (phase != printed_phase_) {
      *ctx_.out << PhaseWords(phase) << "\n";
      ctx_.out->flush();
      printed_phase_ = phase;
    }
    if (phase == "Waiting" || phase == "InProgress") return std::nullopt;
    if (((action_ == "deploy" || action_ == "start") && phase == "Success") ||
        (action_ == "destroy" && phase == "NotDeployed") ||
        (action_ == "stop" && phase == "Stopped")) {
      return kExitOk;
    }
    std::string reason = FieldText(instance, "status.reason");
    std::string message = FieldText(instance, "status.message");
    if (message.empty()) {
      message =
          absl::StrCat(action_, " run ", run_, " ended with the instance ", PhaseWords(phase));
    }
    PrintError(ctx_, reason.empty() ? message : absl::StrCat(reason, ": ", message));
    return kExitError;
  }

  // Our run is no longer the instance's last: its own status says how it ended.
  int FromRun() {
    absl::StatusOr<json::object> run =
        GetObject(*ctx_.api, ObjectPath(RunKind(), ctx_.settings.project, run_));
    if (!run.ok()) return Fail(ctx_, run.status());
    std::string phase = FieldText(*run, "status.phase");
    if (phase == "Succeeded") return kExitOk;
    std::string reason = FieldText(*run, "status.reason");
    std::string message = FieldText(*run, "status.message");
    std::string text = absl::StrCat(action_, " run ", run_, " ", absl::AsciiStrToLower(phase),
                                    message.empty() ? "" : ": ", message);
    PrintError(ctx_, reason.empty() ? text : absl::StrCat(reason, ": ", text));
    return kExitError;
  }

  int TimedOut() {
    PrintError(ctx_,
               absl::StrCat("timed out after ", absl::FormatDuration(timeout_), " waiting for ",
                            action_, " run ", run_, " (", kind_.singular, "/", name_, " is ",
                            PhaseWords(printed_phase_), "); the run goes on: ",
                            Backquoted("gantry logs " + Typed() + " -f"), " follows it"));
    return kExitError;
  }

  // The instance as the commands take it: NAME, or si/NAME for a service instance.
  std::string Typed() const {
    return kind_.plural == "serviceinstances" ? absl::StrCat("si/", name_) : name_;
  }

  CommandContext& ctx_;
  const KindInfo kind_;
  const std::string name_;
  const std::string action_;
  const std::string run_;
  const std::optional<absl::Time> deadline_;
  const absl::Duration timeout_;
  std::string rv_;
  std::string printed_phase_;
};

}  // namespace

absl::StatusOr<absl::Duration> ParseTimeout(const std::string& text) {
  absl::Duration d;
  int64_t seconds = 0;
  if (absl::SimpleAtoi(text, &seconds)) {
    d = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(text, &d)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid --timeout \"", text, "\": use a duration such as 90s, 5m or 1h30m"));
  }
  if (d <= absl::ZeroDuration() || d == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid --timeout \"", text, "\": it must be more than zero"));
  }
  return d;
}

int RunAction(CommandContext& ctx, const ActionOptions& options) {
  std::optional<absl::Time> deadline;
  absl::Duration timeout = absl::InfiniteDuration();
  bool wait = options.wait;
  if (!options.timeout.empty()) {
    absl::StatusOr<absl::Duration> d = ParseTimeout(options.timeout);
    if (!d.ok()) {
      PrintError(ctx, d.status());
      return kExitUsage;
    }
    timeout = *d;
    wait = true;  // --timeout bounds a wait; asking for one implies --wait
  }
  absl::StatusOr<ActionTarget> target = InstanceTarget(options.name);
  if (!target.ok()) {
    PrintError(ctx, target.status());
    return kExitUsage;
  }
  std::string path =
      ObjectPath(target->kind, ctx.settings.project, target->name) + "/" + options.action;
  if (options.cascade) {
    if (options.action != "destroy" || target->kind.plural != "computeinstances") {
      PrintError(ctx, "--cascade applies to destroying a compute instance");
      return kExitUsage;
    }
    path += "?cascade=true";
  }
  absl::StatusOr<json::object> instance = Post(ctx, path);
  if (!instance.ok()) return Fail(ctx, instance.status());
  if (wait) deadline = Clock(ctx) + timeout;
  if (timeout == absl::InfiniteDuration()) deadline.reset();

  const std::string phase = FieldText(*instance, "status.phase");
  const std::string run = FieldText(*instance, "status.lastRunRef.name");
  const std::string& object = target->object;
  if (PrintApproval(ctx, object, options.action, *instance)) return kExitOk;
  if (options.action == "cancel") {
    *ctx.out << object << " " << FieldText(*instance, "status.action") << " run " << run
             << " canceled (" << PhaseWords(phase) << ")\n";
    return kExitOk;
  }
  if (phase == "Waiting") {
    *ctx.out << object << " " << options.action << " queued (run " << run << ")\n";
  } else {
    // A destroy of a Waiting instance cancels its queued deploy instead (nothing ran).
    *ctx.out << object << " " << PhaseWords(phase) << ": " << FieldText(*instance, "status.message")
             << "\n";
    if (!wait) return kExitOk;
  }
  ctx.out->flush();
  if (!wait) return kExitOk;
  RunWaiter waiter(ctx, target->kind, target->name, options.action, run, deadline, timeout);
  return waiter.Wait(*instance);
}

int RunUpgrade(CommandContext& ctx, const UpgradeOptions& options) {
  absl::StatusOr<ActionTarget> target = InstanceTarget(options.name);
  if (!target.ok()) {
    PrintError(ctx, target.status());
    return kExitUsage;
  }
  const std::string path = ObjectPath(target->kind, ctx.settings.project, target->name);
  absl::StatusOr<json::object> before = GetObject(*ctx.api, path);
  if (!before.ok()) return Fail(ctx, before.status());
  absl::StatusOr<json::object> after = Post(ctx, path + "/upgrade");
  if (!after.ok()) return Fail(ctx, after.status());
  std::string p0 = FieldText(*before, "status.profileRevision");
  std::string p1 = FieldText(*after, "status.profileRevision");
  std::string t0 = FieldText(*before, "status.templateRevision");
  std::string t1 = FieldText(*after, "status.templateRevision");
  const std::string& object = target->object;
  if (p0 == p1 && t0 == t1) {
    *ctx.out << object << " is already at the latest revision (profile revision "
             << (p1.empty() ? "<none>" : p1) << ")\n";
    return kExitOk;
  }
  *ctx.out << object << " upgraded to profile revision " << p1 << " (was " << p0 << ")";
  if (t0 != t1) *ctx.out << ", template revision " << t1 << " (was " << t0 << ")";
  std::string phase = FieldText(*after, "status.phase");
  if (phase == "Success" || phase == "Failed") {
    *ctx.out << "; " << Backquoted("gantry deploy " + options.name) << " applies it";
  }
  *ctx.out << "\n";
  return kExitOk;
}

int RunLogsCommand(CommandContext& ctx, const LogsOptions& options) {
  const std::string& project = ctx.settings.project;
  // NAME is a run, or an instance whose last run is meant; KIND/NAME an instance of that kind
  // (si/NAME for a service instance).
  const bool typed = options.name.find('/') != std::string::npos;
  absl::StatusOr<ActionTarget> target = InstanceTarget(options.name);
  if (!target.ok()) {
    PrintError(ctx, target.status());
    return kExitUsage;
  }
  absl::StatusOr<json::object> run =
      typed ? absl::StatusOr<json::object>(absl::NotFoundError(""))
            : GetObject(*ctx.api, ObjectPath(RunKind(), project, options.name));
  if (!run.ok()) {
    if (!absl::IsNotFound(run.status())) return Fail(ctx, run.status());
    absl::StatusOr<json::object> instance =
        GetObject(*ctx.api, ObjectPath(target->kind, project, target->name));
    if (!instance.ok()) {
      if (typed || !absl::IsNotFound(instance.status())) return Fail(ctx, instance.status());
      PrintError(ctx, absl::StrCat("no run or computeinstance named \"", options.name,
                                   "\" in project \"", project, "\""));
      return kExitError;
    }
    std::string ref = FieldText(*instance, "status.lastRunRef.name");
    if (ref.empty()) {
      PrintError(ctx, absl::StrCat(target->object, " has no runs yet; ",
                                   Backquoted("gantry deploy " + options.name), " starts one"));
      return kExitError;
    }
    run = GetObject(*ctx.api, ObjectPath(RunKind(), project, ref));
    if (!run.ok()) return Fail(ctx, run.status());
  }
  const std::string run_name = FieldText(*run, "metadata.name");
  const std::string run_path = ObjectPath(RunKind(), project, run_name);
  if (!options.follow) {
    absl::StatusOr<client::HttpResponse> res = ctx.api->Send("GET", run_path + "/log");
    if (!res.ok()) return Fail(ctx, res.status());
    if (absl::Status s = client::StatusFromResponse(*res); !s.ok()) return Fail(ctx, s);
    *ctx.out << res->body;
    return kExitOk;
  }
  // Each follow sends the whole log first; after a reconnect, skip what was printed.
  size_t printed = 0;
  int failures = 0;
  while (true) {
    size_t seen = 0;
    const size_t printed_before = printed;
    absl::Status s = ctx.api->Stream(run_path + "/log?follow=true", [&](std::string_view line) {
      if (seen++ >= printed) {
        *ctx.out << line << "\n";
        ctx.out->flush();
        ++printed;
        failures = 0;
      }
      return true;
    });
    if (!s.ok()) {
      if (!absl::IsUnavailable(s)) return Fail(ctx, s);
      if (++failures > kMaxReconnects) return Fail(ctx, s);
      Pause(ctx, Backoff(failures));
      continue;
    }
    // The server ends the stream when the run ends, or at its own timeout: which one?
    absl::StatusOr<json::object> now = GetObject(*ctx.api, run_path);
    if (!now.ok()) {
      if (!absl::IsUnavailable(now.status()) || ++failures > kMaxReconnects) {
        return Fail(ctx, now.status());
      }
      Pause(ctx, Backoff(failures));
      continue;
    }
    std::string phase = FieldText(*now, "status.phase");
    if (phase != "Queued" && phase != "Running") return kExitOk;
    // Still running: follow again. A pause only when nothing came, so that a server ending
    // streams at once cannot make this spin.
    if (printed == printed_before) Pause(ctx, kFirstBackoff);
  }
}

}  // namespace gantry::cli
