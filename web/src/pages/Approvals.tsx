// Approvals inbox (issue 20; docs/approvals.md): the project's compute instances whose deploy
// or start waits for approval (phase Waiting, reason PendingApproval), with what is asked, who
// asked and until when, and Approve / Reject with an optional message. The server decides who
// may answer (another project-admin or PaaS Admin; an org-admin also their own): its 403 is
// shown as it comes. Refreshed live from a watch of the project's compute instances.
import { useCallback, useEffect, useState } from 'react';
import { Link } from 'react-router-dom';
import { Button, Flex, PageSection, Text, TextInput, Title } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { collectionPath, get, objectPath, post, watch } from '../api/client';
import type { ComputeInstance, List } from '../api/types';
import { useCurrentProject } from '../project';
import { Empty, ErrorAlert, Loading, formatDate } from '../components/common';
import { useToasts } from '../components/toasts';

const pending = (i: ComputeInstance) =>
  i.status?.reason === 'PendingApproval' && i.status?.approval?.state === 'Pending';

export function ApprovalsPage() {
  const project = useCurrentProject();
  const toasts = useToasts();
  const [byName, setByName] = useState<Record<string, ComputeInstance> | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [messages, setMessages] = useState<Record<string, string>>({});
  const load = useCallback(() => {
    get<List<ComputeInstance>>(collectionPath('computeinstances', project))
      .then((l) => {
        setByName(Object.fromEntries(l.items.map((i) => [i.metadata?.name ?? '', i])));
        setError(null);
      })
      .catch((e) => { setError(e); setByName({}); });
  }, [project]);
  useEffect(() => {
    load();
    const ctl = new AbortController();
    void watch<ComputeInstance>(collectionPath('computeinstances', project), {}, (e) => {
      const name = e.object?.metadata?.name ?? '';
      if (e.type !== 'ADDED' && e.type !== 'MODIFIED' && e.type !== 'DELETED') return;
      setByName((m) => {
        const next = { ...(m ?? {}) };
        if (e.type === 'DELETED') delete next[name];
        else next[name] = e.object;
        return next;
      });
    }, ctl.signal, setError);
    return () => ctl.abort();
  }, [project, load]);
  const items = byName === null ? null : Object.values(byName).filter(pending)
    .sort((a, b) => (a.status?.approval?.requestedAt ?? '').localeCompare(b.status?.approval?.requestedAt ?? ''));
  const answer = async (name: string, verb: 'approve' | 'reject') => {
    try {
      await post(`${objectPath('computeinstances', project, name)}/${verb}`, { message: messages[name] ?? '' });
      toasts.add('success', `${name}: ${verb === 'approve' ? 'approved' : 'rejected'}`);
    } catch (e) {
      toasts.fail(e);
    }
  };
  return (
    <>
      {toasts.view}
      <PageSection variant="light">
        <Title headingLevel="h1">Approvals</Title>
        <Text className="gantry-muted">Deploys and starts in this project that wait for a project-admin or PaaS Admin other than the requester.</Text>
      </PageSection>
      <PageSection>
        <ErrorAlert error={error} />
        {items === null ? <Loading /> : items.length === 0 ? (!error && <Empty title="Nothing waits for approval" />) : (
          <Table aria-label="Pending approvals" variant="compact">
            <Thead><Tr><Th>Instance</Th><Th>Request</Th><Th>Requested by</Th><Th>Requested</Th><Th>Expires</Th><Th>Message</Th><Th screenReaderText="Answer" /></Tr></Thead>
            <Tbody>
              {items.map((i) => {
                const name = i.metadata?.name ?? '';
                const a = i.status?.approval;
                return (
                  <Tr key={name} data-testid={`approval-${name}`}>
                    <Td><Link to={`/p/${encodeURIComponent(project)}/instances/${encodeURIComponent(name)}`}>{name}</Link></Td>
                    <Td>{a?.action} of {a?.gpus} GPU{a?.gpus === 1 ? '' : 's'}</Td>
                    <Td>{a?.requestedBy}</Td>
                    <Td>{formatDate(a?.requestedAt)}</Td>
                    <Td>{formatDate(a?.expiresAt)}</Td>
                    <Td><TextInput aria-label={`Message for ${name}`} value={messages[name] ?? ''} onChange={(_e, v) => setMessages((m) => ({ ...m, [name]: v }))} /></Td>
                    <Td>
                      <Flex spaceItems={{ default: 'spaceItemsSm' }} flexWrap={{ default: 'nowrap' }}>
                        <Button variant="primary" onClick={() => void answer(name, 'approve')}>Approve</Button>
                        <Button variant="secondary" isDanger onClick={() => void answer(name, 'reject')}>Reject</Button>
                      </Flex>
                    </Td>
                  </Tr>
                );
              })}
            </Tbody>
          </Table>
        )}
      </PageSection>
    </>
  );
}
