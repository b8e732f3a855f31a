// The rest of a newcomer's first hour, in code-server run as a normal user with sudo (a password
// rule, as on a desktop; no DISPLAY, so the password box): New BPF Project through its prompts,
// then Load and Verify through the load-as-root question and the runner's password box, for a
// program the verifier accepts and one it rejects (the line in Problems); Profile CPU given a pid
// that is not running and a listed program that exited before the pick (a message naming the
// pid, no stack trace); two profiles of one program in the Sessions view compared with "Compare
// With…", whose two sides must be told apart (they once read "CPU: pid N (sh) → CPU: pid N (sh)").
// Needs root (the user, its sudoers rule and the root-owned install), sudo, BPF and code-server;
// skips otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { codeServerBin, EditorSession, skipReason } from './codeServer';
import { step } from './steps';
import { showSessionsView } from './sessionsRestoreStep';
import { chooseNode, INSTALL_ROOT, installPlan, POLKIT_POLICY, RUNNER_POLKIT_POLICY } from '../../extension/privilege/installPlan';
import { untrustedReason } from '../../extension/privilege/trustedPath';
import { distDir, kernelSkipReason, repoRoot } from '../helpers';

const USER = `ebpfH${process.pid % 100000}`;
const PASSWORD = 'F1rst-hour-pw';
const SUDOERS = `/etc/sudoers.d/${USER}`;

function why(): string | undefined {
  if (process.geteuid?.() !== 0) return 'needs root to create a test user, a sudoers rule and the root-owned helper install';
  if (!fs.existsSync('/usr/bin/sudo')) return 'sudo is not installed (apt-get install sudo)';
  return skipReason() ?? kernelSkipReason();
}

/** Answers the sudo password box if it is (or comes) up within `ms`; true when it was answered. */
async function answerPassword(s: EditorSession, ms: number): Promise<boolean> {
  const title = s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'sudo password' });
  try {
    await title.waitFor({ state: 'visible', timeout: ms });
  } catch {
    return false;
  }
  const box = s.page.locator('.quick-input-widget .quick-input-box input');
  await box.fill(PASSWORD);
  await box.press('Enter');
  return true;
}

