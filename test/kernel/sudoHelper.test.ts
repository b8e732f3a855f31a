// Headless privilege for real: a non-root user with a sudo rule that needs a password (created
// here, removed after) types it; a wrong password is reported and retried, 3 wrong stop with a
// clear message, and the right one starts the root-owned helper through `sudo -S`, which then
// runs launched commands as that user and refuses a request for root. The password goes only
// through pipes. Needs root, sudo and runuser; skipped with the reason otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildSync } from 'esbuild';
import { chooseNode, HELPER_LAUNCHER, INSTALL_ROOT, installedVersion, installPlan, POLKIT_POLICY } from '../../extension/privilege/installPlan';
import { untrustedReason } from '../../extension/privilege/trustedPath';
import { distDir, kernelSkipReason, repoRoot } from '../helpers';

const USER = 'ebpf-studio-sudotest';
const PASSWORD = 'Tr4cing-is-fun';
const SUDOERS = `/etc/sudoers.d/${USER}`;

function skipReason(): string | undefined {
  if (process.geteuid?.() !== 0) return 'needs root to create a test user and a sudoers rule';
  if (!fs.existsSync('/usr/bin/sudo')) return 'sudo is not installed (apt-get install sudo)';
  if (spawnSync('runuser', ['--version']).status !== 0) return 'runuser (util-linux) is missing';
  return kernelSkipReason();
}

test('headless sudo: wrong passwords are reported, the right one starts the root-owned helper for that user', { timeout: 120000 }, async (t) => {
  const why = skipReason();
  if (why) return t.skip(why);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-sudo-'));
  fs.chmodSync(tmp, 0o755);
  const hadInstall = fs.existsSync(INSTALL_ROOT);
  const createdUser = spawnSync('id', [USER]).status !== 0;
  try {
    if (createdUser) assert.equal(spawnSync('useradd', ['-M', '-s', '/bin/sh', USER]).status, 0);
    assert.equal(spawnSync('chpasswd', [], { input: `${USER}:${PASSWORD}\n` }).status, 0);
    fs.writeFileSync(SUDOERS, `${USER} ALL=(root) ${HELPER_LAUNCHER}\n`, { mode: 0o440 });
    assert.equal(spawnSync('visudo', ['-cf', SUDOERS]).status, 0);
    // The current build, installed root-owned where the editor looks for it.
    const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    const node = chooseNode(['/usr/bin/node', '/usr/local/bin/node'], process.execPath, false, (f) => untrustedReason(f) === undefined);
    const install = spawnSync('/bin/sh', ['-c', installPlan(distDir, pkg.version, node).script], { encoding: 'utf8' });
    assert.equal(install.status, 0, install.stderr);
    assert.equal(installedVersion(), pkg.version);

    const child = path.join(tmp, 'sudoChild.js');
    buildSync({ entryPoints: [path.join(repoRoot, 'test', 'fixtures', 'sudoChild.ts')], bundle: true, platform: 'node', format: 'cjs', outfile: child, logLevel: 'error' });
    fs.chmodSync(child, 0o644);
    const run = (attempts: string[]) => {
      const r = spawnSync('runuser', ['-u', USER, '--', process.execPath, child], { input: JSON.stringify({ attempts }), encoding: 'utf8', timeout: 90000, cwd: '/' });
      assert.equal(r.status, 0, r.stderr);
      return JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
    };
    const uid = Number(spawnSync('id', ['-u', USER], { encoding: 'utf8' }).stdout.trim());

    const three = run(['nope1', 'nope2', 'nope3', PASSWORD]);
    assert.equal(three.asked, 3, 'stops after 3 wrong tries');
    assert.match(String(three.error), /3 wrong passwords; stopped asking/);

    const ok = run(['wrong-once', PASSWORD]);
    assert.equal(ok.asked, 2, JSON.stringify(ok));
    assert.equal(ok.method, 'sudo-password');
    assert.deepEqual(ok.args, ['-S', '-k', '-p', '', HELPER_LAUNCHER]);
    assert.ok(!JSON.stringify(ok.args).includes(PASSWORD), 'never on the command line');
    assert.ok((ok.capsKeys as number) > 0, 'the helper answered');
    assert.match(String(ok.rootRequest), /refused: the request asks to run the command as root/);
    assert.equal(ok.launchedUid, uid, 'the launched command runs as the user who typed the password');
    assert.ok(!String(ok.stderr).includes(PASSWORD), 'the password is not in the helper output');
  } finally {
    fs.rmSync(SUDOERS, { force: true });
    if (createdUser) spawnSync('userdel', [USER]);
    if (!hadInstall) {
      fs.rmSync(INSTALL_ROOT, { recursive: true, force: true });
      fs.rmSync(POLKIT_POLICY, { force: true });
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
