// Webhooks (issue 20; docs/webhooks.md): where Gantry sends a project's events (Webhook, for
// its project-admins and org-admins) or every project's (ClusterWebhook, org-admins only,
// `/webhooks`). A live list with each hook's last delivery (code, error); New / Edit in a
// modal (URL, events, format, the write-only secret: empty on edit keeps it); the delivery
// history of a hook (live); typed-name Delete. The server decides what is valid and who may
// write: its 422 (with the field) and 403 are shown as they come.
import { useState } from 'react';
import {
  Button, Checkbox, Form, FormGroup, FormSelect, FormSelectOption, HelperText, HelperTextItem, Label, Modal, PageSection,
  Text, TextInput, Title, Toolbar, ToolbarContent, ToolbarItem,
} from '@patternfly/react-core';
import { ActionsColumn, Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { collectionPath, del, objectPath, patch, post } from '../api/client';
import type { Webhook, WebhookDelivery } from '../api/types';
import { useCurrentProject } from '../project';
import { Empty, ErrorAlert, Loading, formatDate, nameProblem } from '../components/common';
import { useLiveList } from '../components/liveList';
import { DeleteModal } from '../components/Modals';
import { useToasts } from '../components/toasts';

type HookEvent = NonNullable<NonNullable<Webhook['spec']>['events']>[number];

// The events a hook may subscribe to (the schema's enum), with what each means.
const EVENTS: { name: HookEvent; text: string }[] = [
  { name: 'PhaseChanged', text: "an instance's status changes (Deploying, Success, Failed, Stopped, …)" },
  { name: 'Preempted', text: 'an instance gave its borrowed GPUs back to a project within its guarantee' },
  { name: 'ExpiresSoon', text: "an instance's time to live ends soon" },
  { name: 'IdleSoon', text: 'an instance is about to be stopped for idle GPUs' },
  { name: 'StopScheduled', text: "an instance's schedule stops it soon" },
  { name: 'ApprovalRequested', text: 'a deploy or start waits for approval' },
  { name: 'BudgetWarning', text: 'a project spent 80 % of its monthly budget' },
  { name: 'BudgetExceeded', text: 'a project spent its whole monthly budget' },
];

// Where the hooks of this page live: a project's Webhooks, or the ClusterWebhooks.
interface Scope { kind: 'Webhook' | 'ClusterWebhook'; plural: string; project?: string }

function scopeOf(cluster: boolean, project: string): Scope {
  return cluster ? { kind: 'ClusterWebhook', plural: 'clusterwebhooks' } : { kind: 'Webhook', plural: 'webhooks', project };
}

const NO_SELECTORS = {};

export function WebhooksPage({ cluster = false }: { cluster?: boolean }) {
  const project = useCurrentProject();
  const scope = scopeOf(cluster, project);
  const toasts = useToasts();
  const [error, setError] = useState<unknown>(null);
  const hooks = useLiveList<Webhook>(collectionPath(scope.plural, scope.project), NO_SELECTORS, setError);
  const [editing, setEditing] = useState<Webhook | 'new' | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  const [history, setHistory] = useState<string | null>(null);
  const sorted = hooks && [...hooks].sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  return (
    <>
      {toasts.view}
      <PageSection variant="light">
        <Title headingLevel="h1">{cluster ? 'Cluster Webhooks' : 'Webhooks'}</Title>
        <Text className="gantry-muted">
          {cluster ? 'Every project\'s events' : 'This project\'s events'} are POSTed to each URL, signed with its secret
          (<code>X-Gantry-Signature: sha256=…</code>), and retried with back-off for up to 24 hours; <code>X-Gantry-Delivery</code> stays
          the same on every retry, so a receiver can ignore one it has seen.
        </Text>
      </PageSection>
      <PageSection>
        <ErrorAlert error={error} />
        <Toolbar><ToolbarContent><ToolbarItem>
          <Button onClick={() => setEditing('new')}>New {cluster ? 'Cluster Webhook' : 'Webhook'}</Button>
        </ToolbarItem></ToolbarContent></Toolbar>
        {sorted === null ? <Loading /> : sorted.length === 0 ? (!error && <Empty title="No webhooks yet">Events stay inside Gantry until a webhook asks for them.</Empty>) : (
          <HooksTable hooks={sorted} onEdit={setEditing} onDelete={setDeleting} onHistory={setHistory} />
        )}
      </PageSection>
      {editing && (
        <WebhookModal scope={scope} hook={editing === 'new' ? null : editing} onClose={() => setEditing(null)}
          onSaved={(name) => { setEditing(null); toasts.add('success', `Webhook ${name} saved`); }} />
      )}
      {deleting && (
        <DeleteModal kindLabel="webhook" name={deleting} extra="Deliveries not yet sent are given up." onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await del(objectPath(scope.plural, scope.project, deleting));
            toasts.add('success', `Webhook ${deleting} deleted`);
            setDeleting(null);
          }} />
      )}
      {history && <DeliveriesModal scope={scope} name={history} onClose={() => setHistory(null)} />}
    </>
  );
}

