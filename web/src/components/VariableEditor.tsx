// The one editor of variables, in two modes:
// - declarations (Environment Templates): free rows — name, type, default, enum values,
//   description, required, sensitive; rows can be added and removed;
// - rules (Compute Profiles, Service Profiles): one row per variable the template declares —
//   whether users may override it (allowed / restricted to values / not allowed), default,
//   allowed values, description, required, sensitive (profile rules have the same fields).
import { Button, Checkbox, FormSelect, FormSelectOption, HelperText, HelperTextItem, TextInput } from '@patternfly/react-core';
import MinusCircleIcon from '@patternfly/react-icons/dist/esm/icons/minus-circle-icon';
import PlusCircleIcon from '@patternfly/react-icons/dist/esm/icons/plus-circle-icon';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import type { ProfileVariableRule, TemplateVariable } from '../api/types';

type Override = NonNullable<ProfileVariableRule['override']>;
type VarType = NonNullable<TemplateVariable['type']>;

export interface VariableRow {
  name: string;
  type?: VarType;           // declarations only
  override?: Override;      // rules only
  default?: string;
  allowedText?: string;     // "a, b, c": enum values (declarations) or restricted values (rules)
  description?: string;
  required?: boolean;
  sensitive?: boolean;
}

const splitList = (s?: string) => (s ?? '').split(',').map((x) => x.trim()).filter(Boolean);

export function rowsFrom(vars?: Array<TemplateVariable | ProfileVariableRule>): VariableRow[] {
  return (vars ?? []).map((v) => ({ ...v, allowedText: (v.allowedValues ?? []).join(', ') }) as VariableRow);
}

export function declarationsFrom(rows: VariableRow[]): TemplateVariable[] {
  return rows.filter((v) => v.name).map((v) => {
    const out: TemplateVariable = { name: v.name, type: v.type ?? 'string' };
    if (v.default) out.default = v.default;
    if (v.description) out.description = v.description;
    if (v.required) out.required = true;
    if (v.sensitive) out.sensitive = true;
    if (v.type === 'enum') out.allowedValues = splitList(v.allowedText);
    return out;
  });
}

// The rules for the variables `declared` by the template (rules of variables it no longer
// declares are dropped).
export function rulesFrom(rows: VariableRow[], declared: TemplateVariable[]): ProfileVariableRule[] {
  const byName = new Map(rows.map((r) => [r.name, r]));
  return declared.map((d) => byName.get(d.name)).filter((r): r is VariableRow => !!r).map((r) => {
    const out: ProfileVariableRule = { name: r.name, override: r.override ?? 'allowed' };
    if (r.default) out.default = r.default;
    if (r.override === 'restricted') out.allowedValues = splitList(r.allowedText);
    if (r.description) out.description = r.description;
    if (r.required) out.required = true;
    if (r.sensitive) out.sensitive = true;
    return out;
  });
}

