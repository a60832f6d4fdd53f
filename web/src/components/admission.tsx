// Fair share on an instance (issue 18, docs/fair-share.md): status.admission (Guaranteed within
// its project's guaranteedGpus, Borrowed beyond them) and, while Waiting, its place in the queue
// for its GPU type (status.queuePosition) and why it waits, in words.
import { Label, Tooltip } from '@patternfly/react-core';
import type { ComputeInstance } from '../api/types';

type Status = NonNullable<ComputeInstance['status']>;

export const WAIT_REASON_TEXT: Record<string, string> = {
  InsufficientCapacity: 'Waiting for free GPUs',
  Preempted: 'Preempted: GPUs were reclaimed by a project within its guarantee; it starts again when GPUs are free',
  BudgetExceeded: "The project's monthly budget is spent; it runs when the budget is raised or the month ends",
  OverGuarantee: "Over the project's guarantee, and its profile is not preemptible",
  QuotaExceeded: "Over the project's quota",
  Unschedulable: 'No host has enough GPUs of this type',
  ComputeNotReady: 'Waiting for its compute instance',
};

export function ordinal(n: number): string {
  const s = n % 100 >= 11 && n % 100 <= 13 ? 'th' : ({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th';
  return `${n}${s}`;
}

// "2nd in the queue · Preempted: …" for a Waiting instance; '' otherwise.
export function waitingText(st?: Status): string {
  if (st?.phase !== 'Waiting') return '';
  const parts: string[] = [];
  if (st.queuePosition) parts.push(`${ordinal(st.queuePosition)} in the queue`);
  if (st.reason) parts.push(WAIT_REASON_TEXT[st.reason] ?? st.reason);
  return parts.join(' · ');
}

export function AdmissionLabel({ st }: { st?: Status }) {
  if (!st?.admission) return <span className="gantry-muted">—</span>;
  const borrowed = st.admission === 'Borrowed';
  return (
    <Tooltip content={borrowed ? "Beyond the project's guaranteed GPUs: may be preempted when its profile is preemptible" : "Within the project's guaranteed GPUs"}>
      <Label isCompact color={borrowed ? 'orange' : 'blue'} data-testid="admission" tabIndex={0}>{st.admission}</Label>
    </Tooltip>
  );
}
