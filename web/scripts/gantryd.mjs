// Starts a real gantryd for the UI's scripts and browser tests: 127.0.0.1:0, a fresh temporary
// data directory, learns the port from its `listening on http://HOST:PORT` log line (no sleeps).
// GANTRY_BOOTSTRAP_TOKEN is set to a random token (gantryd's first admin credential once the
// identity API exists; ignored before) and returned as `token`; GANTRY_ADMIN_PASSWORD likewise
// (the password of the `admin` user gantryd creates on first start) as `adminPassword`.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

// The gantryd to run: the argument, $GANTRY_TEST_GANTRYD, or the newest build in this tree.
export function findGantryd(explicit) {
  const candidates = [explicit, process.env.GANTRY_TEST_GANTRYD,
    ...['build-dbg', 'build-release', 'build-asan', 'build'].map((b) => join(repoRoot, b, 'src/app/gantryd'))];
  for (const c of candidates) if (c && existsSync(c)) return resolve(c); // gantryd runs in repoRoot
  throw new Error('no gantryd binary found: build it (ninja -C build-dbg gantryd) or pass --gantryd PATH');
}

// `dataDir`, `port` and `token` (all optional) start it again where an earlier one ran: that
// data directory (kept on stop), that port, that bootstrap token.
export async function startGantryd({ binary, args = [], uiDir, cwd = repoRoot, ...again } = {}) {
  const dataDir = again.dataDir ?? mkdtempSync(join(tmpdir(), 'gantry-web-'));
  const token = again.token ?? randomBytes(24).toString('hex');
  const adminPassword = randomBytes(12).toString('hex');
  const argv = ['--listen', `127.0.0.1:${again.port ?? 0}`, '--data-dir', dataDir, ...args];
  if (uiDir) argv.push('--ui-dir', uiDir);
  const child = spawn(findGantryd(binary), argv, {
    cwd, env: { ...process.env, GANTRY_BOOTSTRAP_TOKEN: token, GANTRY_ADMIN_PASSWORD: adminPassword }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const url = await new Promise((resolveUrl, reject) => {
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      log += chunk;
      const m = log.match(/listening on (http:\/\/[^\s]+)/);
      if (m) resolveUrl(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`gantryd exited (${code}) before listening:\n${log}`)));
    child.on('error', (err) => reject(new Error(`cannot start gantryd: ${err.message}`)));
  });
  // SIGTERM, wait, clean up; returns the exit code (0 for a clean drain; sanitizer reports
  // such as leaks make it non-zero) or the signal that killed it.
  const stop = async () => {
    let code = child.exitCode ?? child.signalCode;
    if (code === null) {
      const done = new Promise((r) => child.on('exit', (c, sig) => r(c ?? sig)));
      child.kill('SIGTERM');
      code = await done;
    }
    if (!again.dataDir) rmSync(dataDir, { recursive: true, force: true });
    return code;
  };
  return { url, token, adminPassword, dataDir, stop, log: () => log };
}
