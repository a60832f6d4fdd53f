// Usage, budgets and fair share in a real browser (issues 18, 19), against a real gantryd started
// here with configured GPUs (--gpus demo-gpu:4; the local driver runs `sleep`):
//
//   a rate card (demo-gpu 3600 USD/h: a GPU-second costs 1 USD), projects alpha (guarantee 1 of
//   at most 4, a preemptible profile: its first 1-GPU instance is Guaranteed, its second
//   Borrowed), beta (one 1-GPU instance), gamma (a 2-GPU deploy waits: 1 GPU is free) and omega
//   (a Block budget of 0: its deploy waits BudgetExceeded); carol deploys c1 in beta →
//   Usage: the stacked chart has exactly the series alpha and beta (the projects with usage),
//   the table lists them with a total, "Download CSV" downloads the report as CSV that parses
//   with the server's columns and the same projects, omega's budget bar is red (exceeded) →
//   Projects › alpha: the share bar says 2 in use, 1 borrowed, 1 guaranteed; a guarantee above
//   the quota and a negative budget are refused with the server's message on their fields; a
//   valid edit (guarantee 2, instances 10, per user 5, budget 500 Block) round-trips through the
//   API and a reload; project delta guaranteed 3 more (5 of the fleet's 4) → alpha's page says
//   the guarantees are overcommitted, in the condition's words → Instances: Admission Guaranteed/Borrowed in alpha, gamma's instance is
//   "1st in the queue · Waiting for free GPUs", omega's says the budget is spent (list and
//   overview) → carol, a member of beta who deployed c1 there, sees on Usage only beta's series
//   and her own row (the report leaves other users' usage out).
//
//   node e2e/usage.e2e.mjs [--gantryd PATH] [--screens DIR | --no-screens]
// Skips (exit 77) when chromium or node_modules are missing, unless CI or GANTRY_CI is set.
import { readFileSync } from 'node:fs';
import { logIn, runE2e } from './harness.mjs';

