// A project's limits and its fair share (issues 18, 19; docs/fair-share.md, docs/usage.md):
//   GpuShare     per GPU type, what the project is guaranteed, what its instances hold now
//                (status.resources of those holding GPUs, as the dispatcher counts them) and how
//                much of that is borrowed (status.admission Borrowed), against its quota.
//   QuotaEditor  quota.gpus and quota.guaranteedGpus per type, instances, instancesPerUser and
//                the monthly budget; values go to the server as typed (numbers when they parse)
//                so its 422 causes, shown under their fields, are the one validation.
import { useEffect, useState } from 'react';
import {
  ActionGroup, Button, Flex, FlexItem, Form, FormGroup, FormSelect, FormSelectOption, Grid, GridItem, HelperText,
  HelperTextItem, Text, TextInput, Title,
} from '@patternfly/react-core';
import { collectionPath, get, objectPath, put, query } from '../api/client';
import type { ComputeInstance, List, Project } from '../api/types';
import { causesUnder } from './LifecycleViews';
import { ErrorAlert } from './common';

type Quota = NonNullable<NonNullable<Project['spec']>['quota']>;
interface GpuRes { gpu?: { type?: string; count?: number } }

// True when the instance holds its GPUs (the dispatcher's HoldsQuota, without the queue).
export function holdsGpus(i: ComputeInstance): boolean {
  const phase = i.status?.phase;
  return phase === 'Success' || phase === 'InProgress' || (phase === 'Failed' && (i.status?.gpus?.length ?? 0) > 0);
}

export interface Share { type: string; guaranteed: number; max?: number; used: number; borrowed: number }

export function sharesOf(project: Project, instances: ComputeInstance[]): Share[] {
  const q = project.spec?.quota ?? {};
  const num = (m: Record<string, unknown> | undefined, k: string) => (m && typeof m[k] === 'number' ? (m[k] as number) : undefined);
  const out = new Map<string, Share>();
  const at = (t: string) => {
    if (!out.has(t)) out.set(t, { type: t, guaranteed: num(q.guaranteedGpus, t) ?? 0, max: num(q.gpus, t), used: 0, borrowed: 0 });
    return out.get(t)!;
  };
  for (const t of [...Object.keys(q.gpus ?? {}), ...Object.keys(q.guaranteedGpus ?? {})]) at(t);
  for (const i of instances) {
    const gpu = (i.status?.resources as GpuRes | undefined)?.gpu;
    if (!holdsGpus(i) || !gpu?.count) continue;
    const s = at(gpu.type || 'gpu');
    s.used += gpu.count;
    if (i.status?.admission === 'Borrowed') s.borrowed += gpu.count;
  }
  return [...out.values()].sort((a, b) => a.type.localeCompare(b.type));
}

function ShareBar({ s }: { s: Share }) {
  const scale = Math.max(s.max ?? 0, s.guaranteed, s.used, 1);
  const pct = (n: number) => `${(n / scale) * 100}%`;
  const within = s.used - s.borrowed;
  return (
    <div data-testid={`share-${s.type}`} data-guaranteed={s.guaranteed} data-used={s.used} data-borrowed={s.borrowed} style={{ marginBottom: 12 }}>
      <Text component="small"><strong>{s.type}</strong>: {s.used} in use ({within} within the guarantee, {s.borrowed} borrowed) of {s.guaranteed} guaranteed{s.max !== undefined ? `, at most ${s.max}` : ''}</Text>
      <div role="img" aria-label={`${s.type}: ${s.used} used, ${s.borrowed} borrowed, ${s.guaranteed} guaranteed`}
        style={{ position: 'relative', height: 14, background: '#fff', border: '1px solid var(--pf-v5-global--BorderColor--100)', borderRadius: 3, maxWidth: 480 }}>
        <div style={{ position: 'absolute', left: 0, width: pct(s.guaranteed), height: '100%', background: 'var(--pf-v5-global--palette--blue-100)', borderRadius: 3 }} />
        <div style={{ position: 'absolute', left: 0, width: pct(within), height: '100%', background: 'var(--pf-v5-global--palette--blue-400)' }} />
        <div style={{ position: 'absolute', left: pct(within), width: pct(s.borrowed), height: '100%', background: 'var(--pf-v5-global--palette--orange-300)' }} />
      </div>
    </div>
  );
}