function HooksTable({ hooks, onEdit, onDelete, onHistory }: {
  hooks: Webhook[]; onEdit: (h: Webhook) => void; onDelete: (name: string) => void; onHistory: (name: string) => void;
}) {
  return (
    <Table aria-label="Webhooks" variant="compact">
      <Thead><Tr><Th>Name</Th><Th>URL</Th><Th>Events</Th><Th>Format</Th><Th>Last delivery</Th><Th screenReaderText="Actions" /></Tr></Thead>
      <Tbody>{hooks.map((h) => {
        const name = h.metadata?.name ?? '';
        return (
          <Tr key={name} data-testid={`webhook-${name}`}>
            <Td>{name}{h.spec?.description ? <div className="gantry-muted">{h.spec.description}</div> : null}</Td>
            <Td><code>{h.spec?.url}</code></Td>
            <Td>{(h.spec?.events ?? []).map((e) => <Label key={e} isCompact style={{ marginRight: 4 }}>{e}</Label>)}</Td>
            <Td>{h.spec?.format === 'slack' ? 'Slack' : 'JSON'}</Td>
            <Td><LastDelivery hook={h} /></Td>
            <Td isActionCell><ActionsColumn items={[
              { title: 'Deliveries', onClick: () => onHistory(name) },
              { title: 'Edit', onClick: () => onEdit(h) },
              { isSeparator: true },
              { title: 'Delete', onClick: () => onDelete(name), isDanger: true },
            ]} /></Td>
          </Tr>
        );
      })}</Tbody>
    </Table>
  );
}

function LastDelivery({ hook }: { hook: Webhook }) {
  const d = hook.status?.lastDelivery;
  if (!d?.time) return <span className="gantry-muted">none yet</span>;
  const ok = !d.error && (d.code ?? 0) >= 200 && (d.code ?? 0) < 300;
  return (
    <span data-testid="last-delivery">
      <Label isCompact color={ok ? 'green' : 'red'}>{d.code ? `HTTP ${d.code}` : 'no answer'}</Label>{' '}
      {formatDate(d.time)}
      {d.error ? <div className="gantry-muted">{d.error}</div> : null}
    </span>
  );
}

