#include "api/strategy.h"

#include <spdlog/spdlog.h>

#include "api/strategy_support.h"
#include "webhooks/webhook_spec.h"

namespace gantry::api {

// webhook_strategy.cc: Webhook and ClusterWebhook. Declared here rather than in strategy.h
// so that adding it recompiles only this file.
std::unique_ptr<KindStrategy> NewWebhookStrategy(StrategyContext& context);

std::string StrategyContext::Now() const { return FormatRfc3339(clock.Now()); }

StrategyRegistry::StrategyRegistry(StrategyContext& context) {
  Register(kProjectKind, NewProjectStrategy(context));
  Register(kUserKind, NewUserStrategy(context));
  Register(kRoleBindingKind, NewRoleBindingStrategy(context));
  Register(kTemplateKind, NewTemplateStrategy(context));
  Register(kComputeProfileKind, NewComputeProfileStrategy(context));
  Register(kServiceProfileKind, NewServiceProfileStrategy(context));
  Register("RateCard", NewRateCardStrategy(context));
  auto compute = NewComputeInstanceStrategy(context);
  Register(kServiceInstanceKind, NewServiceInstanceStrategy(context, *compute));
  Register(kComputeInstanceKind, std::move(compute));
  Register(webhooks::kWebhookKind, NewWebhookStrategy(context));
  Register(webhooks::kClusterWebhookKind, NewWebhookStrategy(context));
}

void StrategyRegistry::Register(const std::string& kind, std::unique_ptr<KindStrategy> strategy) {
  // A strategy for a kind the schema does not serve would never run: a bug at start-up.
  if (!model::FindKindByName(kind)) spdlog::error("strategy for unknown kind {}", kind);
  by_kind_[kind] = std::move(strategy);
}

const KindStrategy& StrategyRegistry::For(const model::KindInfo& kind) const {
  auto it = by_kind_.find(kind.kind);
  return it == by_kind_.end() ? default_ : *it->second;
}

}  // namespace gantry::api
