import { test } from 'node:test';
import assert from 'node:assert/strict';
import { helperEnv, LaunchRefused, planLaunch, planRunnerLaunch, type LaunchFacts } from '../../extension/privilege/launch';
import { HELPER_LAUNCHER, polkitPolicy, RUNNER_LAUNCHER, runnerPolkitPolicy } from '../../extension/privilege/installPlan';

const base: LaunchFacts = {
  euid: 1000,
  capabilities: [],
  pkexec: '/usr/bin/pkexec',
  sudo: '/usr/bin/sudo',
  sudoNonInteractive: false,
  hasDisplay: true,
  execPath: '/usr/share/code/code',
  systemNode: '/usr/bin/node',
  installedVersion: '0.1.0',
  user: 'alice',
};
const helper = '/home/alice/.vscode/extensions/ebpf-studio/dist/helper.js';

test('root or full capabilities start the helper directly from the extension', () => {
  assert.equal(planLaunch({ ...base, euid: 0 }, helper, 'auto', '').method, 'direct');
  const p = planLaunch({ ...base, capabilities: ['CAP_BPF', 'CAP_PERFMON', 'CAP_SYS_ADMIN'] }, helper, 'auto', '');
  assert.deepEqual([p.method, p.command, p.args], ['direct', '/usr/bin/node', [helper]]);
});

test('a desktop user gets root through pkexec for the root-owned launcher only', () => {
  const p = planLaunch(base, helper, 'auto', '');
  assert.deepEqual([p.method, p.command, p.args], ['pkexec', '/usr/bin/pkexec', [HELPER_LAUNCHER]]);
  assert.ok(!p.args.includes(helper), 'nothing from the user-writable extension folder runs as root');
  assert.deepEqual(Object.keys(p.env).sort(), ['LANG', 'PATH']);
});

test('a NOPASSWD rule is used with sudo -n and the stable launcher path', () => {
  const p = planLaunch({ ...base, hasDisplay: false, sudoNonInteractive: true }, helper, 'auto', '');
  assert.deepEqual([p.method, p.command, p.args], ['sudo', '/usr/bin/sudo', ['-n', HELPER_LAUNCHER]]);
});

test('headless without a NOPASSWD rule: sudo -S with the password on stdin, never on the command line', () => {
  const p = planLaunch({ ...base, hasDisplay: false }, helper, 'auto', '');
  assert.equal(p.method, 'sudo-password');
  assert.equal(p.password, true);
  assert.deepEqual(p.args, ['-S', '-k', '-p', '', HELPER_LAUNCHER]);
  const q = planLaunch(base, helper, 'sudo', '');
  assert.equal(q.method, 'sudo-password', 'an explicit "sudo" needing a password asks for it too');
});

test('without the root-owned install, pkexec and sudo are refused with the install command named', () => {
  for (const facts of [{ ...base, installedVersion: undefined }, { ...base, installedVersion: undefined, hasDisplay: false }, { ...base, installedVersion: undefined, hasDisplay: false, sudoNonInteractive: true }]) {
    assert.throws(
      () => planLaunch(facts, helper, 'auto', ''),
      (e: unknown) => e instanceof LaunchRefused && /Install Privileged Helper/.test((e as Error).message) && /root-owned/.test((e as Error).message),
    );
  }
  assert.throws(() => planLaunch({ ...base, installedVersion: undefined }, helper, 'pkexec', ''), /Install Privileged Helper/);
});

test('with no way to ask for root, the message names the sudoers line for the stable path', () => {
  assert.throws(
    () => planLaunch({ ...base, hasDisplay: false, sudo: undefined }, helper, 'auto', ''),
    (e: unknown) => e instanceof LaunchRefused && (e as Error).message.includes(`alice ALL=(root) NOPASSWD: ${HELPER_LAUNCHER}`),
  );
});

test('without a system node a root editor runs the helper with its own runtime as node', () => {
  const p = planLaunch({ ...base, euid: 0, systemNode: undefined }, helper, 'auto', '');
  assert.equal(p.command, '/usr/share/code/code');
  assert.equal(p.env.ELECTRON_RUN_AS_NODE, '1');
});

test('explicit methods are honored or refused with the reason', () => {
  assert.equal(planLaunch(base, helper, 'direct', '').method, 'direct');
  assert.throws(() => planLaunch({ ...base, pkexec: undefined }, helper, 'pkexec', ''), /pkexec is not installed/);
  assert.throws(() => planLaunch({ ...base, sudo: undefined }, helper, 'sudo', ''), /sudo is not installed/);
  assert.equal(planLaunch({ ...base, euid: 0 }, helper, 'auto', '/opt/node/bin/node').command, '/opt/node/bin/node');
  assert.deepEqual(planLaunch(base, helper, 'auto', '/tmp/evil-node').args, [HELPER_LAUNCHER], 'nodePath does not change what pkexec runs');
});

test('the helper environment carries nothing that can inject code', () => {
  const env = helperEnv(false);
  assert.deepEqual(Object.keys(env).sort(), ['LANG', 'PATH']);
});

test('the runner of user code: directly as root, else only its own launcher, authenticated every time (never sudo -n)', () => {
  const runner = '/home/alice/.vscode/extensions/ebpf-studio/dist/runner.js';
  assert.deepEqual(planRunnerLaunch({ ...base, euid: 0 }, runner, '').args, [runner]);
  const pk = planRunnerLaunch(base, runner, '');
  assert.deepEqual([pk.method, pk.args], ['pkexec', [RUNNER_LAUNCHER]]);
  // A NOPASSWD rule (the helper's) does not carry over: sudo always asks, -k drops a cached ticket.
  const su = planRunnerLaunch({ ...base, hasDisplay: false, sudoNonInteractive: true }, runner, '');
  assert.deepEqual([su.method, su.args, su.password], ['sudo-password', ['-S', '-k', '-p', '', RUNNER_LAUNCHER], true]);
  assert.throws(() => planRunnerLaunch({ ...base, installedVersion: undefined }, runner, ''), LaunchRefused);
  assert.throws(() => planRunnerLaunch({ ...base, hasDisplay: false, sudo: undefined }, runner, ''), /no way to ask/);
  // Its polkit action asks every time; the helper's may keep the authentication for a while.
  const policy = runnerPolkitPolicy();
  assert.match(policy, /<allow_active>auth_admin<\/allow_active>/);
  assert.doesNotMatch(policy, /auth_admin_keep|yes<\/allow/);
  assert.match(policy, new RegExp(`exec.path">${RUNNER_LAUNCHER}<`));
  assert.match(polkitPolicy(), /dev\.ebpfstudio\.helper\.run/);
});
