// Compute Profiles (PaaS Admins): list, create, edit (resources, template, override rules, the
// lifecycle policy: ttl, idle reclaim, schedule), revisions, sharing, delete.
import { useEffect, useState } from 'react';
import { useNavigate, useParams } from 'react-router-dom';
import { Form, FormGroup, FormSelect, FormSelectOption, Grid, GridItem, HelperText, HelperTextItem, TextInput } from '@patternfly/react-core';
import { collectionPath, get } from '../api/client';
import type { ComputeProfile, EnvironmentTemplate, List } from '../api/types';
import { ErrorAlert, Loading } from '../components/common';
import { VariableEditor, rowsFrom, rulesFrom, type VariableRow } from '../components/VariableEditor';
import { EditorActions, EditorPage, NameFields, VersionedListPage, useVersionedEditor } from '../components/Versioned';
import { LifecycleFields, lifecycleForm, lifecycleSpec, type LifecycleForm } from '../components/LifecycleViews';
import { profileLifecycle } from '../components/lifecycle';

const PLURAL = 'computeprofiles';
const ROUTE = 'profiles';

export function ProfilesPage() {
  return (
    <VersionedListPage<ComputeProfile> plural={PLURAL} route={ROUTE} title="Compute Profiles" kindLabel="compute profile"
      intro="Versioned compute SKUs users launch instances from. Editing one affects only instances launched (or upgraded) afterwards."
      newText="New Compute Profile" emptyTitle="No compute profiles" deleteExtra="Profiles used by instances cannot be deleted."
      columns={[
        { title: 'Template', cell: (p) => p.spec?.templateRef?.name },
        { title: 'GPUs', cell: (p) => (p.spec?.resources?.gpu?.count ? `${p.spec.resources.gpu.count}× ${p.spec.resources.gpu.type ?? 'any'}` : '—') },
        { title: 'Time-to-live', cell: (p) => { const t = profileLifecycle(p).ttl; return t ? `${t.default ?? '—'} (max ${t.max ?? '—'})` : '—'; } },
      ]} />
  );
}

