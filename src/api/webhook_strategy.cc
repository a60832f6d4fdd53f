// Webhooks and cluster webhooks (docs/webhooks.md): the receiver URL and events are checked
// beyond the schema (webhooks/webhook_spec.h), the secret is sealed at rest and never
// returned (shown as kRedacted; sending that, or the same plaintext, back keeps it), and it is
// kept out of kubectl's last-applied-configuration annotation. Who may write is the
// permission matrix's (auth/authorize.cc): project-admin for a Webhook, org-admin for a
// ClusterWebhook.
#include "api/strategy.h"
#include "api/strategy_support.h"
#include "common/errors.h"
#include "model/codec.h"
#include "model/sealed_fields.h"
#include "webhooks/webhook_spec.h"

namespace gantry::api {
namespace {

namespace json = boost::json;
using model::GetString;

class WebhookStrategy : public KindStrategy {
 public:
  explicit WebhookStrategy(StrategyContext& ctx) : ctx_(ctx) {}

  // A patch or apply that leaves the secret alone carries the stored ciphertext.
  KindTraits Traits() const override { return {.sealed_field = "spec.secret"}; }

  void PrepareForCreate(const Target&, json::object& status) const override {
    status = json::object{};
  }

  void PrepareForUpdate(const Target& t, const json::object& current,
                        json::object& next) const override {
    std::string stored = GetString(current, "spec.secret");
    json::value* sent = next["spec"].as_object().if_contains("secret");
    if (!sent || !sent->is_string() || !SecretBox::IsSealed(stored)) return;
    if (sent->get_string() == kRedacted) {
      *sent = stored;
    } else if (auto plain = ctx_.secrets.Unseal(stored, Context(t, current));
               plain.ok() && *plain == sent->get_string()) {
      *sent = stored;
    }
  }

  absl::Status Admit(const Target& t, const json::object* current, json::object& next,
                     std::vector<store::Write>*) const override {
    std::vector<FieldCause> causes;
    json::object& spec = next["spec"].as_object();
    webhooks::ValidateWebhookSpec(spec, &causes);
    std::string secret = GetString(spec, "secret");
    if (secret == kRedacted)
      causes.push_back({"spec.secret", std::string("is ") + kRedacted +
                                           ", which stands for a stored secret; this webhook "
                                           "has none: send the secret itself"});
    // Ciphertext is kept only as this webhook stored it (a patch that left it alone).
    if (SecretBox::IsSealed(secret) && (!current || secret != GetString(*current, "spec.secret")))
      causes.push_back({"spec.secret",
                        "Invalid value: a sealed value is only valid in the field it was sealed "
                        "for; give the secret itself",
                        "FieldValueForbidden"});
    if (!causes.empty())
      return InvalidError(t.kind->kind, GetString(next, "metadata.name"), std::move(causes));
    if (!SecretBox::IsSealed(secret)) spec["secret"] = ctx_.secrets.Seal(secret, Context(t, next));
    RedactSecretInLastApplied(next);
    return absl::OkStatus();
  }

 private:
  // From the object, not the URL: a create's URL names only the collection.
  static std::string Context(const Target& t, const json::object& obj) {
    return webhooks::SecretContext(t.kind->kind,
                                   t.kind->namespaced ? GetString(obj, "metadata.namespace") : "",
                                   GetString(obj, "metadata.name"));
  }

  // kubectl apply keeps the whole manifest in an annotation: the secret must not be there.
  static void RedactSecretInLastApplied(json::object& obj) {
    json::value* meta = obj.if_contains("metadata");
    json::value* ann =
        meta && meta->is_object() ? meta->get_object().if_contains("annotations") : nullptr;
    json::value* text = ann && ann->is_object()
                            ? ann->get_object().if_contains(model::kLastAppliedAnnotation)
                            : nullptr;
    if (!text || !text->is_string()) return;
    boost::system::error_code ec;
    json::value applied = json::parse(text->get_string(), ec);
    if (ec || !applied.is_object()) return;
    json::value* spec = applied.get_object().if_contains("spec");
    if (!spec || !spec->is_object() || !spec->get_object().contains("secret")) return;
    spec->get_object()["secret"] = kRedacted;
    *text = json::serialize(applied);
  }

  StrategyContext& ctx_;
};

}  // namespace

std::unique_ptr<KindStrategy> NewWebhookStrategy(StrategyContext& context) {
  return std::make_unique<WebhookStrategy>(context);
}

}  // namespace gantry::api
