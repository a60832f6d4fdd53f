// The seed's rules as the UI shows them: which instance actions are possible now, and why not.
import type { ComputeInstance, ServiceInstance } from '../api/types';
import { sharedFrom } from '../api/types';

export interface ActionState { disabled: boolean; reason?: string }

// `readOnlyReason`: set when the viewer may only read this instance (shared into one of their
// projects, or a viewer role).
export function instanceActions(i: ComputeInstance | ServiceInstance, readOnlyReason = '') {
  const phase = i.status?.phase ?? 'NotDeployed';
  const from = sharedFrom(i);
  const readOnly: ActionState | null = from ? { disabled: true, reason: `Shared from project ${from} (read-only)` }
    : readOnlyReason ? { disabled: true, reason: readOnlyReason } : null;
  const inProgress = phase === 'InProgress';
  return {
    edit: readOnly ?? (inProgress ? { disabled: true, reason: 'Cannot be edited while In Progress' } : { disabled: false }),
    deploy: readOnly ?? (inProgress ? { disabled: true, reason: 'A run is In Progress' }
      : phase === 'Waiting' ? { disabled: true, reason: 'A deploy is already queued' } : { disabled: false }),
    destroy: readOnly ?? (inProgress ? { disabled: true, reason: 'Instances In Progress cannot be destroyed' }
      : phase === 'NotDeployed' ? { disabled: true, reason: 'Nothing is deployed' } : { disabled: false }),
    cancel: readOnly ?? (phase === 'Waiting' ? { disabled: false } : { disabled: true, reason: 'Nothing is queued' }),
    share: readOnly ?? { disabled: false },
    delete: readOnly ?? (inProgress ? { disabled: true, reason: 'Instances In Progress cannot be deleted' } : { disabled: false }),
  };
}

// The two kinds of instance the instance screens show: compute instances (of compute
// profiles) and service instances (of service profiles, running on a compute instance).
export interface InstanceKind {
  kind: 'ComputeInstance' | 'ServiceInstance';
  plural: 'computeinstances' | 'serviceinstances';
  route: 'instances' | 'services';
  title: string;          // "Compute Instances"
  label: string;          // "compute instance"
  profilePlural: 'computeprofiles' | 'serviceprofiles';
  profileLabel: string;   // "Compute Profile"
}
export const COMPUTE: InstanceKind = {
  kind: 'ComputeInstance', plural: 'computeinstances', route: 'instances', title: 'Compute Instances', label: 'compute instance',
  profilePlural: 'computeprofiles', profileLabel: 'Compute Profile',
};
export const SERVICE: InstanceKind = {
  kind: 'ServiceInstance', plural: 'serviceinstances', route: 'services', title: 'Service Instances', label: 'service instance',
  profilePlural: 'serviceprofiles', profileLabel: 'Service Profile',
};
