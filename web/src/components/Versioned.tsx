// What the admin screens of versioned objects (Environment Templates, Compute Profiles,
// Service Profiles) share: the list with Manage Sharing and Delete, the editor's load/save
// (POST to create, PUT with the resourceVersion to make a new revision), its name fields,
// and the page around it with the Configuration and Revisions tabs.
import { useEffect, useState, type ReactNode } from 'react';
import { Link, useNavigate } from 'react-router-dom';
import {
  ActionGroup, Breadcrumb, BreadcrumbItem, Button, FormGroup, Grid, GridItem, HelperText, HelperTextItem, Label, PageSection,
  Tab, Tabs, TabTitleText, Text, TextArea, TextInput, Title, Toolbar, ToolbarContent, ToolbarItem,
} from '@patternfly/react-core';
import { ActionsColumn, Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { collectionPath, del, get, objectPath, post, put } from '../api/client';
import type { List, ObjectMeta, Sharing } from '../api/types';
import { sharedFrom } from '../api/types';
import { useCurrentProject } from '../project';
import { Empty, ErrorAlert, Loading, formatDate, nameProblem, sharingText } from './common';
import { DeleteModal, SharingModal } from './Modals';
import { Revisions } from './Revisions';
import { useToasts } from './toasts';

export interface Versioned {
  apiVersion?: string; kind?: string; metadata?: ObjectMeta;
  spec?: { displayName?: string; description?: string; sharing?: Sharing };
  status?: { revision?: number };
}

export interface Column<T> { title: string; cell: (o: T) => ReactNode }

const enc = encodeURIComponent;

export function VersionedListPage<T extends Versioned>({ plural, route, title, intro, newText, emptyTitle, kindLabel, deleteExtra, columns }: {
  plural: string; route: string; title: string; intro: string; newText: string; emptyTitle: string;
  kindLabel: string; deleteExtra: string; columns: Column<T>[];
}) {
  const project = useCurrentProject();
  const navigate = useNavigate();
  const toasts = useToasts();
  const [items, setItems] = useState<T[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [sharing, setSharing] = useState<T | null>(null);
  const [deleting, setDeleting] = useState<T | null>(null);
  const [n, setN] = useState(0);
  useEffect(() => {
    get<List<T>>(collectionPath(plural, project) + '?limit=500').then((l) => { setItems(l.items); setError(null); })
      .catch((e) => { setError(e); setItems([]); });
  }, [plural, project, n]);
  return (
    <>
      {toasts.view}
      <PageSection variant="light">
        <Title headingLevel="h1">{title}</Title>
        <Text className="gantry-muted">{intro}</Text>
      </PageSection>
      <PageSection>
        <ErrorAlert error={error} />
        <Toolbar><ToolbarContent><ToolbarItem>
          <Link to={`/p/${enc(project)}/${route}/new`}><Button>{newText}</Button></Link>
        </ToolbarItem></ToolbarContent></Toolbar>
        {items === null ? <Loading /> : items.length === 0 ? <Empty title={emptyTitle} /> : (
          <Table aria-label={title} variant="compact">
            <Thead><Tr><Th>Name</Th><Th>Display Name</Th>{columns.map((c) => <Th key={c.title}>{c.title}</Th>)}<Th>Revision</Th><Th>Sharing</Th><Th>Creation Date</Th><Th screenReaderText="Actions" /></Tr></Thead>
            <Tbody>
              {items.map((o) => {
                const name = o.metadata?.name ?? '';
                const from = sharedFrom(o) || (o.metadata?.namespace !== project ? o.metadata?.namespace ?? '' : '');
                const ro = from ? { isDisabled: true, description: `Shared from ${from} (read-only)` } : {};
                return (
                  <Tr key={`${o.metadata?.namespace}/${name}`} data-testid={`row-${name}`}>
                    <Td>{from ? name : <Link to={`/p/${enc(project)}/${route}/${enc(name)}`}>{name}</Link>}
                      {from && <> <Label isCompact color="purple">shared from {from}</Label></>}</Td>
                    <Td>{o.spec?.displayName}</Td>
                    {columns.map((c) => <Td key={c.title}>{c.cell(o)}</Td>)}
                    <Td>{o.status?.revision}</Td>
                    <Td>{sharingText(o.spec?.sharing)}</Td>
                    <Td>{formatDate(o.metadata?.creationTimestamp)}</Td>
                    <Td isActionCell><ActionsColumn items={[
                      { title: 'Edit', onClick: () => navigate(`/p/${enc(project)}/${route}/${enc(name)}`), ...ro },
                      { title: 'Manage Sharing', onClick: () => setSharing(o), ...ro },
                      { isSeparator: true },
                      { title: 'Delete', onClick: () => setDeleting(o), isDanger: !from, ...ro },
                    ]} /></Td>
                  </Tr>
                );
              })}
            </Tbody>
          </Table>
        )}
      </PageSection>
      {sharing && <SharingModal kindLabel={kindLabel} project={project} name={sharing.metadata?.name ?? ''} path={objectPath(plural, project, sharing.metadata?.name ?? '')}
        sharing={sharing.spec?.sharing} onClose={() => setSharing(null)} onSaved={() => { setSharing(null); setN(n + 1); toasts.add('success', 'Sharing saved'); }} />}
      {deleting && <DeleteModal kindLabel={kindLabel} name={deleting.metadata?.name ?? ''} extra={deleteExtra}
        onClose={() => setDeleting(null)} onConfirm={async () => { await del(objectPath(plural, project, deleting.metadata?.name ?? '')); setDeleting(null); setN(n + 1); }} />}
    </>
  );
}

// Loads `existing` (calling onLoad with it) and saves a spec: PUT of the loaded object (a new
// revision; a concurrent change is the server's 409) or POST of a new one, then its page.
export function useVersionedEditor<T extends Versioned>({ plural, kind, route, existing, onLoad }: {
  plural: string; kind: string; route: string; existing?: string; onLoad: (o: T) => void;
}) {
  const project = useCurrentProject();
  const navigate = useNavigate();
  const toasts = useToasts();
  const [obj, setObj] = useState<T | null>(null);
  const [name, setName] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [description, setDescription] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (!existing) return;
    get<T>(objectPath(plural, project, existing)).then((o) => {
      setObj(o);
      setName(o.metadata?.name ?? '');
      setDisplayName(o.spec?.displayName ?? '');
      setDescription(o.spec?.description ?? '');
      onLoad(o);
    }).catch(setError);
    // onLoad is the page's setter of its own fields: loading again when it changes is not wanted.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [plural, project, existing]);
  const save = async (spec: Record<string, unknown>) => {
    setBusy(true);
    setError(null);
    const full: Record<string, unknown> = { ...spec, displayName, description };
    if (obj?.spec?.sharing) full.sharing = obj.spec.sharing;
    try {
      if (existing && obj) {
        const saved = await put<T>(objectPath(plural, project, existing), { apiVersion: obj.apiVersion, kind: obj.kind, metadata: obj.metadata, spec: full });
        setObj(saved);
        toasts.add('success', `Saved: ${existing} is at revision ${saved.status?.revision}`);
      } else {
        await post(collectionPath(plural, project), { apiVersion: 'paas.gantry.dev/v1', kind, metadata: { name }, spec: full });
        navigate(`/p/${enc(project)}/${route}/${enc(name)}`);
      }
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const problem = !existing && name ? nameProblem(name) : '';
  return {
    project, obj, name, setName, displayName, setDisplayName, description, setDescription, error, setError, busy, save, problem, toasts,
    loading: !!existing && !obj && !error,
  };
}

// Name (read-only once created), display name, description; `side` fills the name row's end.
export function NameFields({ idPrefix, ed, existing, side }: {
  idPrefix: string; existing?: string; side?: ReactNode;
  ed: Pick<ReturnType<typeof useVersionedEditor>, 'name' | 'setName' | 'displayName' | 'setDisplayName' | 'description' | 'setDescription' | 'problem'>;
}) {
  return (
    <>
      <Grid hasGutter>
        <GridItem span={side ? 4 : 6}>
          <FormGroup label="Name" isRequired fieldId={`${idPrefix}-name`}>
            <TextInput id={`${idPrefix}-name`} value={ed.name} onChange={(_e, v) => ed.setName(v.trim())} readOnlyVariant={existing ? 'default' : undefined} validated={ed.problem ? 'error' : 'default'} />
            <HelperText>{ed.problem ? <HelperTextItem variant="error">{ed.problem}</HelperTextItem> : <HelperTextItem>Cannot be changed once created.</HelperTextItem>}</HelperText>
          </FormGroup>
        </GridItem>
        <GridItem span={side ? 5 : 6}>
          <FormGroup label="Display Name" fieldId={`${idPrefix}-display-name`}>
            <TextInput id={`${idPrefix}-display-name`} value={ed.displayName} onChange={(_e, v) => ed.setDisplayName(v)} />
          </FormGroup>
        </GridItem>
        {side && <GridItem span={3}>{side}</GridItem>}
      </Grid>
      <FormGroup label="Description" fieldId={`${idPrefix}-description`}>
        <TextArea id={`${idPrefix}-description`} value={ed.description} onChange={(_e, v) => ed.setDescription(v)} rows={2} />
      </FormGroup>
    </>
  );
}

export function EditorActions({ existing, busy, disabled, onCancel }: { existing?: string; busy: boolean; disabled: boolean; onCancel: () => void }) {
  return (
    <ActionGroup>
      <Button type="submit" isLoading={busy} isDisabled={busy || disabled}>{existing ? 'Save (new revision)' : 'Create'}</Button>
      <Button variant="link" onClick={onCancel}>Cancel</Button>
    </ActionGroup>
  );
}

// The editor's page: breadcrumb back to the list, title, revision and sharing, and for an
// existing object the Configuration and Revisions tabs.
export function EditorPage({ plural, route, listTitle, newTitle, existing, obj, toastsView, form }: {
  plural: string; route: string; listTitle: string; newTitle: string; existing?: string; obj: Versioned | null;
  toastsView: ReactNode; form: ReactNode;
}) {
  const project = useCurrentProject();
  const [tab, setTab] = useState<string | number>('spec');
  return (
    <>
      {toastsView}
      <PageSection variant="light">
        <Breadcrumb style={{ marginBottom: 8 }}>
          <BreadcrumbItem><Link to={`/p/${enc(project)}/${route}`}>{listTitle}</Link></BreadcrumbItem>
          <BreadcrumbItem isActive>{existing ?? 'New'}</BreadcrumbItem>
        </Breadcrumb>
        <Title headingLevel="h1">{existing ? obj?.spec?.displayName || existing : newTitle}</Title>
        {existing && <Text className="gantry-muted">Revision {obj?.status?.revision} · sharing: {sharingText(obj?.spec?.sharing)}</Text>}
      </PageSection>
      <PageSection>
        {existing ? (
          <Tabs activeKey={tab} onSelect={(_e, k) => setTab(k)} mountOnEnter>
            <Tab eventKey="spec" title={<TabTitleText>Configuration</TabTitleText>}><div style={{ marginTop: 16 }}>{form}</div></Tab>
            <Tab eventKey="revisions" title={<TabTitleText>Revisions</TabTitleText>}><Revisions plural={plural} project={project} name={existing} current={obj?.status?.revision} /></Tab>
          </Tabs>
        ) : form}
      </PageSection>
    </>
  );
}
