// My account (issue 21; docs/ui.md): the signed-in user's API tokens (create: the secret shown
// once, with a copy button; list with creation, last use and expiry; revoke) and web sessions
// (list, end one, "Log out everywhere": every session of theirs, this one included; API tokens
// keep working). The server decides (users/ME/tokens, users/ME/sessions); its refusals are
// shown as they come.
import { useCallback, useEffect, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import {
  ActionGroup, Alert, AlertActionCloseButton, Button, ClipboardCopy, Form, FormGroup, FormSelect, FormSelectOption,
  Label, PageSection, Text, TextInput, Title,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { del, get, objectPath, post } from '../api/client';
import type { ApiToken, List, WebSession } from '../api/types';
import { useAuth } from '../auth';
import { Empty, ErrorAlert, Loading, formatDate } from '../components/common';
import { useToasts } from '../components/toasts';

// expiresIn values (one number, one unit: model::ParseDuration).
const EXPIRIES: [string, string][] = [['', 'Never'], ['1d', '1 day'], ['30d', '30 days'], ['90d', '90 days'], ['365d', '1 year']];

function userPath(user: string, sub: 'tokens' | 'sessions'): string {
  return `${objectPath('users', undefined, user)}/${sub}`;
}

export function AccountPage() {
  const { user } = useAuth();
  const toasts = useToasts();
  const me = user?.username ?? '';
  return (
    <>
      {toasts.view}
      <PageSection variant="light">
        <Title headingLevel="h1">My account</Title>
        <Text className="gantry-muted">Signed in as {me}{user?.orgRole ? ` (${user.orgRole})` : ''}.</Text>
      </PageSection>
      <PageSection>
        <Tokens user={me} toasts={toasts} />
      </PageSection>
      <PageSection>
        <Sessions user={me} toasts={toasts} />
      </PageSection>
    </>
  );
}

type Toasts = ReturnType<typeof useToasts>;

function Tokens({ user, toasts }: { user: string; toasts: Toasts }) {
  const [tokens, setTokens] = useState<ApiToken[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [description, setDescription] = useState('');
  const [expiresIn, setExpiresIn] = useState('');
  const [created, setCreated] = useState<ApiToken | null>(null);
  const load = useCallback(() => {
    get<List<ApiToken>>(userPath(user, 'tokens'))
      .then((l) => { setTokens(l.items); setError(null); })
      .catch((e) => { setError(e); setTokens([]); });
  }, [user]);
  useEffect(load, [load]);
  const create = async () => {
    try {
      const t = await post<ApiToken>(userPath(user, 'tokens'), expiresIn ? { description, expiresIn } : { description });
      setCreated(t);
      setDescription('');
      load();
    } catch (e) { toasts.fail(e); }
  };
  const revoke = async (t: ApiToken) => {
    try {
      await del(`${userPath(user, 'tokens')}/${encodeURIComponent(t.metadata.name)}`);
      toasts.add('success', `Token ${t.spec.description || t.metadata.name} revoked`);
      if (created?.metadata.name === t.metadata.name) setCreated(null);
      load();
    } catch (e) { toasts.fail(e); }
  };
  return (
    <>
      <Title headingLevel="h2" size="lg">API tokens</Title>
      <Text className="gantry-muted">For scripts, CI, <code>gantry</code> and <code>kubectl --token</code>: send <code>Authorization: Bearer &lt;token&gt;</code>. A token acts as you, with your roles.</Text>
      {created && (
        <Alert variant="success" isInline title="Token created: copy it now, it is not shown again" data-testid="new-token"
          actionClose={<AlertActionCloseButton onClose={() => setCreated(null)} />} style={{ margin: '12px 0' }}>
          <ClipboardCopy isReadOnly hoverTip="Copy" clickTip="Copied" textAriaLabel="New token" toggleAriaLabel="Show the token">{created.token ?? ''}</ClipboardCopy>
        </Alert>
      )}
      <Form isHorizontal onSubmit={(e) => { e.preventDefault(); void create(); }} style={{ maxWidth: 640, margin: '12px 0' }}>
        <FormGroup label="Description" fieldId="token-description">
          <TextInput id="token-description" value={description} onChange={(_e, v) => setDescription(v)} placeholder="what it is for: ci, laptop, notebook" />
        </FormGroup>
        <FormGroup label="Expires" fieldId="token-expiry">
          <FormSelect id="token-expiry" value={expiresIn} onChange={(_e, v) => setExpiresIn(v)}>
            {EXPIRIES.map(([v, label]) => <FormSelectOption key={v} value={v} label={label} />)}
          </FormSelect>
        </FormGroup>
        <ActionGroup><Button type="submit">Create token</Button></ActionGroup>
      </Form>
      <ErrorAlert error={error} />
      {tokens === null ? <Loading /> : tokens.length === 0 ? (!error && <Empty title="No API tokens" />) : (
        <Table aria-label="API tokens" variant="compact">
          <Thead><Tr><Th>Description</Th><Th>Name</Th><Th>Created</Th><Th>Last used</Th><Th>Expires</Th><Th screenReaderText="Revoke" /></Tr></Thead>
          <Tbody>
            {tokens.map((t) => (
              <Tr key={t.metadata.name} data-testid={`token-${t.metadata.name}`}>
                <Td>{t.spec.description || '—'}</Td>
                <Td><code>{t.metadata.name}</code></Td>
                <Td>{formatDate(t.metadata.creationTimestamp)}</Td>
                <Td>{t.status?.lastUsed ? formatDate(t.status.lastUsed) : 'never'}</Td>
                <Td>{t.spec.expiresAt ? formatDate(t.spec.expiresAt) : 'never'}{t.status?.expired ? <> <Label color="red" isCompact>expired</Label></> : null}</Td>
                <Td><Button variant="secondary" isDanger onClick={() => void revoke(t)} aria-label={`Revoke ${t.spec.description || t.metadata.name}`}>Revoke</Button></Td>
              </Tr>
            ))}
          </Tbody>
        </Table>
      )}
    </>
  );
}

function Sessions({ user, toasts }: { user: string; toasts: Toasts }) {
  const { forget } = useAuth();
  const navigate = useNavigate();
  const [sessions, setSessions] = useState<WebSession[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const load = useCallback(() => {
    get<List<WebSession>>(userPath(user, 'sessions'))
      .then((l) => { setSessions(l.items); setError(null); })
      .catch((e) => { setError(e); setSessions([]); });
  }, [user]);
  useEffect(load, [load]);
  const end = async (s: WebSession) => {
    try {
      await del(`${userPath(user, 'sessions')}/${encodeURIComponent(s.metadata.name)}`);
      toasts.add('success', `The session from ${s.spec.source || 'an unknown address'} ended`);
      load();
    } catch (e) { toasts.fail(e); }
  };
  const everywhere = async () => {
    try {
      await del(userPath(user, 'sessions'));
      // This session ended too: back to the login screen without asking the server again.
      forget();
      navigate('/login');
    } catch (e) { toasts.fail(e); }
  };
  return (
    <>
      <Title headingLevel="h2" size="lg">Active sessions</Title>
      <Text className="gantry-muted">Where you are logged in to this web UI. <strong>Log out everywhere</strong> ends every one of them, this one included; your API tokens keep working (revoke them above).</Text>
      <ErrorAlert error={error} />
      {sessions === null ? <Loading /> : (
        <Table aria-label="Active sessions" variant="compact">
          <Thead><Tr><Th>From</Th><Th>Logged in</Th><Th>Last seen</Th><Th>Expires</Th><Th screenReaderText="End" /></Tr></Thead>
          <Tbody>
            {sessions.map((s) => (
              <Tr key={s.metadata.name} data-testid={s.status.current ? 'session-current' : `session-${s.metadata.name}`}>
                <Td>{s.spec.source || '—'}{s.status.current ? <> <Label color="blue" isCompact>this session</Label></> : null}</Td>
                <Td>{formatDate(s.metadata.creationTimestamp)}</Td>
                <Td>{formatDate(s.status.lastSeen)}</Td>
                <Td>{formatDate(s.spec.expiresAt)}</Td>
                <Td>{s.status.current ? null : <Button variant="secondary" onClick={() => void end(s)}>End</Button>}</Td>
              </Tr>
            ))}
          </Tbody>
        </Table>
      )}
      <Button variant="danger" onClick={() => void everywhere()} style={{ marginTop: 12 }}>Log out everywhere</Button>
    </>
  );
}
