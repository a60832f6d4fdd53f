// My account and Users in a real browser (issue 21, item 5), against a real gantryd started
// here:
//   alice (no org role) sees no Users page, neither in the navigation nor by URL → on My
//   account she creates a token: shown once with a copy button (the clipboard then holds it)
//   → a script's fetch with it reads the API → after a reload the list shows it with its last
//   use and not its secret → Revoke: the same fetch gets 401 → alice logs in from a second
//   browser, My account lists both sessions → Log out everywhere: this browser is at the login
//   screen and the other one's next request gets 401 → the org-admin's Users page shows bob
//   (local) enabled → the switch disables him: his token gets 401 and his login is refused
//   with the server's message.
//
//   node e2e/account.e2e.mjs [--gantryd PATH] [--screens DIR | --no-screens]
// Skips (exit 77) when chromium or node_modules are missing, unless CI or GANTRY_CI is set.
import { logIn, runE2e } from './harness.mjs';

await runE2e({
  name: 'My account (tokens, sessions) and Users (disable) in PaaS Studio',
  gantrydArgs: [],
  failureShot: 'account-e2e-failure.png',
}, async ({ base, G, api, server, page, step, shot, expected }) => {
  expected.push({ url: '/auth/whoami', status: 401 });
  const fail = (what) => { throw new Error(what); };
  step('alice and bob, local users; bob has a token of his own');
  await api('POST', `${G}/users`, { metadata: { name: 'alice' }, spec: { displayName: 'Alice', password: 'password-of-alice' } });
  await api('POST', `${G}/users`, { metadata: { name: 'bob' }, spec: { displayName: 'Bob', password: 'password-of-bob' } });
  const { token: bobToken } = await api('POST', `${G}/users/bob/tokens`, { description: 'bob-ci' });
  const call = (token, path) => fetch(base + path, { headers: { Authorization: `Bearer ${token}` } });

  step('alice: no Users page for her');
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  await page.goto(base + '/');
  await logIn(page, 'alice', 'password-of-alice');
  const nav = page.getByLabel('Main');
  await nav.getByRole('link', { name: 'My account' }).waitFor();
  if (await nav.getByRole('link', { name: 'Users', exact: true }).count()) fail('alice sees Users in the navigation');
  await page.goto(base + '/users');
  await page.getByText('This screen is for org-admins.').waitFor();

  step('My account: create a token, shown once, copied with the button');
  await page.getByLabel('Main').getByRole('link', { name: 'My account' }).click();
  await page.getByText('No API tokens').waitFor();
  await page.fill('#token-description', 'ci-e2e');
  await page.selectOption('#token-expiry', '30d');
  await page.getByRole('button', { name: 'Create token' }).click();
  const shown = page.getByTestId('new-token');
  await shown.waitFor();
  const token = await shown.getByLabel('New token').inputValue();
  if (!/^gnt_/.test(token)) fail(`the new token: "${token}"`);
  await shown.locator('button[aria-label="Copy"]').click();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  if (copied !== token) fail(`the clipboard holds "${copied}", not the token`);
  await shot('account-token-created');

  step('a script uses it; after a reload the list shows its last use, never the secret');
  let res = await call(token, `${G}/users/alice`);
  if (res.status !== 200) fail(`GET with the new token: ${res.status} ${await res.text()}`);
  await page.reload();
  const row = page.getByRole('row').filter({ hasText: 'ci-e2e' });
  await row.waitFor();
  const rowText = await row.innerText();
  if (/never/.test(rowText)) fail(`the row says never (last use or expiry): ${rowText}`);
  if ((await page.content()).includes(token)) fail('the token is on the page again after a reload');
  if (await page.getByTestId('new-token').count()) fail('the "copy it now" alert survived a reload');

  step('revoke: the script gets 401 at once');
  await row.getByRole('button', { name: 'Revoke ci-e2e' }).click();
  await page.getByText('No API tokens').waitFor();
  res = await call(token, `${G}/users/alice`);
  if (res.status !== 401) fail(`GET with the revoked token: ${res.status}`);

  step('a second browser: both sessions listed, this one marked');
  const other = await (await page.context().browser().newContext()).newPage();
  await other.goto(base + '/');
  await logIn(other, 'alice', 'password-of-alice');
  await page.reload();
  const sessions = page.locator('table[aria-label="Active sessions"] tbody tr');
  await page.getByTestId('session-current').waitFor();
  if ((await sessions.count()) !== 2) fail(`${await sessions.count()} sessions listed, not 2`);
  await shot('account-sessions');

  step('Log out everywhere: this browser at the login screen, the other one refused');
  await page.getByRole('button', { name: 'Log out everywhere' }).click();
  await page.waitForSelector('#username');
  const status = await other.evaluate(async (path) => (await fetch(path)).status, `${G}/users/alice`);
  if (status !== 401) fail(`the other browser's next request: ${status}`);
  await other.reload();
  await other.waitForSelector('#username');

  step('the org-admin disables bob on Users');
  await logIn(page, 'admin', server.adminPassword);
  await page.getByLabel('Main').getByRole('link', { name: 'Users', exact: true }).click();
  const bob = page.getByTestId('user-bob');
  await bob.waitFor();
  const bobText = await bob.innerText();
  if (!bobText.includes('local')) fail(`bob's row: ${bobText}`);
  await page.locator('label[for="enabled-bob"]').click();
  await page.getByText('bob is disabled: their sessions and tokens stop working').waitFor();
  // The toast comes before the list is read again: wait for the switch to show the change.
  await page.locator('#enabled-bob:not(:checked)').waitFor({ state: 'attached' })
    .catch(() => fail('the switch still says enabled'));
  if (await page.getByLabel('bob enabled').isChecked()) fail('the switch still says enabled');
  if ((await api('GET', `${G}/users/bob`)).spec.disabled !== true) fail('bob is not disabled in the API');
  await shot('users-disabled');

  step('bob: his token gets 401, his login is refused with the reason');
  res = await call(bobToken, `${G}/users/bob`);
  const body = await res.json();
  if (res.status !== 401 || !body.message.includes('disabled')) fail(`bob's token: ${res.status} ${JSON.stringify(body)}`);
  await other.fill('#username', 'bob');
  await other.fill('#password', 'password-of-bob');
  await other.getByRole('button', { name: 'Log in' }).click();
  const refusal = await other.getByTestId('login-error').innerText();
  if (!refusal.includes('user "bob" is disabled')) fail(`bob's login: ${refusal}`);
});
