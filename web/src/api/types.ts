// The API's types for the screens, from the generated schema.d.ts (scripts/gen-api.mjs), so a
// schema change that breaks a screen fails `tsc`. WhoAmI (an /auth answer) and AuditEvent
// (fields at the top level) follow notes/auth-contract and docs/security.md.
import type { components } from './schema';

type Schemas = components['schemas'];
export type ObjectMeta = Schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'];
export type Project = Schemas['dev.gantry.paas.v1.Project'];
export type EnvironmentTemplate = Schemas['dev.gantry.paas.v1.EnvironmentTemplate'];
export type ComputeProfile = Schemas['dev.gantry.paas.v1.ComputeProfile'];
export type ComputeInstance = Schemas['dev.gantry.paas.v1.ComputeInstance'];
export type ServiceProfile = Schemas['dev.gantry.paas.v1.ServiceProfile'];
export type ServiceInstance = Schemas['dev.gantry.paas.v1.ServiceInstance'];
export type ComputeSelector = NonNullable<NonNullable<ServiceProfile['spec']>['computeSelector']>;
export type Run = Schemas['dev.gantry.paas.v1.Run'];
export type GpuNode = Schemas['dev.gantry.paas.v1.Node'];
export type UsageReport = Schemas['dev.gantry.paas.v1.UsageReport'];
// A ClusterWebhook has the same spec and status (docs/webhooks.md): the screens use one type.
export type Webhook = Schemas['dev.gantry.paas.v1.Webhook'];
export type WebhookDelivery = Schemas['dev.gantry.paas.v1.WebhookDelivery'];
export type UsageRow = NonNullable<NonNullable<UsageReport['status']>['rows']>[number];

export type Sharing = NonNullable<ComputeProfile['spec']>['sharing'];
export type SharingMode = NonNullable<NonNullable<Sharing>['mode']>;
export type TemplateVariable = NonNullable<NonNullable<EnvironmentTemplate['spec']>['variables']>[number];
export type ProfileVariableRule = NonNullable<NonNullable<ComputeProfile['spec']>['variables']>[number];
// Stopped (API.md's lifecycle table): GPUs given back, record and data kept; Start admits it again.
export type Phase = NonNullable<NonNullable<ComputeInstance['status']>['phase']> | 'Stopped';

export interface List<T> { items: T[]; metadata?: { resourceVersion?: string; continue?: string } }

// Identity (notes/auth-contract).
export type OrgRole = '' | 'org-admin' | 'paas-admin';
export type ProjectRole = 'project-admin' | 'member' | 'viewer';
export interface WhoAmI {
  username: string;
  displayName?: string;
  orgRole: OrgRole;
  projects: Record<string, ProjectRole>;
  csrfToken?: string;
}
export type RoleBinding = Schemas['dev.gantry.paas.v1.RoleBinding'];
export type User = Schemas['dev.gantry.paas.v1.User'];
// Audit events carry their fields at the top level, which the OpenAPI document does not
// describe (its AuditEvent schema has an empty spec): typed here from notes/auth-contract.
export interface AuditEvent {
  metadata: { name: string };
  time: string; user: string; verb: string;
  // What was acted on (docs/security.md); the first contract had kind/namespace/name instead.
  objectRef?: { resource?: string; namespace?: string; name?: string; subresource?: string };
  result: 'Allowed' | 'Denied' | 'Failed'; code?: number; message?: string; sourceAddress?: string;
}

// The users/NAME/tokens and users/NAME/sessions subresources (docs/security.md "Tokens",
// "Sessions"), which the OpenAPI document does not describe.
export interface ApiToken {
  metadata: { name: string; creationTimestamp?: string };
  spec: { user: string; description?: string; expiresAt?: string };
  status?: { expired?: boolean; lastUsed?: string };
  token?: string; // the secret: only in the answer that created it
}
export interface WebSession {
  metadata: { name: string; creationTimestamp?: string };
  spec: { user: string; source?: string; expiresAt?: string };
  status: { lastSeen?: string; current?: boolean };
}

// Objects listed in a project they are shared into carry status.sharedFrom: the owner project
// (a string per the identity contract; {namespace} in the foundation's schema).
export function sharedFrom(obj: { status?: unknown }): string {
  const s = (obj.status as { sharedFrom?: unknown } | undefined)?.sharedFrom;
  if (typeof s === 'string') return s;
  if (s && typeof s === 'object' && 'namespace' in s) return String((s as { namespace?: string }).namespace ?? '');
  return '';
}
