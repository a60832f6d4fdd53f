// Users (org-admins; issue 21, docs/ui.md): every user with where they log in (local, LDAP,
// single sign-on), org role, and an Enabled switch (spec.disabled: a disabled user cannot log
// in, and their sessions and tokens stop at their next request); and a new local user. The
// server decides (only an org-admin changes spec.disabled; the last enabled org-admin stays
// one: 409 LastOrgAdmin, shown as it comes).
import { useCallback, useEffect, useState } from 'react';
import {
  ActionGroup, Button, Form, FormGroup, FormSelect, FormSelectOption, Label, PageSection, Switch, Text, TextInput, Title,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { collectionPath, get, objectPath, patch, post } from '../api/client';
import type { List, OrgRole, User } from '../api/types';
import { useAuth } from '../auth';
import { ErrorAlert, Loading, formatDate } from '../components/common';
import { useToasts } from '../components/toasts';

const SOURCE_TEXT: Record<string, string> = { '': 'local', ldap: 'LDAP', oidc: 'single sign-on' };

export function UsersPage() {
  const { user: me } = useAuth();
  const toasts = useToasts();
  const [users, setUsers] = useState<User[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const load = useCallback(() => {
    get<List<User>>(collectionPath('users'))
      .then((l) => { setUsers(l.items); setError(null); })
      .catch((e) => { setError(e); setUsers([]); });
  }, []);
  useEffect(load, [load]);
  const setEnabled = async (u: User, enabled: boolean) => {
    const name = u.metadata?.name ?? '';
    try {
      await patch(objectPath('users', undefined, name), { spec: { disabled: !enabled } });
      toasts.add('success', enabled ? `${name} is enabled` : `${name} is disabled: their sessions and tokens stop working`);
    } catch (e) { toasts.fail(e); }
    load();
  };
  return (
    <>
      {toasts.view}
      <PageSection variant="light">
        <Title headingLevel="h1">Users</Title>
        <Text className="gantry-muted">Everyone who can log in. A disabled user cannot log in, and their web sessions and API tokens stop working at once; enabling them again restores the tokens (sessions that expired meanwhile stay ended).</Text>
      </PageSection>
      <PageSection>
        <ErrorAlert error={error} />
        {users === null ? <Loading /> : (
          <Table aria-label="Users" variant="compact">
            <Thead><Tr><Th>User</Th><Th>Display Name</Th><Th>Logs in with</Th><Th>Org role</Th><Th>Enabled</Th><Th>Creation Date</Th></Tr></Thead>
            <Tbody>{users.map((u) => {
              const name = u.metadata?.name ?? '';
              const self = name === me?.username;
              return (
                <Tr key={name} data-testid={`user-${name}`}>
                  <Td>{name}{self ? <> <Label isCompact color="blue">you</Label></> : null}</Td>
                  <Td>{u.spec?.displayName}</Td>
                  <Td>{SOURCE_TEXT[u.spec?.source ?? ''] ?? u.spec?.source}</Td>
                  <Td>{u.spec?.orgRole || '—'}</Td>
                  <Td>
                    <Switch id={`enabled-${name}`} aria-label={`${name} enabled`} isChecked={!u.spec?.disabled} isDisabled={self}
                      label="Enabled" labelOff="Disabled" onChange={(_e, on) => void setEnabled(u, on)} />
                  </Td>
                  <Td>{formatDate(u.metadata?.creationTimestamp)}</Td>
                </Tr>
              );
            })}</Tbody>
          </Table>
        )}
        <NewUser onCreated={load} toasts={toasts} />
      </PageSection>
    </>
  );
}

function NewUser({ onCreated, toasts }: { onCreated: () => void; toasts: ReturnType<typeof useToasts> }) {
  const [name, setName] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [password, setPassword] = useState('');
  const [orgRole, setOrgRole] = useState<OrgRole>('');
  const create = async () => {
    try {
      await post(collectionPath('users'), { apiVersion: 'paas.gantry.dev/v1', kind: 'User', metadata: { name }, spec: { displayName, orgRole, password } });
      toasts.add('success', `User ${name} created`);
      setName(''); setDisplayName(''); setPassword(''); setOrgRole('');
      onCreated();
    } catch (e) { toasts.fail(e); }
  };
  return (
    <>
      <Title headingLevel="h2" size="md" style={{ margin: '16px 0 8px' }}>New local user</Title>
      <Form isHorizontal onSubmit={(e) => { e.preventDefault(); void create(); }} style={{ maxWidth: 640 }}>
        <FormGroup label="User name" isRequired fieldId="new-user"><TextInput id="new-user" value={name} onChange={(_e, v) => setName(v.trim())} /></FormGroup>
        <FormGroup label="Display name" fieldId="new-user-display"><TextInput id="new-user-display" value={displayName} onChange={(_e, v) => setDisplayName(v)} /></FormGroup>
        <FormGroup label="Password" isRequired fieldId="new-user-password"><TextInput id="new-user-password" type="password" autoComplete="new-password" value={password} onChange={(_e, v) => setPassword(v)} /></FormGroup>
        <FormGroup label="Org role" fieldId="new-user-role">
          <FormSelect id="new-user-role" value={orgRole} onChange={(_e, v) => setOrgRole(v as OrgRole)}>
            <FormSelectOption value="" label="None (project roles only)" />
            <FormSelectOption value="paas-admin" label="PaaS Admin" />
            <FormSelectOption value="org-admin" label="Org Admin" />
          </FormSelect>
        </FormGroup>
        <ActionGroup><Button type="submit" isDisabled={!name || !password}>Create user</Button></ActionGroup>
      </Form>
    </>
  );
}
