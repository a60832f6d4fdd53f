// Compute Instances and Service Instances: search, the seed's columns (services add their
// service type and compute instance) with the lifecycle's Expires countdown and GPU%, coloured
// status, the actions menu (Stop, Start and Extend among them), server-side paging
// (limit/continue), and live status (watch) without reload.
import { useCallback, useEffect, useRef, useState } from 'react';
import { Link, useNavigate } from 'react-router-dom';
import {
  Button, FormSelect, FormSelectOption, PageSection, SearchInput, Text, Title, Toolbar, ToolbarContent, ToolbarItem,
  Flex, Label,
} from '@patternfly/react-core';
import { ActionsColumn, Table, Tbody, Td, Th, Thead, Tr, type IAction } from '@patternfly/react-table';
import { collectionPath, del, get, objectPath, post, query, watch } from '../api/client';
import type { ComputeInstance, List, ServiceInstance, ServiceProfile } from '../api/types';
import { sharedFrom, type Phase } from '../api/types';
import { useCurrentProject } from '../project';
import { Empty, ErrorAlert, Loading, StatusLabel, formatDate, sharingText } from '../components/common';
import { DeleteModal, SharingModal } from '../components/Modals';
import { COMPUTE, instanceActions, type InstanceKind } from '../components/instanceActions';
import { ComputeDeleteModal, ComputeDestroyModal, servicesOn } from '../components/ComputeServices';
import { useToasts } from '../components/toasts';
import { useAuth } from '../auth';
import { AdmissionLabel, waitingText } from '../components/admission';
import { Countdown, ExtendModal, gpuText } from '../components/LifecycleViews';

type Instance = ComputeInstance | ServiceInstance;

