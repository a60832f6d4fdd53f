// The lifecycle in a real browser (issue 17 items 5, 6), against a real gantryd started here
// (--gpus demo-gpu:2, --gpu-sample-interval 1s, the stand-in nvidia-smi of tests/local first on
// its PATH reporting 37 % for every GPU — this machine has none):
//
//   a local compute instance whose profile's ttl default is 1h is deployed → the list shows
//   its Expires countdown ("in 59m …") and GPU% (37%) → its overview: Extend by 1h moves
//   status.expiresAt (and the countdown) by exactly an hour, spec.lifecycle.ttl becomes 2h,
//   and no "Unpublished changes" (an extend has nothing to deploy: deployedGeneration follows) →
//   Stop: Stopped (orange), Deploy and Stop disabled, Start enabled → Start: Success again →
//   an instance with ttl 3s is stopped by the server and its overview says
//   "Stopped: TTL expired" → the profile editor's Lifecycle section: an unknown time zone is
//   refused with the server's 422 shown on the Time zone field; Europe/Berlin is saved.
//
//   node e2e/lifecycle.e2e.mjs [--gantryd PATH] [--screens DIR | --no-screens]
// Skips (exit 77) when chromium or node_modules are missing, unless CI or GANTRY_CI is set.
import { chmodSync, copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { logIn, runE2e } from './harness.mjs';

// The stand-in nvidia-smi on gantryd's PATH (harness.mjs starts gantryd with process.env).
const bin = mkdtempSync(join(tmpdir(), 'gantry-e2e-bin-'));
copyFileSync(join(dirname(fileURLToPath(import.meta.url)), '../../tests/local/nvidia-smi'), join(bin, 'nvidia-smi'));
chmodSync(join(bin, 'nvidia-smi'), 0o755);
writeFileSync(join(bin, 'gpu-utilization'), '0 37\n1 37\n');
process.env.PATH = `${bin}:${process.env.PATH}`;

await runE2e({
  name: 'stop, start, extend and the lifecycle policy in PaaS Studio',
  gantrydArgs: ['--gpus', 'demo-gpu:2', '--gpu-sample-interval', '1s', '--workers', '2'],
  failureShot: 'lifecycle-e2e-failure.png',
}, async ({ base, G, api, server, page, step, shot, expected }) => {
  const auth = (await fetch(`${base}/auth/whoami`)).status !== 404;
  const P = 'ml-research';
  const N = `${G}/namespaces/${P}`;
  expected.push(
    { url: '/auth/whoami', status: auth ? 401 : 404 },
    { url: '/computeprofiles/notebook-1h', status: 422 }, // the unknown time zone, refused
  );
  const nav = (name) => page.getByLabel('Main').getByRole('link', { name, exact: true });
  const phaseOf = async (name) => (await api('GET', `${N}/computeinstances/${name}`)).status?.phase;
  // Polls the API until `name` is in `phase` (the UI is checked separately; this only orders steps).
  const reach = async (name, phase) => {
    while ((await phaseOf(name)) !== phase) await new Promise((r) => setTimeout(r, 100));
  };

  await api('POST', `${G}/projects`, { metadata: { name: P }, spec: { displayName: 'ML Research' } });
  await api('POST', `${N}/environmenttemplates`, {
    metadata: { name: 'sleeper' },
    spec: { displayName: 'A process that waits', driver: 'local', local: { command: ['/bin/sh', '-c', 'exec sleep 3600'] } },
  });
  await api('POST', `${N}/computeprofiles`, {
    metadata: { name: 'notebook-1h' },
    spec: {
      displayName: 'Notebook, 1 GPU, 1h', templateRef: { name: 'sleeper' }, resources: { gpu: { type: 'demo-gpu', count: 1 } },
      lifecycle: { ttl: { default: '1h', max: '4h', action: 'Stop' } },
    },
  });
  await api('POST', `${N}/computeinstances`, { metadata: { name: 'nb' }, spec: { displayName: 'My notebook', profileRef: { name: 'notebook-1h' } } });
  await api('POST', `${N}/computeinstances/nb/deploy`, {});
  await reach('nb', 'Success');

  step('log in as admin');
  await page.goto(`${base}/`);
  if (auth) await logIn(page, 'admin', server.adminPassword);
  await page.getByRole('heading', { name: /Welcome/ }).waitFor();
  await page.selectOption('#project-select', P);

  step('the list: Expires counts down from the profile default (1h), GPU% is the last sample');
  await nav('Compute Instances').click();
  const row = page.getByTestId('row-nb');
  await row.locator('[data-phase=Success]').waitFor();
  await row.getByTestId('countdown').getByText(/^in 59m \d+s$/).waitFor();
  await row.getByTestId('gpu').getByText('37%').waitFor();
  await shot('lifecycle-instances');

  step('overview: Extend by 1h moves expiresAt by an hour');
  await row.getByRole('link', { name: 'nb' }).click();
  const countdown = page.getByTestId('lifecycle').getByTestId('countdown');
  await countdown.getByText(/^in 59m/).waitFor();
  const before = Date.parse(await countdown.getAttribute('data-expires-at'));
  await page.getByTestId('ttl').getByText("1h (the profile's default)").waitFor();
  await page.getByRole('button', { name: 'Extend', exact: true }).click();
  const dialog = page.getByRole('dialog');
  await dialog.locator('#extend-by').fill('1h');
  await dialog.getByText('1h more').waitFor();
  await dialog.getByRole('button', { name: 'Extend', exact: true }).click();
  await countdown.getByText(/^in 1h 59m$/).waitFor();
  const after = Date.parse(await countdown.getAttribute('data-expires-at'));
  if (after - before !== 3600 * 1000) throw new Error(`expiresAt moved by ${(after - before) / 1000}s, not 3600s`);
  const extended = await api('GET', `${N}/computeinstances/nb`);
  if (extended.spec?.lifecycle?.ttl !== '2h') throw new Error(`spec.lifecycle.ttl is ${extended.spec?.lifecycle?.ttl}, not 2h`);
  await page.getByTestId('ttl').getByText(/^2h/).waitFor();
  await page.getByTestId('gpu').getByText('37%').waitFor();
  // Generation + 1 as in Kubernetes, but nothing to deploy: no "Unpublished changes".
  if (extended.metadata?.generation !== extended.status?.deployedGeneration)
    throw new Error(`after Extend: generation ${extended.metadata?.generation}, deployedGeneration ${extended.status?.deployedGeneration}`);
  if (await page.getByTestId('unpublished').count() !== 0) throw new Error('"Unpublished changes" shown after Extend');
  await shot('lifecycle-overview');

  step('Stop: Stopped, only Start (and Destroy) left');
  await page.getByRole('button', { name: 'Stop', exact: true }).click();
  await page.locator('[data-testid=overview-status] [data-phase=Stopped]').waitFor();
  const start = page.getByRole('button', { name: 'Start', exact: true });
  await start.waitFor();
  if (await start.getAttribute('aria-disabled') === 'true') throw new Error('Start is disabled on a stopped instance');
  if (await page.getByRole('button', { name: 'Deploy', exact: true }).getAttribute('aria-disabled') !== 'true')
    throw new Error('Deploy is enabled on a stopped instance');
  await shot('lifecycle-stopped');

  step('Start: Success again');
  await start.click();
  await page.locator('[data-testid=overview-status] [data-phase=Success]').waitFor();
  await page.getByRole('button', { name: 'Stop', exact: true }).waitFor();

  step('a ttl of 3s: the server stops it and the overview says why');
  await api('POST', `${N}/computeinstances`, { metadata: { name: 'short' }, spec: { profileRef: { name: 'notebook-1h' }, lifecycle: { ttl: '3s' } } });
  await api('POST', `${N}/computeinstances/short/deploy`, {});
  await page.goto(`${base}/p/${P}/instances/short`);
  await page.locator('[data-testid=overview-status] [data-phase=Stopped]').waitFor();
  await page.getByTestId('automatic-action').getByText('Stopped: TTL expired').waitFor();
  await shot('lifecycle-ttl-expired');

  step("profile editor: the Lifecycle section, the server's 422 on the time zone, then saved");
  await nav('Compute Profiles').click();
  await page.getByTestId('row-notebook-1h').getByRole('link', { name: 'notebook-1h' }).click();
  const section = page.getByTestId('lifecycle-section');
  await section.waitFor();
  if (await page.locator('#ttl-default').inputValue() !== '1h') throw new Error('ttl default not loaded');
  await page.fill('#idle-after', '30m');
  await page.fill('#idle-below', '5');
  await page.fill('#schedule-timezone', 'Mars/Olympus_Mons');
  await page.fill('#schedule-stop', '0 20 * * 1-5');
  await page.getByRole('button', { name: 'Save (new revision)' }).click();
  await section.getByTestId('cause-spec.lifecycle.schedule.timezone').waitFor();
  await shot('lifecycle-profile-422');
  await page.fill('#schedule-timezone', 'Europe/Berlin');
  await page.getByRole('button', { name: 'Save (new revision)' }).click();
  await page.getByText(/Saved: notebook-1h is at revision 2/).waitFor();
  const saved = (await api('GET', `${N}/computeprofiles/notebook-1h`)).spec?.lifecycle;
  if (saved?.schedule?.timezone !== 'Europe/Berlin' || saved?.idle?.after !== '30m' || saved?.ttl?.max !== '4h')
    throw new Error(`saved lifecycle: ${JSON.stringify(saved)}`);
});
