// Environment Templates (PaaS Admins): list, create, edit (driver, its configuration, variables,
// outputs), revisions, sharing, delete.
import { useState } from 'react';
import { useNavigate, useParams } from 'react-router-dom';
import { Form, FormGroup, FormSelect, FormSelectOption, HelperText, HelperTextItem, Label, TextArea, TextInput } from '@patternfly/react-core';
import type { EnvironmentTemplate } from '../api/types';
import { ErrorAlert, Loading } from '../components/common';
import { VariableEditor, declarationsFrom, rowsFrom, type VariableRow } from '../components/VariableEditor';
import { EditorActions, EditorPage, NameFields, VersionedListPage, useVersionedEditor } from '../components/Versioned';

const PLURAL = 'environmenttemplates';
const ROUTE = 'templates';
type Driver = 'exec' | 'local' | 'slurm' | 'container';

export function TemplatesPage() {
  return (
    <VersionedListPage<EnvironmentTemplate> plural={PLURAL} route={ROUTE} title="Environment Templates" kindLabel="environment template"
      intro="How instances are deployed: a driver, its configuration, the variables it accepts and the outputs it produces."
      newText="New Environment Template" emptyTitle="No environment templates" deleteExtra="Templates used by profiles cannot be deleted."
      columns={[
        { title: 'Driver', cell: (t) => <Label isCompact>{t.spec?.driver}</Label> },
        { title: 'Variables', cell: (t) => (t.spec?.variables ?? []).map((v) => v.name).join(', ') || '—' },
      ]} />
  );
}

const EXAMPLE_CONFIG: Record<Driver, string> = {
  exec: JSON.stringify({ command: ['sh', 'examples/scripts/workspace.sh'], env: { PROVISION_SECONDS: '2' }, timeoutSeconds: 120 }, null, 2),
  local: JSON.stringify({ command: ['python3', '${GANTRYD_DIR}/examples/workloads/notebook.py'], ports: [{ name: 'http' }], readiness: { httpPath: '/', port: 'http', timeoutSeconds: 60 }, restartPolicy: 'OnFailure' }, null, 2),
  slurm: '{}',
  container: JSON.stringify({ image: '${image}', ports: [{ name: 'http', containerPort: 8888 }], volumes: [{ name: 'work', mountPath: '/home/jovyan/work' }], readiness: { httpPath: '/', port: 'http' } }, null, 2),
};

export function TemplateEditor() {
  const { name: existing } = useParams();
  const navigate = useNavigate();
  const [driver, setDriver] = useState<Driver>('exec');
  const [config, setConfig] = useState(EXAMPLE_CONFIG.exec);
  const [vars, setVars] = useState<VariableRow[]>([]);
  const [outputs, setOutputs] = useState('');
  const ed = useVersionedEditor<EnvironmentTemplate>({
    plural: PLURAL, kind: 'EnvironmentTemplate', route: ROUTE, existing, onLoad: (t) => {
      const d = (t.spec?.driver ?? 'exec') as Driver;
      setDriver(d);
      setConfig(JSON.stringify((t.spec as Record<string, unknown>)?.[d] ?? {}, null, 2));
      setVars(rowsFrom(t.spec?.variables));
      setOutputs((t.spec?.outputs ?? []).join(', '));
    },
  });

  let configError = '';
  try { JSON.parse(config || '{}'); } catch (e) { configError = `Not valid JSON: ${(e as Error).message}`; }
  const save = () => ed.save({
    driver, [driver]: JSON.parse(config || '{}'), variables: declarationsFrom(vars),
    outputs: outputs.split(',').map((s) => s.trim()).filter(Boolean),
  });
  if (ed.loading) return <Loading />;
  const form = (
    <Form onSubmit={(e) => { e.preventDefault(); void save(); }} style={{ maxWidth: 1200 }}>
      <ErrorAlert error={ed.error} />
      <NameFields idPrefix="template" ed={ed} existing={existing} side={
        <FormGroup label="Driver" isRequired fieldId="template-driver">
          <FormSelect id="template-driver" value={driver} onChange={(_e, v) => { setDriver(v as Driver); if (!existing) setConfig(EXAMPLE_CONFIG[v as Driver]); }}>
            <FormSelectOption value="exec" label="exec (a script)" />
            <FormSelectOption value="local" label="local (a process on this host)" />
            <FormSelectOption value="slurm" label="slurm" />
            <FormSelectOption value="container" label="container (an image run by Podman on this host)" />
          </FormSelect>
        </FormGroup>
      } />
      <FormGroup label={`${driver} configuration (JSON)`} fieldId="template-config">
        <TextArea id="template-config" value={config} onChange={(_e, v) => setConfig(v)} rows={12} style={{ fontFamily: 'monospace' }} validated={configError ? 'error' : 'default'} />
        <HelperText>{configError ? <HelperTextItem variant="error">{configError}</HelperTextItem> : <HelperTextItem>See docs/drivers.md for the fields of each driver.</HelperTextItem>}</HelperText>
      </FormGroup>
      <FormGroup label="Variables" fieldId="template-vars">
        <VariableEditor rows={vars} onChange={setVars} />
      </FormGroup>
      <FormGroup label="Outputs" fieldId="template-outputs">
        <TextInput id="template-outputs" value={outputs} onChange={(_e, v) => setOutputs(v)} placeholder="endpoint, workspace" />
        <HelperText><HelperTextItem>Comma-separated names of the outputs a deploy produces.</HelperTextItem></HelperText>
      </FormGroup>
      <EditorActions existing={existing} busy={ed.busy} disabled={!ed.name || !!ed.problem || !!configError} onCancel={() => navigate(`/p/${encodeURIComponent(ed.project)}/${ROUTE}`)} />
    </Form>
  );
  return <EditorPage plural={PLURAL} route={ROUTE} listTitle="Environment Templates" newTitle="New Environment Template" existing={existing} obj={ed.obj} toastsView={ed.toasts.view} form={form} />;
}
