// The official Kubernetes JavaScript client (@kubernetes/client-node, pinned in
// package-lock.json) against a real gantryd (issue 24): discovery and CRUD through the generic
// KubernetesObjectApi, label selectors, limit/continue paging, merge patch, the 409 of a stale
// replace, a watch from a resourceVersion, bookmarks, an informer that survives a restart of
// gantryd (resuming its watch from the last resourceVersion it saw, without listing again), the deploy subresource
// through the kubeconfig's credentials, refusals as ApiException carrying the Status body, and
// the TypeScript example of docs/api.md ("From a program"), type-checked and run as written.
//
//   node client.test.mjs --gantryd PATH --gantry PATH [--docs docs/api.md]
//
// A fresh gantryd (127.0.0.1:0, temporary data directory, the bootstrap token) per run; the
// client reads the kubeconfig `gantry kubeconfig` prints. No sleeps: every wait is on an event
// the client delivers (the informer's reconnect back-off is the client's retry, not a wait).
// Exits 0 pass, 1 fail, 77 skip (node_modules missing; a failure when CI or GANTRY_CI is set).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { test, after, before } from 'node:test';

const here = dirname(fileURLToPath(import.meta.url));
const inCi = !!(process.env.CI || process.env.GANTRY_CI);
if (!existsSync(join(here, 'node_modules/@kubernetes/client-node'))) {
  const why = 'tests/clients/js/node_modules is missing (cd tests/clients/js && npm ci)';
  if (inCi) { console.error(`FAIL: ${why}; CI must run this test`); process.exit(1); }
  console.log(`SKIP: ${why}`);
  process.exit(77);
}
const k8s = await import('@kubernetes/client-node');
// What the client sends its own requests with: the kubeconfig's TLS settings apply.
const { default: fetch } = await import('node-fetch');
const { startGantryd } = await import('../../../web/scripts/gantryd.mjs');

const args = process.argv.slice(2);
const opt = (n, d) => { const i = args.indexOf(n); return i >= 0 ? args[i + 1] : d; };
const gantrydBinary = opt('--gantryd');
const gantryBinary = opt('--gantry');
const docsPath = opt('--docs', join(here, '../../../docs/api.md'));

const GROUP = 'paas.gantry.dev';
const VERSION = 'v1';
const API_VERSION = `${GROUP}/${VERSION}`;
const NS = 'default';
const PLURAL = 'computeinstances';
const INSTANCES = `/apis/${API_VERSION}/namespaces/${NS}/${PLURAL}`;

// As root, workloads run as gantry-workload in DATA_DIR.workloads beside the data directory:
// the directory holding both must be traversable by that user.
const root = mkdtempSync(join(tmpdir(), 'gantry-js-'));
chmodSync(root, 0o711);
const dataDir = join(root, 'data');
// client-node sends credentials over https only: gantryd's self-signed certificate
// (DATA_DIR/tls.crt) is the kubeconfig's certificate authority.
const gantrydArgs = (tlsPort) => ['--watch-bookmark-seconds', '0.2', '--tls-listen', `127.0.0.1:${tlsPort}`];
const httpsUrl = (log) => log.match(/listening on (https:\/\/\S+)/)[1];
let server;
let kc;
let custom;
let objects;
const kubeconfigPath = join(root, 'kubeconfig');

function writeKubeconfig() {
  const out = execFileSync(gantryBinary, ['--server', server.url, '--token', server.token, '-n', NS, 'kubeconfig',
    '--tls-server', httpsUrl(server.log()), '--ca-file', join(dataDir, 'tls.crt')],
    // A home without a gantry config file: nothing but the flags counts.
    { env: { ...process.env, GANTRY_CONFIG: '', HOME: root }, stdio: ['ignore', 'pipe', 'ignore'] });
  writeFileSync(kubeconfigPath, out);
  kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  custom = kc.makeApiClient(k8s.CustomObjectsApi);
  objects = k8s.KubernetesObjectApi.makeApiClient(kc);
}

const template = (name) => ({
  apiVersion: API_VERSION, kind: 'EnvironmentTemplate', metadata: { name, namespace: NS },
  spec: { displayName: 'Script', driver: 'exec', exec: { command: ['true'], workingDir: '/' } },
});
const profile = (name, tmpl) => ({
  apiVersion: API_VERSION, kind: 'ComputeProfile', metadata: { name, namespace: NS },
  spec: { displayName: 'No GPUs', templateRef: { name: tmpl } },
});
const instance = (name, labels = {}) => ({
  apiVersion: API_VERSION, kind: 'ComputeInstance', metadata: { name, namespace: NS, labels },
  spec: { displayName: name, profileRef: { name: 'cpu' } },
});
const names = (list) => list.items.map((o) => o.metadata.name);
const list = (extra = {}) => custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, ...extra });

