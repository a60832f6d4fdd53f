// Overview of one compute or service instance: everything configured, live status (watch),
// the lifecycle (Stop and Start, a countdown to expiresAt with Extend, GPU% and idle since, the
// reason of the last automatic action), outputs, runs with live log following, unpublished changes, upgrade to the latest profile
// revision, and Edit Configuration (?edit=1). A service shows its compute instance (and why it
// waits for it); a compute instance lists the services running on it, and its Destroy and
// Delete offer to cascade to them.
import { useCallback, useEffect, useRef, useState } from 'react';
import { Link, useNavigate, useParams, useSearchParams } from 'react-router-dom';
import {
  ActionGroup, Alert, Breadcrumb, BreadcrumbItem, Button, DescriptionList, DescriptionListDescription, DescriptionListGroup,
  DescriptionListTerm, Dropdown, DropdownItem, DropdownList, Flex, FlexItem, Form, FormGroup, MenuToggle, PageSection,
  Tab, Tabs, TabTitleText, TextArea, TextInput, Title, Tooltip, Label, Divider, HelperText, HelperTextItem, Switch,
} from '@patternfly/react-core';
import EllipsisVIcon from '@patternfly/react-icons/dist/esm/icons/ellipsis-v-icon';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { ApiError, collectionPath, del, followLog, get, objectPath, post, put, query, watch } from '../api/client';
import type { ComputeInstance, ComputeProfile, EnvironmentTemplate, List, Run, ServiceInstance, ServiceProfile } from '../api/types';
import { sharedFrom, type Phase } from '../api/types';
import { ErrorAlert, LabelList, Loading, PHASE_TEXT, RunPhaseLabel, StatusLabel, formatDate, sharingText } from '../components/common';
import { DeleteModal, SharingModal } from '../components/Modals';
import { KeyValueEditor, fromPairs, toPairs, type Pair } from '../components/KeyValueEditor';
import { VariablesForm, variableViews } from '../components/VariablesForm';
import { COMPUTE, instanceActions, type ActionState, type InstanceKind } from '../components/instanceActions';
import { ComputeDeleteModal, ComputeDestroyModal, serviceName, servicesOn, useServicesOn } from '../components/ComputeServices';
import { ComputeLink } from './Instances';
import { useToasts } from '../components/toasts';
import { useAuth } from '../auth';
import { AdmissionLabel, waitingText } from '../components/admission';
import { lastProject } from '../project';
import { Countdown, ExtendModal, gpuText, useLifecycleWarning } from '../components/LifecycleViews';
import { automaticAction, effectiveTtl, formatDuration, instanceLifecycle, lifecycleStatus } from '../components/lifecycle';

type Instance = ComputeInstance | ServiceInstance;
type Profile = ComputeProfile | ServiceProfile;
const enc = encodeURIComponent;

// An action's answer can arrive after the watch delivered later changes (a stop of a local
// instance ends within milliseconds): the newer of the two by resourceVersion wins.
function newer(answer: Instance, current: Instance | null): Instance {
  const rv = (i: Instance | null) => Number(i?.metadata?.resourceVersion ?? 0);
  return current && rv(current) > rv(answer) ? current : answer;
}

function ActionButton({ st, children, ...rest }: { st: ActionState; children: React.ReactNode } & React.ComponentProps<typeof Button>) {
  const b = <Button {...rest} isAriaDisabled={st.disabled}>{children}</Button>;
  return st.disabled && st.reason ? <Tooltip content={st.reason}>{b}</Tooltip> : b;
}

