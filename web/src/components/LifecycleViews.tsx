// Where a user sees an instance's lifecycle: the countdown to status.expiresAt, GPU% and idle
// since, the Extend dialog (the arithmetic of components/lifecycle.ts, a merge patch of
// spec.lifecycle.ttl carrying the resourceVersion read, read again when another write won),
// and the profile editor's Lifecycle section with the server's 422 causes on its fields.
import { useEffect, useState } from 'react';
import {
  Button, Checkbox, FormGroup, FormSelect, FormSelectOption, Grid, GridItem, HelperText, HelperTextItem, Modal, Text, TextInput, Title,
} from '@patternfly/react-core';
import { ApiError, get, objectPath, patch } from '../api/client';
import type { ComputeInstance, ComputeProfile, ServiceInstance } from '../api/types';
import { ErrorAlert, formatDate } from './common';
import type { InstanceKind } from './instanceActions';
import {
  DURATION_HELP, extendedTtl, formatDuration, instanceLifecycle, lifecycleStatus, parseDuration, timeLeft, type ProfileLifecycle,
} from './lifecycle';

type Instance = ComputeInstance | ServiceInstance;

// The current time, ticking every `ms`.
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = window.setInterval(() => setNow(Date.now()), ms);
    return () => window.clearInterval(t);
  }, [ms]);
  return now;
}

// "expires in 59m 58s", "expired", "—" without a TTL.
export function Countdown({ inst }: { inst: Instance }) {
  const now = useNow();
  const at = lifecycleStatus(inst).expiresAt;
  if (!at) return <span className="gantry-muted" data-testid="countdown">—</span>;
  const left = timeLeft(at, now);
  return (
    <span data-testid="countdown" data-expires-at={at} title={`Expires ${formatDate(at)}`}>
      {left === 'expired' ? 'expired' : `in ${left}`}
    </span>
  );
}

export function gpuText(inst: Instance): string {
  const u = lifecycleStatus(inst).gpuUtilization;
  return typeof u === 'number' ? `${Math.round(u)}%` : '—';
}

// A core/v1 Event as gantryd serves it (the runs of an instance and the lifecycle warnings).
export interface KubeEvent {
  type?: string; reason?: string; message?: string; firstTimestamp?: string; lastTimestamp?: string;
  involvedObject?: { kind?: string; name?: string };
}
const WARNINGS = ['ExpiresSoon', 'IdleSoon', 'StopScheduled'];