// Resolves with the events seen once `until(type, obj)` holds; a watch error rejects.
async function watchUntil(query, until) {
  const seen = [];
  let controller;
  const done = new Promise((resolve, reject) => {
    new k8s.Watch(kc).watch(INSTANCES, query, (type, obj) => {
      seen.push([type, obj]);
      if (until(type, obj)) resolve(seen);
    }, (err) => (err ? reject(err) : resolve(seen))).then((c) => { controller = c; }, reject);
  });
  try { return await done; } finally { controller?.abort(); }
}

before(async () => {
  server = await startGantryd({ binary: gantrydBinary, args: gantrydArgs(0), dataDir });
  writeKubeconfig();
  await objects.create(template('script'));
  await objects.create(profile('cpu', 'script'));
});

after(async () => {
  const code = await server?.stop();
  const log = server?.log() ?? '';
  rmSync(root, { recursive: true, force: true });
  assert.equal(code, 0, `gantryd exited with ${code} on SIGTERM:\n${log.slice(-6000)}`);
});

test('discovery and CRUD through the generic object API', async () => {
  const created = await objects.create(instance('crud', { t: 'crud' }));
  assert.equal(created.metadata.namespace, NS);
  const read = await objects.read({ apiVersion: API_VERSION, kind: 'ComputeInstance', metadata: { name: 'crud', namespace: NS } });
  assert.equal(read.status.phase, 'NotDeployed');
  const listed = await objects.list(API_VERSION, 'ComputeInstance', NS, undefined, undefined, undefined, undefined, 't=crud');
  assert.deepEqual(names(listed), ['crud']);
  const patched = await objects.patch({ apiVersion: API_VERSION, kind: 'ComputeInstance', metadata: { name: 'crud', namespace: NS }, spec: { description: 'patched' } },
    undefined, undefined, undefined, undefined, k8s.PatchStrategy.MergePatch);
  assert.equal(patched.spec.description, 'patched');
  const stale = { ...instance('crud'), metadata: { ...instance('crud').metadata, resourceVersion: '1' } };
  await assert.rejects(objects.replace(stale), (err) => {
    assert.ok(err instanceof k8s.ApiException, String(err));
    assert.equal(err.code, 409);
    return true;
  });
  await objects.delete({ apiVersion: API_VERSION, kind: 'ComputeInstance', metadata: { name: 'crud', namespace: NS } });
  await assert.rejects(objects.read({ apiVersion: API_VERSION, kind: 'ComputeInstance', metadata: { name: 'crud', namespace: NS } }),
    (err) => err.code === 404);
});

test('label selectors and limit/continue paging', async () => {
  const teams = ['llm', 'llm', 'vision', 'llm', 'vision'];
  for (const [i, team] of teams.entries()) await objects.create(instance(`page-${i}`, { t: 'page', team }));
  assert.deepEqual(names(await list({ labelSelector: 't=page,team=llm' })), ['page-3', 'page-1', 'page-0']);
  assert.deepEqual(names(await list({ labelSelector: 't=page,team notin (llm)' })), ['page-4', 'page-2']);
  const pages = [];
  let token;
  do {
    const page = await list({ labelSelector: 't=page', limit: 2, _continue: token });
    pages.push(names(page));
    token = page.metadata.continue;
  } while (token);
  assert.deepEqual(pages, [['page-4', 'page-3'], ['page-2', 'page-1'], ['page-0']]);
  for (const i of teams.keys()) await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, name: `page-${i}` });
});

test('a watch from a resourceVersion replays exactly the later changes', async () => {
  const rv = (await list()).metadata.resourceVersion;
  await objects.create(instance('w-1'));
  await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, name: 'w-1' });
  const seen = await watchUntil({ resourceVersion: rv }, (type) => type === 'DELETED');
  assert.deepEqual(seen.map(([type, obj]) => `${type} ${obj.metadata.name}`), ['ADDED w-1', 'DELETED w-1']);
});

test('bookmarks carry the resourceVersion the watch has seen everything up to', async () => {
  const rv = (await list()).metadata.resourceVersion;
  const seen = await watchUntil({ resourceVersion: rv, allowWatchBookmarks: true }, (type) => type === 'BOOKMARK');
  const [type, obj] = seen.at(-1);
  assert.equal(type, 'BOOKMARK');
  assert.equal(obj.kind, 'ComputeInstance');
  assert.ok(Number(obj.metadata.resourceVersion) >= Number(rv));
});