// New (hook null) or Edit. The secret is write-only: the server answers `<sensitive>`, so the
// field starts empty and an empty field on Edit leaves the stored secret as it is.
function WebhookModal({ scope, hook, onClose, onSaved }: {
  scope: Scope; hook: Webhook | null; onClose: () => void; onSaved: (name: string) => void;
}) {
  const [name, setName] = useState(hook?.metadata?.name ?? '');
  const [url, setUrl] = useState(hook?.spec?.url ?? 'https://');
  const [events, setEvents] = useState<HookEvent[]>(hook?.spec?.events ?? ['PhaseChanged']);
  const [format, setFormat] = useState(hook?.spec?.format ?? 'json');
  const [secret, setSecret] = useState('');
  const [description, setDescription] = useState(hook?.spec?.description ?? '');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const problem = hook ? '' : nameProblem(name);
  const save = async () => {
    setBusy(true);
    setError(null);
    const spec = { url, events, format, description, ...(secret ? { secret } : {}) };
    try {
      if (hook) await patch(objectPath(scope.plural, scope.project, name), { spec });
      else await post(collectionPath(scope.plural, scope.project), { apiVersion: 'paas.gantry.dev/v1', kind: scope.kind, metadata: { name }, spec });
      onSaved(name);
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  const toggle = (e: HookEvent, on: boolean) => setEvents((l) => (on ? [...l, e] : l.filter((x) => x !== e)));
  return (
    <Modal variant="medium" title={hook ? `Edit webhook ${name}` : `New ${scope.kind === 'ClusterWebhook' ? 'cluster webhook' : 'webhook'}`} isOpen onClose={onClose}
      actions={[
        <Button key="save" variant="primary" onClick={() => void save()} isLoading={busy} isDisabled={busy || !!problem || !name}>Save</Button>,
        <Button key="cancel" variant="link" onClick={onClose}>Cancel</Button>,
      ]}>
      <ErrorAlert error={error} />
      <Form isHorizontal onSubmit={(e) => { e.preventDefault(); void save(); }}>
        <FormGroup label="Name" isRequired fieldId="webhook-name">
          <TextInput id="webhook-name" value={name} isDisabled={!!hook} validated={name && problem ? 'error' : 'default'} onChange={(_e, v) => setName(v.trim())} />
          {name && problem ? <HelperText><HelperTextItem variant="error">{problem}</HelperTextItem></HelperText> : null}
        </FormGroup>
        <FormGroup label="URL" isRequired fieldId="webhook-url">
          <TextInput id="webhook-url" type="url" value={url} onChange={(_e, v) => setUrl(v.trim())} />
          <HelperText><HelperTextItem>http:// or https://, without a user name or password in it.</HelperTextItem></HelperText>
        </FormGroup>
        <FormGroup label="Events" isRequired fieldId="webhook-events" role="group" isStack>
          {EVENTS.map((e) => (
            <Checkbox key={e.name} id={`webhook-event-${e.name}`} label={e.name} description={e.text}
              isChecked={events.includes(e.name)} onChange={(_ev, on) => toggle(e.name, on)} />
          ))}
        </FormGroup>
        <FormGroup label="Format" fieldId="webhook-format">
          <FormSelect id="webhook-format" value={format} onChange={(_e, v) => setFormat(v as typeof format)}>
            <FormSelectOption value="json" label="JSON: the event object" />
            <FormSelectOption value="slack" label='Slack-compatible: {"text": "…"}' />
          </FormSelect>
        </FormGroup>
        <FormGroup label="Secret" isRequired={!hook} fieldId="webhook-secret">
          <TextInput id="webhook-secret" type="password" autoComplete="new-password" value={secret} onChange={(_e, v) => setSecret(v)} />
          <HelperText><HelperTextItem>{hook ? 'Leave empty to keep the current secret; it is never shown again.' : 'The key of the HMAC-SHA256 signature; it is never shown again.'}</HelperTextItem></HelperText>
        </FormGroup>
        <FormGroup label="Description" fieldId="webhook-description">
          <TextInput id="webhook-description" value={description} onChange={(_e, v) => setDescription(v)} />
        </FormGroup>
      </Form>
    </Modal>
  );
}

const PHASE_COLOR: Record<string, 'green' | 'gold' | 'red'> = { Delivered: 'green', Pending: 'gold', Failed: 'red' };

// A hook's deliveries, newest first, live: the project's for a Webhook, every project's for a
// ClusterWebhook (as `gantry webhooks deliveries NAME [--cluster]`).
function DeliveriesModal({ scope, name, onClose }: { scope: Scope; name: string; onClose: () => void }) {
  const [error, setError] = useState<unknown>(null);
  const selectors = { fieldSelector: `spec.webhookRef.name=${name},spec.webhookRef.kind=${scope.kind}` };
  const items = useLiveList<WebhookDelivery>(collectionPath('webhookdeliveries', scope.project), selectors, setError);
  const sorted = items && [...items].sort((a, b) => (b.metadata?.creationTimestamp ?? '').localeCompare(a.metadata?.creationTimestamp ?? ''));
  const cluster = scope.kind === 'ClusterWebhook';
  return (
    <Modal variant="large" title={`Deliveries of ${name}`} isOpen onClose={onClose}
      actions={[<Button key="close" variant="primary" onClick={onClose}>Close</Button>]}>
      <ErrorAlert error={error} />
      {sorted === null ? <Loading /> : sorted.length === 0 ? (!error && <Empty title="Nothing sent yet" />) : (
        <Table aria-label={`Deliveries of ${name}`} variant="compact">
          <Thead><Tr><Th>Delivery</Th>{cluster && <Th>Project</Th>}<Th>Event</Th><Th>Status</Th><Th>Attempts</Th><Th>Code</Th><Th>Created</Th><Th>Next attempt</Th><Th>Error</Th></Tr></Thead>
          <Tbody>{sorted.map((d) => {
            const phase = d.status?.phase ?? 'Pending';
            return (
              <Tr key={`${d.metadata?.namespace}/${d.metadata?.name}`} data-testid={`delivery-${d.metadata?.name}`}>
                <Td><code>{d.metadata?.name}</code></Td>
                {cluster && <Td>{d.metadata?.namespace}</Td>}
                <Td>{d.spec?.event}</Td>
                <Td><Label isCompact color={PHASE_COLOR[phase]}>{phase}</Label></Td>
                <Td>{d.status?.attempts ?? 0}</Td>
                <Td>{d.status?.code || '—'}</Td>
                <Td>{formatDate(d.metadata?.creationTimestamp)}</Td>
                <Td>{phase === 'Pending' ? formatDate(d.status?.nextAttemptTime) : '—'}</Td>
                <Td>{d.status?.error || '—'}</Td>
              </Tr>
            );
          })}</Tbody>
        </Table>
      )}
    </Modal>
  );
}
