#include "model/schema.h"

#include <algorithm>

namespace gantry::model {
namespace {

namespace json = boost::json;

Field Str(std::string name, std::string desc, bool required = false) {
  return Field{std::move(name), FieldType::kString, std::move(desc), required, {}, {}};
}
Field Enum(std::string name, std::string desc, std::vector<std::string> values,
           bool required = false) {
  return Field{std::move(name), FieldType::kString, std::move(desc),
               required,        std::move(values),  {}};
}
Field Int(std::string name, std::string desc, bool required = false) {
  return Field{std::move(name), FieldType::kInteger, std::move(desc), required, {}, {}};
}
Field Num(std::string name, std::string desc) {
  return Field{std::move(name), FieldType::kNumber, std::move(desc), false, {}, {}};
}
Field Bool(std::string name, std::string desc) {
  return Field{std::move(name), FieldType::kBoolean, std::move(desc), false, {}, {}};
}
Field Obj(std::string name, std::string desc, std::vector<Field> children, bool required = false) {
  return Field{std::move(name),    FieldType::kObject, std::move(desc), required, {},
               std::move(children)};
}
Field Arr(std::string name, std::string desc, Field element) {
  element.name = "";
  return Field{std::move(name),     FieldType::kArray, std::move(desc), false, {},
               {std::move(element)}};
}
Field StrMap(std::string name, std::string desc) {
  return Field{std::move(name), FieldType::kStringMap, std::move(desc), false, {}, {}};
}
Field Free(std::string name, std::string desc) {
  return Field{std::move(name), FieldType::kFreeObject, std::move(desc), false, {}, {}};
}

Field Sharing() {
  return Obj("sharing", "Which other projects may use this object.",
             {Enum("mode", "None (default), All projects, or Selected projects.",
                   {"None", "All", "Selected"}),
              Arr("projects", "The projects shared with when mode is Selected.",
                  Str("", "A project name."))});
}

Field Ref(std::string name, std::string desc, bool required) {
  return Obj(std::move(name), std::move(desc),
             {Str("name", "Name of the referenced object.", true),
              Str("namespace", "Project of the referenced object; defaults to this project.")},
             required);
}

Field ActionField(std::string desc) {
  return Enum("action",
              std::move(desc) +
                  " Stop (default: GPUs released, spec and data kept) "
                  "or Destroy.",
              {"Stop", "Destroy"});
}

constexpr char kDurationForm[] = " A duration: 90s, 30m, 8h, 3d.";

// A profile's spec.lifecycle.ttl (compute and service profiles).
Field TtlField() {
  const std::string dur = kDurationForm;
  return Obj("ttl", "Time-to-live, counted from the last deploy or start that succeeded.",
             {Str("default", "The ttl of instances that set none." + dur),
              Str("max", "The longest ttl an instance may ask for." + dur),
              ActionField("What happens at expiry (reason TTLExpired):")});
}

// ServiceProfile spec.lifecycle: a ttl only. A service holds no GPUs of its own (its compute
// instance does, and carries the idle and schedule policies).
Field ServiceProfileLifecycle() {
  return Obj("lifecycle", "When Gantry stops or destroys a service instance by itself.",
             {TtlField()});
}

// ComputeProfile spec.lifecycle (API.md "Lifecycle policies"; checked beyond types by
// model::ValidateLifecyclePolicy).
Field ProfileLifecycle() {
  const std::string dur = kDurationForm;
  return Obj(
      "lifecycle", "When Gantry gives an instance's GPUs back by itself.",
      {TtlField(),
       Obj("idle", "Reclaim instances whose GPUs sit idle.",
           {Int("gpuUtilizationBelow",
                "Idle below this mean utilisation of the instance's GPUs, in percent (0-100; "
                "default 5)."),
            Str("after", "How long it must be idle (default 30m)." + dur),
            ActionField("What happens then (reason Idle):")}),
       Obj("schedule", "Start and stop instances at set times.",
           {Str("timezone", "IANA time zone of the expressions, e.g. Europe/Berlin (default UTC)."),
            Str("start",
                "5-field cron expression (minute hour day-of-month month day-of-week), "
                "e.g. \"0 8 * * 1-5\": stopped instances start."),
            Str("stop",
                "5-field cron expression, e.g. \"0 20 * * 1-5\": running instances "
                "stop (reason Scheduled)."),
            Bool("allowOptOut", "Instances may set spec.lifecycle.scheduleOptOut.")})});
}

// ComputeProfile spec.scheduling (API.md "Sharing GPUs fairly"; model/scheduling.h).
Field ProfileScheduling() {
  return Obj("scheduling", "How instances of this profile queue and share GPUs.",
             {Int("priority", "Higher goes first in the queue and is preempted last (default 0)."),
              Bool("preemptible",
                   "Instances may borrow GPUs beyond their project's guarantee and be preempted "
                   "when the owner asks (default false: admitted only within the guarantee)."),
              Str("preemptionGracePeriod",
                  "Time between SIGTERM and the kill when preempted (default 30s, at most 1h).")});
}

// ComputeProfile spec.approval (API.md "Notifications and approvals"; checked beyond types
// by model::ValidateApprovalPolicy).
Field ProfileApproval() {
  return Obj("approval", "Deploys and starts that wait for a project-admin or PaaS Admin.",
             {Bool("required", "Ask for approval."),
              Int("whenGpusAtLeast",
                  "Only when the instance asks for at least this many GPUs (default: always)."),
              Str("expiresAfter",
                  "An unanswered request ends after this long (default 72h, at most 30d). "
                  "A duration: 90s, 30m, 8h, 3d.")});
}

// ComputeInstance status.approval (model/approval.h).
Field InstanceApproval() {
  return Obj("approval", "The last approval request of a deploy or start, and its answer.",
             {Enum("state", "Pending, Approved, Rejected, Expired or Withdrawn.",
                   {"Pending", "Approved", "Rejected", "Expired", "Withdrawn"}),
              Enum("action", "What waits: deploy or start.", {"deploy", "start"}),
              Int("gpus", "GPUs the deploy or start asks for."), Str("requestedBy", "Who asked."),
              Str("requestedAt", "When (RFC 3339)."),
              Str("expiresAt", "When an unanswered request ends (RFC 3339)."),
              Str("previousPhase", "Where a rejection or expiry returns the instance."),
              Str("decidedBy", "Who approved or rejected it."),
              Str("decidedAt", "When (RFC 3339)."), Str("message", "The approver's words.")});
}

Field Conditions() {
  return Arr("conditions", "Observations of the object's state.",
             Obj("", "",
                 {Str("type", ""), Str("status", ""), Str("reason", ""), Str("message", ""),
                  Str("lastTransitionTime", "")}));
}

// UsageReport (computed, read-only: api/usage_reports.cc) and RateCard (cluster-scoped,
// api/rate_card_strategy.cc): API.md "Usage and cost", docs/usage.md.
void AddUsageKinds(std::vector<KindInfo>& kinds) {
  KindInfo report;
  report.kind = "UsageReport";
  report.plural = "usagereports";
  report.singular = "usagereport";
  report.read_only = true;
  report.spec = Obj("spec", "What the report covers (the query parameters).",
                    {Str("from", "RFC 3339; default the first of this month (UTC)."),
                     Str("to", "RFC 3339, exclusive; default now."),
                     Arr("groupBy", "project, user, profile, gpuType.", Str("", "")),
                     Enum("step", "Buckets (UTC).", {"hour", "day", "month"})});
  Field sums[] = {Num("gpuSeconds", "GPU-seconds (GPUs x seconds held)."),
                  Num("cpuCoreSeconds", "CPU cores x seconds."),
                  Num("memoryGiBSeconds", "Memory GiB x seconds."),
                  Num("cost", "Priced by the rate card, in its currency.")};
  std::vector<Field> row = {Str("bucket", "Start of the bucket (with step)."), Str("project", ""),
                            Str("user", "Who deployed."), Str("profile", ""), Str("gpuType", "")};
  row.insert(row.end(), std::begin(sums), std::end(sums));
  report.status = Obj("status", "The usage.",
                      {Arr("rows", "One row per group (and bucket).", Obj("", "", row)),
                       Obj("totals", "", {std::begin(sums), std::end(sums)}),
                       Str("currency", "The rate card's currency; empty without one."),
                       Str("rateCard", "The rate card that priced the report.")});
  kinds.push_back(report);

  KindInfo card;
  card.kind = "RateCard";
  card.plural = "ratecards";
  card.singular = "ratecard";
  card.namespaced = false;
  card.spec = Obj("spec",
                  "Prices of an hour of each resource; the card named default (else the first "
                  "by name) prices usage reports.",
                  {Str("currency", "ISO 4217 code, such as USD.", true),
                   Free("gpuHourly", "Price of one GPU-hour per GPU type: {h100: 2.5}."),
                   Num("cpuHourly", "Price of one CPU core-hour."),
                   Num("memoryGiBHourly", "Price of one GiB-hour of memory.")},
                  true);
  card.status = Obj("status", "", {});
  kinds.push_back(card);
}

// Webhook and ClusterWebhook spec/status (API.md "Notifications and approvals"; checked
// beyond types by webhooks::ValidateWebhookSpec).
Field WebhookSpec(const std::string& scope) {
  return Obj(
      "spec", "Where Gantry sends " + scope + " events, signed with a shared secret.",
      {Str("url",
           "http:// or https:// URL the events are POSTed to; no credentials in it. "
           "Loopback, link-local and private addresses need gantryd --webhook-allow-private.",
           true),
       Arr("events", "The events sent (at least one).",
           Enum("", "An event name.",
                {"PhaseChanged", "ExpiresSoon", "IdleSoon", "StopScheduled", "Preempted",
                 "ApprovalRequested", "BudgetWarning", "BudgetExceeded"})),
       Str("secret",
           "Write-only: the HMAC-SHA256 key of X-Gantry-Signature; sealed at rest, never "
           "returned.",
           true),
       Enum("format", "json (default): the event object; slack: {\"text\": \"...\"}.",
            {"json", "slack"}),
       Str("description", "Free text.")});
}

Field WebhookStatus() {
  return Obj("status", "How deliveries go.",
             {Obj("lastDelivery", "The last delivery attempt.",
                  {Str("time", "When it ended (RFC 3339)."), Int("code", "HTTP status; 0: none."),
                   Str("error", "Why it failed; empty on success."),
                   Str("delivery", "The WebhookDelivery.")})});
}

std::vector<KindInfo> BuildKinds() {
  std::vector<KindInfo> kinds;

  KindInfo project;
  project.kind = "Project";
  project.plural = "projects";
  project.singular = "project";
  project.short_names = {"proj"};
  project.namespaced = false;
  project.spec = Obj(
      "spec", "A tenant boundary; namespaced objects live in a project.",
      {Str("displayName", "Human-friendly name."), Str("description", "Free text."),
       Obj("quota", "Limits for the project.",
           {Field{"gpus",
                  FieldType::kScalarMap,
                  "Maximum GPUs per GPU type, e.g. {h100: 16}.",
                  false,
                  {},
                  {}},
            Field{"guaranteedGpus",
                  FieldType::kScalarMap,
                  "GPUs per type always available to the project, e.g. {h100: 4}: others "
                  "borrow them while unused and are preempted when it asks. At most gpus.",
                  false,
                  {},
                  {}},
            Int("instances", "Maximum number of compute instances."),
            Int("instancesPerUser", "Maximum compute instances one user may own.")}),
       Obj("budget", "What the project may spend per calendar month (UTC), priced by the RateCard.",
           {Num("monthly", "The monthly budget in the rate card's currency, 0 or more."),
            Enum("action",
                 "Warn (default): Events at 80 % and 100 %. Block: also, deploys and starts "
                 "wait with reason BudgetExceeded once it is spent.",
                 {"Warn", "Block"})})});
  project.status = Obj(
      "status", "",
      {Str("phase", "Active or Terminating."),
       Obj("spend",
           "This month's spend against spec.budget, kept by the budget monitor (the BUDGET "
           "column); absent without a budget.",
           {Str("month", "The calendar month (UTC), e.g. 2026-12."),
            Num("cost", "Spent so far this month, to the cent, in the rate card's currency."),
            Str("currency", "The rate card's currency."), Num("monthly", "spec.budget.monthly."),
            Int("percent", "cost / monthly in percent, floored.")}),
       Conditions()});
  kinds.push_back(project);

  KindInfo user;
  user.kind = "User";
  user.plural = "users";
  user.singular = "user";
  user.namespaced = false;
  user.spec = Obj(
      "spec", "A person or automation that uses Gantry.",
      {Str("displayName", "Human-friendly name."), Str("email", "Contact address."),
       Enum("orgRole", "Org-wide role: org-admin, paas-admin, or empty for none.",
            {"", "org-admin", "paas-admin"}),
       Str("password", "Write-only: sets the password (at least 8 characters); never returned."),
       Str("currentPassword",
           "Write-only: the current password, needed with spec.password to change one's own; "
           "never stored."),
       Bool("disabled", "A disabled user cannot log in; their tokens and sessions stop working."),
       Enum("source",
            "Where the user logs in: empty for a local user, ldap for one created at "
            "its first LDAP login, oidc for one created at its first single sign-on login.",
            {"", "ldap", "oidc"})});
  user.status = Obj("status", "", {});
  kinds.push_back(user);

  KindInfo binding;
  binding.kind = "RoleBinding";
  binding.plural = "rolebindings";
  binding.singular = "rolebinding";
  binding.short_names = {"rb"};
  binding.spec =
      Obj("spec", "Gives a user a built-in role in this project.",
          {Str("user", "The user's name (or spec.group).", false),
           Str("group", "A directory group: binds every member (or spec.user)."),
           Enum("role", "The project role.", {"project-admin", "member", "viewer"}, true)});
  binding.status = Obj("status", "", {});
  binding.field_selectors = {"spec.user", "spec.group", "spec.role"};
  kinds.push_back(binding);

  Field variable_decl =
      Obj("", "A variable the template accepts.",
          {Str("name", "Variable name.", true),
           Enum("type", "Value type.", {"string", "number", "bool", "enum"}),
           Str("default", "Default value, as a string."),
           Bool("required", "A value must be given (by default, profile or instance)."),
           Str("description", "What the variable is for."),
           Bool("sensitive", "Encrypted at rest, never returned by the API."),
           Arr("allowedValues", "The values an enum variable accepts.", Str("", ""))});

  KindInfo tmpl;
  tmpl.kind = "EnvironmentTemplate";
  tmpl.plural = "environmenttemplates";
  tmpl.singular = "environmenttemplate";
  tmpl.short_names = {"et", "template"};
  tmpl.versioned = true;
  tmpl.spec = Obj(
      "spec", "How something is deployed: a driver, its configuration, inputs and outputs.",
      {Str("displayName", "Human-friendly name."), Str("description", "Free text."),
       Enum("driver", "The driver that deploys instances of this template.",
            {"exec", "local", "slurm", "container"}, true),
       Obj("exec", "Configuration of the exec driver.",
           {Arr("command", "Program and arguments; called with `apply` or `destroy` appended.",
                Str("", "")),
            Str("workingDir", "Working directory of the program."),
            StrMap("env", "Extra environment variables."),
            Int("timeoutSeconds", "A run taking longer fails with reason Timeout."),
            Arr("actions",
                "The actions the program implements (apply, destroy, stop, start); stop and "
                "start are called only when both are listed. Default: apply and destroy.",
                Str("", ""))}),
       Free("local", "Configuration of the local driver (checked by the driver)."),
       Free("container", "Configuration of the container driver (checked by the driver)."),
       Obj("slurm", "Configuration of the Slurm driver: one batch job on a Slurm cluster.",
           {Str("slurmConf",
                "Path of the cluster's slurm.conf (SLURM_CONF for sbatch, squeue "
                "and scancel); default: gantryd's environment."),
            Str("partition", "--partition; default: the cluster's default partition."),
            Str("account", "--account."), Str("qos", "--qos."),
            Str("timeLimit", "--time, in Slurm's formats (\"90\", \"4:00:00\", \"2-00:00:00\")."),
            Int("nodes", "--nodes; default 1. The profile's GPUs are per node."),
            Str("script", "The batch script; starts with #!. Either script or command."),
            Arr("command", "One command run as the job (sbatch --wrap). Either script or command.",
                Str("", "")),
            StrMap("env", "Extra environment variables of the job."),
            Str("workingDir",
                "--chdir; default: the instance's state directory on gantryd's host."),
            Int("timeoutSeconds", "How long a deploy waits for the job to start running.")}),
       Arr("variables", "Inputs the template accepts.", variable_decl),
       Arr("outputs", "Outputs the template promises to produce.", Str("", "")), Sharing()});
  tmpl.status = Obj("status", "",
                    {Int("revision", "Current revision; bumps on every spec change."),
                     Int("templateRevision", "Profiles: the template revision of this revision."),
                     Obj("sharedFrom", "Set on objects listed in a project they are shared into.",
                         {Str("namespace", "")})});
  kinds.push_back(tmpl);

  Field variable_rule = Obj(
      "", "The profile's rule for one template variable.",
      {Str("name", "Template variable name.", true), Str("default", "Default for instances."),
       Enum("override", "Whether instances may set the value.",
            {"allowed", "notallowed", "restricted"}),
       Arr("allowedValues", "Values allowed when override is restricted.", Str("", "")),
       Bool("required", "Instances must supply a value."), Str("description", "Shown to users."),
       Bool("sensitive", "Encrypted at rest, never returned by the API.")});
  Field resources =
      Obj("resources", "Resources an instance of this profile gets.",
          {Obj("gpu", "GPUs.", {Str("type", "GPU type, e.g. h100."), Int("count", "GPUs.")}),
           Num("cpu", "CPU cores."), Num("memoryGiB", "Memory in GiB.")});

  KindInfo profile;
  profile.kind = "ComputeProfile";
  profile.plural = "computeprofiles";
  profile.singular = "computeprofile";
  profile.short_names = {"cp", "profile"};
  profile.versioned = true;
  profile.spec =
      Obj("spec", "An admin-curated, versioned compute SKU.",
          {Str("displayName", "Human-friendly name."), Str("description", "Free text."),
           Ref("templateRef", "The EnvironmentTemplate that deploys it.", true), resources,
           Arr("variables", "Rules for the template's variables.", variable_rule), Sharing(),
           ProfileLifecycle(), ProfileScheduling(), ProfileApproval()});
  profile.status = tmpl.status;
  profile.field_selectors = {"spec.templateRef.name"};
  kinds.push_back(profile);

  KindInfo instance;
  instance.kind = "ComputeInstance";
  instance.plural = "computeinstances";
  instance.singular = "computeinstance";
  instance.short_names = {"ci", "instance"};
  instance.spec =
      Obj("spec", "A launch of a compute profile.",
          {Str("displayName", "Human-friendly name shown to end users."),
           Str("description", "Free text."),
           Ref("profileRef", "The ComputeProfile; may change only before the first deploy.", true),
           Field{"variables",
                 FieldType::kScalarMap,
                 "Values for the profile's variables.",
                 false,
                 {},
                 {}},
           Sharing(),
           Obj("lifecycle", "This instance's share of its profile's lifecycle policy.",
               {Str("ttl",
                    "Time-to-live (90s, 30m, 8h, 3d), at most the profile's "
                    "spec.lifecycle.ttl.max; raising it extends a running instance."),
                Bool("scheduleOptOut",
                     "Not started or stopped by the profile's schedule (only where "
                     "the profile's spec.lifecycle.schedule.allowOptOut is true).")})});
  instance.status = Obj(
      "status", "Deployment status.",
      {Enum("phase", "Deployment status.",
            {"NotDeployed", "Waiting", "InProgress", "Success", "Failed", "Stopped"}),
       Enum("action", "What the current or last run does.", {"deploy", "destroy", "stop", "start"}),
       Int("profileRevision", "The profile revision this instance uses."),
       Int("deployedGeneration", "The spec generation that is live."),
       Str("reason", "Why it is Waiting, Failed or Stopped."),
       Str("message", "Details for a person."),
       Conditions(),
       StrMap("outputs", "What the driver produced."),
       Obj("lastRunRef", "The current or last run.", {Str("name", "")}),
       Int("runCount", "Runs made for this instance so far (names the next run)."),
       Free("resources", "The resources the deployed revision asked for."),
       Arr("gpus", "GPUs of this host assigned to the instance (local driver).", Str("", "")),
       Int("restartCount", "Restarts of the workload since it was deployed (local driver)."),
       Free("driverState", "What the driver needs to re-adopt the workload."),
       Int("templateRevision", "The template revision this instance uses."),
       Obj("sharedFrom", "Set on objects listed in a project they are shared into.",
           {Str("namespace", "")}),
       Str("createdBy", "The user who created the instance (counts toward instancesPerUser)."),
       Str("startedAt", "The last deploy or start that reached Success (RFC 3339)."),
       Str("expiresAt", "startedAt plus the ttl (RFC 3339); absent without a ttl."),
       Int("gpuUtilization", "Percent, mean of the instance's GPUs, last sample."),
       Str("idleSince", "Since when the GPUs are below the idle threshold; absent while busy."),
       Enum("admission",
            "Guaranteed: within its project's guaranteedGpus; Borrowed: beyond them (may be "
            "preempted when the profile is preemptible).",
            {"Guaranteed", "Borrowed"}),
       Int("queuePosition",
           "Waiting for GPUs: its place in the queue for its GPU type (1 = next)."),
       InstanceApproval()});
  instance.field_selectors = {"status.phase", "spec.profileRef.name", "status.createdBy"};
  kinds.push_back(instance);

  KindInfo service_profile;
  service_profile.kind = "ServiceProfile";
  service_profile.plural = "serviceprofiles";
  service_profile.singular = "serviceprofile";
  service_profile.short_names = {"sp"};
  service_profile.versioned = true;
  service_profile.spec =
      Obj("spec",
          "An admin-curated, versioned managed service (notebook, MLOps platform, Ray, "
          "inference) deployed onto a compute instance.",
          {Str("displayName", "Human-friendly name."), Str("description", "Free text."),
           Str("serviceType", "What kind of service it is, e.g. notebook, mlops, ray, inference.",
               true),
           Ref("templateRef", "The EnvironmentTemplate that deploys the service.", true),
           Obj("computeSelector",
               "Which compute profiles the service can run on: a label selector over the labels "
               "of the compute instance's ComputeProfile. Empty or absent: any.",
               {StrMap("matchLabels", "Labels the compute profile must have."),
                Arr("matchExpressions", "Requirements the compute profile's labels must meet.",
                    Obj("", "",
                        {Str("key", "Label key.", true),
                         Enum("operator", "Relation of the key to the values.",
                              {"In", "NotIn", "Exists", "DoesNotExist"}, true),
                         Arr("values", "Values for In and NotIn.", Str("", ""))}))}),
           Obj("autoCreateCompute",
               "Launch a dedicated compute instance for each service instance that names none.",
               {Ref("profileRef", "The ComputeProfile of the compute instance created.", true),
                Field{"variables",
                      FieldType::kScalarMap,
                      "Values for that compute profile's variables.",
                      false,
                      {},
                      {}}}),
           Arr("variables", "Rules for the template's variables.", variable_rule), Sharing(),
           ServiceProfileLifecycle()});
  service_profile.status = tmpl.status;
  service_profile.field_selectors = {"spec.templateRef.name", "spec.serviceType"};
  kinds.push_back(service_profile);

  KindInfo service;
  service.kind = "ServiceInstance";
  service.plural = "serviceinstances";
  service.singular = "serviceinstance";
  service.short_names = {"si", "service"};
  service.spec =
      Obj("spec", "A launch of a service profile onto a compute instance.",
          {Str("displayName", "Human-friendly name shown to end users."),
           Str("description", "Free text."),
           Ref("profileRef", "The ServiceProfile; may change only before the first deploy.", true),
           Ref("computeRef",
               "The ComputeInstance the service runs on (this project's or one shared into it); "
               "may change only before the first deploy. Set by the server when the profile "
               "auto-creates compute.",
               false),
           Field{"variables",
                 FieldType::kScalarMap,
                 "Values for the profile's variables.",
                 false,
                 {},
                 {}},
           Sharing(),
           Obj("lifecycle", "This service instance's share of its profile's lifecycle policy.",
               {Str("ttl",
                    "Time-to-live (90s, 30m, 8h, 3d), at most the service profile's "
                    "spec.lifecycle.ttl.max; raising it extends a running instance.")})});
  {
    Field status = instance.status;
    status.description = "Deployment status.";
    for (auto& f : status.children)
      if (f.name == "createdBy") f.description = "The user who created the service instance.";
    status.children.push_back(Bool("computeCreated",
                                   "The compute instance was created for this service (auto-create "
                                   "compute): it is destroyed and deleted with the service."));
    service.status = status;
  }
  service.field_selectors = {"status.phase", "spec.profileRef.name", "spec.computeRef.name",
                             "spec.computeRef.namespace", "status.createdBy"};
  kinds.push_back(service);

  KindInfo run;
  run.kind = "Run";
  run.plural = "runs";
  run.singular = "run";
  run.read_only = true;
  run.spec =
      Obj("spec", "One deploy or destroy of an instance.",
          {Obj("instanceRef", "The instance.",
               {Str("kind", "ComputeInstance (when absent) or ServiceInstance."), Str("name", ""),
                Str("uid", "")}),
           Enum("action", "What the run does.", {"deploy", "destroy", "stop", "start"}),
           Str("reason",
               "Why the run was queued: TTLExpired, Idle, Scheduled, Preempted, or "
               "StoppedByUser for a person's stop; absent for other runs."),
           Int("generation", "The instance spec generation the run deploys."),
           Int("profileRevision", ""), Int("templateRevision", ""),
           Str("previousPhase", "The instance phase before the run was queued."),
           Bool("deleteInstance", "Remove the instance record after a successful destroy.")});
  run.status = Obj(
      "status", "Progress of the run.",
      {Enum("phase", "", {"Queued", "Running", "Succeeded", "Failed", "Canceled"}),
       Str("reason", ""), Str("message", ""), Int("attempt", ""), Str("startTime", ""),
       Str("completionTime", ""), StrMap("outputs", ""),
       Obj("lease", "Which gantryd replica runs it, until when.",
           {Str("holder", ""), Str("host", ""), Str("renewTime", ""), Int("durationSeconds", "")}),
       Obj("reclaim",
           "Several replicas: which replica preempts borrowing instances of its "
           "host so that this queued deploy fits, until renewTime + "
           "durationSeconds; meanwhile no other replica preempts for it.",
           {Str("holder", ""), Str("host", ""), Str("renewTime", ""), Int("durationSeconds", "")}),
       Free("driverState", "What the driver needs to re-adopt or clean up the run."),
       Arr("gpus", "GPU indices assigned for the run.", Str("", "")),
       Arr("gpuUuids", "Their UUIDs, when known.", Str("", ""))});
  run.field_selectors = {"status.phase", "spec.instanceRef.name", "spec.instanceRef.kind"};
  kinds.push_back(run);

  KindInfo webhook;
  webhook.kind = "Webhook";
  webhook.plural = "webhooks";
  webhook.singular = "webhook";
  webhook.short_names = {"wh"};
  webhook.spec = WebhookSpec("this project's");
  webhook.status = WebhookStatus();
  kinds.push_back(webhook);

  KindInfo cluster_webhook = webhook;
  cluster_webhook.kind = "ClusterWebhook";
  cluster_webhook.plural = "clusterwebhooks";
  cluster_webhook.singular = "clusterwebhook";
  cluster_webhook.short_names = {"cwh"};
  cluster_webhook.namespaced = false;
  cluster_webhook.spec = WebhookSpec("every project's");
  kinds.push_back(cluster_webhook);

  KindInfo delivery;
  delivery.kind = "WebhookDelivery";
  delivery.plural = "webhookdeliveries";
  delivery.singular = "webhookdelivery";
  delivery.read_only = true;
  delivery.spec =
      Obj("spec", "One event for one webhook, from the outbox.",
          {Obj("webhookRef", "The webhook.",
               {Str("kind", "Webhook or ClusterWebhook."), Str("name", ""),
                Str("namespace", "The Webhook's project; empty for a ClusterWebhook.")}),
           Str("event", "The event name."), Str("body", "The exact body POSTed (and signed)."),
           Str("contentType", "")});
  delivery.status =
      Obj("status", "Progress of the delivery.",
          {Enum("phase", "", {"Pending", "Delivered", "Failed"}), Int("attempts", ""),
           Str("nextAttemptTime", ""), Int("code", "HTTP status of the last attempt."),
           Str("error", ""), Str("deliveredTime", ""),
           Obj("lease", "Which gantryd replica is sending it, until when.",
               {Str("holder", ""), Str("renewTime", ""), Int("durationSeconds", "")})});
  delivery.field_selectors = {"status.phase", "spec.webhookRef.name", "spec.webhookRef.kind",
                              "spec.event"};
  kinds.push_back(delivery);

  KindInfo node;
  node.kind = "Node";
  node.plural = "nodes";
  node.singular = "node";
  node.namespaced = false;
  node.read_only = true;
  node.spec = Obj("spec", "A host that runs local instances (read-only, computed).", {});
  node.status = Obj(
      "status", "GPU capacity and allocation.",
      {Enum("gpuSource", "Where the GPU list comes from.", {"nvidia-smi", "configured", "none"}),
       StrMap("capacity", "GPUs per type."), StrMap("allocated", "GPUs assigned, per type."),
       Arr("gpus", "Each GPU.",
           Obj("", "",
               {Int("index", ""), Str("uuid", ""), Str("name", ""), Str("type", ""),
                Int("memoryMiB", ""), Str("assignedTo", "project/instance")}))});
  kinds.push_back(node);

  KindInfo audit;
  audit.kind = "AuditEvent";
  audit.plural = "auditevents";
  audit.singular = "auditevent";
  audit.short_names = {"audit"};
  audit.namespaced = false;
  audit.read_only = true;
  // Audit events carry their fields at the top level (time, user, verb, objectRef, result,
  // code, message, sourceAddress), like Kubernetes Events; spec and status stay empty.
  audit.spec = Obj("spec", "Unused: an audit event's fields are at the top level.", {});
  audit.status = Obj("status", "", {});
  audit.field_selectors = {
      "user", "verb", "result", "objectRef.resource", "objectRef.namespace", "objectRef.name"};
  kinds.push_back(audit);
  AddUsageKinds(kinds);
  return kinds;
}

void CheckMetadata(const json::value& v, std::vector<FieldCause>* causes) {
  static const Field kMeta =
      Obj("metadata", "",
          {Str("name", ""), Str("namespace", ""), Str("uid", ""), Str("resourceVersion", ""),
           Int("generation", ""), Str("creationTimestamp", ""), StrMap("labels", ""),
           StrMap("annotations", ""), Str("deletionTimestamp", ""),
           Arr("finalizers", "", Str("", "")), Str("generateName", ""),
           // Field ownership (model/managed_fields.h): accepted on writes like Kubernetes does.
           Arr("managedFields", "",
               Obj("", "",
                   {Str("manager", ""), Enum("operation", "", {"Apply", "Update"}),
                    Str("apiVersion", ""), Str("time", ""), Str("fieldsType", ""),
                    Free("fieldsV1", ""), Str("subresource", "")}))});
  CheckField(kMeta, v, "metadata", causes);
}

}  // namespace

const std::vector<KindInfo>& AllKinds() {
  static const std::vector<KindInfo> kinds = BuildKinds();
  return kinds;
}

const KindInfo* FindKindByPlural(std::string_view plural) {
  for (const auto& k : AllKinds())
    if (k.plural == plural) return &k;
  return nullptr;
}

const KindInfo* FindKindByName(std::string_view kind) {
  for (const auto& k : AllKinds())
    if (k.kind == kind) return &k;
  return nullptr;
}

void CheckSchema(const KindInfo& kind, const json::object& obj, std::vector<FieldCause>* causes) {
  for (const auto& kv : obj) {
    std::string_view key = kv.key();
    if (key == "apiVersion" || key == "kind") {
      if (!kv.value().is_string())
        causes->push_back({std::string(key), "must be of type string", "FieldValueTypeInvalid"});
    } else if (key == "metadata") {
      CheckMetadata(kv.value(), causes);
    } else if (key == "spec") {
      if (!kv.value().is_null()) CheckField(kind.spec, kv.value(), "spec", causes);
    } else if (key == "status") {
      // Status is server-owned; what a client sends is ignored, in any shape.
    } else {
      causes->push_back({std::string(key), "unknown field \"" + std::string(key) + "\"",
                         "FieldValueNotSupported"});
    }
  }
}

}  // namespace gantry::model