// The newest lifecycle warning (ExpiresSoon, IdleSoon, StopScheduled) about a running
// instance, read again whenever the instance changes (no watch: see docs/ui.md on connections).
export function useLifecycleWarning(kind: InstanceKind, project: string, inst: Instance | null, skip: boolean): KubeEvent | null {
  const [warning, setWarning] = useState<KubeEvent | null>(null);
  const name = inst?.metadata?.name ?? '';
  const rv = inst?.metadata?.resourceVersion;
  const running = inst?.status?.phase === 'Success';
  const st = inst ? lifecycleStatus(inst) : {};
  // A warning still stands: given since the last start, and (ExpiresSoon) not undone by an
  // Extend — the server warns at most an hour before; (IdleSoon) the GPUs are still idle.
  const current = (e: KubeEvent, at: string) => {
    if (st.startedAt && at < st.startedAt) return false;
    if (e.reason === 'ExpiresSoon') return !!st.expiresAt && Date.parse(st.expiresAt) - Date.now() <= 3600 * 1000;
    if (e.reason === 'IdleSoon') return !!st.idleSince;
    return true;
  };
  useEffect(() => {
    if (skip || !name || !running) { setWarning(null); return; }
    const ac = new AbortController();
    const selector = `involvedObject.name=${name},involvedObject.kind=${kind.kind}`;
    get<{ items?: KubeEvent[] }>(`/api/v1/namespaces/${encodeURIComponent(project)}/events?fieldSelector=${encodeURIComponent(selector)}`, ac.signal)
      .then((l) => {
        const when = (e: KubeEvent) => e.lastTimestamp ?? e.firstTimestamp ?? '';
        const ws = (l.items ?? []).filter((e) => WARNINGS.includes(e.reason ?? '') && current(e, when(e))).sort((a, b) => when(b).localeCompare(when(a)));
        setWarning(ws[0] ?? null);
      })
      .catch(() => { if (!ac.signal.aborted) setWarning(null); });
    return () => ac.abort();
    // `current` reads the instance this effect is keyed on (rv).
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [kind.kind, project, name, rv, running, skip]);
  return warning;
}

const MAX_TRIES = 3;

// Raises spec.lifecycle.ttl so that the instance expires `by` seconds later; the server keeps
// it within the profile's max (422) and moves status.expiresAt.
async function extend(kind: InstanceKind, project: string, name: string, by: number): Promise<Instance> {
  const path = objectPath(kind.plural, project, name);
  for (let attempt = 1; ; attempt++) {
    const inst = await get<Instance>(path);
    let profile: ComputeProfile | null = null;
    if (!instanceLifecycle(inst).ttl) {
      const ref = inst.spec?.profileRef;
      profile = await get<ComputeProfile>(objectPath(kind.profilePlural, ref?.namespace || project, ref?.name ?? ''));
    }
    const ttl = extendedTtl(inst, profile, by);
    if (!ttl) throw new Error(`${name} has no time-to-live to extend: neither it nor its profile sets one, so it does not expire.`);
    try {
      return await patch<Instance>(path, { metadata: { resourceVersion: inst.metadata?.resourceVersion }, spec: { lifecycle: { ttl } } });
    } catch (e) {
      const lostRace = e instanceof ApiError && e.code === 409 && e.message.includes('has been modified');
      if (!lostRace || attempt >= MAX_TRIES) throw e;
    }
  }
}

export function ExtendModal({ kind, project, inst, onClose, onSaved }: {
  kind: InstanceKind; project: string; inst: Instance; onClose: () => void; onSaved: (i: Instance) => void;
}) {
  const name = inst.metadata?.name ?? '';
  const [by, setBy] = useState('1h');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const seconds = parseDuration(by);
  const save = async () => {
    if (seconds === null) return;
    setBusy(true);
    setError(null);
    try {
      onSaved(await extend(kind, project, name, seconds));
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  const at = lifecycleStatus(inst).expiresAt;
  return (
    <Modal variant="small" title={`Extend ${name}`} isOpen onClose={onClose} aria-label="Extend"
      actions={[
        <Button key="extend" variant="primary" onClick={() => void save()} isLoading={busy} isDisabled={busy || seconds === null}>Extend</Button>,
        <Button key="cancel" variant="link" onClick={onClose}>Cancel</Button>,
      ]}>
      <Text style={{ marginBottom: 12 }}>
        {at ? <>It expires {formatDate(at)}. </> : null}How much later should it expire? Its time-to-live grows by as much, within the profile's maximum.
      </Text>
      <ErrorAlert error={error} />
      <FormGroup label="Extend by" fieldId="extend-by" isRequired>
        <TextInput id="extend-by" value={by} onChange={(_e, v) => setBy(v)} validated={seconds === null ? 'error' : 'default'}
          onKeyDown={(e) => { if (e.key === 'Enter') void save(); }} />
        <HelperText><HelperTextItem variant={seconds === null ? 'error' : 'default'}>
          {seconds === null ? DURATION_HELP : `${formatDuration(seconds)} more`}
        </HelperTextItem></HelperText>
      </FormGroup>
    </Modal>
  );
}

// The 422 causes whose field starts with `prefix` ("spec.lifecycle.ttl.max"), by field.
export function causesUnder(error: unknown, prefix: string): Record<string, string> {
  if (!(error instanceof ApiError)) return {};
  const out: Record<string, string> = {};
  for (const c of error.causes) if (c.field?.startsWith(prefix) && c.message) out[c.field] = c.message;
  return out;
}

// A profile's spec.lifecycle as the form edits it: strings, '' for unset.
export interface LifecycleForm {
  ttlDefault: string; ttlMax: string; ttlAction: string;
  idleBelow: string; idleAfter: string; idleAction: string;
  timezone: string; start: string; stop: string; allowOptOut: boolean;
}

export function lifecycleForm(l: ProfileLifecycle): LifecycleForm {
  return {
    ttlDefault: l.ttl?.default ?? '', ttlMax: l.ttl?.max ?? '', ttlAction: l.ttl?.action ?? 'Stop',
    idleBelow: l.idle?.gpuUtilizationBelow !== undefined ? String(l.idle.gpuUtilizationBelow) : '', idleAfter: l.idle?.after ?? '',
    idleAction: l.idle?.action ?? 'Stop',
    timezone: l.schedule?.timezone ?? '', start: l.schedule?.start ?? '', stop: l.schedule?.stop ?? '', allowOptOut: !!l.schedule?.allowOptOut,
  };
}

// The form → spec.lifecycle; a policy with nothing set is left out (undefined).
export function lifecycleSpec(f: LifecycleForm): ProfileLifecycle | undefined {
  const out: ProfileLifecycle = {};
  if (f.ttlDefault || f.ttlMax) {
    out.ttl = { ...(f.ttlDefault ? { default: f.ttlDefault } : {}), ...(f.ttlMax ? { max: f.ttlMax } : {}), action: f.ttlAction as 'Stop' };
  }
  if (f.idleAfter || f.idleBelow) {
    out.idle = {
      ...(f.idleBelow ? { gpuUtilizationBelow: Number(f.idleBelow) } : {}), ...(f.idleAfter ? { after: f.idleAfter } : {}),
      action: f.idleAction as 'Stop',
    };
  }
  if (f.timezone || f.start || f.stop) {
    out.schedule = { timezone: f.timezone, ...(f.start ? { start: f.start } : {}), ...(f.stop ? { stop: f.stop } : {}), allowOptOut: f.allowOptOut };
  }
  return Object.keys(out).length ? out : undefined;
}

// The profile editor's Lifecycle section: ttl, idle reclaim and schedule, each field showing
// the server's 422 cause for it.
export function LifecycleFields({ form, onChange, error }: { form: LifecycleForm; onChange: (f: LifecycleForm) => void; error: unknown }) {
  const causes = causesUnder(error, 'spec.lifecycle');
  const set = (k: keyof LifecycleForm) => (_e: unknown, v: string | boolean) => onChange({ ...form, [k]: v });
  const field = (id: string, label: string, k: keyof LifecycleForm, path: string, help: string, placeholder = '') => {
    const cause = causes[path];
    return (
      <FormGroup label={label} fieldId={id}>
        <TextInput id={id} value={String(form[k])} onChange={set(k)} placeholder={placeholder} validated={cause ? 'error' : 'default'} />
        <HelperText><HelperTextItem variant={cause ? 'error' : 'default'} data-testid={cause ? `cause-${path}` : undefined}>{cause ?? help}</HelperTextItem></HelperText>
      </FormGroup>
    );
  };
  const action = (id: string, label: string, k: keyof LifecycleForm) => (
    <FormGroup label={label} fieldId={id}>
      <FormSelect id={id} value={String(form[k])} onChange={set(k)}>
        <FormSelectOption value="Stop" label="Stop (keep the instance and its data)" />
        <FormSelectOption value="Destroy" label="Destroy" />
      </FormSelect>
    </FormGroup>
  );
  return (
    <section aria-label="Lifecycle" data-testid="lifecycle-section">
      <Title headingLevel="h3" size="md">Lifecycle</Title>
      <Text className="gantry-muted">When Gantry gives the GPUs of this profile's instances back by itself. Members may extend within the maximum, never loosen the policy.</Text>
      <Grid hasGutter>
        <GridItem span={4}>{field('ttl-default', 'Time-to-live (default)', 'ttlDefault', 'spec.lifecycle.ttl.default', DURATION_HELP, '8h')}</GridItem>
        <GridItem span={4}>{field('ttl-max', 'Time-to-live (maximum)', 'ttlMax', 'spec.lifecycle.ttl.max', 'The most an instance may ask for.', '72h')}</GridItem>
        <GridItem span={4}>{action('ttl-action', 'When it expires', 'ttlAction')}</GridItem>
        <GridItem span={4}>{field('idle-below', 'Idle below (GPU %)', 'idleBelow', 'spec.lifecycle.idle.gpuUtilizationBelow', 'Mean utilisation of its GPUs, 0-100.', '5')}</GridItem>
        <GridItem span={4}>{field('idle-after', 'Idle for', 'idleAfter', 'spec.lifecycle.idle.after', DURATION_HELP, '30m')}</GridItem>
        <GridItem span={4}>{action('idle-action', 'When idle', 'idleAction')}</GridItem>
        <GridItem span={3}>{field('schedule-timezone', 'Time zone', 'timezone', 'spec.lifecycle.schedule.timezone', 'IANA name, e.g. Europe/Berlin.', 'Europe/Berlin')}</GridItem>
        <GridItem span={3}>{field('schedule-start', 'Start (cron)', 'start', 'spec.lifecycle.schedule.start', '5 fields: minute hour day month weekday.', '0 8 * * 1-5')}</GridItem>
        <GridItem span={3}>{field('schedule-stop', 'Stop (cron)', 'stop', 'spec.lifecycle.schedule.stop', '5 fields: minute hour day month weekday.', '0 20 * * 1-5')}</GridItem>
        <GridItem span={3}>
          <FormGroup label="Opt-out" fieldId="schedule-opt-out">
            <Checkbox id="schedule-opt-out" label="Instances may opt out of the schedule" isChecked={form.allowOptOut} onChange={set('allowOptOut')} />
          </FormGroup>
        </GridItem>
      </Grid>
    </section>
  );
}