export function GpuShare({ project, n }: { project: Project; n: number }) {
  const [instances, setInstances] = useState<ComputeInstance[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const name = project.metadata?.name ?? '';
  useEffect(() => {
    get<List<ComputeInstance>>(collectionPath('computeinstances', name)).then((l) => setInstances(l.items)).catch(setError);
  }, [name, n]);
  const shares = instances ? sharesOf(project, instances.filter((i) => !i.status?.sharedFrom)) : [];
  return (
    <>
      <Title headingLevel="h2" size="lg" style={{ marginBottom: 8 }}>GPU share</Title>
      <ErrorAlert error={error} />
      {instances && !shares.length && <Text className="gantry-muted">No GPU quota, guarantee or GPU in use.</Text>}
      {shares.map((s) => <ShareBar key={s.type} s={s} />)}
    </>
  );
}

// Every compute instance one may list, across projects (page by page), for the Projects list.
export function useAllInstances(): ComputeInstance[] | null {
  const [items, setItems] = useState<ComputeInstance[] | null>(null);
  useEffect(() => {
    (async () => {
      const all: ComputeInstance[] = [];
      let cont: string | undefined;
      do {
        const l = await get<List<ComputeInstance>>(collectionPath('computeinstances') + query({ limit: 500, continue: cont }));
        all.push(...l.items);
        cont = l.metadata?.continue;
      } while (cont);
      setItems(all);
    })().catch(() => setItems([]));
  }, []);
  return items;
}

// "demo-gpu: 2 of 1 guaranteed (1 borrowed)" per GPU type, for a list's cell.
export function ShareSummary({ project, instances }: { project: Project; instances: ComputeInstance[] }) {
  const name = project.metadata?.name;
  const shares = sharesOf(project, instances.filter((i) => i.metadata?.namespace === name));
  if (!shares.length) return <span className="gantry-muted">—</span>;
  return (
    <>{shares.map((s) => (
      <div key={s.type} data-testid={`share-summary-${s.type}`}>
        {s.type}: {s.used} of {s.guaranteed} guaranteed{s.borrowed ? ` (${s.borrowed} borrowed)` : ''}
      </div>
    ))}</>
  );
}

interface GpuLine { type: string; max: string; guaranteed: string }
const asValue = (v: string): unknown => (v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v);

function linesOf(q: Quota): GpuLine[] {
  const types = [...new Set([...Object.keys(q.gpus ?? {}), ...Object.keys(q.guaranteedGpus ?? {})])].sort();
  return types.map((t) => ({ type: t, max: q.gpus?.[t] === undefined ? '' : String(q.gpus[t]), guaranteed: q.guaranteedGpus?.[t] === undefined ? '' : String(q.guaranteedGpus[t]) }));
}

// The spec the form describes: empty fields are left out (no limit, no budget).
function specOf(p: Project, gpus: GpuLine[], f: { instances: string; perUser: string; monthly: string; action: string }) {
  const quota: Record<string, unknown> = {};
  const max: Record<string, unknown> = {};
  const guaranteed: Record<string, unknown> = {};
  for (const l of gpus.filter((g) => g.type.trim())) {
    if (l.max.trim()) max[l.type.trim()] = asValue(l.max);
    if (l.guaranteed.trim()) guaranteed[l.type.trim()] = asValue(l.guaranteed);
  }
  if (Object.keys(max).length) quota.gpus = max;
  if (Object.keys(guaranteed).length) quota.guaranteedGpus = guaranteed;
  if (f.instances.trim()) quota.instances = asValue(f.instances);
  if (f.perUser.trim()) quota.instancesPerUser = asValue(f.perUser);
  const { quota: _q, budget: _b, ...rest } = p.spec ?? {};
  return { ...rest, ...(Object.keys(quota).length ? { quota } : {}), ...(f.monthly.trim() ? { budget: { monthly: asValue(f.monthly), action: f.action } } : {}) };
}

function Cause({ causes, field }: { causes: Record<string, string>; field: string }) {
  const m = causes[field];
  return m ? <HelperText><HelperTextItem variant="error" data-testid={`cause-${field}`}>{m}</HelperTextItem></HelperText> : null;
}

export function QuotaEditor({ project, onSaved }: { project: Project; onSaved: (p: Project) => void }) {
  const q = project.spec?.quota ?? {};
  const [gpus, setGpus] = useState<GpuLine[]>(() => linesOf(q));
  const [f, setF] = useState({
    instances: q.instances === undefined ? '' : String(q.instances), perUser: q.instancesPerUser === undefined ? '' : String(q.instancesPerUser),
    monthly: project.spec?.budget?.monthly === undefined ? '' : String(project.spec.budget.monthly), action: project.spec?.budget?.action ?? 'Warn',
  });
  const [error, setError] = useState<unknown>(null);
  const causes = causesUnder(error, 'spec.');
  const name = project.metadata?.name ?? '';
  const line = (i: number, k: keyof GpuLine, v: string) => setGpus(gpus.map((g, j) => (j === i ? { ...g, [k]: v } : g)));
  const save = async () => {
    setError(null);
    try {
      const body = { ...project, spec: specOf(project, gpus, f) };
      onSaved(await put<Project>(objectPath('projects', undefined, name), body));
    } catch (e) { setError(e); }
  };
  const text = (id: string, label: string, field: string, value: string, set: (v: string) => void) => (
    <FormGroup label={label} fieldId={id}>
      <TextInput id={id} value={value} onChange={(_e, v) => set(v)} validated={causes[field] ? 'error' : 'default'} />
      <Cause causes={causes} field={field} />
    </FormGroup>
  );
  return (
    <>
      <Title headingLevel="h2" size="lg" style={{ margin: '24px 0 8px' }}>Quota, guarantee and budget</Title>
      <ErrorAlert error={error} />
      <Form onSubmit={(e) => { e.preventDefault(); void save(); }} style={{ maxWidth: 720 }} data-testid="quota-editor">
        {gpus.map((g, i) => (
          <Grid hasGutter key={i}>
            <GridItem span={4}>{text(`gpu-type-${i}`, 'GPU type', '', g.type, (v) => line(i, 'type', v.trim()))}</GridItem>
            <GridItem span={3}>{text(`gpu-max-${i}`, 'At most (GPUs)', `spec.quota.gpus.${g.type}`, g.max, (v) => line(i, 'max', v))}</GridItem>
            <GridItem span={3}>{text(`gpu-guaranteed-${i}`, 'Guaranteed (GPUs)', `spec.quota.guaranteedGpus.${g.type}`, g.guaranteed, (v) => line(i, 'guaranteed', v))}</GridItem>
            <GridItem span={2} style={{ alignSelf: 'end' }}><Button variant="link" isDanger onClick={() => setGpus(gpus.filter((_x, j) => j !== i))}>Remove</Button></GridItem>
          </Grid>
        ))}
        <Flex><FlexItem><Button variant="link" onClick={() => setGpus([...gpus, { type: '', max: '', guaranteed: '' }])}>Add GPU type</Button></FlexItem></Flex>
        <Grid hasGutter>
          <GridItem span={6}>{text('quota-instances', 'Instances (at most)', 'spec.quota.instances', f.instances, (v) => setF({ ...f, instances: v }))}</GridItem>
          <GridItem span={6}>{text('quota-per-user', 'Instances per user (at most)', 'spec.quota.instancesPerUser', f.perUser, (v) => setF({ ...f, perUser: v }))}</GridItem>
          <GridItem span={6}>{text('budget-monthly', 'Monthly budget (rate card currency)', 'spec.budget.monthly', f.monthly, (v) => setF({ ...f, monthly: v }))}</GridItem>
          <GridItem span={6}>
            <FormGroup label="When the budget is spent" fieldId="budget-action">
              <FormSelect id="budget-action" value={f.action} onChange={(_e, v) => setF({ ...f, action: v as 'Warn' | 'Block' })}>
                <FormSelectOption value="Warn" label="Warn (events at 80 % and 100 %)" />
                <FormSelectOption value="Block" label="Block (deploys and starts wait)" />
              </FormSelect>
              <Cause causes={causes} field="spec.budget.action" />
            </FormGroup>
          </GridItem>
        </Grid>
        <ActionGroup><Button type="submit">Save limits</Button></ActionGroup>
      </Form>
    </>
  );
}
