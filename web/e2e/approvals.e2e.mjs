// The Approvals inbox in a real browser (issue 20), against a real gantryd started here: a
// member (alice) deploys two instances of a profile whose spec.approval gates requests of 8
// GPUs → both wait (PendingApproval) → the org-admin's Approvals page lists them with what is
// asked and who asked → Reject with a message: the row goes and the instance is NotDeployed
// with reason Rejected and the message → Approve: the row goes and the instance deploys to
// Success with status.approval.decidedBy admin.
//
//   node e2e/approvals.e2e.mjs [--gantryd PATH] [--screens DIR | --no-screens]
// Skips (exit 77) when chromium or node_modules are missing, unless CI or GANTRY_CI is set.
import { logIn, runE2e } from './harness.mjs';

await runE2e({
  name: 'the Approvals inbox in PaaS Studio',
  gantrydArgs: ['--workers', '2'],
  failureShot: 'approvals-e2e-failure.png',
}, async ({ base, G, api, server, page, step, shot, expected }) => {
  const N = `${G}/namespaces/default`;
  const auth = (await fetch(`${base}/auth/whoami`)).status !== 404;
  expected.push({ url: '/auth/whoami', status: auth ? 401 : 404 });
  step('a gated profile, two instances, and a member who deploys them');
  await api('POST', `${N}/environmenttemplates`, { metadata: { name: 'noop' }, spec: { driver: 'exec', exec: { command: ['true'] } } });
  await api('POST', `${N}/computeprofiles`, {
    metadata: { name: 'big' },
    spec: { templateRef: { name: 'noop' }, resources: { gpu: { count: 8 } }, approval: { required: true, whenGpusAtLeast: 8 } },
  });
  await api('POST', `${G}/users`, { metadata: { name: 'alice' }, spec: { displayName: 'Alice', password: 'password-of-alice' } });
  await api('POST', `${N}/rolebindings`, { metadata: { name: 'alice-member' }, spec: { user: 'alice', role: 'member' } });
  const { token } = await api('POST', `${G}/users/alice/tokens`, { description: 'e2e' });
  for (const name of ['train', 'notebook']) {
    await api('POST', `${N}/computeinstances`, { metadata: { name }, spec: { profileRef: { name: 'big' } } });
    const res = await fetch(`${base}${N}/computeinstances/${name}/deploy`, {
      method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: '{}',
    });
    if (res.status !== 202) throw new Error(`alice's deploy of ${name}: ${res.status} ${await res.text()}`);
  }

  step('the inbox lists both requests');
  await page.goto(base + '/');
  if (auth) await logIn(page, 'admin', server.adminPassword);
  await page.getByLabel('Main').getByRole('link', { name: 'Approvals', exact: true }).click();
  const row = (name) => page.getByTestId(`approval-${name}`);
  for (const name of ['train', 'notebook']) {
    await row(name).waitFor();
    const text = await row(name).innerText();
    if (!text.includes('deploy of 8 GPUs') || !text.includes('alice')) throw new Error(`row ${name}: ${text}`);
  }
  await shot('approvals-inbox');

  step('reject one with a message');
  await page.getByLabel('Message for notebook').fill('8 GPUs for a notebook: no');
  await row('notebook').getByRole('button', { name: 'Reject' }).click();
  await row('notebook').waitFor({ state: 'detached' });
  const rejected = await api('GET', `${N}/computeinstances/notebook`);
  if (rejected.status.reason !== 'Rejected' || !rejected.status.message.includes('8 GPUs for a notebook: no'))
    throw new Error(`notebook after reject: ${JSON.stringify(rejected.status)}`);

  step('approve the other: it deploys');
  await row('train').getByRole('button', { name: 'Approve' }).click();
  await row('train').waitFor({ state: 'detached' });
  for (let i = 0; ; i++) {
    const train = await api('GET', `${N}/computeinstances/train`);
    if (train.status.phase === 'Success') {
      if (train.status.approval.decidedBy !== 'admin') throw new Error(`decidedBy: ${JSON.stringify(train.status.approval)}`);
      break;
    }
    if (i > 600) throw new Error(`train never reached Success: ${JSON.stringify(train.status)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await page.getByText('Nothing waits for approval').waitFor();
});
