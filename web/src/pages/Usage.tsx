// Usage and cost (issue 19, docs/usage.md): GPU-hours over time per project (a stacked bar chart),
// a table of the report's rows with totals and cost, the same report as CSV, and each project's
// spending this month against its monthly budget. Everything comes from `usagereports`, which
// already filters what a caller may see (admins every project, a project-admin their projects,
// others only what they deployed), so this page shows what the API returns and nothing else.
import { useEffect, useMemo, useState } from 'react';
import {
  Button, Flex, FlexItem, FormGroup, FormSelect, FormSelectOption, PageSection, Progress, ProgressMeasureLocation,
  ProgressVariant, Text, TextInput, Title, Toolbar, ToolbarContent, ToolbarItem,
} from '@patternfly/react-core';
import { Chart, ChartAxis, ChartBar, ChartLegend, ChartStack, ChartTooltip } from '@patternfly/react-charts';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { collectionPath, get, getText, query } from '../api/client';
import type { UsageReport, UsageRow } from '../api/types';
import { useProjects } from '../project';
import { Empty, ErrorAlert, Loading } from '../components/common';

export const GROUP_KEYS = ['project', 'user', 'profile', 'gpuType'] as const;
type GroupKey = (typeof GROUP_KEYS)[number];
const GROUP_LABEL: Record<GroupKey, string> = { project: 'Project', user: 'User', profile: 'Profile', gpuType: 'GPU type' };
const GROUPINGS: GroupKey[][] = [['project'], ['project', 'user'], ['project', 'gpuType'], ['project', 'user', 'profile', 'gpuType'], ['user'], ['gpuType']];

const isoDate = (d: Date) => d.toISOString().slice(0, 10);
function thisMonth(): { from: string; to: string } {
  const now = new Date();
  return {
    from: isoDate(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1))),
    to: isoDate(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1))),
  };
}
export const hours = (seconds?: number) => (seconds ?? 0) / 3600;
// Two decimals, or two significant digits below 0.01 (a few minutes of one GPU is not "0.00").
export function fmtHours(seconds?: number): string {
  const h = hours(seconds);
  return h > 0 && h < 0.01 ? h.toPrecision(2) : h.toFixed(2);
}
export const fmtCost = (cost: number | undefined, currency?: string) => `${(cost ?? 0).toFixed(2)}${currency ? ` ${currency}` : ''}`;

function reportPath(params: Record<string, string | undefined>) {
  return collectionPath('usagereports') + query(params);
}

// The chart's series: one per project with usage, GPU-hours per bucket (zeros filled in, so the
// bars stack on the same buckets).
function seriesOf(rows: UsageRow[], step: string) {
  const buckets = [...new Set(rows.map((r) => r.bucket ?? ''))].sort();
  const projects = [...new Set(rows.filter((r) => (r.gpuSeconds ?? 0) > 0).map((r) => r.project ?? ''))].sort();
  const label = (b: string) => b.slice(0, step === 'hour' ? 16 : 10).replace('T', ' ');
  return {
    projects,
    data: projects.map((p) => buckets.map((b) => {
      const y = rows.filter((r) => r.project === p && r.bucket === b).reduce((s, r) => s + hours(r.gpuSeconds), 0);
      return { x: label(b), y, name: p, label: `${p} ${label(b)}: ${y.toFixed(2)} GPU-hours` };
    })),
  };
}

function UsageChart({ report }: { report: UsageReport | null }) {
  const step = report?.spec?.step ?? 'day';
  const { projects, data } = useMemo(() => seriesOf(report?.status?.rows ?? [], step), [report, step]);
  if (!report) return <Loading />;
  if (!projects.length) return <Empty title="No GPU usage in this period" />;
  return (
    <div data-testid="usage-chart" data-series={projects.join(',')} style={{ height: 320, maxWidth: 1100 }}>
      <Chart ariaTitle="GPU-hours per project" height={320} width={1100} domainPadding={{ x: [30, 30] }}
        padding={{ bottom: 60, left: 110, right: 200, top: 20 }}
        legendData={projects.map((p) => ({ name: p }))} legendOrientation="vertical" legendPosition="right"
        legendComponent={<ChartLegend data={projects.map((p) => ({ name: p }))} />}>
        <ChartAxis />
        <ChartAxis dependentAxis showGrid label="GPU-hours" style={{ axisLabel: { padding: 70 } }} />
        <ChartStack>
          {data.map((d, i) => <ChartBar key={projects[i]} name={`series-${projects[i]}`} data={d} labelComponent={<ChartTooltip constrainToVisibleArea />} />)}
        </ChartStack>
      </Chart>
    </div>
  );
}

