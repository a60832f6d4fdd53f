// Compute Profiles (PaaS Admins): list, create, edit (resources, template, override rules),
// revisions, sharing, delete.
import { useEffect, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router-dom';
import {
  ActionGroup, Breadcrumb, BreadcrumbItem, Button, Form, FormGroup, FormSelect, FormSelectOption, Grid, GridItem, HelperText,
  HelperTextItem, PageSection, Tab, Tabs, TabTitleText, TextArea, TextInput, Title, Text, Toolbar, ToolbarContent, ToolbarItem, Label, Checkbox,
} from '@patternfly/react-core';
import { ActionsColumn, Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { collectionPath, del, get, objectPath, post, put } from '../api/client';
import type { ComputeProfile, EnvironmentTemplate, List, ProfileVariableRule } from '../api/types';
import { sharedFrom } from '../api/types';
import { useCurrentProject } from '../project';
import { Empty, ErrorAlert, Loading, formatDate, nameProblem, sharingText } from '../components/common';
import { DeleteModal, SharingModal } from '../components/Modals';
import { Revisions } from '../components/Revisions';
import { useToasts } from '../components/toasts';

const PLURAL = 'computeprofiles';

export function ProfilesPage() {
  const project = useCurrentProject();
  const navigate = useNavigate();
  const toasts = useToasts();
  const [items, setItems] = useState<ComputeProfile[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [sharing, setSharing] = useState<ComputeProfile | null>(null);
  const [deleting, setDeleting] = useState<ComputeProfile | null>(null);
  const [n, setN] = useState(0);
  useEffect(() => {
    get<List<ComputeProfile>>(collectionPath(PLURAL, project) + '?limit=500').then((l) => { setItems(l.items); setError(null); })
      .catch((e) => { setError(e); setItems([]); });
  }, [project, n]);
  return (
    <>
      {toasts.view}
      <PageSection variant="light">
        <Title headingLevel="h1">Compute Profiles</Title>
        <Text className="gantry-muted">Versioned compute SKUs users launch instances from. Editing one affects only instances launched (or upgraded) afterwards.</Text>
      </PageSection>
      <PageSection>
        <ErrorAlert error={error} />
        <Toolbar><ToolbarContent><ToolbarItem>
          <Link to={`/p/${encodeURIComponent(project)}/profiles/new`}><Button>New Compute Profile</Button></Link>
        </ToolbarItem></ToolbarContent></Toolbar>
        {items === null ? <Loading /> : items.length === 0 ? <Empty title="No compute profiles" /> : (
          <Table aria-label="Compute profiles" variant="compact">
            <Thead><Tr><Th>Name</Th><Th>Display Name</Th><Th>Template</Th><Th>GPUs</Th><Th>Revision</Th><Th>Sharing</Th><Th>Creation Date</Th><Th screenReaderText="Actions" /></Tr></Thead>
            <Tbody>
              {items.map((p) => {
                const name = p.metadata?.name ?? '';
                const from = sharedFrom(p) || (p.metadata?.namespace !== project ? p.metadata?.namespace ?? '' : '');
                const ro = from ? { isDisabled: true, description: `Shared from ${from} (read-only)` } : {};
                return (
                  <Tr key={`${p.metadata?.namespace}/${name}`}>
                    <Td>{from ? name : <Link to={`/p/${encodeURIComponent(project)}/profiles/${encodeURIComponent(name)}`}>{name}</Link>}
                      {from && <> <Label isCompact color="purple">shared from {from}</Label></>}</Td>
                    <Td>{p.spec?.displayName}</Td>
                    <Td>{p.spec?.templateRef?.name}</Td>
                    <Td>{p.spec?.resources?.gpu?.count ? `${p.spec.resources.gpu.count}× ${p.spec.resources.gpu.type ?? 'any'}` : '—'}</Td>
                    <Td>{p.status?.revision}</Td>
                    <Td>{sharingText(p.spec?.sharing)}</Td>
                    <Td>{formatDate(p.metadata?.creationTimestamp)}</Td>
                    <Td isActionCell><ActionsColumn items={[
                      { title: 'Edit', onClick: () => navigate(`/p/${encodeURIComponent(project)}/profiles/${encodeURIComponent(name)}`), ...ro },
                      { title: 'Manage Sharing', onClick: () => setSharing(p), ...ro },
                      { isSeparator: true },
                      { title: 'Delete', onClick: () => setDeleting(p), isDanger: !from, ...ro },
                    ]} /></Td>
                  </Tr>
                );
              })}
            </Tbody>
          </Table>
        )}
      </PageSection>
      {sharing && <SharingModal kindLabel="compute profile" project={project} name={sharing.metadata?.name ?? ''} path={objectPath(PLURAL, project, sharing.metadata?.name ?? '')}
        sharing={sharing.spec?.sharing} onClose={() => setSharing(null)} onSaved={() => { setSharing(null); setN(n + 1); toasts.add('success', 'Sharing saved'); }} />}
      {deleting && <DeleteModal kindLabel="compute profile" name={deleting.metadata?.name ?? ''} extra="Profiles used by instances cannot be deleted."
        onClose={() => setDeleting(null)} onConfirm={async () => { await del(objectPath(PLURAL, project, deleting.metadata?.name ?? '')); setDeleting(null); setN(n + 1); }} />}
    </>
  );
}

type Rule = ProfileVariableRule & { allowedText?: string };

export function ProfileEditor() {
  const project = useCurrentProject();
  const { name: existing } = useParams();
  const navigate = useNavigate();
  const toasts = useToasts();
  const [obj, setObj] = useState<ComputeProfile | null>(null);
  const [name, setName] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [description, setDescription] = useState('');
  const [templateKey, setTemplateKey] = useState('');
  const [gpuType, setGpuType] = useState('');
  const [gpuCount, setGpuCount] = useState('');
  const [cpu, setCpu] = useState('');
  const [mem, setMem] = useState('');
  const [rules, setRules] = useState<Record<string, Rule>>({});
  const [templates, setTemplates] = useState<EnvironmentTemplate[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [tab, setTab] = useState<string | number>('spec');

  useEffect(() => {
    get<List<EnvironmentTemplate>>(collectionPath('environmenttemplates', project) + '?limit=500').then((l) => setTemplates(l.items)).catch(setError);
    if (!existing) return;
    get<ComputeProfile>(objectPath(PLURAL, project, existing)).then((p) => {
      setObj(p);
      setName(p.metadata?.name ?? '');
      setDisplayName(p.spec?.displayName ?? '');
      setDescription(p.spec?.description ?? '');
      setTemplateKey(`${p.spec?.templateRef?.namespace || project}/${p.spec?.templateRef?.name}`);
      setGpuType(p.spec?.resources?.gpu?.type ?? '');
      setGpuCount(p.spec?.resources?.gpu?.count !== undefined ? String(p.spec.resources.gpu.count) : '');
      setCpu(p.spec?.resources?.cpu !== undefined ? String(p.spec.resources.cpu) : '');
      setMem(p.spec?.resources?.memoryGiB !== undefined ? String(p.spec.resources.memoryGiB) : '');
      setRules(Object.fromEntries((p.spec?.variables ?? []).map((r) => [r.name, { ...r, allowedText: (r.allowedValues ?? []).join(', ') }])));
    }).catch(setError);
  }, [project, existing]);

  const template = templates.find((t) => `${t.metadata?.namespace}/${t.metadata?.name}` === templateKey);
  const setRule = (n: string, r: Partial<Rule>) => setRules((x) => ({ ...x, [n]: { ...(x[n] ?? { name: n }), ...r, name: n } }));
  const problem = !existing && name ? nameProblem(name) : '';

  const save = async () => {
    setBusy(true);
    setError(null);
    const [tns, tname] = templateKey.split('/');
    const vars: ProfileVariableRule[] = (template?.spec?.variables ?? []).map((d) => rules[d.name]).filter(Boolean).map((r) => {
      const out: ProfileVariableRule = { name: r.name, override: r.override ?? 'allowed' };
      if (r.default) out.default = r.default;
      if (r.override === 'restricted') out.allowedValues = (r.allowedText ?? '').split(',').map((s) => s.trim()).filter(Boolean);
      if (r.required) out.required = true;
      return out;
    });
    const resources: NonNullable<ComputeProfile['spec']>['resources'] = {};
    if (gpuCount || gpuType) resources.gpu = { ...(gpuType ? { type: gpuType } : {}), ...(gpuCount ? { count: Number(gpuCount) } : {}) };
    if (cpu) resources.cpu = Number(cpu);
    if (mem) resources.memoryGiB = Number(mem);
    const spec: ComputeProfile['spec'] = {
      ...(obj?.spec ?? {}), displayName, description,
      templateRef: tns && tns !== project ? { name: tname, namespace: tns } : { name: tname },
      resources, variables: vars,
    } as ComputeProfile['spec'];
    try {
      if (existing && obj) {
        const saved = await put<ComputeProfile>(objectPath(PLURAL, project, existing), { apiVersion: obj.apiVersion, kind: obj.kind, metadata: obj.metadata, spec });
        setObj(saved);
        toasts.add('success', `Saved: ${existing} is at revision ${saved.status?.revision}`);
      } else {
        await post(collectionPath(PLURAL, project), { apiVersion: 'paas.gantry.dev/v1', kind: 'ComputeProfile', metadata: { name }, spec });
        navigate(`/p/${encodeURIComponent(project)}/profiles/${encodeURIComponent(name)}`);
      }
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  if (existing && !obj && !error) return <Loading />;
  const form = (
    <Form onSubmit={(e) => { e.preventDefault(); void save(); }} style={{ maxWidth: 960 }}>
      <ErrorAlert error={error} />
      <Grid hasGutter>
        <GridItem span={6}>
          <FormGroup label="Name" isRequired fieldId="profile-name">
            <TextInput id="profile-name" value={name} onChange={(_e, v) => setName(v.trim())} readOnlyVariant={existing ? 'default' : undefined} validated={problem ? 'error' : 'default'} />
            <HelperText>{problem ? <HelperTextItem variant="error">{problem}</HelperTextItem> : <HelperTextItem>Cannot be changed once created.</HelperTextItem>}</HelperText>
          </FormGroup>
        </GridItem>
        <GridItem span={6}>
          <FormGroup label="Display Name" fieldId="profile-display-name">
            <TextInput id="profile-display-name" value={displayName} onChange={(_e, v) => setDisplayName(v)} />
          </FormGroup>
        </GridItem>
      </Grid>
      <FormGroup label="Description" fieldId="profile-description">
        <TextArea id="profile-description" value={description} onChange={(_e, v) => setDescription(v)} rows={2} />
      </FormGroup>
      <FormGroup label="Environment Template" isRequired fieldId="profile-template">
        <FormSelect id="profile-template" value={templateKey} onChange={(_e, v) => setTemplateKey(v)}>
          <FormSelectOption value="" label="Choose a template" isPlaceholder />
          {templates.map((t) => {
            const k = `${t.metadata?.namespace}/${t.metadata?.name}`;
            return <FormSelectOption key={k} value={k} label={`${t.spec?.displayName || t.metadata?.name} (${k}, ${t.spec?.driver})`} />;
          })}
        </FormSelect>
      </FormGroup>
      <Grid hasGutter>
        <GridItem span={3}><FormGroup label="GPU type" fieldId="gpu-type"><TextInput id="gpu-type" value={gpuType} onChange={(_e, v) => setGpuType(v)} placeholder="any" /></FormGroup></GridItem>
        <GridItem span={3}><FormGroup label="GPUs" fieldId="gpu-count"><TextInput id="gpu-count" type="number" min={0} value={gpuCount} onChange={(_e, v) => setGpuCount(v)} /></FormGroup></GridItem>
        <GridItem span={3}><FormGroup label="CPU cores" fieldId="cpu"><TextInput id="cpu" type="number" min={0} value={cpu} onChange={(_e, v) => setCpu(v)} /></FormGroup></GridItem>
        <GridItem span={3}><FormGroup label="Memory (GiB)" fieldId="mem"><TextInput id="mem" type="number" min={0} value={mem} onChange={(_e, v) => setMem(v)} /></FormGroup></GridItem>
      </Grid>
      <FormGroup label="Variables and override rules" fieldId="rules">
        {!template ? <HelperText><HelperTextItem>Choose a template to set rules for its variables.</HelperTextItem></HelperText>
          : !(template.spec?.variables ?? []).length ? <HelperText><HelperTextItem>The template declares no variables.</HelperTextItem></HelperText> : (
            <Table aria-label="Variable rules" variant="compact">
              <Thead><Tr><Th width={20}>Variable</Th><Th modifier="fitContent">Type</Th><Th width={20}>Users may override</Th><Th width={20}>Default</Th><Th width={25}>Allowed values (restricted)</Th><Th modifier="fitContent">Required</Th></Tr></Thead>
              <Tbody>
                {(template.spec?.variables ?? []).map((d) => {
                  const r = rules[d.name] ?? { name: d.name };
                  return (
                    <Tr key={d.name}>
                      <Td>{d.name}<div className="gantry-muted" style={{ fontSize: 12 }}>{d.description}</div></Td>
                      <Td>{d.type ?? 'string'}</Td>
                      <Td>
                        <FormSelect aria-label={`override ${d.name}`} value={r.override ?? 'allowed'} onChange={(_e, v) => setRule(d.name, { override: v as Rule['override'] })}>
                          <FormSelectOption value="allowed" label="Allowed" />
                          <FormSelectOption value="restricted" label="Restricted to values" />
                          <FormSelectOption value="notallowed" label="Not allowed" />
                        </FormSelect>
                      </Td>
                      <Td><TextInput aria-label={`default ${d.name}`} value={r.default ?? ''} placeholder={d.sensitive ? '' : d.default ?? ''} type={d.sensitive ? 'password' : 'text'} onChange={(_e, v) => setRule(d.name, { default: v })} /></Td>
                      <Td><TextInput aria-label={`allowed values ${d.name}`} value={r.allowedText ?? ''} isDisabled={r.override !== 'restricted'} placeholder="a, b, c" onChange={(_e, v) => setRule(d.name, { allowedText: v })} /></Td>
                      <Td><Checkbox id={`required-${d.name}`} aria-label={`required ${d.name}`} isChecked={!!r.required} onChange={(_e, v) => setRule(d.name, { required: v })} /></Td>
                    </Tr>
                  );
                })}
              </Tbody>
            </Table>
          )}
      </FormGroup>
      <ActionGroup>
        <Button type="submit" isLoading={busy} isDisabled={busy || !name || !!problem || !templateKey}>{existing ? 'Save (new revision)' : 'Create'}</Button>
        <Button variant="link" onClick={() => navigate(`/p/${encodeURIComponent(project)}/profiles`)}>Cancel</Button>
      </ActionGroup>
    </Form>
  );
  return (
    <>
      {toasts.view}
      <PageSection variant="light">
        <Breadcrumb style={{ marginBottom: 8 }}>
          <BreadcrumbItem><Link to={`/p/${encodeURIComponent(project)}/profiles`}>Compute Profiles</Link></BreadcrumbItem>
          <BreadcrumbItem isActive>{existing ?? 'New'}</BreadcrumbItem>
        </Breadcrumb>
        <Title headingLevel="h1">{existing ? `${obj?.spec?.displayName || existing}` : 'New Compute Profile'}</Title>
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
