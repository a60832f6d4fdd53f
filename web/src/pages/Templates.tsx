// Environment Templates (PaaS Admins): list, create, edit (driver, its configuration, variables,
// outputs), revisions, sharing, delete.
import { useEffect, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router-dom';
import {
  ActionGroup, Breadcrumb, BreadcrumbItem, Button, Checkbox, Form, FormGroup, FormSelect, FormSelectOption, Grid, GridItem,
  HelperText, HelperTextItem, PageSection, Tab, Tabs, TabTitleText, TextArea, TextInput, Title, Text, Toolbar, ToolbarContent, ToolbarItem, Label,
} from '@patternfly/react-core';
import MinusCircleIcon from '@patternfly/react-icons/dist/esm/icons/minus-circle-icon';
import PlusCircleIcon from '@patternfly/react-icons/dist/esm/icons/plus-circle-icon';
import { ActionsColumn, Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { collectionPath, del, get, objectPath, post, put } from '../api/client';
import type { EnvironmentTemplate, List, TemplateVariable } from '../api/types';
import { sharedFrom } from '../api/types';
import { useCurrentProject } from '../project';
import { Empty, ErrorAlert, Loading, formatDate, nameProblem, sharingText } from '../components/common';
import { DeleteModal, SharingModal } from '../components/Modals';
import { Revisions } from '../components/Revisions';
import { useToasts } from '../components/toasts';

const PLURAL = 'environmenttemplates';
type Driver = 'exec' | 'local' | 'slurm';

export function TemplatesPage() {
  const project = useCurrentProject();
  const navigate = useNavigate();
  const toasts = useToasts();
  const [items, setItems] = useState<EnvironmentTemplate[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [sharing, setSharing] = useState<EnvironmentTemplate | null>(null);
  const [deleting, setDeleting] = useState<EnvironmentTemplate | null>(null);
  const [n, setN] = useState(0);
  useEffect(() => {
    get<List<EnvironmentTemplate>>(collectionPath(PLURAL, project) + '?limit=500').then((l) => { setItems(l.items); setError(null); })
      .catch((e) => { setError(e); setItems([]); });
  }, [project, n]);
  return (
    <>
      {toasts.view}
      <PageSection variant="light">
        <Title headingLevel="h1">Environment Templates</Title>
        <Text className="gantry-muted">How instances are deployed: a driver, its configuration, the variables it accepts and the outputs it produces.</Text>
      </PageSection>
      <PageSection>
        <ErrorAlert error={error} />
        <Toolbar><ToolbarContent><ToolbarItem>
          <Link to={`/p/${encodeURIComponent(project)}/templates/new`}><Button>New Environment Template</Button></Link>
        </ToolbarItem></ToolbarContent></Toolbar>
        {items === null ? <Loading /> : items.length === 0 ? <Empty title="No environment templates" /> : (
          <Table aria-label="Environment templates" variant="compact">
            <Thead><Tr><Th>Name</Th><Th>Display Name</Th><Th>Driver</Th><Th>Variables</Th><Th>Revision</Th><Th>Sharing</Th><Th>Creation Date</Th><Th screenReaderText="Actions" /></Tr></Thead>
            <Tbody>
              {items.map((t) => {
                const name = t.metadata?.name ?? '';
                const from = sharedFrom(t) || (t.metadata?.namespace !== project ? t.metadata?.namespace ?? '' : '');
                const ro = from ? { isDisabled: true, description: `Shared from ${from} (read-only)` } : {};
                return (
                  <Tr key={`${t.metadata?.namespace}/${name}`}>
                    <Td>{from ? name : <Link to={`/p/${encodeURIComponent(project)}/templates/${encodeURIComponent(name)}`}>{name}</Link>}
                      {from && <> <Label isCompact color="purple">shared from {from}</Label></>}</Td>
                    <Td>{t.spec?.displayName}</Td>
                    <Td><Label isCompact>{t.spec?.driver}</Label></Td>
                    <Td>{(t.spec?.variables ?? []).map((v) => v.name).join(', ') || '—'}</Td>
                    <Td>{t.status?.revision}</Td>
                    <Td>{sharingText(t.spec?.sharing)}</Td>
                    <Td>{formatDate(t.metadata?.creationTimestamp)}</Td>
                    <Td isActionCell><ActionsColumn items={[
                      { title: 'Edit', onClick: () => navigate(`/p/${encodeURIComponent(project)}/templates/${encodeURIComponent(name)}`), ...ro },
                      { title: 'Manage Sharing', onClick: () => setSharing(t), ...ro },
                      { isSeparator: true },
                      { title: 'Delete', onClick: () => setDeleting(t), isDanger: !from, ...ro },
                    ]} /></Td>
                  </Tr>
                );
              })}
            </Tbody>
          </Table>
        )}
      </PageSection>
      {sharing && <SharingModal kindLabel="environment template" project={project} name={sharing.metadata?.name ?? ''} path={objectPath(PLURAL, project, sharing.metadata?.name ?? '')}
        sharing={sharing.spec?.sharing} onClose={() => setSharing(null)} onSaved={() => { setSharing(null); setN(n + 1); toasts.add('success', 'Sharing saved'); }} />}
      {deleting && <DeleteModal kindLabel="environment template" name={deleting.metadata?.name ?? ''} extra="Templates used by profiles cannot be deleted."
        onClose={() => setDeleting(null)} onConfirm={async () => { await del(objectPath(PLURAL, project, deleting.metadata?.name ?? '')); setDeleting(null); setN(n + 1); }} />}
    </>
  );
}

type VarRow = TemplateVariable & { allowedText?: string };

const EXAMPLE_CONFIG: Record<Driver, string> = {
  exec: JSON.stringify({ command: ['sh', 'examples/scripts/workspace.sh'], env: { PROVISION_SECONDS: '2' }, timeoutSeconds: 120 }, null, 2),
  local: JSON.stringify({ command: ['python3', '${GANTRYD_DIR}/examples/workloads/notebook.py'], ports: [{ name: 'http' }], readiness: { httpPath: '/', port: 'http', timeoutSeconds: 60 }, restartPolicy: 'OnFailure' }, null, 2),
  slurm: '{}',
};

export function TemplateEditor() {
  const project = useCurrentProject();
  const { name: existing } = useParams();
  const navigate = useNavigate();
  const toasts = useToasts();
  const [obj, setObj] = useState<EnvironmentTemplate | null>(null);
  const [name, setName] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [description, setDescription] = useState('');
  const [driver, setDriver] = useState<Driver>('exec');
  const [config, setConfig] = useState(EXAMPLE_CONFIG.exec);
  const [vars, setVars] = useState<VarRow[]>([]);
  const [outputs, setOutputs] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [tab, setTab] = useState<string | number>('spec');

  useEffect(() => {
    if (!existing) return;
    get<EnvironmentTemplate>(objectPath(PLURAL, project, existing)).then((t) => {
      setObj(t);
      setName(t.metadata?.name ?? '');
      setDisplayName(t.spec?.displayName ?? '');
      setDescription(t.spec?.description ?? '');
      const d = (t.spec?.driver ?? 'exec') as Driver;
      setDriver(d);
      setConfig(JSON.stringify((t.spec as Record<string, unknown>)?.[d] ?? {}, null, 2));
      setVars((t.spec?.variables ?? []).map((v) => ({ ...v, allowedText: (v.allowedValues ?? []).join(', ') })));
      setOutputs((t.spec?.outputs ?? []).join(', '));
    }).catch(setError);
  }, [project, existing]);

  const problem = !existing && name ? nameProblem(name) : '';
  let configError = '';
  try { JSON.parse(config || '{}'); } catch (e) { configError = `Not valid JSON: ${(e as Error).message}`; }
  const setVar = (i: number, v: Partial<VarRow>) => setVars((x) => x.map((r, j) => (j === i ? { ...r, ...v } : r)));

  const save = async () => {
    setBusy(true);
    setError(null);
    const spec: Record<string, unknown> = {
      displayName, description, driver, [driver]: JSON.parse(config || '{}'),
      variables: vars.filter((v) => v.name).map((v) => {
        const out: TemplateVariable = { name: v.name, type: v.type ?? 'string' };
        if (v.default) out.default = v.default;
        if (v.description) out.description = v.description;
        if (v.required) out.required = true;
        if (v.sensitive) out.sensitive = true;
        if (v.type === 'enum') out.allowedValues = (v.allowedText ?? '').split(',').map((s) => s.trim()).filter(Boolean);
        return out;
      }),
      outputs: outputs.split(',').map((s) => s.trim()).filter(Boolean),
    };
    if (obj?.spec?.sharing) spec.sharing = obj.spec.sharing;
    try {
      if (existing && obj) {
        const saved = await put<EnvironmentTemplate>(objectPath(PLURAL, project, existing), { apiVersion: obj.apiVersion, kind: obj.kind, metadata: obj.metadata, spec });
        setObj(saved);
        toasts.add('success', `Saved: ${existing} is at revision ${saved.status?.revision}`);
      } else {
        await post(collectionPath(PLURAL, project), { apiVersion: 'paas.gantry.dev/v1', kind: 'EnvironmentTemplate', metadata: { name }, spec });
        navigate(`/p/${encodeURIComponent(project)}/templates/${encodeURIComponent(name)}`);
      }
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  if (existing && !obj && !error) return <Loading />;
  const form = (
    <Form onSubmit={(e) => { e.preventDefault(); void save(); }} style={{ maxWidth: 1200 }}>
      <ErrorAlert error={error} />
      <Grid hasGutter>
        <GridItem span={4}>
          <FormGroup label="Name" isRequired fieldId="template-name">
            <TextInput id="template-name" value={name} onChange={(_e, v) => setName(v.trim())} readOnlyVariant={existing ? 'default' : undefined} validated={problem ? 'error' : 'default'} />
            <HelperText>{problem ? <HelperTextItem variant="error">{problem}</HelperTextItem> : <HelperTextItem>Cannot be changed once created.</HelperTextItem>}</HelperText>
          </FormGroup>
        </GridItem>
        <GridItem span={5}>
          <FormGroup label="Display Name" fieldId="template-display-name"><TextInput id="template-display-name" value={displayName} onChange={(_e, v) => setDisplayName(v)} /></FormGroup>
        </GridItem>
        <GridItem span={3}>
          <FormGroup label="Driver" isRequired fieldId="template-driver">
            <FormSelect id="template-driver" value={driver} onChange={(_e, v) => { setDriver(v as Driver); if (!existing) setConfig(EXAMPLE_CONFIG[v as Driver]); }}>
              <FormSelectOption value="exec" label="exec (a script)" />
              <FormSelectOption value="local" label="local (a process on this host)" />
              <FormSelectOption value="slurm" label="slurm" />
            </FormSelect>
          </FormGroup>
        </GridItem>
      </Grid>
      <FormGroup label="Description" fieldId="template-description"><TextArea id="template-description" value={description} onChange={(_e, v) => setDescription(v)} rows={2} /></FormGroup>
      <FormGroup label={`${driver} configuration (JSON)`} fieldId="template-config">
        <TextArea id="template-config" value={config} onChange={(_e, v) => setConfig(v)} rows={12} style={{ fontFamily: 'monospace' }} validated={configError ? 'error' : 'default'} />
        <HelperText>{configError ? <HelperTextItem variant="error">{configError}</HelperTextItem> : <HelperTextItem>See docs/drivers.md for the fields of each driver.</HelperTextItem>}</HelperText>
      </FormGroup>
      <FormGroup label="Variables" fieldId="template-vars">
        <Table aria-label="Template variables" variant="compact">
          <Thead><Tr><Th width={15}>Name</Th><Th width={10}>Type</Th><Th width={15}>Default</Th><Th width={20}>Allowed values (enum)</Th><Th width={25}>Description</Th><Th modifier="fitContent">Required</Th><Th modifier="fitContent">Sensitive</Th><Th screenReaderText="Remove" /></Tr></Thead>
          <Tbody>
            {vars.map((v, i) => (
              <Tr key={i}>
                <Td><TextInput aria-label={`variable ${i + 1} name`} value={v.name} onChange={(_e, x) => setVar(i, { name: x.trim() })} /></Td>
                <Td>
                  <FormSelect style={{ minWidth: 110 }} aria-label={`variable ${i + 1} type`} value={v.type ?? 'string'} onChange={(_e, x) => setVar(i, { type: x as VarRow['type'] })}>
                    {['string', 'number', 'bool', 'enum'].map((t) => <FormSelectOption key={t} value={t} label={t} />)}
                  </FormSelect>
                </Td>
                <Td><TextInput aria-label={`variable ${i + 1} default`} value={v.default ?? ''} onChange={(_e, x) => setVar(i, { default: x })} /></Td>
                <Td><TextInput aria-label={`variable ${i + 1} allowed values`} value={v.allowedText ?? ''} isDisabled={v.type !== 'enum'} placeholder="a, b" onChange={(_e, x) => setVar(i, { allowedText: x })} /></Td>
                <Td><TextInput aria-label={`variable ${i + 1} description`} value={v.description ?? ''} onChange={(_e, x) => setVar(i, { description: x })} /></Td>
                <Td><Checkbox id={`var-req-${i}`} aria-label={`variable ${i + 1} required`} isChecked={!!v.required} onChange={(_e, x) => setVar(i, { required: x })} /></Td>
                <Td><Checkbox id={`var-sens-${i}`} aria-label={`variable ${i + 1} sensitive`} isChecked={!!v.sensitive} onChange={(_e, x) => setVar(i, { sensitive: x })} /></Td>
                <Td><Button variant="plain" aria-label={`Remove variable ${i + 1}`} onClick={() => setVars(vars.filter((_, j) => j !== i))}><MinusCircleIcon /></Button></Td>
              </Tr>
            ))}
          </Tbody>
        </Table>
        <Button variant="link" icon={<PlusCircleIcon />} onClick={() => setVars([...vars, { name: '', type: 'string' }])}>Add variable</Button>
      </FormGroup>
      <FormGroup label="Outputs" fieldId="template-outputs">
        <TextInput id="template-outputs" value={outputs} onChange={(_e, v) => setOutputs(v)} placeholder="endpoint, workspace" />
        <HelperText><HelperTextItem>Comma-separated names of the outputs a deploy produces.</HelperTextItem></HelperText>
      </FormGroup>
      <ActionGroup>
        <Button type="submit" isLoading={busy} isDisabled={busy || !name || !!problem || !!configError}>{existing ? 'Save (new revision)' : 'Create'}</Button>
        <Button variant="link" onClick={() => navigate(`/p/${encodeURIComponent(project)}/templates`)}>Cancel</Button>
      </ActionGroup>
    </Form>
  );
  return (
    <>
      {toasts.view}
      <PageSection variant="light">
        <Breadcrumb style={{ marginBottom: 8 }}>
          <BreadcrumbItem><Link to={`/p/${encodeURIComponent(project)}/templates`}>Environment Templates</Link></BreadcrumbItem>
          <BreadcrumbItem isActive>{existing ?? 'New'}</BreadcrumbItem>
        </Breadcrumb>
        <Title headingLevel="h1">{existing ? obj?.spec?.displayName || existing : 'New Environment Template'}</Title>
        {existing && <Text className="gantry-muted">Revision {obj?.status?.revision} · sharing: {sharingText(obj?.spec?.sharing)}</Text>}
      </PageSection>
      <PageSection>
        {existing ? (
          <Tabs activeKey={tab} onSelect={(_e, k) => setTab(k)} mountOnEnter>
            <Tab eventKey="spec" title={<TabTitleText>Configuration</TabTitleText>}><div style={{ marginTop: 16 }}>{form}</div></Tab>
            <Tab eventKey="revisions" title={<TabTitleText>Revisions</TabTitleText>}><Revisions plural={PLURAL} project={project} name={existing} current={obj?.status?.revision} /></Tab>
          </Tabs>
        ) : form}
      </PageSection>
    </>
  );
}
