#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <vector>

#include "cli/actions.h"
#include "cli/apply.h"
#include "cli/approve.h"
#include "cli/auth_commands.h"
#include "cli/context.h"
#include "cli/extend.h"
#include "cli/get.h"
#include "cli/usage.h"
#include "client/warnings.h"

namespace gantry::cli {
namespace {

// What a command does once its flags are parsed.
using Runner = std::function<int(CommandContext&)>;

struct CommandSpec {
  const char* name;
  const char* summary;
  // Declares the subcommand's flags and positionals on `sub`; returns the runner, which reads
  // the parsed values (captured by the setup function).
  Runner (*setup)(CLI::App& sub);
};

Runner SetupGet(CLI::App& sub) {
  auto o = std::make_shared<GetOptions>();
  auto args = std::make_shared<std::vector<std::string>>();
  sub.add_option("args", *args, "KIND [NAME...]")->required();
  sub.add_flag("-A,--all-projects", o->all_projects, "List across every project you can see");
  sub.add_option("-l,--selector", o->label_selector, "Label selector (env=prod,tier!=gpu)");
  sub.add_option("--field-selector", o->field_selector, "Field selector (status.phase=Success)");
  sub.add_option("--search", o->search, "Case-insensitive substring of name/display name");
  sub.add_option("-o,--output", o->output, "Output format: json, yaml, wide, name");
  sub.add_flag("--revisions", o->revisions, "List the revisions of a versioned object");
  return [o, args](CommandContext& ctx) {
    o->kind = (*args)[0];
    o->names.assign(args->begin() + 1, args->end());
    return RunGet(ctx, *o);
  };
}

// `gantry webhooks deliveries NAME [--cluster]`: the delivery history of a Webhook of the
// project (or, with --cluster, of a ClusterWebhook, across projects), as `gantry get
// webhookdeliveries` with a field selector on spec.webhookRef prints it.
Runner SetupWebhooks(CLI::App& sub) {
  auto o = std::make_shared<GetOptions>();
  auto name = std::make_shared<std::string>();
  auto cluster = std::make_shared<bool>(false);
  sub.require_subcommand(1);
  CLI::App* deliveries = sub.add_subcommand("deliveries", "The delivery history of a webhook");
  deliveries->add_option("name", *name, "Webhook NAME")->required();
  deliveries->add_flag("--cluster", *cluster, "NAME is a ClusterWebhook (every project)");
  deliveries->add_option("-o,--output", o->output, "Output format: json, yaml, wide, name");
  return [o, name, cluster](CommandContext& ctx) {
    o->kind = "webhookdeliveries";
    o->all_projects = *cluster;
    o->field_selector = "spec.webhookRef.name=" + *name +
                        ",spec.webhookRef.kind=" + (*cluster ? "ClusterWebhook" : "Webhook");
    return RunGet(ctx, *o);
  };
}

Runner SetupDescribe(CLI::App& sub) {
  auto args = std::make_shared<std::vector<std::string>>();
  sub.add_option("args", *args, "KIND NAME...")->required();
  return [args](CommandContext& ctx) {
    DescribeOptions o{(*args)[0], {args->begin() + 1, args->end()}};
    return RunDescribe(ctx, o);
  };
}

Runner SetupApply(CLI::App& sub) {
  auto o = std::make_shared<ApplyOptions>();
  sub.add_option("-f,--filename", o->files, "File, directory or - (stdin); repeatable")
      ->required()
      ->allow_extra_args(false);
  sub.add_flag("-R,--recursive", o->recursive, "Also read subdirectories of a -f directory");
  return [o](CommandContext& ctx) { return RunApply(ctx, *o); };
}

Runner SetupDelete(CLI::App& sub) {
  auto o = std::make_shared<DeleteOptions>();
  auto args = std::make_shared<std::vector<std::string>>();
  sub.add_option("args", *args, "KIND NAME...");
  sub.add_option("-f,--filename", o->files, "File, directory or - (stdin); repeatable")
      ->allow_extra_args(false);
  sub.add_flag("-R,--recursive", o->recursive, "Also read subdirectories of a -f directory");
  sub.add_flag("--cascade", o->cascade,
               "Compute instances: destroy and delete their service instances first "
               "(propagationPolicy Foreground)");
  return [o, args](CommandContext& ctx) {
    if (!args->empty()) {
      o->kind = (*args)[0];
      o->names.assign(args->begin() + 1, args->end());
    }
    return RunDelete(ctx, *o);
  };
}

// deploy, destroy, stop and start: NAME [--wait] [--timeout DURATION].
template <const char* kAction>
Runner SetupWaitingAction(CLI::App& sub) {
  auto o = std::make_shared<ActionOptions>();
  o->action = kAction;
  sub.add_option("name", o->name, "ComputeInstance NAME, or si/NAME for a ServiceInstance")
      ->required();
  if (std::string_view(kAction) == "destroy") {
    sub.add_flag("--cascade", o->cascade,
                 "Compute instances: destroy the service instances running on it first");
  }
  sub.add_flag("-w,--wait", o->wait,
               "Block until the run ends; exit 1 if it failed (phases are printed as they change)");
  sub.add_option("--timeout", o->timeout,
                 "With --wait: give up after this long (90s, 5m, 1h30m); implies --wait");
  return [o](CommandContext& ctx) { return RunAction(ctx, *o); };
}

constexpr char kDeploy[] = "deploy";
constexpr char kDestroy[] = "destroy";
constexpr char kStop[] = "stop";
constexpr char kStart[] = "start";

Runner SetupCancel(CLI::App& sub) {
  auto o = std::make_shared<ActionOptions>();
  o->action = "cancel";
  sub.add_option("name", o->name, "ComputeInstance NAME, or si/NAME for a ServiceInstance")
      ->required();
  return [o](CommandContext& ctx) { return RunAction(ctx, *o); };
}

Runner SetupUpgrade(CLI::App& sub) {
  auto o = std::make_shared<UpgradeOptions>();
  sub.add_option("name", o->name, "ComputeInstance NAME, or si/NAME for a ServiceInstance")
      ->required();
  return [o](CommandContext& ctx) { return RunUpgrade(ctx, *o); };
}

Runner SetupExtend(CLI::App& sub) {
  auto o = std::make_shared<ExtendOptions>();
  sub.add_option("name", o->name, "ComputeInstance NAME")->required();
  sub.add_option("duration", o->by, "How much later it expires (90s, 30m, 2h, 1d)")->required();
  return [o](CommandContext& ctx) { return RunExtend(ctx, *o); };
}

Runner SetupUsage(CLI::App& sub) {
  auto o = std::make_shared<UsageOptions>();
  sub.add_option("--from", o->from, "Start: RFC 3339 or a date (default: this month's first)");
  sub.add_option("--to", o->to, "End, exclusive (default: now)");
  sub.add_option("--group-by", o->group_by, "project,user,profile,gpuType (default: all four)");
  sub.add_option("--step", o->step, "hour, day or month buckets (UTC)");
  sub.add_option("-o,--output", o->output, "csv or json (default: a table)");
  return [o](CommandContext& ctx) { return RunUsage(ctx, *o); };
}

template <const char* kVerb>
Runner SetupAnswer(CLI::App& sub) {
  auto o = std::make_shared<AnswerOptions>();
  o->verb = kVerb;
  sub.add_option("name", o->name, "ComputeInstance NAME")->required();
  sub.add_option("-m,--message", o->message, "Why (shown to the requester, audited)");
  return [o](CommandContext& ctx) { return RunAnswer(ctx, *o); };
}

constexpr char kApprove[] = "approve";
constexpr char kReject[] = "reject";

Runner SetupLogs(CLI::App& sub) {
  auto o = std::make_shared<LogsOptions>();
  sub.add_option("name", o->name, "A run, a ComputeInstance or si/NAME (its last run)")->required();
  sub.add_flag("-f,--follow", o->follow, "Stream new lines until the run ends");
  return [o](CommandContext& ctx) { return RunLogsCommand(ctx, *o); };
}

Runner SetupLogin(CLI::App& sub) {
  auto o = std::make_shared<LoginOptions>();
  sub.add_option("-u,--user", o->user, "User name")->capture_default_str();
  sub.add_flag("--password-stdin", o->password_stdin, "Read the password from stdin");
  sub.add_flag("--sso", o->sso,
               "Log in by single sign-on: open the printed URL, then paste the token it shows");
  sub.add_option("--expires", o->expires, "Lifetime of the token (90d, 12h)")
      ->capture_default_str();
  return [o](CommandContext& ctx) { return RunLogin(ctx, *o); };
}

Runner SetupWhoAmI(CLI::App& sub) {
  return [](CommandContext& ctx) { return RunWhoAmI(ctx); };
}

Runner SetupTokens(CLI::App& sub) {
  auto o = std::make_shared<TokensOptions>();
  sub.require_subcommand(1);
  CLI::App* create = sub.add_subcommand("create", "Create a token (printed once)");
  create->add_option("-d,--description", o->description, "What the token is for");
  create->add_option("--expires", o->expires, "Lifetime (30d, 12h); default: never");
  create->add_option("-u,--user", o->user, "Whose token (org-admins only for others)");
  CLI::App* list = sub.add_subcommand("list", "List tokens (never their secrets)");
  list->add_option("-u,--user", o->user, "Whose tokens");
  CLI::App* revoke = sub.add_subcommand("revoke", "Revoke a token at once");
  revoke->add_option("name", o->name, "Token name (tok-...)")->required();
  revoke->add_option("-u,--user", o->user, "Whose token");
  return [o, create, revoke](CommandContext& ctx) {
    o->verb = create->parsed() ? "create" : revoke->parsed() ? "revoke" : "list";
    return RunTokens(ctx, *o);
  };
}

Runner SetupShare(CLI::App& sub) {
  auto o = std::make_shared<ShareOptions>();
  sub.add_option("kind", o->kind,
                 "computeprofile, environmenttemplate, computeinstance, serviceprofile (sp) or "
                 "serviceinstance (si)")
      ->required();
  sub.add_option("name", o->name, "Object name")->required();
  sub.add_flag("--all", o->all, "Share with every project");
  sub.add_flag("--none", o->none, "Share with no other project");
  sub.add_option("--projects", o->projects, "Share with these projects (a,b)");
  return [o](CommandContext& ctx) { return RunShare(ctx, *o); };
}

Runner SetupKubeconfig(CLI::App& sub) {
  auto o = std::make_shared<KubeconfigOptions>();
  sub.add_option("--tls-server", o->tls_server, "https:// URL of gantryd's --tls-listen");
  sub.add_option("--ca-file", o->ca_file, "PEM certificate to trust (DATA_DIR/tls.crt)");
  return [o](CommandContext& ctx) { return RunKubeconfig(ctx, *o); };
}

// The command table.
const CommandSpec kCommands[] = {
    {"get", "List objects or show some (tables, -o json|yaml|wide|name)", SetupGet},
    {"describe", "Show one object in detail", SetupDescribe},
    {"apply", "Create or update objects from YAML/JSON files", SetupApply},
    {"delete", "Delete objects by name or from files", SetupDelete},
    {"deploy", "Deploy a compute or (si/NAME) service instance (queues a run; --wait blocks)",
     SetupWaitingAction<kDeploy>},
    {"destroy", "Tear down what a deploy made (queues a run; --wait blocks until it ends)",
     SetupWaitingAction<kDestroy>},
    {"stop", "Stop an instance: its GPUs are released, its data kept (--wait blocks)",
     SetupWaitingAction<kStop>},
    {"start", "Start a stopped instance again (admitted like a deploy; --wait blocks)",
     SetupWaitingAction<kStart>},
    {"cancel", "Cancel an instance's queued (Waiting) run", SetupCancel},
    {"upgrade", "Move an instance to its profile's latest revision", SetupUpgrade},
    {"extend", "Raise an instance's time-to-live so that it expires DURATION later", SetupExtend},
    {"usage", "GPU-hours and cost per project, user, profile, GPU type (-n: one project)",
     SetupUsage},
    {"approve", "Approve a compute instance's pending deploy or start (its run is queued)",
     SetupAnswer<kApprove>},
    {"reject", "Reject a compute instance's pending deploy or start (--message says why)",
     SetupAnswer<kReject>},
    {"webhooks", "Webhook helpers: `webhooks deliveries NAME` lists a webhook's deliveries",
     SetupWebhooks},
    {"logs", "Print a run's log (NAME: a run or an instance); -f follows it", SetupLogs},
    {"login", "Get an API token with your password and save it in the config file", SetupLogin},
    {"whoami", "Show who the token belongs to and their roles", SetupWhoAmI},
    {"tokens", "Create, list and revoke API tokens", SetupTokens},
    {"share",
     "Share a profile, template or instance (compute or service): --all, --none or "
     "--projects a,b",
     SetupShare},
    {"kubeconfig", "Print a kubeconfig that lets stock kubectl use this server and token",
     SetupKubeconfig},
};

}  // namespace

CliEnvironment SystemEnvironment() {
  CliEnvironment env;
  env.out = &std::cout;
  env.err = &std::cerr;
  env.in = &std::cin;
  env.getenv = SystemGetEnv;
  env.read_file = ReadWholeFile;
  env.now = [] { return absl::Now(); };
  env.connect = [](const Settings& s) {
    return std::unique_ptr<client::HttpTransport>(new client::HttpClient(
        s.server, s.token, client::TlsOptions{s.ca_file, s.insecure_skip_tls_verify}));
  };
  return env;
}

int RunCli(int argc, const char* const* argv, const CliEnvironment& env) {
  CLI::App app{"gantry: the command line for Gantry, a self-hosted GPU PaaS", "gantry"};
  app.require_subcommand(1);
  app.fallthrough();

  std::string server, token, project, config;
  CLI::Option* server_opt =
      app.add_option("--server", server,
                     "gantryd URL (default from config, else " + std::string(kDefaultServer) + ")");
  CLI::Option* token_opt = app.add_option("--token", token, "Bearer token");
  CLI::Option* project_opt =
      app.add_option("-n,--project", project, "Project (default from config, else default)");
  CLI::Option* config_opt = app.add_option(
      "--config", config, "Config file (default $GANTRY_CONFIG or ~/.config/gantry/config.yaml)");
  std::string ca_file;
  bool insecure = false;
  CLI::Option* ca_opt = app.add_option(
      "--ca-file", ca_file,
      "PEM CA that signed an https:// server's certificate (gantryd's DATA_DIR/tls.crt)");
  app.add_flag("--insecure-skip-tls-verify", insecure,
               "Do not check an https:// server's certificate (unsafe)");

  std::vector<Runner> runners(std::size(kCommands));
  std::vector<CLI::App*> subs;
  for (size_t i = 0; i < std::size(kCommands); ++i) {
    CLI::App* sub = app.add_subcommand(kCommands[i].name, kCommands[i].summary);
    sub->fallthrough();
    runners[i] = kCommands[i].setup(*sub);
    subs.push_back(sub);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    *env.out << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp& e) {
    *env.out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      // --help on a subcommand: CLI11 reports it through app.exit.
      app.exit(e, *env.out, *env.err);
      return kExitOk;
    }
    *env.err << "error: " << e.what() << "\nRun 'gantry --help' for usage.\n";
    return kExitUsage;
  }

