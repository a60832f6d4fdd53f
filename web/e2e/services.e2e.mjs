// Managed services in a real browser (issue 9), against a real gantryd started here (exec
// driver, --workers 2):
//
//   log in as admin → create a service template (exec driver) and a service profile whose
//   compute selector wants tier=gpu (UI) → launch a compute instance of a tier=gpu profile
//   (wizard, Save Changes) → New Service Instance wizard: only the matching compute instance is
//   offered, with its status → Deploy → the service waits (Waiting, reason ComputeNotReady,
//   shown as such) → the compute instance is deployed from a second tab → the service page,
//   without reload, goes on to Success by itself; its outputs carry the compute's endpoint →
//   the compute instance lists the service; its Delete explains that services go first and
//   needs "also destroy and delete its 1 service" → both disappear → the profile gets auto-create
//   compute (revision 2) → a service with auto-create compute deploys its own compute instance
//   → that compute's Destroy needs "also destroy its 1 service" → both end Not Deployed.
//
//   node e2e/services.e2e.mjs [--gantryd PATH] [--screens DIR | --no-screens]
// Skips (exit 77) when chromium or node_modules are missing, unless CI or GANTRY_CI is set.
import { addTemplateVariable, logIn, runE2e } from './harness.mjs';

// The service's exec template: the compute instance's outputs arrive as GANTRY_COMPUTE_*.
const NOTEBOOK_SCRIPT = [
  'case "$1" in',
  'apply) echo "notebook $GANTRY_INSTANCE on $GANTRY_COMPUTE_PROJECT/$GANTRY_COMPUTE_NAME (compute endpoint $GANTRY_COMPUTE_ENDPOINT)"; sleep 1;',
  '  printf \'{"url": "http://notebook.example/%s", "computeEndpoint": "%s"}\' "$GANTRY_INSTANCE" "$GANTRY_COMPUTE_ENDPOINT" > "$GANTRY_OUTPUTS";;',
  'destroy) echo "notebook $GANTRY_INSTANCE removed";;',
  'esac',
].join('\n');