function UsageTable({ report, keys }: { report: UsageReport | null; keys: GroupKey[] }) {
  if (!report) return null;
  const rows = report.status?.rows ?? [];
  const currency = report.status?.currency;
  const t = report.status?.totals;
  return (
    <Table aria-label="Usage" variant="compact" data-testid="usage-table">
      <Thead><Tr>{keys.map((k) => <Th key={k}>{GROUP_LABEL[k]}</Th>)}<Th>GPU-hours</Th><Th>CPU core-hours</Th><Th>Memory GiB-hours</Th><Th>Cost</Th></Tr></Thead>
      <Tbody>
        {rows.map((r) => (
          <Tr key={keys.map((k) => r[k]).join('/')} data-testid={`usage-row-${keys.map((k) => r[k]).join('-')}`}>
            {keys.map((k) => <Td key={k} dataLabel={GROUP_LABEL[k]}>{r[k] || '—'}</Td>)}
            <Td dataLabel="GPU-hours" data-testid="gpu-hours">{fmtHours(r.gpuSeconds)}</Td>
            <Td dataLabel="CPU core-hours">{fmtHours(r.cpuCoreSeconds)}</Td>
            <Td dataLabel="Memory GiB-hours">{fmtHours(r.memoryGiBSeconds)}</Td>
            <Td dataLabel="Cost" data-testid="cost">{fmtCost(r.cost, currency)}</Td>
          </Tr>
        ))}
      </Tbody>
      <Tbody>
        <Tr data-testid="usage-total">
          <Th colSpan={keys.length}>Total{report.status?.rateCard ? ` (rate card ${report.status.rateCard})` : ' (no rate card: costs are 0)'}</Th>
          <Td data-testid="gpu-hours">{fmtHours(t?.gpuSeconds)}</Td><Td>{fmtHours(t?.cpuCoreSeconds)}</Td>
          <Td>{fmtHours(t?.memoryGiBSeconds)}</Td><Td data-testid="cost">{fmtCost(t?.cost, currency)}</Td>
        </Tr>
      </Tbody>
    </Table>
  );
}

// Spent this month (the report's default period) against each project's monthly budget.
function Budgets() {
  const { projects } = useProjects();
  const [report, setReport] = useState<UsageReport | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => { get<UsageReport>(reportPath({ groupBy: 'project' })).then(setReport).catch(setError); }, []);
  const budgeted = projects.filter((p) => p.spec?.budget?.monthly !== undefined);
  const currency = report?.status?.currency ?? '';
  return (
    <>
      <Title headingLevel="h2" size="lg" style={{ margin: '24px 0 8px' }}>Budgets this month</Title>
      <ErrorAlert error={error} />
      {!budgeted.length ? <Text className="gantry-muted">No project you can see has a monthly budget (an admin sets one under Projects & Members).</Text> : (
        <Flex direction={{ default: 'column' }} style={{ maxWidth: 720 }}>
          {budgeted.map((p) => {
            const name = p.metadata?.name ?? '';
            const monthly = p.spec?.budget?.monthly ?? 0;
            const spent = (report?.status?.rows ?? []).filter((r) => r.project === name).reduce((s, r) => s + (r.cost ?? 0), 0);
            const over = spent >= monthly; // as the server counts it: a budget of 0 is spent at once
            const pct = monthly > 0 ? Math.min(100, (spent / monthly) * 100) : over ? 100 : 0;
            return (
              <FlexItem key={name} data-testid={`budget-${name}`} data-exceeded={over ? 'true' : 'false'}>
                <Progress value={pct} title={`${name} (${p.spec?.budget?.action ?? 'Warn'})`} measureLocation={ProgressMeasureLocation.outside}
                  label={`${spent.toFixed(2)} of ${monthly.toFixed(2)} ${currency}${over ? ' (exceeded)' : ''}`}
                  variant={over ? ProgressVariant.danger : pct >= 80 ? ProgressVariant.warning : undefined}
                  aria-label={`${name} budget`} />
              </FlexItem>
            );
          })}
        </Flex>
      )}
    </>
  );
}

