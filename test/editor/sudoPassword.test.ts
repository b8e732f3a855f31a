// Headless privilege in a real VS Code: code-server runs as a non-root user with no DISPLAY (like
// a Remote-SSH host) whose sudo rule needs a password. The first command that needs the helper
// asks for the sudo password in a password box; a wrong one is reported in the box itself, and the
// right one starts the root-owned helper (Doctor then says it runs as root). Needs root (to create
// the user, the sudoers rule and the root-owned install), sudo and code-server; skips otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { codeServerBin, EditorSession, skipReason } from './codeServer';
import { chooseNode, HELPER_LAUNCHER, INSTALL_ROOT, installPlan, POLKIT_POLICY } from '../../extension/privilege/installPlan';
import { untrustedReason } from '../../extension/privilege/trustedPath';
import { distDir, repoRoot } from '../helpers';

const USER = 'ebpf-studio-edtest';
const PASSWORD = 'Edit0r-sudo-pw';
const SUDOERS = `/etc/sudoers.d/${USER}`;

function why(): string | undefined {
  if (process.geteuid?.() !== 0) return 'needs root to create a test user, a sudoers rule and the root-owned helper install';
  if (!fs.existsSync('/usr/bin/sudo')) return 'sudo is not installed (apt-get install sudo)';
  return skipReason();
}

test('headless: the sudo password box reports a wrong password and the right one starts the helper', { skip: why(), timeout: 300_000 }, async (t) => {
  const hadInstall = fs.existsSync(INSTALL_ROOT);
  const createdUser = spawnSync('id', [USER]).status !== 0;
  // code-server lives under root's 0700 home: hard-link a copy the test user can read.
  const csCopy = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-cs-'));
  fs.chmodSync(csCopy, 0o755);
  const csDir = path.resolve(path.dirname(codeServerBin()!), '..', '..');
  const savedPath = process.env.CODE_SERVER_PATH;
  let s: EditorSession | undefined;
  t.after(async () => {
    await s?.close();
    if (savedPath === undefined) delete process.env.CODE_SERVER_PATH;
    else process.env.CODE_SERVER_PATH = savedPath;
    fs.rmSync(SUDOERS, { force: true });
    if (createdUser) spawnSync('userdel', ['-r', USER]);
    if (!hadInstall) {
      fs.rmSync(INSTALL_ROOT, { recursive: true, force: true });
      fs.rmSync(POLKIT_POLICY, { force: true });
    }
    fs.rmSync(csCopy, { recursive: true, force: true });
  });

  if (createdUser) assert.equal(spawnSync('useradd', ['-m', '-s', '/bin/sh', USER]).status, 0);
  assert.equal(spawnSync('chpasswd', [], { input: `${USER}:${PASSWORD}\n` }).status, 0);
  fs.writeFileSync(SUDOERS, `${USER} ALL=(root) ${HELPER_LAUNCHER}\n`, { mode: 0o440 });
  const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
  const node = chooseNode(['/usr/bin/node', '/usr/local/bin/node'], process.execPath, false, (f) => untrustedReason(f) === undefined);
  const inst = spawnSync('/bin/sh', ['-c', installPlan(distDir, pkg.version, node).script], { encoding: 'utf8' });
  assert.equal(inst.status, 0, inst.stderr);
  const cp = spawnSync('cp', ['-al', csDir, csCopy], { encoding: 'utf8' });
  assert.equal(cp.status, 0, cp.stderr);
  process.env.CODE_SERVER_PATH = path.join(csCopy, path.basename(csDir), 'node_modules', '.bin', 'code-server');

  const ids = (flag: string) => Number(spawnSync('id', [flag, USER], { encoding: 'utf8' }).stdout.trim());
  const home = spawnSync('getent', ['passwd', USER], { encoding: 'utf8' }).stdout.split(':')[5];
  s = await EditorSession.start({ runAs: { uid: ids('-u'), gid: ids('-g'), home }, dropEnv: ['DISPLAY', 'WAYLAND_DISPLAY', 'SUDO_USER', 'SUDO_UID', 'SUDO_GID'] });

  await s.runCommandFromPalette('eBPF: Check This Machine (Doctor)');
  const box = s.page.locator('.quick-input-widget .quick-input-box input');
  const message = s.page.locator('.quick-input-widget .quick-input-message');
  const title = s.page.locator('.quick-input-widget .quick-input-title');
  await title.filter({ hasText: 'eBPF Studio: sudo password' }).waitFor({ state: 'visible', timeout: 60_000 });
  assert.equal(await box.getAttribute('type'), 'password', 'typed characters are hidden');
  await box.fill('not-the-password');
  await box.press('Enter');
  await message.filter({ hasText: /wrong password; try 2 of 3/ }).waitFor({ state: 'visible', timeout: 30_000 });
  await s.screenshot('sudo-password-wrong');
  await box.fill(PASSWORD);
  await box.press('Enter');

  const frame = await s.webviewFrameWithText(/eBPF Studio: this machine/, 60_000);
  const text = await frame.evaluate(() => document.body.innerText);
  assert.match(text, /helper runs as root: yes/);
  const log = s.outputChannel();
  assert.ok(!log.includes(PASSWORD), 'the password is not in the extension log');
  assert.match(log, /starting helper \(sudo-password\): \/usr\/bin\/sudo -S -k -p {2}\/usr\/local\/lib\/ebpf-studio\/ebpf-studio-helper/);
});
