// A service profile's computeSelector: a Kubernetes label selector over the labels of compute
// profiles (matchLabels, matchExpressions with In / NotIn / Exists / DoesNotExist). The editor,
// the text kubectl would print for it, and the match the wizard uses to offer compute instances.
import { Button, Flex, FlexItem, FormSelect, FormSelectOption, HelperText, HelperTextItem, TextInput } from '@patternfly/react-core';
import MinusCircleIcon from '@patternfly/react-icons/dist/esm/icons/minus-circle-icon';
import PlusCircleIcon from '@patternfly/react-icons/dist/esm/icons/plus-circle-icon';
import type { ComputeSelector } from '../api/types';
import { KeyValueEditor, fromPairs, type Pair } from './KeyValueEditor';

type Expression = NonNullable<ComputeSelector['matchExpressions']>[number];
type Operator = Expression['operator'];
export interface ExpressionRow { key: string; operator: Operator; valuesText: string }
export interface SelectorRows { labels: Pair[]; expressions: ExpressionRow[] }

export function selectorRows(s?: ComputeSelector): SelectorRows {
  return {
    labels: Object.entries(s?.matchLabels ?? {}).map(([key, value]) => ({ key, value })),
    expressions: (s?.matchExpressions ?? []).map((e) => ({ key: e.key, operator: e.operator, valuesText: (e.values ?? []).join(', ') })),
  };
}

export function selectorFrom(rows: SelectorRows): ComputeSelector | undefined {
  const matchLabels = fromPairs(rows.labels);
  const matchExpressions: Expression[] = rows.expressions.filter((e) => e.key.trim()).map((e) => {
    const out: Expression = { key: e.key.trim(), operator: e.operator };
    if (e.operator === 'In' || e.operator === 'NotIn') out.values = e.valuesText.split(',').map((v) => v.trim()).filter(Boolean);
    return out;
  });
  if (!Object.keys(matchLabels).length && !matchExpressions.length) return undefined;
  return { ...(Object.keys(matchLabels).length ? { matchLabels } : {}), ...(matchExpressions.length ? { matchExpressions } : {}) };
}

// "tier=gpu, zone in (a, b), !spot"; "Any compute" when the selector is empty.
export function selectorText(s?: ComputeSelector): string {
  const parts = Object.entries(s?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of s?.matchExpressions ?? []) {
    if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
    else parts.push(`${e.key} ${e.operator === 'In' ? 'in' : 'notin'} (${(e.values ?? []).join(', ')})`);
  }
  return parts.length ? parts.join(', ') : 'Any compute';
}

// Whether a compute profile with `labels` satisfies the selector (Kubernetes semantics: every
// requirement holds; NotIn also holds when the key is absent).
export function selectorMatches(s: ComputeSelector | undefined, labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  for (const [k, v] of Object.entries(s?.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const e of s?.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(l, e.key);
    const values = e.values ?? [];
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
    if (e.operator === 'In' && (!has || !values.includes(l[e.key]))) return false;
    if (e.operator === 'NotIn' && has && values.includes(l[e.key])) return false;
  }
  return true;
}

export function SelectorEditor({ rows, onChange }: { rows: SelectorRows; onChange: (r: SelectorRows) => void }) {
  const setExpr = (i: number, p: Partial<ExpressionRow>) =>
    onChange({ ...rows, expressions: rows.expressions.map((e, j) => (j === i ? { ...e, ...p } : e)) });
  return (
    <>
      <HelperText><HelperTextItem>Match labels: the compute profile must carry each of these labels.</HelperTextItem></HelperText>
      <KeyValueEditor id="selector-labels" pairs={rows.labels} onChange={(labels) => onChange({ ...rows, labels })} addText="Add match label" keyPlaceholder="gpu" valuePlaceholder="h100" />
      <HelperText style={{ marginTop: 8 }}><HelperTextItem>Match expressions: requirements on a label key.</HelperTextItem></HelperText>
      {rows.expressions.map((e, i) => (
        <Flex key={i} spaceItems={{ default: 'spaceItemsSm' }} style={{ marginBottom: 6 }} flexWrap={{ default: 'nowrap' }}>
          <FlexItem grow={{ default: 'grow' }}><TextInput aria-label={`expression ${i + 1} key`} value={e.key} placeholder="key" onChange={(_e, v) => setExpr(i, { key: v })} /></FlexItem>
          <FlexItem>
            <FormSelect aria-label={`expression ${i + 1} operator`} value={e.operator} onChange={(_e, v) => setExpr(i, { operator: v as Operator })} style={{ minWidth: 140 }}>
              {(['In', 'NotIn', 'Exists', 'DoesNotExist'] as const).map((o) => <FormSelectOption key={o} value={o} label={o} />)}
            </FormSelect>
          </FlexItem>
          <FlexItem grow={{ default: 'grow' }}><TextInput aria-label={`expression ${i + 1} values`} value={e.valuesText} placeholder="a, b"
            isDisabled={e.operator === 'Exists' || e.operator === 'DoesNotExist'} onChange={(_e, v) => setExpr(i, { valuesText: v })} /></FlexItem>
          <FlexItem><Button variant="plain" aria-label={`Remove expression ${i + 1}`} onClick={() => onChange({ ...rows, expressions: rows.expressions.filter((_, j) => j !== i) })}><MinusCircleIcon /></Button></FlexItem>
        </Flex>
      ))}
      <Button variant="link" isInline icon={<PlusCircleIcon />} onClick={() => onChange({ ...rows, expressions: [...rows.expressions, { key: '', operator: 'In', valuesText: '' }] })}>Add match expression</Button>
    </>
  );
}