export function VariableEditor({ rows, onChange, declared }: {
  rows: VariableRow[];
  onChange: (rows: VariableRow[]) => void;
  // Rules mode: the template's declarations (undefined: declarations mode).
  declared?: TemplateVariable[];
}) {
  const rules = declared !== undefined;
  if (rules && !declared.length) {
    return <HelperText><HelperTextItem>The template declares no variables.</HelperTextItem></HelperText>;
  }
  // In rules mode a row exists per declaration, created on the first edit.
  const shown: Array<{ row: VariableRow; decl?: TemplateVariable }> = rules
    ? declared.map((d) => ({ row: rows.find((r) => r.name === d.name) ?? { name: d.name }, decl: d }))
    : rows.map((row) => ({ row }));
  const set = (i: number, patch: Partial<VariableRow>) => {
    if (!rules) { onChange(rows.map((r, j) => (j === i ? { ...r, ...patch } : r))); return; }
    const name = shown[i].row.name;
    const exists = rows.some((r) => r.name === name);
    onChange(exists ? rows.map((r) => (r.name === name ? { ...r, ...patch, name } : r)) : [...rows, { name, ...patch }]);
  };
  const label = (i: number, what: string) => (rules ? `${what} ${shown[i].row.name}` : `variable ${i + 1} ${what}`);
  return (
    <>
      <Table aria-label={rules ? 'Variable rules' : 'Template variables'} variant="compact">
        <Thead>
          <Tr>
            <Th width={15}>{rules ? 'Variable' : 'Name'}</Th>
            <Th width={10}>Type</Th>
            {rules && <Th width={15}>Users may override</Th>}
            <Th width={15}>Default</Th>
            <Th width={15}>{rules ? 'Allowed values (restricted)' : 'Allowed values (enum)'}</Th>
            <Th width={20}>Description</Th>
            <Th modifier="fitContent">Required</Th>
            <Th modifier="fitContent">Sensitive</Th>
            {!rules && <Th screenReaderText="Remove" />}
          </Tr>
        </Thead>
        <Tbody>
          {shown.map(({ row: r, decl }, i) => (
            <Tr key={rules ? r.name : i}>
              <Td>{rules ? <>{r.name}<div className="gantry-muted" style={{ fontSize: 12 }}>{decl?.description}</div></>
                : <TextInput aria-label={label(i, 'name')} value={r.name} onChange={(_e, x) => set(i, { name: x.trim() })} />}</Td>
              <Td>{rules ? decl?.type ?? 'string' : (
                <FormSelect style={{ minWidth: 110 }} aria-label={label(i, 'type')} value={r.type ?? 'string'} onChange={(_e, x) => set(i, { type: x as VarType })}>
                  {['string', 'number', 'bool', 'enum'].map((t) => <FormSelectOption key={t} value={t} label={t} />)}
                </FormSelect>
              )}</Td>
              {rules && (
                <Td>
                  <FormSelect aria-label={`override ${r.name}`} value={r.override ?? 'allowed'} onChange={(_e, v) => set(i, { override: v as Override })}>
                    <FormSelectOption value="allowed" label="Allowed" />
                    <FormSelectOption value="restricted" label="Restricted to values" />
                    <FormSelectOption value="notallowed" label="Not allowed" />
                  </FormSelect>
                </Td>
              )}
              <Td><TextInput aria-label={rules ? `default ${r.name}` : label(i, 'default')} value={r.default ?? ''}
                placeholder={decl && !decl.sensitive ? decl.default ?? '' : ''} type={decl?.sensitive || (rules && r.sensitive) ? 'password' : 'text'}
                onChange={(_e, x) => set(i, { default: x })} /></Td>
              <Td><TextInput aria-label={rules ? `allowed values ${r.name}` : label(i, 'allowed values')} value={r.allowedText ?? ''}
                isDisabled={rules ? r.override !== 'restricted' : r.type !== 'enum'} placeholder="a, b, c" onChange={(_e, x) => set(i, { allowedText: x })} /></Td>
              <Td><TextInput aria-label={rules ? `description ${r.name}` : label(i, 'description')} value={r.description ?? ''}
                onChange={(_e, x) => set(i, { description: x })} /></Td>
              <Td><Checkbox id={`${rules ? 'rule' : 'var'}-req-${i}`} aria-label={rules ? `required ${r.name}` : label(i, 'required')} isChecked={!!r.required} onChange={(_e, x) => set(i, { required: x })} /></Td>
              <Td><Checkbox id={`${rules ? 'rule' : 'var'}-sens-${i}`} aria-label={rules ? `sensitive ${r.name}` : label(i, 'sensitive')}
                isChecked={!!r.sensitive || !!decl?.sensitive} isDisabled={!!decl?.sensitive} onChange={(_e, x) => set(i, { sensitive: x })} /></Td>
              {!rules && <Td><Button variant="plain" aria-label={`Remove variable ${i + 1}`} onClick={() => onChange(rows.filter((_, j) => j !== i))}><MinusCircleIcon /></Button></Td>}
            </Tr>
          ))}
        </Tbody>
      </Table>
      {!rules && <Button variant="link" icon={<PlusCircleIcon />} onClick={() => onChange([...rows, { name: '', type: 'string' }])}>Add variable</Button>}
    </>
  );
}
