// Small pieces every screen uses: the coloured status, refusals as alerts, dates, sharing.
import { Alert, AlertActionCloseButton, Label, Spinner, Bullseye, EmptyState, EmptyStateHeader, EmptyStateIcon, EmptyStateBody } from '@patternfly/react-core';
import CheckCircleIcon from '@patternfly/react-icons/dist/esm/icons/check-circle-icon';
import ExclamationCircleIcon from '@patternfly/react-icons/dist/esm/icons/exclamation-circle-icon';
import HourglassHalfIcon from '@patternfly/react-icons/dist/esm/icons/hourglass-half-icon';
import InProgressIcon from '@patternfly/react-icons/dist/esm/icons/in-progress-icon';
import MinusCircleIcon from '@patternfly/react-icons/dist/esm/icons/minus-circle-icon';
import PauseCircleIcon from '@patternfly/react-icons/dist/esm/icons/pause-circle-icon';
import type { ReactNode } from 'react';
import { errorMessage } from '../api/client';
import type { Phase, Sharing } from '../api/types';

export const PHASE_TEXT: Record<Phase, string> = {
  NotDeployed: 'Not Deployed', Waiting: 'Waiting', InProgress: 'In Progress', Success: 'Success', Failed: 'Failed', Stopped: 'Stopped',
};

export function StatusLabel({ phase, action }: { phase?: Phase; action?: string }) {
  const p: Phase = phase ?? 'NotDeployed';
  let text = PHASE_TEXT[p];
  if (p === 'InProgress' && action === 'destroy') text = 'In Progress (destroying)';
  if (p === 'InProgress' && action === 'stop') text = 'In Progress (stopping)';
  if (p === 'InProgress' && action === 'start') text = 'In Progress (starting)';
  const props = {
    NotDeployed: { color: 'grey' as const, icon: <MinusCircleIcon /> },
    Waiting: { color: 'gold' as const, icon: <HourglassHalfIcon /> },
    InProgress: { color: 'blue' as const, icon: <InProgressIcon /> },
    Success: { color: 'green' as const, icon: <CheckCircleIcon /> },
    Failed: { color: 'red' as const, icon: <ExclamationCircleIcon /> },
    Stopped: { color: 'orange' as const, icon: <PauseCircleIcon /> },
  }[p];
  return <Label color={props.color} icon={props.icon} data-testid="status" data-phase={p}>{text}</Label>;
}

export function RunPhaseLabel({ phase }: { phase?: string }) {
  const color = ({ Queued: 'gold', Running: 'blue', Succeeded: 'green', Failed: 'red', Canceled: 'grey' } as const)[phase as 'Queued'] ?? 'grey';
  return <Label color={color}>{phase ?? 'Unknown'}</Label>;
}

export function ErrorAlert({ error, title, onClose }: { error: unknown; title?: string; onClose?: () => void }) {
  if (!error) return null;
  return (
    <Alert variant="danger" isInline title={title ?? errorMessage(error)} data-testid="api-error"
      actionClose={onClose ? <AlertActionCloseButton onClose={onClose} /> : undefined}>
      {title ? errorMessage(error) : null}
    </Alert>
  );
}

export function Loading() {
  return <Bullseye style={{ padding: 32 }}><Spinner aria-label="Loading" /></Bullseye>;
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <EmptyState variant="sm">
      <EmptyStateHeader titleText={title} headingLevel="h3" icon={<EmptyStateIcon icon={MinusCircleIcon} />} />
      {children ? <EmptyStateBody>{children}</EmptyStateBody> : null}
    </EmptyState>
  );
}

export function formatDate(ts?: string): string {
  if (!ts) return '';
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return ts;
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

export function sharingText(s?: Sharing): string {
  const mode = s?.mode ?? 'None';
  if (mode === 'All') return 'All Projects';
  if (mode === 'Selected') return `Selected: ${(s?.projects ?? []).join(', ') || '(none)'}`;
  return 'None';
}

export function LabelList({ map, color }: { map?: Record<string, string>; color?: 'blue' | 'purple' | 'grey' }) {
  const entries = Object.entries(map ?? {});
  if (!entries.length) return <span className="pf-v5-u-color-200">None</span>;
  return (
    <span style={{ display: 'inline-flex', flexWrap: 'wrap', gap: 4 }}>
      {entries.map(([k, v]) => <Label key={k} color={color ?? 'blue'} isCompact>{k}={v}</Label>)}
    </span>
  );
}

// DNS-1123 label: what the API requires of a unique name.
export function nameProblem(name: string): string {
  if (!name) return 'A unique name is required.';
  if (name.length > 63) return 'At most 63 characters.';
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name))
    return 'Lower-case letters, digits and "-" only; it must start and end with a letter or digit.';
  return '';
}
