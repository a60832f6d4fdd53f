// Audit log (admins): who did what, filtered by user, object and time, paged on the server.
import { useEffect, useState } from 'react';
import { Button, Flex, PageSection, TextInput, Title, Text, Toolbar, ToolbarContent, ToolbarItem, Label } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { collectionPath, get, query } from '../api/client';
import type { AuditEvent, List } from '../api/types';
import { Empty, ErrorAlert, Loading, formatDate } from '../components/common';

export function AuditPage() {
  const [user, setUser] = useState('');
  const [object, setObject] = useState('');
  const [since, setSince] = useState('');
  const [applied, setApplied] = useState({ user: '', object: '', since: '' });
  const [tokens, setTokens] = useState<string[]>(['']);
  const [page, setPage] = useState(0);
  const [list, setList] = useState<List<AuditEvent> | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    setList(null);
    const sinceIso = applied.since ? new Date(applied.since).toISOString() : undefined;
    get<List<AuditEvent>>(collectionPath('auditevents') + query({ user: applied.user, object: applied.object, since: sinceIso, limit: 50, continue: tokens[page] }))
      .then((l) => { setList(l); setError(null); }).catch((e) => { setError(e); setList({ items: [] }); });
  }, [applied, tokens, page]);
  const apply = () => { setApplied({ user, object, since }); setTokens(['']); setPage(0); };
  return (
    <>
      <PageSection variant="light">
        <Title headingLevel="h1">Audit Log</Title>
        <Text className="gantry-muted">Every API request that changed something or was refused: who, what, when, and the outcome.</Text>
      </PageSection>
      <PageSection>
        <ErrorAlert error={error} />
        <Toolbar>
          <ToolbarContent>
            <ToolbarItem><TextInput aria-label="User" placeholder="user" value={user} onChange={(_e, v) => setUser(v)} /></ToolbarItem>
            <ToolbarItem><TextInput aria-label="Object" placeholder="RESOURCE/[PROJECT/]NAME" value={object} onChange={(_e, v) => setObject(v)} /></ToolbarItem>
            <ToolbarItem><TextInput aria-label="Since" type="datetime-local" value={since} onChange={(_e, v) => setSince(v)} /></ToolbarItem>
            <ToolbarItem><Button onClick={apply}>Filter</Button></ToolbarItem>
            <ToolbarItem align={{ default: 'alignRight' }}>
              <Flex alignItems={{ default: 'alignItemsCenter' }} spaceItems={{ default: 'spaceItemsSm' }}>
                <Button variant="control" isDisabled={page === 0} onClick={() => setPage(page - 1)}>‹ Previous</Button>
                <span>Page {page + 1}</span>
                <Button variant="control" isDisabled={!list?.metadata?.continue} onClick={() => { setTokens((t) => [...t.slice(0, page + 1), list?.metadata?.continue ?? '']); setPage(page + 1); }}>Next ›</Button>
              </Flex>
            </ToolbarItem>
          </ToolbarContent>
        </Toolbar>
        {list === null ? <Loading /> : list.items.length === 0 ? (!error && <Empty title="No audit events match" />) : (
          <Table aria-label="Audit events" variant="compact">
            <Thead><Tr><Th modifier="nowrap">Time</Th><Th>User</Th><Th>Verb</Th><Th>Object</Th><Th>Result</Th><Th>Message</Th><Th>Source</Th></Tr></Thead>
            <Tbody>
              {list.items.map((e) => (
                <Tr key={e.metadata.name}>
                  <Td>{formatDate(e.time)}</Td>
                  <Td>{e.user}</Td>
                  <Td>{e.verb}</Td>
                  <Td>{[e.objectRef?.resource, e.objectRef?.namespace, e.objectRef?.name, e.objectRef?.subresource].filter(Boolean).join('/')}</Td>
                  <Td><Label isCompact color={e.result === 'Allowed' ? 'green' : e.result === 'Denied' ? 'orange' : 'red'}>{e.result}{e.code ? ` ${e.code}` : ''}</Label></Td>
                  <Td>{e.message}</Td>
                  <Td>{e.sourceAddress}</Td>
                </Tr>
              ))}
            </Tbody>
          </Table>
        )}
      </PageSection>
    </>
  );
}
