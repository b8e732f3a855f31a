import { test } from 'node:test';
import assert from 'node:assert/strict';
import { helperEnv, LaunchRefused, planLaunch, type LaunchFacts } from '../../extension/helperLaunch';

const base: LaunchFacts = {
  euid: 1000,
  capabilities: [],
  pkexec: '/usr/bin/pkexec',
  sudo: '/usr/bin/sudo',
  sudoNonInteractive: false,
  hasDisplay: true,
  execPath: '/usr/share/code/code',
  systemNode: '/usr/bin/node',
};
const helper = '/ext/dist/helper.js';

test('root or full capabilities start the helper directly', () => {
  assert.equal(planLaunch({ ...base, euid: 0 }, helper, 'auto', '').method, 'direct');
  const p = planLaunch({ ...base, capabilities: ['CAP_BPF', 'CAP_PERFMON', 'CAP_SYS_ADMIN'] }, helper, 'auto', '');
  assert.deepEqual([p.method, p.command, p.args], ['direct', '/usr/bin/node', [helper]]);
});

test('without privileges a desktop uses pkexec with absolute paths and an explicit, clean environment', () => {
  const p = planLaunch(base, helper, 'auto', '');
  assert.equal(p.method, 'pkexec');
  assert.equal(p.command, '/usr/bin/pkexec');
  assert.deepEqual(p.args.slice(0, 2), ['/usr/bin/env', '-i']);
  assert.ok(p.args.includes('/usr/bin/node') && p.args.at(-1) === helper);
  assert.ok(p.args.every((a) => !a.startsWith('NODE_OPTIONS')), 'NODE_OPTIONS never reaches the helper');
});

test('headless machines fall back to sudo -n when a NOPASSWD rule exists', () => {
  const p = planLaunch({ ...base, hasDisplay: false, sudoNonInteractive: true }, helper, 'auto', '');
  assert.equal(p.method, 'sudo');
  assert.equal(p.args[0], '-n');
});

test('with no way to get root, the message says exactly what to run', () => {
  assert.throws(
    () => planLaunch({ ...base, hasDisplay: false, pkexec: undefined }, helper, 'auto', ''),
    (e: unknown) => e instanceof LaunchRefused && /sudo \/usr\/bin\/node \/ext\/dist\/helper\.js/.test((e as Error).message),
  );
});

test('without a system node the editor runtime runs the helper as node', () => {
  const p = planLaunch({ ...base, euid: 0, systemNode: undefined }, helper, 'auto', '');
  assert.equal(p.command, '/usr/share/code/code');
  assert.equal(p.env.ELECTRON_RUN_AS_NODE, '1');
  const q = planLaunch({ ...base, systemNode: undefined }, helper, 'auto', '');
  assert.ok(q.args.includes('ELECTRON_RUN_AS_NODE=1'), 'pkexec clears the environment, so it is passed through env(1)');
});

test('explicit methods are honored or refused with the reason', () => {
  assert.equal(planLaunch(base, helper, 'direct', '').method, 'direct');
  assert.throws(() => planLaunch(base, helper, 'sudo', ''), /needs a password/);
  assert.throws(() => planLaunch({ ...base, pkexec: undefined }, helper, 'pkexec', ''), /pkexec is not installed/);
  assert.equal(planLaunch({ ...base, euid: 0 }, helper, 'auto', '/opt/node/bin/node').command, '/opt/node/bin/node');
});

test('the helper environment carries nothing that can inject code', () => {
  const env = helperEnv(false);
  assert.deepEqual(Object.keys(env).sort(), ['LANG', 'PATH']);
});
