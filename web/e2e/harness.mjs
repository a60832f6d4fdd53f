// What the browser tests share: skip when chromium or node_modules are missing (fail under
// CI), a real gantryd (port 0, temporary data directory) serving web/dist, headless Debian
// chromium driven by playwright-core, the API for setup with the bootstrap token, screenshots,
// and failure on any browser console error or uncaught page error except the responses a flow
// provokes on purpose (ctx.expected).
//
//   await runE2e({ name, gantrydArgs, port }, async (ctx) => { ... });  (port: 0 unless given)
// ctx: base, G (the API group path), api(method, path, body), server, page, step(text),
// shot(name), expected (push {url, status}), screensDir. Exits the process: 0 pass, 1 fail, 77 skip.
import { existsSync, mkdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const webDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const repoRoot = join(webDir, '..');

export async function runE2e({ name, gantrydArgs, failureShot, port }, body) {
  const inCi = !!(process.env.CI || process.env.GANTRY_CI);
  const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
  const skip = (why) => {
    if (inCi) { console.error(`FAIL: ${why} (CI must run the browser test)`); process.exit(1); }
    console.log(`SKIP: ${why}`);
    process.exit(77);
  };
  if (!existsSync(chromiumPath)) skip(`${chromiumPath} is not installed (apt-get install chromium)`);
  if (!existsSync(join(webDir, 'node_modules/playwright-core'))) skip('web/node_modules is missing (cd web && npm ci)');
  if (!existsSync(join(webDir, 'dist/index.html'))) {
    console.error('FAIL: web/dist is not built: run `bash scripts/build-ui.sh` (npm ci && npm run build in web/)');
    process.exit(1);
  }

  const { chromium } = await import('playwright-core');
  const { startGantryd } = await import('../scripts/gantryd.mjs');
  const args = process.argv.slice(2);
  const opt = (n) => { const i = args.indexOf(n); return i >= 0 ? args[i + 1] : undefined; };
  const screensDir = opt('--screens') ?? join(repoRoot, 'docs/screens');
  const takeScreens = !args.includes('--no-screens');
  if (takeScreens) mkdirSync(screensDir, { recursive: true });

  const server = await startGantryd({ binary: opt('--gantryd'), uiDir: join(webDir, 'dist'), args: gantrydArgs, port });
  const base = server.url;
  const G = '/apis/paas.gantry.dev/v1';
  let browser;
  let page;
  let failed = false;

  // The one place a test talks to the API directly (setup only), with the bootstrap token.
  async function api(method, path, reqBody) {
    const res = await fetch(base + path, {
      method,
      headers: { 'Content-Type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json', Authorization: `Bearer ${server.token}` },
      body: reqBody === undefined ? undefined : JSON.stringify(reqBody),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : {};
  }

  try {
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: 'en-GB', timezoneId: 'UTC' });
    page = await context.newPage();
    page.setDefaultTimeout(20000);
    const consoleErrors = [];
    const expected = [];
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      const where = m.location()?.url ?? '';
      if (expected.some((e) => where.includes(e.url) && m.text().includes(`status of ${e.status}`))) return;
      // The host's network changed under the browser (another test's Podman container adds
      // and removes interfaces): Chromium fails the request in flight, and the page's next
      // poll sends it again. Not the UI's error, and not gantryd's.
      if (m.text().includes('net::ERR_NETWORK_CHANGED')) return;
      consoleErrors.push(`${m.text()} (${where})`);
    });
    page.on('pageerror', (e) => consoleErrors.push(`uncaught: ${e.message}`));
    const shot = async (shotName) => {
      if (!takeScreens) return;
      await page.locator('#main-content').evaluate((e) => e.scrollTo(0, 0)).catch(() => {});
      await page.screenshot({ path: join(screensDir, `${shotName}.png`) });
    };
    const step = (s) => console.log(`--- ${s}`);
    await body({ base, G, api, server, page, step, shot, expected, screensDir });
    if (consoleErrors.length) throw new Error(`browser console errors:\n  ${consoleErrors.join('\n  ')}`);
    console.log(`PASS: ${name}`);
  } catch (err) {
    failed = true;
    await page?.screenshot({ path: join(process.env.TMPDIR ?? '/tmp', failureShot) }).catch(() => {});
    console.error(`FAIL: ${err.stack ?? err}`);
    console.error(`gantryd log (tail):\n${server.log().split('\n').slice(-30).join('\n')}`);
  } finally {
    await browser?.close();
    const code = await server.stop();
    if (code !== 0) {
      failed = true;
      console.error(`FAIL: gantryd exited with ${code} on SIGTERM:\n${server.log().split('\n').slice(-60).join('\n')}`);
    }
  }
  process.exit(failed ? 1 : 0);
}

// Logs in through the login screen (when gantryd has the identity API) and waits for Home.
export async function logIn(page, username, password) {
  await page.waitForSelector('#username');
  await page.fill('#username', username);
  await page.fill('#password', password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByTestId('whoami').waitFor();
}

// Adds variable number `n` (1-based) in the Environment Template editor.
export async function addTemplateVariable(page, n, { name, type, def, allowed, description }) {
  await page.getByRole('button', { name: 'Add variable' }).click();
  await page.getByLabel(`variable ${n} name`).fill(name);
  if (type) await page.getByLabel(`variable ${n} type`).selectOption(type);
  if (def !== undefined) await page.getByLabel(`variable ${n} default`).fill(def);
  if (allowed) await page.getByLabel(`variable ${n} allowed values`).fill(allowed);
  if (description) await page.getByLabel(`variable ${n} description`).fill(description);
}
