// Editor of a string map (labels, annotations, environment): one row per key.
import { Button, Flex, FlexItem, TextInput } from '@patternfly/react-core';
import PlusCircleIcon from '@patternfly/react-icons/dist/esm/icons/plus-circle-icon';
import MinusCircleIcon from '@patternfly/react-icons/dist/esm/icons/minus-circle-icon';

export type Pair = { key: string; value: string };
export const toPairs = (m?: Record<string, string>): Pair[] => Object.entries(m ?? {}).map(([key, value]) => ({ key, value }));
export const fromPairs = (p: Pair[]): Record<string, string> =>
  Object.fromEntries(p.filter((x) => x.key.trim()).map((x) => [x.key.trim(), x.value]));

export function KeyValueEditor({ id, pairs, onChange, keyPlaceholder = 'key', valuePlaceholder = 'value', addText }: {
  id: string; pairs: Pair[]; onChange: (p: Pair[]) => void; keyPlaceholder?: string; valuePlaceholder?: string; addText: string;
}) {
  const set = (i: number, p: Partial<Pair>) => onChange(pairs.map((x, j) => (j === i ? { ...x, ...p } : x)));
  return (
    <div id={id}>
      {pairs.map((p, i) => (
        <Flex key={i} spaceItems={{ default: 'spaceItemsSm' }} style={{ marginBottom: 8 }} flexWrap={{ default: 'nowrap' }}>
          <FlexItem grow={{ default: 'grow' }}>
            <TextInput aria-label={`${id} key ${i + 1}`} placeholder={keyPlaceholder} value={p.key} onChange={(_e, v) => set(i, { key: v })} />
          </FlexItem>
          <FlexItem grow={{ default: 'grow' }}>
            <TextInput aria-label={`${id} value ${i + 1}`} placeholder={valuePlaceholder} value={p.value} onChange={(_e, v) => set(i, { value: v })} />
          </FlexItem>
          <FlexItem>
            <Button variant="plain" aria-label={`Remove ${id} ${i + 1}`} onClick={() => onChange(pairs.filter((_, j) => j !== i))}><MinusCircleIcon /></Button>
          </FlexItem>
        </Flex>
      ))}
      <Button variant="link" icon={<PlusCircleIcon />} onClick={() => onChange([...pairs, { key: '', value: '' }])}>{addText}</Button>
    </div>
  );
}