function download(name: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function UsagePage() {
  const [range, setRange] = useState(thisMonth);
  const [grouping, setGrouping] = useState(0);
  const [step, setStep] = useState<'day' | 'hour'>('day');
  const [chart, setChart] = useState<UsageReport | null>(null);
  const [table, setTable] = useState<UsageReport | null>(null);
  const [error, setError] = useState<unknown>(null);
  const keys = GROUPINGS[grouping];
  const params = { from: range.from, to: range.to, groupBy: keys.join(',') };
  useEffect(() => {
    // A response to an earlier period or grouping is dropped: arriving late, it would show
    // that period's refusal (or figures) over the one the user has chosen since.
    let current = true;
    const fail = (clear: (r: null) => void) => (e: unknown) => { if (current) { setError(e); clear(null); } };
    setError(null);
    get<UsageReport>(reportPath({ ...params, groupBy: 'project', step })).then((r) => current && setChart(r), fail(setChart));
    get<UsageReport>(reportPath(params)).then((r) => current && setTable(r), fail(setTable));
    return () => { current = false; };
  }, [range.from, range.to, grouping, step]); // eslint-disable-line react-hooks/exhaustive-deps
  const csv = async () => {
    try {
      download(`usage-${range.from}-${range.to}.csv`, await getText(reportPath({ ...params, step }), 'text/csv'));
    } catch (e) { setError(e); }
  };
  return (
    <>
      <PageSection variant="light">
        <Title headingLevel="h1">Usage</Title>
        <Text className="gantry-muted">GPU-hours and cost of the instances you may see, priced by the rate card (times in UTC).</Text>
      </PageSection>
      <PageSection>
        <Toolbar><ToolbarContent>
          <ToolbarItem><FormGroup label="From" fieldId="usage-from"><TextInput id="usage-from" type="date" value={range.from} onChange={(_e, v) => setRange({ ...range, from: v })} /></FormGroup></ToolbarItem>
          <ToolbarItem><FormGroup label="To (exclusive)" fieldId="usage-to"><TextInput id="usage-to" type="date" value={range.to} onChange={(_e, v) => setRange({ ...range, to: v })} /></FormGroup></ToolbarItem>
          <ToolbarItem><FormGroup label="Group by" fieldId="usage-group">
            <FormSelect id="usage-group" value={String(grouping)} onChange={(_e, v) => setGrouping(Number(v))}>
              {GROUPINGS.map((g, i) => <FormSelectOption key={g.join()} value={String(i)} label={g.map((k) => GROUP_LABEL[k]).join(', ')} />)}
            </FormSelect></FormGroup></ToolbarItem>
          <ToolbarItem><FormGroup label="Step" fieldId="usage-step">
            <FormSelect id="usage-step" value={step} onChange={(_e, v) => setStep(v as 'day' | 'hour')}>
              <FormSelectOption value="day" label="Day" /><FormSelectOption value="hour" label="Hour" />
            </FormSelect></FormGroup></ToolbarItem>
          <ToolbarItem alignSelf="baseline"><Button variant="secondary" onClick={() => void csv()}>Download CSV</Button></ToolbarItem>
        </ToolbarContent></Toolbar>
        <ErrorAlert error={error} />
        <Title headingLevel="h2" size="lg" style={{ margin: '8px 0' }}>GPU-hours per project</Title>
        <UsageChart report={chart} />
        <UsageTable report={table} keys={keys} />
        <Budgets />
      </PageSection>
    </>
  );
}
