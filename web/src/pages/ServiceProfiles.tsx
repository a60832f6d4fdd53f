// Service Profiles (PaaS Admins): managed services (notebook, MLOps, Ray, inference) users
// deploy onto compute instances. List, create, edit (service type, template, which compute
// profiles it runs on, auto-create compute, override rules), revisions, sharing, delete.
import { useEffect, useState } from 'react';
import { useNavigate, useParams } from 'react-router-dom';
import { Form, FormGroup, FormSelect, FormSelectOption, HelperText, HelperTextItem, Label, Switch, TextInput, Title } from '@patternfly/react-core';
import { collectionPath, get, objectPath } from '../api/client';
import type { ComputeProfile, EnvironmentTemplate, List, ServiceProfile } from '../api/types';
import { ErrorAlert, Loading } from '../components/common';
import { SelectorEditor, selectorFrom, selectorRows, selectorText, type SelectorRows } from '../components/SelectorEditor';
import { VariableEditor, rowsFrom, rulesFrom, type VariableRow } from '../components/VariableEditor';
import { VariablesForm, variableViews } from '../components/VariablesForm';
import { EditorActions, EditorPage, NameFields, VersionedListPage, useVersionedEditor } from '../components/Versioned';
import { TemplateSelect, keyRef, refKey, useTemplates } from './Profiles';

const PLURAL = 'serviceprofiles';
const ROUTE = 'serviceprofiles';
const SERVICE_TYPES = ['notebook', 'mlops', 'ray', 'inference'];

export function ServiceProfilesPage() {
  return (
    <VersionedListPage<ServiceProfile> plural={PLURAL} route={ROUTE} title="Service Profiles" kindLabel="service profile"
      intro="Versioned managed services (notebooks, MLOps platforms, Ray, inference) users deploy onto compute instances."
      newText="New Service Profile" emptyTitle="No service profiles" deleteExtra="Profiles used by service instances cannot be deleted."
      columns={[
        { title: 'Service Type', cell: (p) => <Label isCompact color="cyan">{p.spec?.serviceType}</Label> },
        { title: 'Template', cell: (p) => p.spec?.templateRef?.name },
        { title: 'Runs On', cell: (p) => selectorText(p.spec?.computeSelector) },
        { title: 'Auto-create Compute', cell: (p) => p.spec?.autoCreateCompute?.profileRef?.name ?? '—' },
      ]} />
  );
}

