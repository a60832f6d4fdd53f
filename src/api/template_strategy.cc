// Environment templates: the driver's configuration is checked by the driver when it is
// saved; templates of drivers that run programs on gantryd's host need an org-admin;
// sensitive variable defaults are sealed; every spec change is a new revision; a template
// used by profiles is not deleted.
#include "api/strategy.h"
#include "api/strategy_support.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "model/codec.h"
#include "model/sealed_fields.h"
#include "model/templates.h"

namespace gantry::api {
namespace {

namespace json = boost::json;

class TemplateStrategy : public KindStrategy {
 public:
  explicit TemplateStrategy(StrategyContext& ctx) : ctx_(ctx) {}

  KindTraits Traits() const override { return {.sharable = true}; }

  void PrepareForUpdate(const Target& t, const json::object& current,
                        json::object& next) const override {
    KeepSealedDefaults(ctx_, t, current, next);
  }

  absl::Status Admit(const Target& t, const json::object* current, json::object& next,
                     std::vector<store::Write>* writes) const override {
    ASSIGN_OR_RETURN(const model::Template tmpl, model::DecodeEnvironmentTemplate(next));
    std::optional<model::Template> was;
    if (current) {
      ASSIGN_OR_RETURN(was, model::DecodeEnvironmentTemplate(*current));
    }
    RETURN_IF_ERROR(CheckHostDriverWrite(t, was ? &*was : nullptr, tmpl));
    RETURN_IF_ERROR(ValidateDriverConfig(was ? &*was : nullptr, tmpl));
    std::set<std::string> sensitive = model::SensitiveDeclared(tmpl.spec.raw);
    RETURN_IF_ERROR(SealDefaults(ctx_, t, sensitive, current, next));
    RecordRevision(ctx_, t, current, next, writes);
    return absl::OkStatus();
  }

  absl::Status ValidateDelete(const Target& t, const json::object&,
                              std::vector<store::Write>*) const override {
    ASSIGN_OR_RETURN(auto names, UsersOf(ctx_, t, kComputeProfileKind, "spec.templateRef.name"));
    ASSIGN_OR_RETURN(auto services, UsersOf(ctx_, t, kServiceProfileKind, "spec.templateRef.name"));
    std::string used;
    if (!names.empty()) used = Counted(names, "compute profile");
    if (!services.empty())
      used += (used.empty() ? "" : " and ") + Counted(services, "service profile");
    if (used.empty()) return absl::OkStatus();
    return ConflictError(
        "environmenttemplate " + t.name + " is used by " + used + "; delete them first", "InUse");
  }

 private:
  bool RunsOnHost(const std::string& driver) const {
    const drivers::Driver* d = ctx_.drivers.Find(driver);
    return d && d->Caps().runs_on_gantryd_host;
  }

  // 403 unless an org-admin writes a template whose driver runs on the host, or changes
  // one that did: such a template is code run on the control plane.
  absl::Status CheckHostDriverWrite(const Target& t, const model::Template* current,
                                    const model::Template& next) const {
    if (t.caller_is_org_admin) return absl::OkStatus();
    const std::string& driver = next.spec.driver;
    const std::string was = current ? current->spec.driver : "";
    if (!RunsOnHost(driver) && !RunsOnHost(was)) return absl::OkStatus();
    std::string verb = current ? "update" : "create";
    return ForbiddenError(
        "environmenttemplates.paas.gantry.dev \"" + next.metadata.name +
        "\" is forbidden: User \"" + t.caller + "\" cannot " + verb + " a template with driver \"" +
        (RunsOnHost(driver) ? driver : was) +
        "\": its commands run on the control-plane host as gantryd's workload user, so "
        "templates of the local and exec drivers need the org-admin role");
  }

  // The driver's own check of spec.<driver> (Driver::ValidateConfig), when it is new or
  // changed: 422 with causes on spec.<driver>.<field>. A stored template is not refused
  // for a config it was saved with before the driver checked it (a label edit stays one).
  absl::Status ValidateDriverConfig(const model::Template* current,
                                    const model::Template& next) const {
    const std::string& driver = next.spec.driver;
    const drivers::Driver* d = ctx_.drivers.Find(driver);
    if (!d) return absl::OkStatus();  // the schema's enum refused unknown drivers
    const std::string path = "spec." + driver;
    if (current && current->spec.driver == driver && current->spec.config == next.spec.config)
      return absl::OkStatus();
    std::vector<FieldCause> causes;
    d->ValidateConfig(next.spec.config, &causes);
    if (causes.empty()) return absl::OkStatus();
    for (auto& c : causes) c.field = c.field.empty() ? path : path + "." + c.field;
    return InvalidError(kTemplateKind, next.metadata.name, std::move(causes));
  }

  StrategyContext& ctx_;
};

}  // namespace

std::unique_ptr<KindStrategy> NewTemplateStrategy(StrategyContext& context) {
  return std::make_unique<TemplateStrategy>(context);
}

}  // namespace gantry::api