await runE2e({ name: 'the service wizard in PaaS Studio', gantrydArgs: ['--gpus', 'demo-gpu:4', '--workers', '2'], failureShot: 'services-e2e-failure.png' },
  async ({ base, G, api, server, page, step, shot, expected }) => {
    const auth = (await fetch(`${base}/auth/whoami`)).status !== 404;
    expected.push({ url: '/auth/whoami', status: auth ? 401 : 404 });
    const P = 'ml-research';
    const N = `${G}/namespaces/${P}`;
    const nav = (name) => page.getByLabel('Main').getByRole('link', { name, exact: true });
    // Cards are radios: chosen by keyboard, as a user of assistive technology would.
    const pick = async (selector) => {
      await page.locator(selector).focus();
      await page.keyboard.press('Space');
      if (!(await page.locator(selector).isChecked())) throw new Error(`${selector} not selected`);
    };

    // Setup the UI does not own: the project, the compute side (a template; a GPU profile labelled
    // tier=gpu and a CPU one without it; a CPU compute instance the service must not be offered).
    await api('POST', `${G}/projects`, { metadata: { name: P }, spec: { displayName: 'ML Research' } });
    await api('POST', `${N}/environmenttemplates`, {
      metadata: { name: 'workspace' },
      spec: { driver: 'exec', exec: { command: ['sh', 'examples/scripts/workspace.sh'], env: { PROVISION_SECONDS: '3' }, timeoutSeconds: 60 }, outputs: ['workspace', 'endpoint'] },
    });
    await api('POST', `${N}/computeprofiles`, { metadata: { name: 'gpu-small', labels: { tier: 'gpu' } }, spec: { displayName: '1x GPU', templateRef: { name: 'workspace' }, resources: { gpu: { type: 'demo-gpu', count: 1 } } } });
    await api('POST', `${N}/computeprofiles`, { metadata: { name: 'cpu-small' }, spec: { displayName: 'CPU only', templateRef: { name: 'workspace' } } });
    await api('POST', `${N}/computeinstances`, { metadata: { name: 'cpu-box' }, spec: { profileRef: { name: 'cpu-small' } } });

    step('log in as admin');
    await page.goto(`${base}/`);
    if (auth) await logIn(page, 'admin', server.adminPassword);
    await page.getByRole('heading', { name: /Welcome/ }).waitFor();
    await page.selectOption('#project-select', P);

    step('admin: a service template (exec driver)');
    await nav('Environment Templates').click();
    await page.getByRole('button', { name: 'New Environment Template' }).click();
    await page.fill('#template-name', 'notebook');
    await page.fill('#template-display-name', 'Notebook (exec script)');
    await page.selectOption('#template-driver', 'exec');
    await page.fill('#template-config', JSON.stringify({ command: ['sh', '-c', NOTEBOOK_SCRIPT, 'notebook'], timeoutSeconds: 60 }, null, 2));
    await addTemplateVariable(page, 1, { name: 'theme', type: 'enum', def: 'light', allowed: 'light, dark' });
    await page.fill('#template-outputs', 'url, computeEndpoint');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('tab', { name: 'Revisions' }).waitFor();

    step('admin: a service profile that runs on tier=gpu compute');
    await nav('Service Profiles').click();
    await page.getByRole('button', { name: 'New Service Profile' }).click();
    await page.fill('#sp-name', 'jupyter');
    await page.fill('#sp-display-name', 'Jupyter notebook');
    await page.fill('#sp-description', 'A notebook server on a GPU compute instance.');
    await page.fill('#sp-service-type', 'notebook');
    await page.selectOption('#sp-template', `${P}/notebook`);
    await page.getByRole('button', { name: 'Add match label' }).click();
    await page.getByLabel('selector-labels key 1').fill('tier');
    await page.getByLabel('selector-labels value 1').fill('gpu');
    await page.getByTestId('selector-text').getByText('tier=gpu').waitFor();
    await page.getByLabel('override theme').selectOption('restricted');
    await page.getByLabel('allowed values theme').fill('light, dark');
    await shot('service-profile-new');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('tab', { name: 'Revisions' }).waitFor();
    await nav('Service Profiles').click();
    await page.getByTestId('row-jupyter').getByText('tier=gpu').waitFor();
    await page.getByTestId('row-jupyter').getByText('notebook', { exact: true }).first().waitFor(); // service type (and template)
    await shot('service-profiles');

    step('launch a compute instance of the GPU profile (wizard, Save Changes)');
    await nav('Compute Instances').click();
    await page.getByRole('button', { name: 'New Compute Instance' }).click();
    await pick(`#profile-${P}-gpu-small-input`);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.fill('#unique-name', 'gpu-box');
    await page.getByText('gpu-box is available').waitFor();
    for (let i = 0; i < 3; i++) await page.getByRole('button', { name: 'Next', exact: true }).click();
    await page.getByRole('button', { name: 'Save Changes' }).click();
    await page.locator('[data-testid=overview-status] [data-phase=NotDeployed]').waitFor();

    step('New Service Instance: only the compute instance the selector matches, with its status');
    await nav('Service Instances').click();
    await page.getByRole('button', { name: 'New Service Instance' }).click();
    await pick(`#profile-${P}-jupyter-input`);
    await page.getByRole('button', { name: 'Continue' }).click();
    const gpuCard = page.getByTestId('compute-card-gpu-box');
    await gpuCard.locator('[data-phase=NotDeployed]').waitFor();
    if (await page.getByTestId('compute-card-cpu-box').count()) throw new Error('cpu-box (no tier=gpu) was offered');
    await page.getByText('1 other compute instance(s) are not offered').waitFor();
    await pick(`#compute-${P}-gpu-box-input`);
    await shot('service-wizard-compute');
    await page.getByRole('button', { name: 'Next', exact: true }).click();
    await page.fill('#unique-name', 'notebook-1');
    await page.getByText('notebook-1 is available').waitFor();
    await page.getByText('cannot be changed once the instance is created').waitFor();
    await page.fill('#display-name', 'Team notebook');
    await page.getByRole('button', { name: 'Next', exact: true }).click();
    await page.selectOption('#var-theme', 'dark');
    await page.getByRole('button', { name: 'Next', exact: true }).click();
    await page.getByRole('button', { name: 'Next', exact: true }).click();
    await page.getByTestId('review-compute').getByText(`${P}/gpu-box`).waitFor();
    await shot('service-wizard-review');

    step('Deploy: the service waits for its compute instance (ComputeNotReady)');
    await page.evaluate(() => {
      const w = window;
      w.__phases = [];
      const record = () => {
        const p = document.querySelector('[data-testid=overview-status] [data-phase]')?.getAttribute('data-phase');
        if (p && w.__phases[w.__phases.length - 1] !== p) w.__phases.push(p);
      };
      new MutationObserver(record).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-phase'] });
    });
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await page.locator('[data-testid=overview-status] [data-phase=Waiting]').waitFor();
    await page.locator('[data-testid=phase-reason][data-reason=ComputeNotReady]').waitFor();
    await page.getByTestId('phase-reason').getByText(/gpu-box is Not Deployed/).waitFor();
    await page.getByTestId('compute-instance').getByRole('link', { name: 'gpu-box' }).waitFor();
    await shot('service-overview-waiting');

    step('deploy the compute instance (second tab); the service goes on by itself, live');
    const page2 = await page.context().newPage();
    await page2.goto(`${base}/p/${P}/instances/gpu-box`);
    await page2.locator('[data-testid=overview-status] [data-phase=NotDeployed]').waitFor();
    await page2.bringToFront();
    await page2.getByRole('button', { name: 'Deploy', exact: true }).click();
    await page2.locator('[data-testid=overview-status] :is([data-phase=Waiting], [data-phase=InProgress], [data-phase=Success])').waitFor()
      .catch(async (e) => { await page2.screenshot({ path: '/tmp/services-e2e-page2.png' }); throw e; });
    await page.getByTestId('phase-reason').getByText(/gpu-box is (Waiting|In Progress|Success)/).waitFor({ timeout: 30000 });
    await page.locator('[data-testid=overview-status] [data-phase=Success]').waitFor({ timeout: 60000 });
    const phases = await page.evaluate(() => window.__phases);
    console.log(`service phases seen without reload: ${phases.join(' → ')}`);
    if (phases[0] !== 'Waiting' || phases[phases.length - 1] !== 'Success' || phases.includes('Failed'))
      throw new Error(`unexpected service phases ${phases}`);
    await page.getByRole('tab', { name: /Outputs/ }).click();
    await page.getByTestId('outputs').getByRole('link', { name: `http://notebook.example/notebook-1` }).waitFor();
    await page.getByTestId('outputs').getByText(/workspace/).waitFor(); // the compute's endpoint, as an input
    await shot('service-overview-success');
    await page.getByRole('tab', { name: /Runs/ }).click();
    await page.getByTestId('run-log').getByText(`on ${P}/gpu-box`).waitFor();

    step('Service Instances list: service type and compute instance columns');
    await nav('Service Instances').click();
    const row = page.getByTestId('row-notebook-1');
    await row.getByText('notebook', { exact: true }).waitFor();
    await row.getByRole('link', { name: 'gpu-box' }).waitFor();
    await row.locator('[data-phase=Success]').waitFor();
    await shot('service-instances');

    step('Home: the running service, marked as one');
    await nav('Home').click();
    await page.getByTestId('count-services').getByText('1').waitFor();
    const running = page.getByRole('list', { name: 'Running' });
    await running.getByRole('link', { name: 'Team notebook' }).waitFor();
    await running.getByText('service', { exact: true }).waitFor();
    await nav('Service Instances').click();

    step('the compute instance lists its service; Delete explains and cascades');
    await page2.close();
    await row.getByRole('link', { name: 'gpu-box' }).click();
    await page.locator('[data-testid=overview-status] [data-phase=Success]').waitFor();
    await page.getByRole('tab', { name: /Services \(1\)/ }).click();
    await page.getByTestId('services').getByRole('link', { name: 'notebook-1' }).waitFor();
    await page.getByRole('button', { name: 'More actions' }).click();
    await page.getByRole('menuitem', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByTestId('cascade-notice').getByText('Services must be destroyed before their compute instance').waitFor();
    await dialog.getByText('notebook-1 (Success)').waitFor();
    await page.fill('#confirm-name', 'gpu-box');
    const confirm = dialog.getByRole('button', { name: 'Delete' });
    if (await confirm.isEnabled()) throw new Error('Delete enabled without choosing to delete the services too');
    await dialog.getByLabel('Also destroy and delete its 1 service (first)').check();
    await shot('compute-delete-cascade');
    await confirm.click();
    await page.getByRole('heading', { name: 'Compute Instances', exact: true }).waitFor();
    await page.getByTestId('row-gpu-box').waitFor({ state: 'detached', timeout: 60000 });
    await nav('Service Instances').click();
    await page.getByRole('heading', { name: 'Service Instances', exact: true }).waitFor();
    await page.getByTestId('row-notebook-1').waitFor({ state: 'detached', timeout: 30000 });
    const left = await api('GET', `${N}/serviceinstances`);
    if (left.items.length) throw new Error(`service instances left after the cascade: ${left.items.map((i) => i.metadata.name)}`);

    step('admin: the service profile gets auto-create compute (revision 2)');
    await nav('Service Profiles').click();
    await page.getByRole('link', { name: 'jupyter', exact: true }).click();
    await page.locator('#sp-auto-create').focus();
    await page.keyboard.press('Space');
    if (!(await page.locator('#sp-auto-create').isChecked())) throw new Error('auto-create compute not switched on');
    await page.selectOption('#sp-compute-profile', `${P}/gpu-small`);
    await page.getByRole('button', { name: 'Save (new revision)' }).click();
    await page.getByText('Saved: jupyter is at revision 2').waitFor();

    step('New Service Instance with auto-create compute → Deploy: its compute is created and deployed too');
    await nav('Service Instances').click();
    await page.getByRole('button', { name: 'New Service Instance' }).click();
    await pick(`#profile-${P}-jupyter-input`);
    await page.getByRole('button', { name: 'Continue' }).click();
    await pick('#compute-auto-input');
    await page.getByRole('button', { name: 'Next', exact: true }).click();
    await page.fill('#unique-name', 'notebook-2');
    await page.getByText('notebook-2 is available').waitFor();
    for (let i = 0; i < 3; i++) await page.getByRole('button', { name: 'Next', exact: true }).click();
    await page.getByTestId('review-compute').getByText('Auto-create notebook-2-compute').waitFor();
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await page.getByTestId('compute-instance').getByText('created for this service').waitFor();
    await page.locator('[data-testid=overview-status] [data-phase=Success]').waitFor({ timeout: 60000 });

    step('Destroy of its compute instance explains and cascades');
    await page.getByTestId('compute-instance').getByRole('link', { name: 'notebook-2-compute' }).click();
    await page.locator('[data-testid=overview-status] [data-phase=Success]').waitFor();
    await page.getByRole('button', { name: 'Destroy', exact: true }).click();
    const destroyDialog = page.getByRole('dialog');
    await destroyDialog.getByText('notebook-2 (Success)').waitFor();
    const destroyButton = destroyDialog.getByRole('button', { name: 'Destroy' });
    if (await destroyButton.isEnabled()) throw new Error('Destroy enabled without choosing to destroy the services too');
    await destroyDialog.getByLabel('Also destroy its 1 service (first)').check();
    await shot('compute-destroy-cascade');
    await destroyButton.click();
    await page.locator('[data-testid=overview-status] [data-phase=NotDeployed]').waitFor({ timeout: 60000 });
    const svc = await api('GET', `${N}/serviceinstances/notebook-2`);
    if (svc.status?.phase !== 'NotDeployed') throw new Error(`notebook-2 is ${svc.status?.phase} after the cascade destroy`);
  });