test('a newcomer\'s first hour as a normal user with sudo', { skip: why(), timeout: 600_000 }, async (t) => {
  const hadInstall = fs.existsSync(INSTALL_ROOT);
  assert.equal(spawnSync('useradd', ['-m', '-s', '/bin/bash', USER]).status, 0, `useradd ${USER}`);
  const csCopy = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-cs-'));
  fs.chmodSync(csCopy, 0o755);
  const csDir = path.resolve(path.dirname(codeServerBin()!), '..', '..');
  const savedPath = process.env.CODE_SERVER_PATH;
  const kids: number[] = [];
  let s: EditorSession | undefined;
  t.after(async () => {
    await s?.close();
    for (const k of kids) {
      try {
        process.kill(k, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    if (savedPath === undefined) delete process.env.CODE_SERVER_PATH;
    else process.env.CODE_SERVER_PATH = savedPath;
    fs.rmSync(SUDOERS, { force: true });
    spawnSync('pkill', ['-KILL', '-u', USER]);
    spawnSync('userdel', ['-r', USER]);
    if (!hadInstall) {
      fs.rmSync(INSTALL_ROOT, { recursive: true, force: true });
      fs.rmSync(POLKIT_POLICY, { force: true });
      fs.rmSync(RUNNER_POLKIT_POLICY, { force: true });
    }
    fs.rmSync(csCopy, { recursive: true, force: true });
  });

  assert.equal(spawnSync('chpasswd', [], { input: `${USER}:${PASSWORD}\n` }).status, 0);
  // a desktop user in the sudo group: every command, with the password
  fs.writeFileSync(SUDOERS, `${USER} ALL=(ALL:ALL) ALL\n`, { mode: 0o440 });
  const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
  const node = chooseNode(['/usr/bin/node', '/usr/local/bin/node'], process.execPath, false, (f) => untrustedReason(f) === undefined);
  const inst = spawnSync('/bin/sh', ['-c', installPlan(distDir, pkg.version, node).script], { encoding: 'utf8' });
  assert.equal(inst.status, 0, inst.stderr);
  assert.equal(spawnSync('cp', ['-al', csDir, csCopy]).status, 0);
  process.env.CODE_SERVER_PATH = path.join(csCopy, path.basename(csDir), 'node_modules', '.bin', 'code-server');
  const ids = (flag: string) => Number(spawnSync('id', [flag, USER], { encoding: 'utf8' }).stdout.trim());
  const uid = ids('-u');
  const home = spawnSync('getent', ['passwd', USER], { encoding: 'utf8' }).stdout.split(':')[5];
  s = await EditorSession.start({ runAs: { uid, gid: ids('-g'), home }, dropEnv: ['DISPLAY', 'WAYLAND_DISPLAY', 'SUDO_USER', 'SUDO_UID', 'SUDO_GID'] });
  const ed = s;

  /** Waits for a notification matching `re` and checks that no notification holds a stack trace. */
  const notified = async (re: RegExp, what: string): Promise<string> => {
    // every toast seen while waiting (an information toast hides itself after a while)
    const seen = new Set<string>();
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && ![...seen].some((n) => re.test(n))) {
      for (const n of await ed.notifications()) seen.add(n);
      await ed.page.waitForTimeout(300);
    }
    const shown = [...seen];
    const hit = shown.find((n) => re.test(n));
    assert.ok(hit, `${what}: no notification matching ${re} (shown: ${JSON.stringify(shown)})`);
    for (const n of shown) assert.doesNotMatch(n, /\n\s+at |Error: |TypeError|undefined/, `${what}: a notification with a stack trace or a raw error: ${n}`);
    return hit;
  };
  const input = ed.page.locator('.quick-input-widget .quick-input-box input');
  const loadAsRoot = async () => {
    const button = ed.page.locator('.monaco-dialog-box .monaco-button', { hasText: 'Load as Root' });
    await button.waitFor({ state: 'visible', timeout: 120_000 });
    await button.click();
    return answerPassword(ed, 30_000);
  };

  await step(t, ed, 'New BPF Project through its prompts, then Load and Verify through the load-as-root question and the password box', async () => {
    await ed.runCommandFromPalette('eBPF: New BPF Project');
    await ed.pickQuickPickItem(/minimal/);
    // the folder dialog opens at the workspace, saying what the folder is for; its default is taken
    await ed.page.locator('.quick-input-widget .monaco-button', { hasText: 'Create the project in this folder' }).waitFor({ timeout: 15_000 });
    await ed.page.locator('.quick-input-widget .quick-input-title', { hasText: 'New BPF Project (minimal): the folder to create it in' }).waitFor({ timeout: 5000 });
    await ed.page.waitForTimeout(1000);
    await input.press('Enter');
    await ed.page.locator('.quick-input-widget .quick-input-title', { hasText: 'folder name' }).waitFor({ timeout: 15_000 });
    assert.equal(await input.inputValue(), 'minimal', 'the folder name starts at the template name');
    await input.press('Enter');
    await ed.page.locator('.tabs-container .tab', { hasText: 'minimal.bpf.c' }).waitFor({ timeout: 30_000 });
    await ed.runCommandFromPalette('eBPF: Load and Verify');
    assert.equal(await loadAsRoot(), true, 'the runner asked for the sudo password in the password box');
    await notified(/the verifier accepted minimal\.bpf\.c \(count_execve: \d+ instructions/, 'Load and Verify');
    await ed.screenshot('first-hour-load-verify-accepted');
  });

  await step(t, ed, 'Load and Verify of a program the verifier rejects: the line in Problems and the reason', async () => {
    await ed.runCommandFromPalette('Notifications: Clear All Notifications');
    const bad = path.join(ed.workspace, 'minimal', 'bad.bpf.c');
    // the classic first mistake: a map lookup's result used without checking it found anything (line 18)
    const lines = ['#include "vmlinux.h"', '#include <bpf/bpf_helpers.h>', '', 'char LICENSE[] SEC("license") = "GPL";', '', 'struct {', '\t__uint(type, BPF_MAP_TYPE_HASH);', '\t__uint(max_entries, 1);', '\t__type(key, __u32);', '\t__type(value, __u64);', '} counts SEC(".maps");', '',
      'SEC("tp/syscalls/sys_enter_execve")', 'int no_null_check(void *ctx)', '{', '\t__u32 key = 0;', '\t__u64 *n = bpf_map_lookup_elem(&counts, &key);', '\treturn *n;', '}', ''];
    fs.writeFileSync(bad, lines.join('\n'));
    fs.chownSync(bad, uid, ids('-g'));
    await ed.runCommandFromPalette('View: Show Explorer');
    const row = ed.page.locator('.explorer-folders-view .monaco-list-row', { hasText: /^bad\.bpf\.c$/ }).first();
    await row.waitFor({ state: 'visible', timeout: 30_000 });
    await row.dblclick();
    await ed.page.locator('.tabs-container .tab', { hasText: 'bad.bpf.c' }).waitFor({ timeout: 30_000 });
    await ed.runCommandFromPalette('eBPF: Load and Verify');
    await loadAsRoot();
    const said = await notified(/the verifier rejected bad\.bpf\.c at line 18/, 'Load and Verify (rejected)');
    t.diagnostic(`rejected: ${said}`);
    await ed.runCommandFromPalette('View: Focus Problems (Errors, Warnings, Infos)');
    const problem = ed.page.locator('.markers-panel .monaco-list-row', { hasText: /BPF verifier/ }).first();
    await problem.waitFor({ state: 'visible', timeout: 15_000 });
    assert.match(await problem.innerText(), /\[Ln 18, Col \d+\]/, 'the Problems row is at the line that reads the unchecked lookup');
    await ed.screenshot('first-hour-load-verify-rejected');
  });

  await step(t, ed, 'Profile CPU given a pid that is not running and a program that exited after the list opened', async () => {
    await ed.runCommandFromPalette('View: Close All Editors');
    await ed.runCommandFromPalette('Notifications: Clear All Notifications');
    await ed.runCommandFromPalette('eBPF: Profile CPU');
    await answerPassword(ed, 5000); // the helper, when nothing started it yet
    await input.waitFor({ state: 'visible', timeout: 60_000 });
    await input.fill('4000000');
    await ed.quickPickRow(/Use pid 4000000/).waitFor({ timeout: 15_000 });
    await input.press('Enter');
    await notified(/Profile CPU: No process with pid 4000000 is running: it has exited, or the pid is mistyped/, 'a pid that is not running');
    await ed.screenshot('first-hour-wrong-pid');
    await ed.runCommandFromPalette('Notifications: Clear All Notifications');
    const child = spawn('/bin/sleep', ['600'], { uid, gid: ids('-g'), stdio: 'ignore' });
    kids.push(child.pid!);
    await ed.runCommandFromPalette('eBPF: Profile CPU');
    await input.waitFor({ state: 'visible', timeout: 60_000 });
    await input.fill(String(child.pid));
    await ed.quickPickRow(new RegExp(`^${child.pid}\\s+sleep`)).waitFor({ timeout: 15_000 });
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    await input.press('Enter');
    await notified(new RegExp(`pid ${child.pid} is running`, 'i'), 'a listed program that exited before the pick');
    await ed.screenshot('first-hour-exited-pid');
  });

  await step(t, ed, 'two profiles of one program in the Sessions view, compared with Compare With…: the sides are told apart', async () => {
    await ed.runCommandFromPalette('Notifications: Clear All Notifications');
    const child = spawn('/bin/sh', ['-c', 'while :; do :; done'], { uid, gid: ids('-g'), stdio: 'ignore' });
    kids.push(child.pid!);
    for (let i = 0; i < 2; i++) {
      await ed.runCommandFromPalette('View: Close All Editors');
      await ed.runCommandFromPalette('eBPF: Profile CPU');
      await input.waitFor({ state: 'visible', timeout: 60_000 });
      await input.fill(String(child.pid));
      await ed.quickPickRow(new RegExp(`^${child.pid}\\s+sh`)).waitFor({ timeout: 15_000 });
      await input.press('Enter');
      const frame = await ed.webviewFrame(`CPU: pid ${child.pid} (sh)`, 60_000);
      await frame.locator('.toolbar .status', { hasText: /[1-9]\d* samples/ }).waitFor({ timeout: 30_000 });
      await ed.page.waitForTimeout(1500); // a second apart: the sessions' start times differ
      await frame.locator('button', { hasText: /^Stop$/ }).click();
      await frame.locator('.toolbar .status', { hasText: /samples at 99 Hz/ }).waitFor({ timeout: 30_000 });
    }
    await showSessionsView(ed);
    const rows = ed.page.locator('.pane-body .monaco-list-row', { hasText: `CPU: pid ${child.pid} (sh)` });
    await rows.nth(1).waitFor({ state: 'visible', timeout: 15_000 });
    await ed.screenshot('first-hour-sessions');
    // the context menu, as a user opens it (a click while it still settles can go unheard: again then)
    const picker = ed.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Compare with which profile?' });
    for (let attempt = 0; !(await picker.isVisible()); attempt++) {
      await ed.page.keyboard.press('Escape');
      await rows.first().click({ button: 'right' });
      const item = ed.page.locator('.context-view .action-label', { hasText: /Compare With/ }).first();
      await item.waitFor({ state: 'visible', timeout: 10_000 });
      await ed.page.waitForTimeout(300);
      await item.click();
      await picker.waitFor({ state: 'visible', timeout: 10_000 }).catch((e) => {
        if (attempt >= 2) throw e;
      });
    }
    await ed.quickPickRow(new RegExp(`CPU: pid ${child.pid} \\(sh\\)`)).click();
    const tab = ed.page.locator('.tabs-container .tab', { hasText: 'CPU diff:' }).first();
    await tab.waitFor({ state: 'visible', timeout: 30_000 });
    const title = (await tab.getAttribute('aria-label')) ?? (await tab.innerText());
    const m = /CPU diff: (.+) → (.+?)(?:, preview)?$/.exec(title.replace(/\s+/g, ' ').trim());
    assert.ok(m, `the diff's title: ${title}`);
    assert.notEqual(m[1], m[2], `the diff names its two sides apart: "${title}"`);
    t.diagnostic(`diff: ${m[1]} → ${m[2]}`);
    const diff = await ed.webviewFrameWithText(/Biggest movers/, 30_000);
    assert.match(await diff.evaluate(() => document.body.innerText), new RegExp(`Colour: change of self share from ${m[1].replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), 'the legend names the base by its time too');
    await ed.page.waitForTimeout(1500); // the graph draws after the table
    await ed.screenshot('first-hour-compare', await ed.webviewElement(diff));
  });
});