export function InstancesPage({ kind = COMPUTE }: { kind?: InstanceKind }) {
  const PLURAL = kind.plural;
  const isService = kind.kind === 'ServiceInstance';
  const project = useCurrentProject();
  const navigate = useNavigate();
  const toasts = useToasts();
  const viewer = useAuth().roleIn(project) === 'viewer';
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  const [limit, setLimit] = useState(10);
  const [tokens, setTokens] = useState<string[]>(['']); // continue token of each page visited
  const [page, setPage] = useState(0);
  const [list, setList] = useState<List<Instance> | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [sharing, setSharing] = useState<Instance | null>(null);
  const [deleting, setDeleting] = useState<Instance | null>(null);
  const [cascading, setCascading] = useState<{ name: string; services: ServiceInstance[] } | null>(null);
  const [extending, setExtending] = useState<Instance | null>(null);
  // Service instances show their profile's service type.
  const [serviceTypes, setServiceTypes] = useState<Record<string, string>>({});
  useEffect(() => {
    if (!isService || !project) return;
    get<List<ServiceProfile>>(collectionPath('serviceprofiles', project) + '?limit=500')
      .then((l) => setServiceTypes(Object.fromEntries(l.items.map((p) => [`${p.metadata?.namespace}/${p.metadata?.name}`, p.spec?.serviceType ?? '']))))
      .catch(() => setServiceTypes({}));
  }, [isService, project]);
  const [reloads, setReloads] = useState(0);
  const reload = useCallback(() => setReloads((n) => n + 1), []);
  const reloadTimer = useRef<number | undefined>(undefined);

  // Debounced search: the server searches name, display name and description.
  // (Only a changed search returns to page 1: an unchanged one must not undo a page turn.)
  useEffect(() => {
    if (search === applied) return;
    const t = window.setTimeout(() => { setApplied(search); setTokens(['']); setPage(0); }, 250);
    return () => window.clearTimeout(t);
  }, [search, applied]);
  const firstPageKey = `${project}/${limit}`;
  const [pagedFor, setPagedFor] = useState(firstPageKey);
  if (pagedFor !== firstPageKey) {
    // Another project or page size: back to page 1 (during render, so no stale fetch).
    setPagedFor(firstPageKey);
    setTokens(['']);
    setPage(0);
  }

  useEffect(() => {
    if (!project) return;
    const ac = new AbortController();
    const path = collectionPath(PLURAL, project);
    get<List<Instance>>(path + query({ limit, continue: tokens[page], search: applied }), ac.signal)
      .then((l) => {
        setList(l);
        setError(null);
        // Live: replace changed rows in place; a created or deleted instance re-reads the page.
        void watch<Instance>(path, {}, (e) => {
          if (e.type === 'MODIFIED') {
            setList((cur) => cur && ({
              ...cur,
              items: cur.items.map((i) => (i.metadata?.name === e.object.metadata?.name && i.metadata?.namespace === e.object.metadata?.namespace ? e.object : i)),
            }));
          } else if (e.type === 'ADDED' || e.type === 'DELETED') {
            window.clearTimeout(reloadTimer.current);
            reloadTimer.current = window.setTimeout(reload, 200);
          }
        }, ac.signal, undefined, l.metadata?.resourceVersion);
      })
      .catch((e) => { if (!ac.signal.aborted) { setError(e); setList({ items: [] }); } });
    return () => ac.abort();
  }, [project, limit, tokens, page, applied, reloads, reload]);

  const act = async (i: Instance, action: 'deploy' | 'destroy' | 'cancel' | 'stop' | 'start') => {
    const name = i.metadata?.name ?? '';
    try {
      if (action === 'destroy' && !isService) {
        // Services run on it: ask whether to destroy them first.
        const services = await servicesOn(project, name);
        if (services.length) { setCascading({ name, services }); return; }
      }
      await post(`${objectPath(PLURAL, project, name)}/${action}`);
      const verb = { deploy: 'Deploy', destroy: 'Destroy', cancel: 'Cancel', stop: 'Stop', start: 'Start' }[action];
      toasts.add('success', `${verb} of ${name} accepted`);
    } catch (e) {
      toasts.fail(e);
    }
  };

  const rowActions = (i: Instance): IAction[] => {
    const s = instanceActions(i, viewer ? 'Viewers cannot change instances' : '');
    const name = i.metadata?.name ?? '';
    const item = (title: string, st: { disabled: boolean; reason?: string }, onClick: () => void, danger = false): IAction => ({
      title, onClick, isDisabled: st.disabled, description: st.disabled ? st.reason : undefined, isDanger: danger && !st.disabled,
    });
    const out = [
      item('Edit Configuration', s.edit, () => navigate(`/p/${encodeURIComponent(project)}/${kind.route}/${encodeURIComponent(name)}?edit=1`)),
      item('Deploy', s.deploy, () => void act(i, 'deploy')),
      i.status?.phase === 'Waiting' ? item('Cancel Deploy', s.cancel, () => void act(i, 'cancel')) : item('Destroy', s.destroy, () => void act(i, 'destroy')),
      (i.status?.phase as Phase | undefined) === 'Stopped' ? item('Start', s.start, () => void act(i, 'start')) : item('Stop', s.stop, () => void act(i, 'stop')),
      item('Extend', s.extend, () => setExtending(i)),
      item('Manage Sharing', s.share, () => setSharing(i)),
      { isSeparator: true },
      item('Delete', s.delete, () => setDeleting(i), true),
    ];
    return out;
  };

  const items = list?.items ?? [];
  const hasNext = !!list?.metadata?.continue;
  return (
    <>
      {toasts.view}
      <PageSection variant="light">
        <Title headingLevel="h1">{kind.title}</Title>
        <Text className="gantry-muted">{isService ? 'Managed services (notebooks, MLOps, Ray, inference) running on compute instances' : 'Instances'} in project <b>{project}</b>, and those shared into it. Status updates live.</Text>
      </PageSection>
      <PageSection>
        <ErrorAlert error={error} />
        <Toolbar>
          <ToolbarContent>
            <ToolbarItem variant="search-filter" widths={{ default: '320px' }}>
              <SearchInput placeholder="Search by name, display name or description" aria-label={`Search ${kind.label}s`}
                value={search} onChange={(_e, v) => setSearch(v)} onClear={() => setSearch('')} />
            </ToolbarItem>
            {!viewer && (
              <ToolbarItem>
                <Link to={`/p/${encodeURIComponent(project)}/${kind.route}/new`}><Button variant="primary">New {isService ? 'Service' : 'Compute'} Instance</Button></Link>
              </ToolbarItem>
            )}
            <ToolbarItem variant="pagination" align={{ default: 'alignRight' }}>
              <Flex alignItems={{ default: 'alignItemsCenter' }} spaceItems={{ default: 'spaceItemsSm' }}>
                <FormSelect aria-label="Per page" value={limit} onChange={(_e, v) => setLimit(Number(v))} style={{ width: 150 }}>
                  {[10, 20, 50, 100].map((n) => <FormSelectOption key={n} value={n} label={`${n} per page`} />)}
                </FormSelect>
                <Button variant="control" aria-label="Previous page" isDisabled={page === 0} onClick={() => setPage(page - 1)}>‹ Previous</Button>
                <span data-testid="page">Page {page + 1}</span>
                <Button variant="control" aria-label="Next page" isDisabled={!hasNext} onClick={() => {
                  setTokens((t) => [...t.slice(0, page + 1), list?.metadata?.continue ?? '']);
                  setPage(page + 1);
                }}>Next ›</Button>
              </Flex>
            </ToolbarItem>
          </ToolbarContent>
        </Toolbar>
        {list === null ? <Loading /> : (
          <Table aria-label={kind.title} variant="compact">
            <Thead>
              <Tr>
                <Th>Unique Name</Th>
                <Th>Display Name</Th>
                {isService && <Th>Service Type</Th>}
                <Th>Profile</Th>
                {isService && <Th>Compute Instance</Th>}
                <Th>Creation Date</Th>
                <Th>Publish Status</Th>
                {!isService && <Th>Admission</Th>}
                <Th>Expires</Th>
                <Th>GPU%</Th>
                <Th>Sharing</Th>
                <Th screenReaderText="Actions" />
              </Tr>
            </Thead>
            <Tbody>
              {items.map((i) => {
                const name = i.metadata?.name ?? '';
                const from = sharedFrom(i);
                const ns = i.metadata?.namespace ?? project;
                return (
                  <Tr key={`${ns}/${name}`} data-testid={`row-${name}`}>
                    <Td dataLabel="Unique Name">
                      <Link to={`/p/${encodeURIComponent(ns)}/${kind.route}/${encodeURIComponent(name)}`}>{name}</Link>
                      {from && <> <Label isCompact color="purple">shared from {from}</Label></>}
                    </Td>
                    <Td dataLabel="Display Name">{i.spec?.displayName}</Td>
                    {isService && <Td dataLabel="Service Type">{serviceTypes[`${i.spec?.profileRef?.namespace || ns}/${i.spec?.profileRef?.name}`] || '—'}</Td>}
                    <Td dataLabel="Profile">{i.spec?.profileRef?.namespace && i.spec.profileRef.namespace !== ns ? `${i.spec.profileRef.namespace}/` : ''}{i.spec?.profileRef?.name}
                      {i.status?.profileRevision ? <span className="gantry-muted"> (rev {i.status.profileRevision})</span> : null}</Td>
                    {isService && <Td dataLabel="Compute Instance"><ComputeLink s={i as ServiceInstance} /></Td>}
                    <Td dataLabel="Creation Date">{formatDate(i.metadata?.creationTimestamp)}</Td>
                    <Td dataLabel="Publish Status"><StatusLabel phase={i.status?.phase} action={i.status?.action} />
                      {waitingText(i.status) && <div className="gantry-muted" data-testid="waiting">{waitingText(i.status)}</div>}</Td>
                    {!isService && <Td dataLabel="Admission"><AdmissionLabel st={i.status} /></Td>}
                    <Td dataLabel="Expires"><Countdown inst={i} /></Td>
                    <Td dataLabel="GPU%" data-testid="gpu">{gpuText(i)}</Td>
                    <Td dataLabel="Sharing">{sharingText(i.spec?.sharing)}</Td>
                    <Td isActionCell><ActionsColumn items={rowActions(i)} /></Td>
                  </Tr>
                );
              })}
            </Tbody>
          </Table>
        )}
        {list !== null && items.length === 0 && !error && (
          <Empty title={applied ? `No instances match "${applied}"` : `No ${kind.label}s yet`}>
            {applied ? 'Clear the search to see every instance.' : `Create one with New ${isService ? 'Service' : 'Compute'} Instance.`}
          </Empty>
        )}
      </PageSection>
      {sharing && (
        <SharingModal kindLabel={kind.label} project={project} name={sharing.metadata?.name ?? ''}
          path={objectPath(PLURAL, project, sharing.metadata?.name ?? '')} sharing={sharing.spec?.sharing}
          onClose={() => setSharing(null)} onSaved={() => { toasts.add('success', `Sharing of ${sharing.metadata?.name} saved`); setSharing(null); reload(); }} />
      )}
      {deleting && !isService && (
        <ComputeDeleteModal project={project} name={deleting.metadata?.name ?? ''} onClose={() => setDeleting(null)}
          onDeleted={() => { toasts.add('success', `Delete of ${deleting.metadata?.name} accepted`); setDeleting(null); reload(); }} />
      )}
      {deleting && isService && (
        <DeleteModal kindLabel={kind.label} name={deleting.metadata?.name ?? ''}
          extra="Whatever it deployed is torn down first; then the service is no longer available to end users."
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await del(objectPath(PLURAL, project, deleting.metadata?.name ?? ''));
            toasts.add('success', `Delete of ${deleting.metadata?.name} accepted`);
            setDeleting(null);
            reload();
          }} />
      )}
      {extending && (
        <ExtendModal kind={kind} project={extending.metadata?.namespace ?? project} inst={extending} onClose={() => setExtending(null)}
          onSaved={(saved) => { toasts.add('success', `${saved.metadata?.name} extended`); setExtending(null); }} />
      )}
      {cascading && (
        <ComputeDestroyModal project={project} name={cascading.name} services={cascading.services} onClose={() => setCascading(null)}
          onDone={() => { toasts.add('success', `Destroy of ${cascading.name} and its services accepted`); setCascading(null); }} />
      )}
    </>
  );
}

// A service's compute instance: a link to its overview (in the project that owns it).
export function ComputeLink({ s }: { s: ServiceInstance }) {
  const ref = s.spec?.computeRef;
  if (!ref?.name) return <span className="gantry-muted">{s.status?.computeCreated ? 'being created' : '—'}</span>;
  const ns = ref.namespace || s.metadata?.namespace || '';
  return (
    <Link to={`/p/${encodeURIComponent(ns)}/instances/${encodeURIComponent(ref.name)}`}>
      {ns !== s.metadata?.namespace ? `${ns}/` : ''}{ref.name}
    </Link>
  );
}
