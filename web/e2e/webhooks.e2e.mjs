// The Webhooks page in a real browser (issue 20), against a real gantryd started here and a
// real HTTP receiver on 127.0.0.1 (port 0) that checks every X-Gantry-Signature against the
// secret and answers 500 to the first delivery, 200 after:
//   a project-admin (pat) sees Webhooks but not Cluster Webhooks → New Webhook with an ftp://
//   URL: the server's 422 shows in the modal → fixed, saved: the row is listed → an instance
//   deploys: the row's last delivery becomes HTTP 200, and Deliveries shows them Delivered, the
//   first one after 2 attempts with the same X-Gantry-Delivery → Edit to Slack format with the
//   secret left empty: the next deliveries are {"text": …} and still signed with the first
//   secret → typed-name Delete → the org-admin creates a ClusterWebhook on Cluster Webhooks.
//
//   node e2e/webhooks.e2e.mjs [--gantryd PATH] [--screens DIR | --no-screens]
// Skips (exit 77) when chromium or node_modules are missing, unless CI or GANTRY_CI is set.
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import { logIn, runE2e } from './harness.mjs';

const SECRET = 'a-long-random-secret-for-pat';

// The receiver: every request recorded with its delivery id, event, body and whether the
// signature matched SECRET.
function startReceiver() {
  const got = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const want = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
      got.push({ id: req.headers['x-gantry-delivery'], event: req.headers['x-gantry-event'], body,
        signed: req.headers['x-gantry-signature'] === want });
      res.writeHead(got.length === 1 ? 500 : 200).end();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, got, url: `http://127.0.0.1:${server.address().port}/hook` })));
}