function RunLog({ project, run }: { project: string; run: Run }) {
  const [text, setText] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [following, setFollowing] = useState(false);
  const ref = useRef<HTMLPreElement>(null);
  const name = run.metadata?.name ?? '';
  const active = run.status?.phase === 'Queued' || run.status?.phase === 'Running';
  useEffect(() => {
    const ac = new AbortController();
    setText('');
    setError(null);
    const path = `${objectPath('runs', project, name)}/log`;
    if (active) {
      setFollowing(true);
      followLog(path, (t) => setText((x) => x + t), ac.signal)
        .catch((e) => { if (!ac.signal.aborted) setError(e); })
        .finally(() => { if (!ac.signal.aborted) setFollowing(false); });
    } else {
      fetch(path, { credentials: 'same-origin', signal: ac.signal }).then(async (r) => {
        if (!r.ok) throw new ApiError(r.status, await r.text());
        setText(await r.text());
      }).catch((e) => { if (!ac.signal.aborted) setError(e); });
    }
    return () => ac.abort();
    // Re-open when the run becomes active again is not needed: a run runs once.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [project, name]);
  useEffect(() => { if (ref.current) ref.current.scrollTop = ref.current.scrollHeight; }, [text]);
  return (
    <>
      <Flex style={{ margin: '12px 0 6px' }} alignItems={{ default: 'alignItemsCenter' }}>
        <Title headingLevel="h3" size="md">Log of {name}</Title>
        {following && <Label color="blue" isCompact data-testid="following">following live</Label>}
      </Flex>
      <ErrorAlert error={error} />
      <pre className="gantry-log" ref={ref} data-testid="run-log" tabIndex={0} aria-label={`Log of run ${name}`}>{text || (following ? 'waiting for output…' : '(empty)')}</pre>
    </>
  );
}

export function InstanceOverview({ kind = COMPUTE }: { kind?: InstanceKind }) {
  const PLURAL = kind.plural;
  const isService = kind.kind === 'ServiceInstance';
  const { project = '', name = '' } = useParams();
  const [params, setParams] = useSearchParams();
  const navigate = useNavigate();
  const toasts = useToasts();
  const editing = params.get('edit') === '1';
  const { roleIn } = useAuth();
  const role = roleIn(project);
  // No role here: the instance is shared into one of the viewer's projects; they may read
  // this one object (not the project's lists, watches or runs), so its status is polled.
  const foreign = !role;
  const readOnlyReason = foreign ? `Shared with your project from ${project} (read-only)`
    : role === 'viewer' ? 'Viewers cannot change instances' : '';
  const [inst, setInst] = useState<Instance | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [profile, setProfile] = useState<Profile | null>(null);
  const [cascading, setCascading] = useState<ServiceInstance[] | null>(null);
  const [runs, setRuns] = useState<Run[]>([]);
  const [selectedRun, setSelectedRun] = useState('');
  const [tab, setTab] = useState<string | number>('details');
  const [menuOpen, setMenuOpen] = useState(false);
  const [sharing, setSharing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [gone, setGone] = useState(false);
  const [extending, setExtending] = useState(false);

  // Live status: a watch on this one instance.
  useEffect(() => {
    const ac = new AbortController();
    const path = objectPath(PLURAL, project, name);
    if (foreign) {
      const poll = () => get<Instance>(path, ac.signal).then(setInst).catch((e) => { if (!ac.signal.aborted) setError(e); });
      void poll();
      const t = window.setInterval(() => void poll(), 3000);
      return () => { window.clearInterval(t); ac.abort(); };
    }
    get<Instance>(path, ac.signal).then((i) => {
      setInst(i);
      return watch<Instance>(collectionPath(PLURAL, project), { fieldSelector: `metadata.name=${name}` }, (e) => {
        if (e.type === 'DELETED') setGone(true); else setInst(e.object);
      }, ac.signal, undefined, i.metadata?.resourceVersion);
    }).catch((e) => { if (!ac.signal.aborted) setError(e); });
    return () => ac.abort();
  }, [project, name, foreign, PLURAL]);

  // Runs of this instance, live (a compute and a service instance may share a name).
  const ownRun = useCallback((r: Run) => (r.spec?.instanceRef?.kind ?? 'ComputeInstance') === kind.kind, [kind.kind]);
  useEffect(() => {
    if (foreign) return;
    const ac = new AbortController();
    const path = collectionPath('runs', project);
    const fs = `spec.instanceRef.name=${name}`;
    get<List<Run>>(path + query({ fieldSelector: fs }), ac.signal).then((l) => {
      setRuns(l.items.filter(ownRun));
      return watch<Run>(path, { fieldSelector: fs }, (e) => {
        if (!ownRun(e.object)) return;
        setRuns((cur) => {
          const rest = cur.filter((r) => r.metadata?.name !== e.object.metadata?.name);
          return e.type === 'DELETED' ? rest : [e.object, ...rest].sort((a, b) => (b.metadata?.creationTimestamp ?? '').localeCompare(a.metadata?.creationTimestamp ?? '') || (b.metadata?.name ?? '').localeCompare(a.metadata?.name ?? '', undefined, { numeric: true }));
        });
      }, ac.signal, undefined, l.metadata?.resourceVersion);
    }).catch(() => { /* runs are optional on this page */ });
    return () => ac.abort();
  }, [project, name, foreign, ownRun]);

  const profileNs = inst?.spec?.profileRef?.namespace || project;
  const profileName = inst?.spec?.profileRef?.name ?? '';
  const profileRv = inst?.metadata?.resourceVersion;
  useEffect(() => {
    if (!profileName || foreign) return;
    get<Profile>(objectPath(kind.profilePlural, profileNs, profileName)).then(setProfile).catch(() => setProfile(null));
  }, [profileNs, profileName, profileRv, foreign, kind.profilePlural]);
  // A compute instance: the services on it (live). A service: its compute instance.
  const services = useServicesOn(project, isService || foreign ? '' : name, inst?.metadata?.resourceVersion);
  const compute = useComputeOf(isService ? inst as ServiceInstance | null : null, project);
  const warning = useLifecycleWarning(kind, project, inst, foreign);

  useEffect(() => { if (!selectedRun && inst?.status?.lastRunRef?.name) setSelectedRun(inst.status.lastRunRef.name); }, [inst, selectedRun]);
  // A new run (deploy or destroy) becomes the one whose log is shown.
  const lastRun = inst?.status?.lastRunRef?.name;
  useEffect(() => { if (lastRun) setSelectedRun(lastRun); }, [lastRun]);

  const act = useCallback(async (action: 'deploy' | 'destroy' | 'cancel' | 'upgrade' | 'stop' | 'start') => {
    try {
      if (action === 'destroy' && !isService) {
        const on = await servicesOn(project, name);
        if (on.length) { setCascading(on); return; }
      }
      const out = await post<Instance>(`${objectPath(PLURAL, project, name)}/${action}`);
      if (out?.metadata) setInst((cur) => newer(out, cur));
      toasts.add('success', {
        deploy: 'Deploy queued', destroy: 'Destroy queued', cancel: 'Queued run canceled', upgrade: 'Upgraded to the latest profile revision',
        stop: 'Stop queued: the GPUs are given back, the instance and its data are kept', start: 'Start queued',
      }[action]);
      if (action !== 'upgrade') setTab('runs');
    } catch (e) {
      toasts.fail(e);
    }
  }, [project, name, toasts, PLURAL, isService]);

  if (error) return <PageSection><ErrorAlert error={error} /><Link to={`/p/${enc(project)}/${kind.route}`}>Back to {kind.title}</Link></PageSection>;
  if (!inst) return <Loading />;
  const s = instanceActions(inst, readOnlyReason);
  const phase = (inst.status?.phase ?? 'NotDeployed') as Phase;
  const generation = inst.metadata?.generation ?? 0;
  const deployed = inst.status?.deployedGeneration ?? 0;
  const unpublished = deployed > 0 && deployed < generation;
  const latestRev = profile?.status?.revision ?? 0;
  const pinnedRev = inst.status?.profileRevision ?? 0;
  const upgradable = latestRev > pinnedRev && pinnedRev > 0;
  const from = sharedFrom(inst) || (foreign ? project : '');
  const run = runs.find((r) => r.metadata?.name === selectedRun);
  const outputs = Object.entries(inst.status?.outputs ?? {});
  const life = lifecycleStatus(inst);
  const automatic = automaticAction(inst, (p) => PHASE_TEXT[p as keyof typeof PHASE_TEXT] ?? p);
  const ttl = effectiveTtl(inst, isService ? null : profile as ComputeProfile | null);
  const ownTtl = instanceLifecycle(inst).ttl;

  return (
    <>
      {toasts.view}
      <PageSection variant="light">
        <Breadcrumb style={{ marginBottom: 8 }}>
          <BreadcrumbItem><Link to={`/p/${enc(foreign ? lastProject() || project : project)}/${kind.route}`}>{kind.title}</Link></BreadcrumbItem>
          <BreadcrumbItem isActive>{name}</BreadcrumbItem>
        </Breadcrumb>
        <Flex justifyContent={{ default: 'justifyContentSpaceBetween' }} alignItems={{ default: 'alignItemsCenter' }}>
          <FlexItem>
            <Flex alignItems={{ default: 'alignItemsCenter' }}>
              <Title headingLevel="h1">{inst.spec?.displayName || name}</Title>
              <span data-testid="overview-status"><StatusLabel phase={phase} action={inst.status?.action} /></span>
              {from && <Label color="purple">shared from {from} (read-only)</Label>}
            </Flex>
            <div className="gantry-muted">{name} · project {project}</div>
          </FlexItem>
          <FlexItem>
            <Flex spaceItems={{ default: 'spaceItemsSm' }}>
              <ActionButton st={s.edit} variant="secondary" onClick={() => setParams({ edit: '1' })}>Edit Configuration</ActionButton>
              <ActionButton st={s.deploy} variant="primary" onClick={() => void act('deploy')}>Deploy</ActionButton>
              {phase === 'Waiting'
                ? <ActionButton st={s.cancel} variant="secondary" onClick={() => void act('cancel')}>Cancel</ActionButton>
                : <ActionButton st={s.destroy} variant="secondary" onClick={() => void act('destroy')}>Destroy</ActionButton>}
              {phase === 'Stopped'
                ? <ActionButton st={s.start} variant="secondary" onClick={() => void act('start')}>Start</ActionButton>
                : <ActionButton st={s.stop} variant="secondary" onClick={() => void act('stop')}>Stop</ActionButton>}
              <Dropdown isOpen={menuOpen} onOpenChange={setMenuOpen} popperProps={{ position: 'right' }}
                toggle={(r) => <MenuToggle ref={r} variant="plain" aria-label="More actions" onClick={() => setMenuOpen(!menuOpen)}><EllipsisVIcon /></MenuToggle>}>
                <DropdownList>
                  <DropdownItem isDisabled={s.share.disabled} description={s.share.reason} onClick={() => { setMenuOpen(false); setSharing(true); }}>Manage Sharing</DropdownItem>
                  <DropdownItem isDisabled={!upgradable || !!from} description={upgradable ? `Revision ${pinnedRev} → ${latestRev}` : 'Already on the latest profile revision'} onClick={() => { setMenuOpen(false); void act('upgrade'); }}>Upgrade to latest profile revision</DropdownItem>
                  <Divider component="li" />
                  <DropdownItem isDanger={!s.delete.disabled} isDisabled={s.delete.disabled} description={s.delete.reason} onClick={() => { setMenuOpen(false); setDeleting(true); }}>Delete</DropdownItem>
                </DropdownList>
              </Dropdown>
            </Flex>
          </FlexItem>
        </Flex>
      </PageSection>
      <PageSection>
        {gone && <Alert variant="warning" isInline title="This instance was deleted." style={{ marginBottom: 12 }} />}
        {automatic && (
          <Alert variant="warning" isInline title={automatic} data-testid="automatic-action" data-reason={life.reason} style={{ marginBottom: 12 }}
            actionLinks={phase === 'Stopped' && !s.start.disabled ? <Button variant="link" isInline onClick={() => void act('start')}>Start it again</Button> : undefined}>
            Gantry gave this instance's GPUs back by itself{inst.status?.message ? `: ${inst.status.message}` : '.'}
          </Alert>
        )}
        {warning && (
          <Alert variant="info" isInline title={{ ExpiresSoon: 'Expires soon', IdleSoon: 'Idle: GPUs will be given back', StopScheduled: 'A scheduled stop is coming' }[warning.reason ?? ''] ?? warning.reason}
            data-testid="lifecycle-warning" data-reason={warning.reason} style={{ marginBottom: 12 }}
            actionLinks={warning.reason === 'ExpiresSoon' && !s.extend.disabled ? <Button variant="link" isInline onClick={() => setExtending(true)}>Extend</Button> : undefined}>
            {warning.message}
          </Alert>
        )}
        <Flex style={{ marginBottom: 12 }} spaceItems={{ default: 'spaceItemsLg' }} alignItems={{ default: 'alignItemsCenter' }} data-testid="lifecycle">
          <span><b>Expires</b> <Countdown inst={inst} /></span>
          <span><ActionButton st={s.extend} variant="secondary" size="sm" onClick={() => setExtending(true)}>Extend</ActionButton></span>
          <span><b>GPU</b> <span data-testid="gpu">{gpuText(inst)}</span></span>
          <span><b>Idle since</b> <span data-testid="idle-since">{life.idleSince ? formatDate(life.idleSince) : '—'}</span></span>
        </Flex>
        {phase === 'InProgress' && <Alert variant="info" isInline title={`${inst.status?.action === 'destroy' ? 'Destroy' : 'Deploy'} in progress: the instance cannot be destroyed or deleted until it ends.`} style={{ marginBottom: 12 }} />}
        {phase === 'Waiting' && inst.status?.reason === 'ComputeNotReady' ? (
          <Alert variant="warning" isInline style={{ marginBottom: 12 }} data-testid="phase-reason" data-reason="ComputeNotReady"
            title={<>Waiting for its compute instance ({'ComputeNotReady'}): {compute ? <>{compute.metadata?.name} is {PHASE_TEXT[compute.status?.phase ?? 'NotDeployed']}</> : 'not ready'}</>}>
            {inst.status?.message || 'The deploy starts by itself once the compute instance is in Success.'}
          </Alert>
        ) : (phase === 'Waiting' || phase === 'Failed') && (inst.status?.reason || inst.status?.message) && (
          <Alert variant={phase === 'Failed' ? 'danger' : 'warning'} isInline title={phase === 'Waiting' ? `Waiting: ${waitingText(inst.status)}` : `${phase}: ${inst.status?.reason ?? ''}`}
            style={{ marginBottom: 12 }} data-testid="phase-reason" data-reason={inst.status?.reason} data-queue-position={inst.status?.queuePosition}>{inst.status?.message}</Alert>
        )}
        {unpublished && (
          <Alert variant="warning" isInline title="Unpublished changes" data-testid="unpublished" style={{ marginBottom: 12 }}
            actionLinks={!s.deploy.disabled ? <Button variant="link" isInline onClick={() => void act('deploy')}>Deploy them now</Button> : undefined}>
            The saved configuration (generation {generation}) is ahead of what is deployed (generation {deployed}).
          </Alert>
        )}
        {upgradable && !from && (
          <Alert variant="info" isInline title={`Profile revision ${latestRev} is available`} data-testid="upgrade" style={{ marginBottom: 12 }}
            actionLinks={<Button variant="link" isInline onClick={() => void act('upgrade')}>Upgrade to revision {latestRev}</Button>}>
            This instance uses revision {pinnedRev} of {profileName}. Upgrading changes the saved configuration; deploy to publish it.
          </Alert>
        )}
        {editing ? (
          <EditConfiguration inst={inst} project={project} kind={kind} onDone={(saved, deploy) => {
            setParams({});
            if (saved) { setInst(saved); toasts.add('success', 'Changes saved'); }
            if (deploy) void act('deploy');
          }} />
        ) : (
          <Tabs activeKey={tab} onSelect={(_e, k) => setTab(k)} aria-label="Instance" mountOnEnter>
            <Tab eventKey="details" title={<TabTitleText>Details</TabTitleText>}>
              <DescriptionList isHorizontal style={{ marginTop: 16 }} columnModifier={{ lg: '2Col' }} aria-label="Details">
                <DescriptionListGroup><DescriptionListTerm>Unique Name</DescriptionListTerm><DescriptionListDescription>{name}</DescriptionListDescription></DescriptionListGroup>
                <DescriptionListGroup><DescriptionListTerm>Display Name</DescriptionListTerm><DescriptionListDescription>{inst.spec?.displayName || '—'}</DescriptionListDescription></DescriptionListGroup>
                <DescriptionListGroup><DescriptionListTerm>Description</DescriptionListTerm><DescriptionListDescription>{inst.spec?.description || '—'}</DescriptionListDescription></DescriptionListGroup>
                {isService && <>
                  <DescriptionListGroup><DescriptionListTerm>Service Type</DescriptionListTerm><DescriptionListDescription><Label isCompact color="cyan">{(profile as ServiceProfile | null)?.spec?.serviceType ?? '—'}</Label></DescriptionListDescription></DescriptionListGroup>
                  <DescriptionListGroup><DescriptionListTerm>Compute Instance</DescriptionListTerm><DescriptionListDescription data-testid="compute-instance">
                    <ComputeLink s={inst as ServiceInstance} /> {compute && <StatusLabel phase={compute.status?.phase} action={compute.status?.action} />}
                    {(inst as ServiceInstance).status?.computeCreated && <span className="gantry-muted"> (created for this service)</span>}
                  </DescriptionListDescription></DescriptionListGroup>
                </>}
                <DescriptionListGroup><DescriptionListTerm>{kind.profileLabel}</DescriptionListTerm><DescriptionListDescription>
                  {profile?.spec?.displayName ? `${profile.spec.displayName} (${profileNs}/${profileName})` : `${profileNs}/${profileName}`} · revision {pinnedRev || '—'}{latestRev ? ` (latest ${latestRev})` : ''}
                </DescriptionListDescription></DescriptionListGroup>
                <DescriptionListGroup><DescriptionListTerm>Publish Status</DescriptionListTerm><DescriptionListDescription><StatusLabel phase={phase} action={inst.status?.action} /> {inst.status?.reason ? <span className="gantry-muted">{inst.status.reason}</span> : null}</DescriptionListDescription></DescriptionListGroup>
                {kind === COMPUTE && <DescriptionListGroup><DescriptionListTerm>Admission</DescriptionListTerm><DescriptionListDescription><AdmissionLabel st={inst.status} /></DescriptionListDescription></DescriptionListGroup>}
                <DescriptionListGroup><DescriptionListTerm>Creation Date</DescriptionListTerm><DescriptionListDescription>{formatDate(inst.metadata?.creationTimestamp)}</DescriptionListDescription></DescriptionListGroup>
                <DescriptionListGroup><DescriptionListTerm>Variables</DescriptionListTerm><DescriptionListDescription><LabelList map={inst.spec?.variables as Record<string, string>} color="grey" /></DescriptionListDescription></DescriptionListGroup>
                <DescriptionListGroup><DescriptionListTerm>Sharing</DescriptionListTerm><DescriptionListDescription>{sharingText(inst.spec?.sharing)}</DescriptionListDescription></DescriptionListGroup>
                <DescriptionListGroup><DescriptionListTerm>Labels</DescriptionListTerm><DescriptionListDescription data-testid="labels"><LabelList map={inst.metadata?.labels} /></DescriptionListDescription></DescriptionListGroup>
                <DescriptionListGroup><DescriptionListTerm>Annotations</DescriptionListTerm><DescriptionListDescription data-testid="annotations"><LabelList map={inst.metadata?.annotations} color="purple" /></DescriptionListDescription></DescriptionListGroup>
                <DescriptionListGroup><DescriptionListTerm>Generation</DescriptionListTerm><DescriptionListDescription>saved {generation} · deployed {deployed || '—'}</DescriptionListDescription></DescriptionListGroup>
                <DescriptionListGroup><DescriptionListTerm>Time-to-live</DescriptionListTerm><DescriptionListDescription data-testid="ttl">
                  {ttl === null ? 'None: it does not expire' : `${formatDuration(ttl)}${ownTtl ? '' : ' (the profile\'s default)'}`}
                  {life.startedAt ? <span className="gantry-muted"> · started {formatDate(life.startedAt)}</span> : null}
                  {life.expiresAt ? <span className="gantry-muted"> · expires {formatDate(life.expiresAt)}</span> : null}
                </DescriptionListDescription></DescriptionListGroup>
                <DescriptionListGroup><DescriptionListTerm>GPUs</DescriptionListTerm><DescriptionListDescription>{(inst.status?.gpus ?? []).join(', ') || '—'}</DescriptionListDescription></DescriptionListGroup>
              </DescriptionList>
            </Tab>
            <Tab eventKey="outputs" title={<TabTitleText>Outputs ({outputs.length})</TabTitleText>}>
              {outputs.length === 0 ? <p style={{ marginTop: 16 }}>No outputs yet: they appear when a deploy succeeds.</p> : (
                <Table aria-label="Outputs" variant="compact" data-testid="outputs">
                  <Thead><Tr><Th>Name</Th><Th>Value</Th></Tr></Thead>
                  <Tbody>
                    {outputs.map(([k, v]) => (
                      <Tr key={k}><Td>{k}</Td><Td>{/^https?:\/\//.test(v) ? <a href={v} target="_blank" rel="noreferrer">{v}</a> : <code>{v}</code>}</Td></Tr>
                    ))}
                  </Tbody>
                </Table>
              )}
            </Tab>
            <Tab eventKey="services" title={<TabTitleText>Services ({services?.length ?? 0})</TabTitleText>} isHidden={isService}>
              {!services?.length ? <p style={{ marginTop: 16 }}>No service instances run on this compute instance.</p> : (
                <Table aria-label="Services on this compute instance" variant="compact" data-testid="services">
                  <Thead><Tr><Th>Service Instance</Th><Th>Display Name</Th><Th>Profile</Th><Th>Publish Status</Th></Tr></Thead>
                  <Tbody>
                    {services.map((sv) => (
                      <Tr key={`${sv.metadata?.namespace}/${sv.metadata?.name}`}>
                        <Td><Link to={`/p/${enc(sv.metadata?.namespace ?? project)}/services/${enc(sv.metadata?.name ?? '')}`}>{serviceName(sv, project)}</Link></Td>
                        <Td>{sv.spec?.displayName}</Td>
                        <Td>{sv.spec?.profileRef?.name}</Td>
                        <Td><StatusLabel phase={sv.status?.phase} action={sv.status?.action} /></Td>
                      </Tr>
                    ))}
                  </Tbody>
                </Table>
              )}
            </Tab>
            <Tab eventKey="runs" title={<TabTitleText>Runs ({runs.length})</TabTitleText>} isHidden={foreign}>
              {runs.length === 0 ? <p style={{ marginTop: 16 }}>No runs yet: Deploy starts one.</p> : (
                <Table aria-label="Runs" variant="compact">
                  <Thead><Tr><Th>Run</Th><Th>Action</Th><Th>Status</Th><Th>Started</Th><Th>Finished</Th><Th>Reason</Th></Tr></Thead>
                  <Tbody>
                    {runs.map((r) => (
                      <Tr key={r.metadata?.name} isClickable isRowSelected={r.metadata?.name === selectedRun} onRowClick={() => setSelectedRun(r.metadata?.name ?? '')}>
                        <Td><Button variant="link" isInline onClick={() => setSelectedRun(r.metadata?.name ?? '')}>{r.metadata?.name}</Button></Td>
                        <Td>{r.spec?.action}</Td>
                        <Td><RunPhaseLabel phase={r.status?.phase} /></Td>
                        <Td>{formatDate(r.status?.startTime)}</Td>
                        <Td>{formatDate(r.status?.completionTime)}</Td>
                        <Td>{[r.status?.reason, r.status?.message].filter(Boolean).join(': ')}</Td>
                      </Tr>
                    ))}
                  </Tbody>
                </Table>
              )}
              {run && <RunLog key={`${run.metadata?.name}`} project={project} run={run} />}
            </Tab>
          </Tabs>
        )}
      </PageSection>
      {sharing && (
        <SharingModal kindLabel={kind.label} project={project} name={name} path={objectPath(PLURAL, project, name)}
          sharing={inst.spec?.sharing} onClose={() => setSharing(false)} onSaved={() => { setSharing(false); toasts.add('success', 'Sharing saved'); }} />
      )}
      {deleting && !isService && (
        <ComputeDeleteModal project={project} name={name} onClose={() => setDeleting(false)} onDeleted={() => navigate(`/p/${enc(project)}/${kind.route}`)} />
      )}
      {deleting && isService && (
        <DeleteModal kindLabel={kind.label} name={name}
          extra="Whatever it deployed is torn down first; then the service is no longer available to end users."
          onClose={() => setDeleting(false)}
          onConfirm={async () => { await del(objectPath(PLURAL, project, name)); navigate(`/p/${enc(project)}/${kind.route}`); }} />
      )}
      {extending && (
        <ExtendModal kind={kind} project={project} inst={inst} onClose={() => setExtending(false)}
          onSaved={(saved) => { setExtending(false); if (saved?.metadata) setInst((cur) => newer(saved, cur)); toasts.add('success', `Extended: it now expires ${formatDate(lifecycleStatus(saved).expiresAt)}`); }} />
      )}
      {cascading && (
        <ComputeDestroyModal project={project} name={name} services={cascading} onClose={() => setCascading(null)}
          onDone={() => { setCascading(null); toasts.add('success', 'Destroy queued: its services are destroyed first'); setTab('runs'); }} />
      )}
    </>
  );
}

// The compute instance a service runs on, read again on each change of the service (the
// server updates a waiting service's status when its compute instance moves). No watch: each
// keeps one of the browser's six connections to gantryd open.
function useComputeOf(svc: ServiceInstance | null, project: string): ComputeInstance | null {
  const [compute, setCompute] = useState<ComputeInstance | null>(null);
  const ref = svc?.spec?.computeRef;
  const ns = ref?.namespace || svc?.metadata?.namespace || project;
  const cname = ref?.name ?? '';
  const rv = svc?.metadata?.resourceVersion;
  useEffect(() => {
    if (!cname) { setCompute(null); return; }
    const ac = new AbortController();
    get<ComputeInstance>(objectPath('computeinstances', ns, cname), ac.signal).then(setCompute)
      .catch(() => { if (!ac.signal.aborted) setCompute(null); });
    return () => ac.abort();
  }, [ns, cname, rv]);
  return compute;
}

function EditConfiguration({ inst, project, kind, onDone }: {
  inst: Instance; project: string; kind: InstanceKind; onDone: (saved: Instance | null, deploy: boolean) => void;
}) {
  const [displayName, setDisplayName] = useState(inst.spec?.displayName ?? '');
  const [description, setDescription] = useState(inst.spec?.description ?? '');
  const [values, setValues] = useState<Record<string, string>>(Object.fromEntries(Object.entries(inst.spec?.variables ?? {}).map(([k, v]) => [k, String(v)])));
  const [labels, setLabels] = useState<Pair[]>(toPairs(inst.metadata?.labels));
  const [annotations, setAnnotations] = useState<Pair[]>(toPairs(inst.metadata?.annotations));
  const [profile, setProfile] = useState<Profile | null>(null);
  const [template, setTemplate] = useState<EnvironmentTemplate | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [deployAfter, setDeployAfter] = useState(false);
  const ns = inst.spec?.profileRef?.namespace || project;
  useEffect(() => {
    const pn = inst.spec?.profileRef?.name;
    if (!pn) return;
    get<Profile>(objectPath(kind.profilePlural, ns, pn)).then((p) => {
      setProfile(p);
      const t = p.spec?.templateRef;
      if (t?.name) return get<EnvironmentTemplate>(objectPath('environmenttemplates', t.namespace || p.metadata?.namespace || ns, t.name)).then(setTemplate);
    }).catch(() => { /* typed inputs fall back to text */ });
  }, [inst.spec?.profileRef?.name, ns, kind.profilePlural]);
  const save = async () => {
    setBusy(true);
    setError(null);
    try {
      const body: Instance = {
        ...inst,
        metadata: { ...inst.metadata, labels: fromPairs(labels), annotations: fromPairs(annotations) },
        spec: { ...inst.spec, profileRef: inst.spec?.profileRef ?? { name: "" }, displayName, description, variables: values },
      };
      delete (body as { status?: unknown }).status;
      const saved = await put<Instance>(objectPath(kind.plural, project, inst.metadata?.name ?? ''), body);
      onDone(saved, deployAfter);
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  return (
    <Form onSubmit={(e) => { e.preventDefault(); void save(); }} style={{ maxWidth: 820 }} aria-label="Edit configuration">
      <Title headingLevel="h2" size="lg">Edit Configuration</Title>
      <ErrorAlert error={error} />
      <FormGroup label="Unique Name" fieldId="unique-name-ro">
        <TextInput id="unique-name-ro" value={inst.metadata?.name ?? ''} readOnlyVariant="default" />
        <HelperText><HelperTextItem>The unique name cannot be changed.</HelperTextItem></HelperText>
      </FormGroup>
      <FormGroup label="Display Name" fieldId="edit-display-name">
        <TextInput id="edit-display-name" value={displayName} onChange={(_e, v) => setDisplayName(v)} />
      </FormGroup>
      <FormGroup label="Description" fieldId="edit-description">
        <TextArea id="edit-description" value={description} onChange={(_e, v) => setDescription(v)} rows={3} />
      </FormGroup>
      <Title headingLevel="h3" size="md">Variables</Title>
      <VariablesForm views={variableViews(profile, template)} values={values} onChange={setValues} />
      <FormGroup label="Labels" fieldId="labels">
        <KeyValueEditor id="labels" pairs={labels} onChange={setLabels} addText="Add label" />
      </FormGroup>
      <FormGroup label="Annotations" fieldId="annotations">
        <KeyValueEditor id="annotations" pairs={annotations} onChange={setAnnotations} addText="Add annotation" />
      </FormGroup>
      <Switch id="deploy-after" label="Deploy after saving" isChecked={deployAfter} onChange={(_e, v) => setDeployAfter(v)} />
      <ActionGroup>
        <Button type="submit" variant="primary" isLoading={busy} isDisabled={busy}>Save Changes</Button>
        <Button variant="link" onClick={() => onDone(null, false)}>Cancel</Button>
      </ActionGroup>
    </Form>
  );
}