await runE2e({
  name: 'usage, budgets and fair share in PaaS Studio',
  gantrydArgs: ['--gpus', 'demo-gpu:4', '--workers', '2'],
  failureShot: 'usage-e2e-failure.png',
}, async ({ base, G, api, server, page, step, shot, expected }) => {
  const auth = (await fetch(`${base}/auth/whoami`)).status !== 404;
  expected.push({ url: '/auth/whoami', status: auth ? 401 : 404 }, { url: '/projects/alpha', status: 422 },
    { url: '/usagereports', status: 422 });
  const phaseOf = async (p, n) => (await api('GET', `${G}/namespaces/${p}/computeinstances/${n}`)).status;
  const reach = async (p, n, ok) => { while (!ok(await phaseOf(p, n))) await new Promise((r) => setTimeout(r, 100)); };
  const fail = (m) => { throw new Error(m); };

  await api('POST', `${G}/ratecards`, { metadata: { name: 'default' }, spec: { currency: 'USD', gpuHourly: { 'demo-gpu': 3600 } } });
  const projects = {
    alpha: { quota: { gpus: { 'demo-gpu': 4 }, guaranteedGpus: { 'demo-gpu': 1 } } },
    beta: {}, gamma: {}, omega: { budget: { monthly: 0, action: 'Block' } },
  };
  for (const [p, spec] of Object.entries(projects)) {
    const N = `${G}/namespaces/${p}`;
    await api('POST', `${G}/projects`, { metadata: { name: p }, spec });
    await api('POST', `${N}/environmenttemplates`, {
      metadata: { name: 'sleeper' }, spec: { driver: 'local', local: { command: ['/bin/sh', '-c', 'exec sleep 3600'] } },
    });
    for (const gpus of [1, 2]) {
      await api('POST', `${N}/computeprofiles`, {
        metadata: { name: `gpu-${gpus}` },
        spec: { templateRef: { name: 'sleeper' }, resources: { gpu: { type: 'demo-gpu', count: gpus } }, scheduling: { preemptible: true } },
      });
    }
  }
  const launch = async (p, name, gpus) => {
    await api('POST', `${G}/namespaces/${p}/computeinstances`, { metadata: { name }, spec: { profileRef: { name: `gpu-${gpus}` } } });
    await api('POST', `${G}/namespaces/${p}/computeinstances/${name}/deploy`, {});
  };
  await launch('alpha', 'a1', 1);
  await reach('alpha', 'a1', (s) => s?.phase === 'Success');
  await launch('alpha', 'a2', 1);
  await launch('beta', 'b1', 1);
  await reach('alpha', 'a2', (s) => s?.phase === 'Success');
  await reach('beta', 'b1', (s) => s?.phase === 'Success');
  // carol, a member of beta, deploys c1 herself (usage is who deployed: status.createdBy).
  const carolPassword = `pw-${Date.now()}-carol`;
  if (auth) {
    await api('POST', `${G}/users`, { metadata: { name: 'carol' }, spec: { password: carolPassword } });
    await api('POST', `${G}/namespaces/beta/rolebindings`, { metadata: { name: 'carol-member' }, spec: { user: 'carol', role: 'member' } });
    const login = await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ username: 'carol', password: carolPassword }) });
    if (!login.ok) fail(`carol's login: ${login.status}`);
    const session = { Cookie: login.headers.getSetCookie().map((c) => c.split(';')[0]).join('; '), 'X-Gantry-CSRF': (await login.json()).csrfToken, 'Content-Type': 'application/json' };
    for (const [path, body] of [['computeinstances', { metadata: { name: 'c1' }, spec: { profileRef: { name: 'gpu-1' } } }], ['computeinstances/c1/deploy', {}]]) {
      const r = await fetch(`${base}${G}/namespaces/beta/${path}`, { method: 'POST', headers: session, body: JSON.stringify(body) });
      if (!r.ok) fail(`carol's POST ${path}: ${r.status} ${await r.text()}`);
    }
  }
  if (auth) await reach('beta', 'c1', (s) => s?.phase === 'Success');
  await launch('gamma', 'g1', 2);
  await launch('omega', 'o1', 1);
  await reach('gamma', 'g1', (s) => s?.reason === 'InsufficientCapacity' && s?.queuePosition === 1);
  await reach('omega', 'o1', (s) => s?.reason === 'BudgetExceeded');
  const a = [await phaseOf('alpha', 'a1'), await phaseOf('alpha', 'a2')].map((s) => s.admission).join(',');
  if (a !== 'Guaranteed,Borrowed') fail(`alpha's admissions are ${a}, not Guaranteed,Borrowed`);

  step('log in as admin, open Usage');
  await page.goto(`${base}/`);
  if (auth) await logIn(page, 'admin', server.adminPassword);
  await page.getByRole('heading', { name: /Welcome/ }).waitFor();
  await page.getByLabel('Main').getByRole('link', { name: 'Usage', exact: true }).click();

  step('the chart: one series per project with usage (alpha, beta)');
  const chart = page.getByTestId('usage-chart');
  await chart.locator('svg').first().waitFor();
  if (await chart.getAttribute('data-series') !== 'alpha,beta') fail(`chart series: ${await chart.getAttribute('data-series')}`);
  const legend = (await chart.locator('svg text').allTextContents()).map((t) => t.trim());
  for (const p of ['alpha', 'beta']) if (!legend.includes(p)) fail(`the chart's legend lacks ${p}: ${legend.join('|')}`);
  for (const p of ['gamma', 'omega']) if (legend.includes(p)) fail(`the chart shows ${p}, which has no usage`);
  const bars = await chart.locator('svg path[role=presentation]').count();
  if (bars < 2) fail(`${bars} bars drawn, expected one per project and day`);

  step('the table: a row per project with usage and the total');
  const table = page.getByTestId('usage-table');
  await table.getByTestId('usage-row-alpha').waitFor();
  await table.getByTestId('usage-row-beta').waitFor();
  if (await table.getByTestId('usage-row-gamma').count()) fail('gamma listed without usage');
  for (const p of ['alpha', 'beta']) {
    const h = await table.getByTestId(`usage-row-${p}`).getByTestId('gpu-hours').textContent();
    if (!(Number.parseFloat(h ?? '') > 0)) fail(`${p}'s GPU-hours shown as "${h}"`);
  }
  await table.getByTestId('usage-total').getByText(/rate card default/).waitFor();
  const total = await table.getByTestId('usage-total').getByTestId('cost').textContent();
  if (!/^\d+\.\d\d USD$/.test(total ?? '') || Number.parseFloat(total) <= 0) fail(`total cost "${total}"`);

  step('budgets: omega (0, Block) is red');
  const omega = page.getByTestId('budget-omega');
  await omega.waitFor();
  if (await omega.getAttribute('data-exceeded') !== 'true') fail('omega\'s budget of 0 is not shown as exceeded');
  if (!(await omega.locator('.pf-m-danger').count())) fail('omega\'s budget bar is not red');
  await shot('usage');

  step('Download CSV: the report as CSV');
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
  const csv = readFileSync(await download.path(), 'utf8').trim().split(/\r?\n/).map((l) => l.split(','));
  const header = csv[0].join(',');
  if (header !== 'bucket,project,gpuSeconds,cpuCoreSeconds,memoryGiBSeconds,cost,currency') fail(`CSV header: ${header}`);
  const csvProjects = [...new Set(csv.slice(1).map((r) => r[1]))].sort().join(',');
  if (csvProjects !== 'alpha,beta') fail(`CSV projects: ${csvProjects}`);
  for (const r of csv.slice(1)) if (!(Number(r[2]) > 0) || r[6] !== 'USD') fail(`CSV row: ${r.join(',')}`);

  step('step hour: the same series by the hour; From after To is the server\'s 422');
  await page.selectOption('#usage-step', 'hour');
  await chart.locator('svg text').getByText(/^\d{4}-\d\d-\d\d \d\d:00$/).first().waitFor();
  if (await chart.getAttribute('data-series') !== 'alpha,beta') fail(`hourly chart series: ${await chart.getAttribute('data-series')}`);
  const from = await page.inputValue('#usage-from');
  await page.fill('#usage-from', '2099-01-01');
  await page.getByTestId('api-error').getByText(/from/).first().waitFor();
  await page.fill('#usage-from', from);
  await chart.waitFor();
  if (await page.getByTestId('api-error').count()) fail('the refusal stays after a valid period');

  step('Projects: GPUs in use per project; alpha\'s share bar');
  await page.getByLabel('Main').getByRole('link', { name: 'Projects & Members', exact: true }).click();
  await page.getByTestId('project-alpha').getByTestId('share-summary-demo-gpu').getByText('demo-gpu: 2 of 1 guaranteed (1 borrowed)').waitFor();
  await page.getByTestId('project-beta').getByTestId('share-summary-demo-gpu').getByText(`demo-gpu: ${auth ? 2 : 1} of 0 guaranteed (${auth ? 2 : 1} borrowed)`).waitFor();
  await page.getByTestId('project-alpha').getByRole('link', { name: 'alpha' }).click();
  const share = page.getByTestId('share-demo-gpu');
  await share.waitFor();
  const nums = ['guaranteed', 'used', 'borrowed'].map((k) => share.getAttribute(`data-${k}`));
  if ((await Promise.all(nums)).join(',') !== '1,2,1') fail(`share bar guaranteed,used,borrowed = ${(await Promise.all(nums)).join(',')}`);
  await share.getByText('2 in use (1 within the guarantee, 1 borrowed) of 1 guaranteed, at most 4').waitFor();

  step('quota edits: the server\'s 422 on the field, then a valid edit round-trips');
  await page.fill('#gpu-guaranteed-0', '9');
  await page.getByRole('button', { name: 'Save limits' }).click();
  await page.getByTestId('cause-spec.quota.guaranteedGpus.demo-gpu').waitFor();
  await shot('project-quota-422');
  await page.fill('#gpu-guaranteed-0', '2');
  await page.fill('#budget-monthly', '-5');
  await page.getByRole('button', { name: 'Save limits' }).click();
  await page.getByTestId('cause-spec.budget.monthly').waitFor();
  if (await page.getByTestId('cause-spec.quota.guaranteedGpus.demo-gpu').count()) fail('the old cause is still shown');
  await page.fill('#budget-monthly', '500');
  await page.selectOption('#budget-action', 'Block');
  await page.fill('#quota-instances', '10');
  await page.fill('#quota-per-user', '5');
  await page.getByRole('button', { name: 'Save limits' }).click();
  await page.getByText('Limits of alpha saved').waitFor();
  const saved = (await api('GET', `${G}/projects/alpha`)).spec;
  const want = { quota: { gpus: { 'demo-gpu': 4 }, guaranteedGpus: { 'demo-gpu': 2 }, instances: 10, instancesPerUser: 5 }, budget: { monthly: 500, action: 'Block' } };
  if (JSON.stringify({ quota: saved.quota, budget: saved.budget }) !== JSON.stringify(want)) fail(`saved spec: ${JSON.stringify(saved)}`);
  await page.reload();
  await share.waitFor();
  if (await share.getAttribute('data-guaranteed') !== '2') fail('the share bar does not show the new guarantee');
  for (const [id, v] of [['#gpu-guaranteed-0', '2'], ['#gpu-max-0', '4'], ['#budget-monthly', '500'], ['#quota-instances', '10'], ['#quota-per-user', '5'], ['#budget-action', 'Block']])
    if (await page.inputValue(id) !== v) fail(`${id} shows ${await page.inputValue(id)} after a reload, not ${v}`);
  await shot('project-quota');

  step('guarantees above the fleet: alpha\'s page says so (the share monitor\'s condition)');
  await api('POST', `${G}/projects`, { metadata: { name: 'delta' }, spec: { quota: { gpus: { 'demo-gpu': 4 }, guaranteedGpus: { 'demo-gpu': 3 } } } });
  for (let i = 0; ; i++) {
    const conditions = (await api('GET', `${G}/projects/alpha`)).status?.conditions ?? [];
    if (conditions.some((c) => c.type === 'GuaranteesOvercommitted' && c.status === 'True')) break;
    if (i > 300) fail(`alpha never got GuaranteesOvercommitted: ${JSON.stringify(conditions)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await page.reload();
  await page.getByText('Guarantees are overcommitted').waitFor();
  await page.getByText(/sum to 5 over 2 projects \(alpha 2, delta 3\) but the fleet has 4 demo-gpu GPUs/).waitFor();
  await api('DELETE', `${G}/projects/delta`);

  step('instances: admission, queue position and the reason in words');
  await page.goto(`${base}/p/alpha/instances`);
  await page.getByTestId('row-a1').getByTestId('admission').getByText('Guaranteed').waitFor();
  await page.getByTestId('row-a2').getByTestId('admission').getByText('Borrowed').waitFor();
  await page.goto(`${base}/p/gamma/instances`);
  await page.getByTestId('row-g1').getByTestId('waiting').getByText('1st in the queue · Waiting for free GPUs').waitFor();
  await shot('instances-queue');
  await page.goto(`${base}/p/omega/instances`);
  await page.getByTestId('row-o1').getByTestId('waiting').getByText(/monthly budget is spent/).waitFor();
  await page.goto(`${base}/p/gamma/instances/g1`);
  await page.getByTestId('phase-reason').getByText('Waiting: 1st in the queue · Waiting for free GPUs').waitFor();

  if (!auth) { console.log('(no identity API: the member step is skipped)'); return; }
  step('carol, a member of beta, sees only her own usage');
  await page.getByRole('button', { name: 'Log out' }).click();
  await logIn(page, 'carol', carolPassword);
  await page.getByLabel('Main').getByRole('link', { name: 'Usage', exact: true }).click();
  await chart.locator('svg').first().waitFor();
  if (await chart.getAttribute('data-series') !== 'beta') fail(`carol's chart series: ${await chart.getAttribute('data-series')}`);
  await page.selectOption('#usage-group', { label: 'Project, User' });
  await table.getByTestId('usage-row-beta-carol').waitFor();
  const rows = await table.locator('[data-testid^=usage-row-]').evaluateAll((els) => els.map((e) => e.dataset.testid));
  if (rows.join(',') !== 'usage-row-beta-carol') fail(`carol sees the rows ${rows.join(',')}`);
  await shot('usage-member');
});