async function until(what, f) {
  for (let i = 0; ; i++) {
    const v = await f();
    if (v) return v;
    if (i > 600) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// runE2e ends the process, and the receiver with it.
const receiver = await startReceiver();
await runE2e({
  name: 'the Webhooks page in PaaS Studio',
  gantrydArgs: ['--workers', '2', '--webhook-allow-private', '--webhook-backoff-ms', '200'],
  failureShot: 'webhooks-e2e-failure.png',
}, async ({ base, G, api, server, page, step, shot, expected }) => {
  const N = `${G}/namespaces/default`;
  const auth = (await fetch(`${base}/auth/whoami`)).status !== 404;
  if (!auth) throw new Error('this test needs the identity API (a project-admin logs in)');
  expected.push({ url: '/auth/whoami', status: 401 }, { url: '/webhooks', status: 422 });
  step('a project-admin and an instance to deploy');
  await api('POST', `${N}/environmenttemplates`, { metadata: { name: 'noop' }, spec: { driver: 'exec', exec: { command: ['true'] } } });
  await api('POST', `${N}/computeprofiles`, { metadata: { name: 'small' }, spec: { templateRef: { name: 'noop' } } });
  await api('POST', `${N}/computeinstances`, { metadata: { name: 'web' }, spec: { profileRef: { name: 'small' } } });
  await api('POST', `${G}/users`, { metadata: { name: 'pat' }, spec: { displayName: 'Pat', password: 'password-of-pat' } });
  await api('POST', `${N}/rolebindings`, { metadata: { name: 'pat-admin' }, spec: { user: 'pat', role: 'project-admin' } });

  step('pat sees Webhooks, not Cluster Webhooks');
  await page.goto(base + '/');
  await logIn(page, 'pat', 'password-of-pat');
  const nav = page.getByLabel('Main');
  await nav.getByRole('link', { name: 'Webhooks', exact: true }).click();
  await page.getByText('No webhooks yet').waitFor();
  if (await nav.getByRole('link', { name: 'Cluster Webhooks' }).count()) throw new Error('a project-admin sees Cluster Webhooks');

  step('New Webhook: an ftp:// URL is refused with the field, then saved with http://');
  await page.getByRole('button', { name: 'New Webhook' }).click();
  const modal = page.getByRole('dialog');
  await modal.locator('#webhook-name').fill('chat');
  await modal.locator('#webhook-url').fill('ftp://127.0.0.1/hook');
  await modal.locator('#webhook-secret').fill(SECRET);
  await modal.locator('#webhook-description').fill('the team channel');
  await modal.getByRole('button', { name: 'Save' }).click();
  const refusal = await modal.getByTestId('api-error').innerText();
  if (!refusal.includes('spec.url') || !refusal.includes('ftp://')) throw new Error(`refusal: ${refusal}`);
  await modal.locator('#webhook-url').fill(receiver.url);
  await shot('webhooks-new');
  await modal.getByRole('button', { name: 'Save' }).click();
  await modal.waitFor({ state: 'detached' });
  const row = page.getByTestId('webhook-chat');
  await row.waitFor();
  const stored = await api('GET', `${N}/webhooks/chat`);
  if (stored.spec.secret === SECRET || stored.spec.events.join() !== 'PhaseChanged') throw new Error(`stored: ${JSON.stringify(stored.spec)}`);

  step('a deploy: deliveries arrive signed, the first after a 500 and a retry');
  const res = await fetch(`${base}${N}/computeinstances/web/deploy`, { method: 'POST', headers: { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' }, body: '{}' });
  if (res.status !== 202) throw new Error(`deploy: ${res.status} ${await res.text()}`);
  await until('the instance is Success', async () => (await api('GET', `${N}/computeinstances/web`)).status.phase === 'Success');
  await until('a body with phase Success arrives', () => receiver.got.some((g) => g.body.includes('"phase":"Success"')));
  const first = receiver.got[0];
  await until('the first delivery is tried again', () => receiver.got.filter((g) => g.id === first.id).length === 2);
  if (!receiver.got.every((g) => g.signed && g.event === 'PhaseChanged')) throw new Error(`unsigned or other events: ${JSON.stringify(receiver.got)}`);
  await row.getByText('HTTP 200').waitFor();

  step('Deliveries lists them live: Delivered, the first with 2 attempts');
  await row.getByRole('button', { name: 'Kebab toggle' }).click();
  await page.getByRole('menuitem', { name: 'Deliveries' }).click();
  const firstRow = page.getByTestId(`delivery-${first.id}`);
  await firstRow.getByText('Delivered').waitFor();
  const cells = await firstRow.locator('td').allInnerTexts();
  if (cells[1] !== 'PhaseChanged' || cells[3] !== '2' || cells[4] !== '200') throw new Error(`first delivery row: ${cells.join(' | ')}`);
  await shot('webhooks-deliveries');
  await page.getByRole('dialog').getByRole('button', { name: 'Close' }).first().click();

  step('Edit to Slack with the secret left empty: the old secret still signs');
  await row.getByRole('button', { name: 'Kebab toggle' }).click();
  await page.getByRole('menuitem', { name: 'Edit' }).click();
  await modal.locator('#webhook-format').selectOption('slack');
  await modal.getByRole('button', { name: 'Save' }).click();
  await modal.waitFor({ state: 'detached' });
  await row.getByText('Slack').waitFor();
  const before = receiver.got.length;
  const destroy = await fetch(`${base}${N}/computeinstances/web/destroy`, { method: 'POST', headers: { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' }, body: '{}' });
  if (destroy.status !== 202) throw new Error(`destroy: ${destroy.status} ${await destroy.text()}`);
  const slack = await until('a Slack body arrives', () => receiver.got.slice(before).find((g) => g.body.startsWith('{"text":')));
  if (!slack.signed) throw new Error(`the Slack delivery is not signed with the first secret: ${JSON.stringify(slack)}`);
  await shot('webhooks');

  step('typed-name Delete');
  await row.getByRole('button', { name: 'Kebab toggle' }).click();
  await page.getByRole('menuitem', { name: 'Delete' }).click();
  await page.getByLabel('Unique name to confirm').fill('chat');
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await row.waitFor({ state: 'detached' });
  const gone = await fetch(`${base}${N}/webhooks/chat`, { headers: { Authorization: `Bearer ${server.token}` } });
  if (gone.status !== 404) throw new Error(`after Delete: ${gone.status}`);

  step('the org-admin creates a ClusterWebhook');
  await page.getByRole('button', { name: 'Log out' }).click();
  await logIn(page, 'admin', server.adminPassword);
  await nav.getByRole('link', { name: 'Cluster Webhooks', exact: true }).click();
  await page.getByRole('button', { name: 'New Cluster Webhook' }).click();
  await modal.locator('#webhook-name').fill('audit-sink');
  await modal.locator('#webhook-url').fill(receiver.url);
  await modal.locator('#webhook-secret').fill(SECRET);
  await modal.locator('#webhook-event-BudgetExceeded').check();
  await modal.getByRole('button', { name: 'Save' }).click();
  await modal.waitFor({ state: 'detached' });
  await page.getByTestId('webhook-audit-sink').getByText('BudgetExceeded').waitFor();
  const cw = await api('GET', `${G}/clusterwebhooks/audit-sink`);
  if (cw.spec.events.join() !== 'PhaseChanged,BudgetExceeded') throw new Error(`cluster webhook: ${JSON.stringify(cw.spec)}`);
});