  GlobalFlags flags;
  if (*server_opt) flags.server = server;
  if (*token_opt) flags.token = token;
  if (*project_opt) flags.project = project;
  if (*config_opt) flags.config = config;
  if (*ca_opt) flags.ca_file = ca_file;
  flags.insecure_skip_tls_verify = insecure;
  absl::StatusOr<Settings> settings = ResolveSettings(flags, env.getenv, env.read_file);
  if (!settings.ok()) {
    *env.err << "error: " << settings.status().message() << "\n";
    return kExitUsage;
  }

  std::unique_ptr<client::HttpTransport> api = env.connect(*settings);
  client::WarningPrinter warned(*api, *env.err);  // "Warning: ..." as kubectl prints them
  CommandContext ctx;
  ctx.settings = *settings;
  ctx.api = &warned;
  ctx.out = env.out;
  ctx.err = env.err;
  ctx.in = env.in;
  ctx.now = env.now();
  ctx.read_file = env.read_file;
  ctx.clock = env.now;
  ctx.sleep = env.sleep;
  for (size_t i = 0; i < subs.size(); ++i) {
    if (subs[i]->parsed()) return runners[i](ctx);
  }
  *env.err << "error: no command given\nRun 'gantry --help' for usage.\n";
  return kExitUsage;
}

}  // namespace gantry::cli
