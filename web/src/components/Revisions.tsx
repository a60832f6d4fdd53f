// The immutable revisions of a template or profile (…/NAME/revisions), newest first, each
// expandable to its spec.
import { useEffect, useState } from 'react';
import { ExpandableSection } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { get, objectPath } from '../api/client';
import { ErrorAlert, formatDate } from './common';

interface Revision { metadata?: { name?: string; creationTimestamp?: string }; revision: number; spec: unknown }

export function Revisions({ plural, project, name, current }: { plural: string; project: string; name: string; current?: number }) {
  const [items, setItems] = useState<Revision[]>([]);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    get<{ items: Revision[] }>(`${objectPath(plural, project, name)}/revisions`)
      .then((l) => setItems([...l.items].sort((a, b) => b.revision - a.revision))).catch(setError);
  }, [plural, project, name, current]);
  return (
    <>
      <ErrorAlert error={error} />
      <Table aria-label="Revisions" variant="compact">
        <Thead><Tr><Th width={10}>Revision</Th><Th width={20}>Created</Th><Th>Spec</Th></Tr></Thead>
        <Tbody>
          {items.map((r) => (
            <Tr key={r.revision}>
              <Td>{r.revision}{r.revision === current ? ' (current)' : ''}</Td>
              <Td>{formatDate(r.metadata?.creationTimestamp)}</Td>
              <Td>
                <ExpandableSection toggleText="Show spec">
                  <pre style={{ fontSize: 12, whiteSpace: 'pre-wrap' }}>{JSON.stringify(r.spec, null, 2)}</pre>
                </ExpandableSection>
              </Td>
            </Tr>
          ))}
        </Tbody>
      </Table>
    </>
  );
}
