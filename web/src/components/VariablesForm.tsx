// The variables a profile lets users override, with inputs typed by the template's
// declarations (number, bool, enum) and the profile's rules (restricted → allowed values).
import { FormGroup, FormSelect, FormSelectOption, HelperText, HelperTextItem, Switch, TextInput, Label } from '@patternfly/react-core';
import type { EnvironmentTemplate, ComputeProfile } from '../api/types';

export interface VariableView {
  name: string; type: string; policy: string; defaultValue?: string; description?: string;
  required: boolean; sensitive: boolean; choices?: string[];
}

export function variableViews(profile?: ComputeProfile | null, template?: EnvironmentTemplate | null): VariableView[] {
  const rules = new Map((profile?.spec?.variables ?? []).map((r) => [r.name, r]));
  const decls = template?.spec?.variables;
  // Without the template (not readable here) the profile's rules are all we know.
  const names = decls ? decls.map((d) => d.name) : [...rules.keys()];
  return names.map((name) => {
    const d = decls?.find((x) => x.name === name);
    const r = rules.get(name);
    const type = d?.type ?? 'string';
    const policy = r?.override ?? 'allowed';
    const choices = policy === 'restricted' ? r?.allowedValues : type === 'enum' ? d?.allowedValues : undefined;
    return {
      name, type, policy, choices,
      defaultValue: r?.default ?? d?.default,
      description: r?.description ?? d?.description,
      required: !!(r?.required || d?.required),
      sensitive: !!(r?.sensitive || d?.sensitive),
    };
  });
}

export function VariablesForm({ views, values, onChange }: {
  views: VariableView[]; values: Record<string, string>; onChange: (v: Record<string, string>) => void;
}) {
  const set = (name: string, v: string | undefined) => {
    const next = { ...values };
    if (v === undefined || v === '') delete next[name]; else next[name] = v;
    onChange(next);
  };
  const editable = views.filter((v) => v.policy !== 'notallowed');
  const fixed = views.filter((v) => v.policy === 'notallowed');
  return (
    <>
      {editable.length === 0 && <p>This profile lets users override no variables.</p>}
      {editable.map((v) => {
        const id = `var-${v.name}`;
        const value = values[v.name] ?? '';
        const helper = [v.description, v.defaultValue !== undefined && v.defaultValue !== '' ? `Default: ${v.sensitive ? '(hidden)' : v.defaultValue}` : '',
          v.policy === 'restricted' ? 'Restricted by the profile to the listed values.' : ''].filter(Boolean).join(' · ');
        let input;
        if (v.choices?.length) {
          input = (
            <FormSelect id={id} value={value} onChange={(_e, x) => set(v.name, x)} aria-label={v.name}>
              <FormSelectOption value="" label={v.defaultValue ? `Default (${v.defaultValue})` : 'Choose a value'} />
              {v.choices.map((c) => <FormSelectOption key={c} value={c} label={c} />)}
            </FormSelect>
          );
        } else if (v.type === 'bool') {
          const on = (value || v.defaultValue) === 'true';
          input = <Switch id={id} label="true" labelOff="false" isChecked={on} onChange={(_e, x) => set(v.name, x ? 'true' : 'false')} aria-label={v.name} />;
        } else {
          input = (
            <TextInput id={id} value={value} type={v.sensitive ? 'password' : v.type === 'number' ? 'number' : 'text'}
              placeholder={v.sensitive && value === '' ? '' : v.defaultValue ?? ''} onChange={(_e, x) => set(v.name, x)} aria-label={v.name}
              autoComplete="off" />
          );
        }
        return (
          <FormGroup key={v.name} fieldId={id} isRequired={v.required && !v.defaultValue}
            label={<>{v.name} <Label isCompact>{v.type}</Label>{v.sensitive && <> <Label isCompact color="orange">sensitive</Label></>}</>}>
            {input}
            {helper && <HelperText><HelperTextItem>{helper}</HelperTextItem></HelperText>}
          </FormGroup>
        );
      })}
      {fixed.length > 0 && (
        <HelperText>
          <HelperTextItem>Set by the profile (not overridable): {fixed.map((v) => `${v.name}${v.defaultValue ? ` = ${v.sensitive ? '(hidden)' : v.defaultValue}` : ''}`).join(', ')}</HelperTextItem>
        </HelperText>
      )}
    </>
  );
}