// The environment templates this project can use, and the chooser of one ("NAMESPACE/NAME").
export function useTemplates(project: string, onError: (e: unknown) => void) {
  const [templates, setTemplates] = useState<EnvironmentTemplate[]>([]);
  useEffect(() => {
    get<List<EnvironmentTemplate>>(collectionPath('environmenttemplates', project) + '?limit=500').then((l) => setTemplates(l.items)).catch(onError);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [project]);
  return templates;
}

export function TemplateSelect({ id, templates, value, onChange }: { id: string; templates: EnvironmentTemplate[]; value: string; onChange: (v: string) => void }) {
  return (
    <FormGroup label="Environment Template" isRequired fieldId={id}>
      <FormSelect id={id} value={value} onChange={(_e, v) => onChange(v)}>
        <FormSelectOption value="" label="Choose a template" isPlaceholder />
        {templates.map((t) => {
          const k = `${t.metadata?.namespace}/${t.metadata?.name}`;
          return <FormSelectOption key={k} value={k} label={`${t.spec?.displayName || t.metadata?.name} (${k}, ${t.spec?.driver})`} />;
        })}
      </FormSelect>
    </FormGroup>
  );
}

// "NAMESPACE/NAME" ↔ a reference ({name} in this project, {name, namespace} in another).
export const refKey = (ref: { name?: string; namespace?: string } | undefined, project: string) => (ref?.name ? `${ref.namespace || project}/${ref.name}` : '');
export function keyRef(key: string, project: string): { name: string; namespace?: string } {
  const [ns, name] = key.split('/');
  return ns && ns !== project ? { name, namespace: ns } : { name };
}

export function ProfileEditor() {
  const { name: existing } = useParams();
  const navigate = useNavigate();
  const [templateKey, setTemplateKey] = useState('');
  const [gpuType, setGpuType] = useState('');
  const [gpuCount, setGpuCount] = useState('');
  const [cpu, setCpu] = useState('');
  const [mem, setMem] = useState('');
  const [rows, setRows] = useState<VariableRow[]>([]);
  const [lifecycle, setLifecycle] = useState<LifecycleForm>(lifecycleForm({}));
  const ed = useVersionedEditor<ComputeProfile>({
    plural: PLURAL, kind: 'ComputeProfile', route: ROUTE, existing, onLoad: (p) => {
      setTemplateKey(refKey(p.spec?.templateRef, p.metadata?.namespace ?? ''));
      setGpuType(p.spec?.resources?.gpu?.type ?? '');
      setGpuCount(p.spec?.resources?.gpu?.count !== undefined ? String(p.spec.resources.gpu.count) : '');
      setCpu(p.spec?.resources?.cpu !== undefined ? String(p.spec.resources.cpu) : '');
      setMem(p.spec?.resources?.memoryGiB !== undefined ? String(p.spec.resources.memoryGiB) : '');
      setRows(rowsFrom(p.spec?.variables));
      setLifecycle(lifecycleForm(profileLifecycle(p)));
    },
  });
  const { project } = ed;
  const templates = useTemplates(project, ed.setError);
  const template = templates.find((t) => `${t.metadata?.namespace}/${t.metadata?.name}` === templateKey);

  const save = () => {
    const resources: NonNullable<ComputeProfile['spec']>['resources'] = {};
    if (gpuCount || gpuType) resources.gpu = { ...(gpuType ? { type: gpuType } : {}), ...(gpuCount ? { count: Number(gpuCount) } : {}) };
    if (cpu) resources.cpu = Number(cpu);
    if (mem) resources.memoryGiB = Number(mem);
    const spec: Record<string, unknown> = {
      ...(ed.obj?.spec ?? {}), templateRef: keyRef(templateKey, project), resources,
      variables: rulesFrom(rows, template?.spec?.variables ?? []),
    };
    const policy = lifecycleSpec(lifecycle);
    if (policy) spec.lifecycle = policy; else delete spec.lifecycle;
    return ed.save(spec);
  };
  if (ed.loading) return <Loading />;
  const form = (
    <Form onSubmit={(e) => { e.preventDefault(); void save(); }} style={{ maxWidth: 1100 }}>
      <ErrorAlert error={ed.error} />
      <NameFields idPrefix="profile" ed={ed} existing={existing} />
      <TemplateSelect id="profile-template" templates={templates} value={templateKey} onChange={setTemplateKey} />
      <Grid hasGutter>
        <GridItem span={3}><FormGroup label="GPU type" fieldId="gpu-type"><TextInput id="gpu-type" value={gpuType} onChange={(_e, v) => setGpuType(v)} placeholder="any" /></FormGroup></GridItem>
        <GridItem span={3}><FormGroup label="GPUs" fieldId="gpu-count"><TextInput id="gpu-count" type="number" min={0} value={gpuCount} onChange={(_e, v) => setGpuCount(v)} /></FormGroup></GridItem>
        <GridItem span={3}><FormGroup label="CPU cores" fieldId="cpu"><TextInput id="cpu" type="number" min={0} value={cpu} onChange={(_e, v) => setCpu(v)} /></FormGroup></GridItem>
        <GridItem span={3}><FormGroup label="Memory (GiB)" fieldId="mem"><TextInput id="mem" type="number" min={0} value={mem} onChange={(_e, v) => setMem(v)} /></FormGroup></GridItem>
      </Grid>
      <FormGroup label="Variables and override rules" fieldId="rules">
        {!template ? <HelperText><HelperTextItem>Choose a template to set rules for its variables.</HelperTextItem></HelperText>
          : <VariableEditor rows={rows} onChange={setRows} declared={template.spec?.variables ?? []} />}
      </FormGroup>
      <LifecycleFields form={lifecycle} onChange={setLifecycle} error={ed.error} />
      <EditorActions existing={existing} busy={ed.busy} disabled={!ed.name || !!ed.problem || !templateKey} onCancel={() => navigate(`/p/${encodeURIComponent(project)}/${ROUTE}`)} />
    </Form>
  );
  return <EditorPage plural={PLURAL} route={ROUTE} listTitle="Compute Profiles" newTitle="New Compute Profile" existing={existing} obj={ed.obj} toastsView={ed.toasts.view} form={form} />;
}
