// Single sign-on in a real browser (issue 21; docs/sso.md), against a real gantryd and a real
// OpenID Connect provider: LemonLDAP::NG behind nginx, started by the C++ fixture's program
// (build-asan/tests/auth/oidc_test_provider_server, tests/oidc_test_provider.h):
//
//   the login screen shows "Log in with SSO" (GET /auth/oidc) → the provider's own login page
//   → dwho / dwho posted there → back through gantryd's callback to Home, logged in as dwho
//   (created at this first login, org-admin by --org-admin-group timelords) → a callback
//   replayed in the same browser gets gantryd's 401 page with its message.
//
//   node e2e/sso.e2e.mjs [--gantryd PATH] [--provider PATH] [--screens DIR | --no-screens]
// Skips (exit 77) when chromium, node_modules or the provider's packages are missing, unless
// CI or GANTRY_CI is set.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runE2e } from './harness.mjs';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '../..');
const inCi = !!(process.env.CI || process.env.GANTRY_CI);
const args = process.argv.slice(2);
const providerBin = args.includes('--provider') ? args[args.indexOf('--provider') + 1]
  : join(repoRoot, 'build-asan/tests/auth/oidc_test_provider_server');
const skip = (why) => {
  if (inCi) { console.error(`FAIL: ${why} (CI must run the browser test)`); process.exit(1); }
  console.log(`SKIP: ${why}`);
  process.exit(77);
};
if (!existsSync(providerBin)) skip(`${providerBin} is not built (ninja oidc_test_provider_server)`);

const freePort = () => new Promise((resolve, reject) => {
  const srv = createServer();
  srv.on('error', reject);
  srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => resolve(port)); });
});
const port = await freePort();
const callback = `http://127.0.0.1:${port}/auth/oidc/callback`;

// The provider runs until its stdin closes: when this process exits.
const provider = spawn(providerBin, ['--redirect-uri', callback], { stdio: ['pipe', 'pipe', 'pipe'] });
let providerLog = '';
provider.stderr.on('data', (d) => { providerLog += d; });
const issuer = await new Promise((resolve) => {
  let out = '';
  provider.stdout.on('data', (d) => {
    out += d;
    const m = out.match(/^issuer (\S+)/m);
    if (m) resolve(m[1]);
  });
  provider.on('exit', (code) => resolve(code === 77 ? 'skip' : `exit ${code}`));
});
if (issuer === 'skip') skip(`the OIDC test provider cannot run here: ${providerLog.trim()}`);
if (!issuer.startsWith('http')) { console.error(`FAIL: the provider did not start (${issuer}):\n${providerLog}`); process.exit(1); }

const secretDir = mkdtempSync(join(tmpdir(), 'gantry-sso-e2e-'));
writeFileSync(join(secretDir, 'client-secret'), 'gantry-client-secret-1\n');

await runE2e({
  name: 'single sign-on through the provider\'s login page',
  port,
  gantrydArgs: ['--oidc-issuer', issuer, '--oidc-client-id', 'gantry',
    '--oidc-client-secret-file', join(secretDir, 'client-secret'), '--oidc-redirect-url', callback,
    '--org-admin-group', 'timelords'],
  failureShot: 'sso-e2e-failure.png',
}, async ({ base, G, api, page, step, shot, expected }) => {
  expected.push({ url: '/auth/whoami', status: 401 }, { url: '/auth/oidc/callback', status: 401 });

  step('the login screen offers single sign-on');
  await page.goto(base + '/');
  const sso = page.getByTestId('sso-login');
  await sso.waitFor();
  await shot('login-sso');

  step("the provider's own login page");
  await sso.click();
  await page.waitForURL((u) => u.toString().startsWith(issuer));
  await page.locator('#userfield').fill('dwho');
  await page.locator('#passwordfield').fill('dwho');
  let callbackUrl = '';
  page.on('request', (r) => { if (r.url().startsWith(callback)) callbackUrl = r.url(); });
  await page.locator('#passwordfield').press('Enter');

  step('back in Gantry, logged in as the provider said');
  await page.getByTestId('whoami').waitFor();
  const who = await page.getByTestId('whoami').innerText();
  if (!who.includes('Doctor Who') && !who.includes('dwho')) throw new Error(`whoami shows ${who}, not dwho`);
  const user = await api('GET', `${G}/users/dwho`);
  if (user.spec.source !== 'oidc' || user.spec.orgRole !== 'org-admin' || user.spec.displayName !== 'Doctor Who')
    throw new Error(`user dwho: ${JSON.stringify(user.spec)}`);
  await shot('home-after-sso');

  step('a replayed callback gets a clear refusal');
  if (!callbackUrl) throw new Error('the browser never reached the callback');
  const res = await page.goto(callbackUrl);
  if (res.status() !== 401) throw new Error(`replayed callback: ${res.status()}`);
  const message = await page.locator('#sso-error').innerText();
  if (!/state/.test(message)) throw new Error(`replay message: ${message}`);
});