test('refusals are ApiException with the Status body', async () => {
  await assert.rejects(custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, name: 'nope' }),
    (err) => {
      assert.ok(err instanceof k8s.ApiException, String(err));
      assert.equal(err.code, 404);
      const status = typeof err.body === 'string' ? JSON.parse(err.body) : err.body;
      assert.equal(status.kind, 'Status');
      assert.equal(status.reason, 'NotFound');
      assert.equal(status.message, 'computeinstances.paas.gantry.dev "nope" not found');
      return true;
    });
  const bad = instance('bad');
  bad.spec.colour = 'blue';
  await assert.rejects(custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, body: bad }),
    (err) => {
      assert.equal(err.code, 422);
      const status = typeof err.body === 'string' ? JSON.parse(err.body) : err.body;
      assert.equal(status.reason, 'Invalid');
      assert.equal(status.details.causes[0].field, 'spec.colour');
      return true;
    });
});

test('the deploy subresource with the kubeconfig credentials', async () => {
  await objects.create(instance('deploy-me'));
  const res = await fetch(`${kc.getCurrentCluster().server}${INSTANCES}/deploy-me/deploy`,
    await kc.applyToFetchOptions({ method: 'POST' }));
  assert.equal(res.status, 202, await res.clone().text());
  assert.equal((await res.json()).metadata.name, 'deploy-me');
  const seen = await watchUntil({ fieldSelector: 'metadata.name=deploy-me' },
    (type, obj) => ['Success', 'Failed'].includes(obj.status?.phase));
  assert.equal(seen.at(-1)[1].status.phase, 'Success');
});

test('an informer survives a restart of gantryd and resumes without listing again', async () => {
  let lists = 0;
  const informer = k8s.makeInformer(kc, INSTANCES, () => { lists += 1; return list({ labelSelector: 't=inf' }); }, 't=inf');
  const waiters = [];
  const waitFor = (event, name) => new Promise((resolve) => waiters.push({ event, name, resolve }));
  for (const event of ['add', 'update', 'delete']) {
    informer.on(event, (obj) => {
      for (const w of waiters.filter((x) => x.event === event && x.name === obj.metadata.name)) w.resolve(obj);
    });
  }
  // The client stops an informer on an error; restarting it is the caller's job.
  let stopped = false;
  informer.on('error', () => {
    if (!stopped) setTimeout(() => { if (!stopped) informer.start().catch(() => {}); }, 100);
  });
  try {
    const added = waitFor('add', 'before');
    await informer.start();
    await objects.create(instance('before', { t: 'inf' }));
    await added;

    const port = Number(new URL(server.url).port);
    const tlsPort = Number(new URL(httpsUrl(server.log())).port);
    assert.equal(await server.stop(), 0, server.log().slice(-4000));
    server = await startGantryd({ binary: gantrydBinary, args: gantrydArgs(tlsPort), dataDir, port, token: server.token });

    const addedAfter = waitFor('add', 'after');
    const deleted = waitFor('delete', 'before');
    await objects.create(instance('after', { t: 'inf' }));
    await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, name: 'before' });
    await addedAfter;
    await deleted;
    assert.deepEqual(informer.list().map((o) => o.metadata.name), ['after']);
    assert.equal(lists, 1, 'the informer resumed its watch from a resourceVersion instead of listing again');
  } finally {
    stopped = true;
    await informer.stop();
  }
});

test('the TypeScript example of docs/api.md', async () => {
  const docs = readFileSync(docsPath, 'utf8');
  const section = docs.slice(docs.indexOf('## From a program'));
  const code = section.match(/```typescript\n([\s\S]*?)```/)[1];
  await objects.create(instance('llm-train', { team: 'llm' }));
  const dir = mkdtempSync(join(root, 'example-'));
  symlinkSync(join(here, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: true, outDir: 'out', types: ['node'] },
    files: ['example.ts'],
  }));
  writeFileSync(join(dir, 'example.ts'), code);
  execFileSync(process.execPath, [join(here, 'node_modules/typescript/bin/tsc'), '-p', dir], { stdio: 'inherit' });
  const out = execFileSync(process.execPath, [join(dir, 'out/example.js')],
    { env: { ...process.env, KUBECONFIG: kubeconfigPath }, encoding: 'utf8' });
  const lines = out.trim().split('\n');
  assert.equal(lines[0], 'llm-train NotDeployed', out);
  assert.equal(lines.at(-1), 'MODIFIED llm-train Success', out);
});