export function ServiceProfileEditor() {
  const { name: existing } = useParams();
  const navigate = useNavigate();
  const [serviceType, setServiceType] = useState('');
  const [templateKey, setTemplateKey] = useState('');
  const [selector, setSelector] = useState<SelectorRows>({ labels: [], expressions: [] });
  const [autoCreate, setAutoCreate] = useState(false);
  const [computeKey, setComputeKey] = useState('');
  const [computeValues, setComputeValues] = useState<Record<string, string>>({});
  const [rows, setRows] = useState<VariableRow[]>([]);
  const [computeProfiles, setComputeProfiles] = useState<ComputeProfile[]>([]);
  const [computeTemplate, setComputeTemplate] = useState<EnvironmentTemplate | null>(null);
  const ed = useVersionedEditor<ServiceProfile>({
    plural: PLURAL, kind: 'ServiceProfile', route: ROUTE, existing, onLoad: (p) => {
      const ns = p.metadata?.namespace ?? '';
      setServiceType(p.spec?.serviceType ?? '');
      setTemplateKey(refKey(p.spec?.templateRef, ns));
      setSelector(selectorRows(p.spec?.computeSelector));
      setAutoCreate(!!p.spec?.autoCreateCompute?.profileRef?.name);
      setComputeKey(refKey(p.spec?.autoCreateCompute?.profileRef, ns));
      setComputeValues(Object.fromEntries(Object.entries(p.spec?.autoCreateCompute?.variables ?? {}).map(([k, v]) => [k, String(v)])));
      setRows(rowsFrom(p.spec?.variables));
    },
  });
  const { project } = ed;
  const templates = useTemplates(project, ed.setError);
  const template = templates.find((t) => `${t.metadata?.namespace}/${t.metadata?.name}` === templateKey);
  useEffect(() => {
    get<List<ComputeProfile>>(collectionPath('computeprofiles', project) + '?limit=500').then((l) => setComputeProfiles(l.items)).catch(ed.setError);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [project]);
  const computeProfile = computeProfiles.find((p) => `${p.metadata?.namespace}/${p.metadata?.name}` === computeKey);
  // The auto-created compute's variables are typed by its profile's template.
  useEffect(() => {
    setComputeTemplate(null);
    const t = computeProfile?.spec?.templateRef;
    if (!t?.name) return;
    get<EnvironmentTemplate>(objectPath('environmenttemplates', t.namespace || computeProfile?.metadata?.namespace || project, t.name))
      .then(setComputeTemplate).catch(() => setComputeTemplate(null));
  }, [computeProfile, project]);

  const save = () => ed.save({
    serviceType: serviceType.trim(), templateRef: keyRef(templateKey, project),
    computeSelector: selectorFrom(selector),
    autoCreateCompute: autoCreate && computeKey ? { profileRef: keyRef(computeKey, project), variables: computeValues } : undefined,
    variables: rulesFrom(rows, template?.spec?.variables ?? []),
  });
  if (ed.loading) return <Loading />;
  const form = (
    <Form onSubmit={(e) => { e.preventDefault(); void save(); }} style={{ maxWidth: 1100 }}>
      <ErrorAlert error={ed.error} />
      <NameFields idPrefix="sp" ed={ed} existing={existing} side={
        <FormGroup label="Service Type" isRequired fieldId="sp-service-type">
          <TextInput id="sp-service-type" value={serviceType} onChange={(_e, v) => setServiceType(v)} list="service-types" placeholder="notebook" />
          <datalist id="service-types">{SERVICE_TYPES.map((t) => <option key={t} value={t} />)}</datalist>
          <HelperText><HelperTextItem>Free text: notebook, mlops, ray, inference…</HelperTextItem></HelperText>
        </FormGroup>
      } />
      <TemplateSelect id="sp-template" templates={templates} value={templateKey} onChange={setTemplateKey} />
      <Title headingLevel="h2" size="md">Runs on</Title>
      <FormGroup fieldId="selector-labels" label="Compute selector">
        <HelperText><HelperTextItem>Which compute instances can host this service: a selector over the labels of their compute profile. Empty: any compute. Now: <b data-testid="selector-text">{selectorText(selectorFrom(selector))}</b></HelperTextItem></HelperText>
        <SelectorEditor rows={selector} onChange={setSelector} />
      </FormGroup>
      <FormGroup fieldId="sp-auto-create" label="Auto-create compute">
        <Switch id="sp-auto-create" label="Launch a dedicated compute instance for each service instance that names none" isChecked={autoCreate} onChange={(_e, v) => setAutoCreate(v)} />
      </FormGroup>
      {autoCreate && (
        <>
          <FormGroup label="Compute Profile" isRequired fieldId="sp-compute-profile">
            <FormSelect id="sp-compute-profile" value={computeKey} onChange={(_e, v) => { setComputeKey(v); setComputeValues({}); }}>
              <FormSelectOption value="" label="Choose a compute profile" isPlaceholder />
              {computeProfiles.map((p) => {
                const k = `${p.metadata?.namespace}/${p.metadata?.name}`;
                return <FormSelectOption key={k} value={k} label={`${p.spec?.displayName || p.metadata?.name} (${k})`} />;
              })}
            </FormSelect>
            <HelperText><HelperTextItem>The server creates compute instance NAME-compute in the service's project from it.</HelperTextItem></HelperText>
          </FormGroup>
          {computeProfile && <VariablesForm views={variableViews(computeProfile, computeTemplate)} values={computeValues} onChange={setComputeValues} />}
        </>
      )}
      <FormGroup label="Variables and override rules" fieldId="rules">
        {!template ? <HelperText><HelperTextItem>Choose a template to set rules for its variables.</HelperTextItem></HelperText>
          : <VariableEditor rows={rows} onChange={setRows} declared={template.spec?.variables ?? []} />}
      </FormGroup>
      <EditorActions existing={existing} busy={ed.busy} disabled={!ed.name || !!ed.problem || !templateKey || !serviceType.trim() || (autoCreate && !computeKey)}
        onCancel={() => navigate(`/p/${encodeURIComponent(project)}/${ROUTE}`)} />
    </Form>
  );
  return <EditorPage plural={PLURAL} route={ROUTE} listTitle="Service Profiles" newTitle="New Service Profile" existing={existing} obj={ed.obj} toastsView={ed.toasts.view} form={form} />;
}
