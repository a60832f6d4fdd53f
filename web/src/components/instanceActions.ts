// The seed's rules as the UI shows them: which instance actions are possible now, and why not.
import type { ComputeInstance, ServiceInstance } from '../api/types';
import { sharedFrom, type Phase } from '../api/types';

export interface ActionState { disabled: boolean; reason?: string }

// `readOnlyReason`: set when the viewer may only read this instance (shared into one of their
// projects, or a viewer role).
export function instanceActions(i: ComputeInstance | ServiceInstance, readOnlyReason = '') {
  const phase = (i.status?.phase ?? 'NotDeployed') as Phase;
  const from = sharedFrom(i);
  const readOnly: ActionState | null = from ? { disabled: true, reason: `Shared from project ${from} (read-only)` }
    : readOnlyReason ? { disabled: true, reason: readOnlyReason } : null;
  const inProgress = phase === 'InProgress';
  const stopped = phase === 'Stopped';
  const expiresAt = i.status?.expiresAt;
  // A service instance has no time-to-live of its own (spec.lifecycle is a compute instance's).
  const service = i.kind === 'ServiceInstance' || 'computeRef' in (i.spec ?? {});
  return {
    edit: readOnly ?? (inProgress ? { disabled: true, reason: 'Cannot be edited while In Progress' } : { disabled: false }),
    deploy: readOnly ?? (inProgress ? { disabled: true, reason: 'A run is In Progress' }
      : phase === 'Waiting' ? { disabled: true, reason: 'A deploy is already queued' }
        : stopped ? { disabled: true, reason: 'Stopped: Start it to run it again' } : { disabled: false }),
    // API.md: Success and Failed may stop; In Progress is 409; nothing runs in the others.
    stop: readOnly ?? (inProgress ? { disabled: true, reason: 'A run is In Progress' }
      : phase === 'Success' || phase === 'Failed' ? { disabled: false }
        : { disabled: true, reason: stopped ? 'Already stopped' : 'Nothing is running' }),
    start: readOnly ?? (stopped ? { disabled: false } : { disabled: true, reason: 'Only a stopped instance can be started' }),
    extend: readOnly ?? (service ? { disabled: true, reason: 'A service runs as long as its compute instance: extend that one' }
      : inProgress ? { disabled: true, reason: 'Cannot be changed while In Progress' }
      : !expiresAt ? { disabled: true, reason: 'No time-to-live runs: it does not expire' } : { disabled: false }),
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
