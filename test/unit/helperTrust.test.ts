// Workspace settings cannot choose what runs as root; Restricted Mode blocks only requests that
// carry workspace content; sudo's password box stops after 3 wrong tries; the install script
// and its root runner; the identity rules of the helper.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { installVscodeMock, recorded } from '../mocks/vscode';

installVscodeMock();
 
const { helperSettings } = require('../../extension/editor/helperClient/helperSettings') as typeof import('../../extension/editor/helperClient/helperSettings');
const { planLaunch } = require('../../extension/privilege/launch') as typeof import('../../extension/privilege/launch');
const { trustNeededFor } = require('../../extension/editor/ui/workspaceTrust') as typeof import('../../extension/editor/ui/workspaceTrust');
const { obtainSudoPassword, MAX_TRIES } = require('../../extension/editor/helperClient/sudoPassword') as typeof import('../../extension/editor/helperClient/sudoPassword');
const { rootRun } = require('../../extension/privilege/installRun') as typeof import('../../extension/privilege/installRun');
const { chooseNode, launcherScript, shq } = require('../../extension/privilege/installPlan') as typeof import('../../extension/privilege/installPlan');
const { invokingUser, launchIdentity, primaryGid } = require('../../extension/sys/identity') as typeof import('../../extension/sys/identity');
const pkg = require('../../package.json') as {
  contributes: { configuration: { properties: Record<string, { scope?: string }> } };
  capabilities: { untrustedWorkspaces: { supported: string; description: string } };
};
 

const facts = { euid: 1000, capabilities: [], pkexec: '/usr/bin/pkexec', sudo: '/usr/bin/sudo', sudoNonInteractive: false, hasDisplay: true, execPath: '/usr/share/code/code', systemNode: '/usr/bin/node', installedVersion: '0.1.0' };

test('a workspace settings file that sets nodePath/privilege changes nothing in the launch plan', () => {
  recorded.config.clear();
  recorded.workspaceConfig.clear();
  const before = helperSettings();
  const planBefore = planLaunch(facts, '/ext/dist/helper.js', before.privilege, before.nodePath);
  recorded.workspaceConfig.set('ebpfStudio.helper.nodePath', '/home/alice/repo/evil-node');
  recorded.workspaceConfig.set('ebpfStudio.helper.privilege', 'direct');
  const after = helperSettings();
  assert.deepEqual(after, before);
  assert.deepEqual(planLaunch(facts, '/ext/dist/helper.js', after.privilege, after.nodePath), planBefore);
  // The user's own settings still count, and a relative node path is never used.
  recorded.config.set('ebpfStudio.helper.privilege', 'sudo');
  recorded.config.set('ebpfStudio.helper.nodePath', 'node');
  assert.deepEqual(helperSettings(), { privilege: 'sudo', nodePath: '' });
  recorded.config.clear();
  recorded.workspaceConfig.clear();
});

test('settings that choose what runs as root are machine-scoped; Restricted Mode is declared limited', () => {
  const props = pkg.contributes.configuration.properties;
  for (const k of ['ebpfStudio.helper.privilege', 'ebpfStudio.helper.nodePath']) assert.equal(props[k].scope, 'machine', k);
  assert.equal(pkg.capabilities.untrustedWorkspaces.supported, 'limited');
  assert.match(pkg.capabilities.untrustedWorkspaces.description, /Run BPF Program/);
});

test('Restricted Mode blocks only requests that hand workspace content to the helper', () => {
  assert.match(trustNeededFor('bpf/verify', { objectPath: '/w/a.o' })!, /loads a BPF object/);
  assert.match(trustNeededFor('session/start', { tracer: 'bpf-run', options: {} })!, /Run BPF Program/);
  assert.match(trustNeededFor('session/start', { tracer: 'memleak', options: { launch: { command: ['./a'] } } })!, /starts a program/);
  assert.equal(trustNeededFor('session/start', { tracer: 'memleak', options: { pid: 42 } }), undefined);
  assert.equal(trustNeededFor('session/start', { tracer: 'java-gc', options: { pid: 42 } }), undefined);
  assert.equal(trustNeededFor('capabilities', undefined), undefined);
});

test('the sudo password box: a correct password on the second try is returned; 3 wrong tries stop with a clear message', async () => {
  const asked: (string | undefined)[] = [];
  const pw = await obtainSudoPassword(
    async (_n, prev) => (asked.push(prev), asked.length === 1 ? 'wrong' : 'right'),
    async (p) => (p === 'right' ? { ok: true } : { ok: false, wrong: true, message: 'wrong password' }),
  );
  assert.equal(pw, 'right');
  assert.deepEqual(asked, [undefined, 'wrong password']);
  let tries = 0;
  await assert.rejects(
    obtainSudoPassword(async () => (tries++, 'nope'), async () => ({ ok: false, wrong: true, message: 'wrong password' })),
    /3 wrong passwords; stopped asking/,
  );
  assert.equal(tries, MAX_TRIES);
  await assert.rejects(obtainSudoPassword(async () => undefined, async () => ({ ok: true })), /cancelled/);
  await assert.rejects(obtainSudoPassword(async () => 'x', async () => ({ ok: false, wrong: false, message: 'sudo refuses this user: alice is not in the sudoers file' })), /not in the sudoers/);
});

test('the install runs /bin/sh as root with one authentication, the password only on stdin', () => {
  const script = 'echo hi';
  assert.deepEqual(rootRun(script, { euid: 0, hasDisplay: false, sudoNonInteractive: false }), { command: '/bin/sh', args: ['-c', script] });
  assert.deepEqual(rootRun(script, { euid: 1000, pkexec: '/usr/bin/pkexec', hasDisplay: true, sudoNonInteractive: false }), { command: '/usr/bin/pkexec', args: ['/bin/sh', '-c', script] });
  assert.deepEqual(rootRun(script, { euid: 1000, sudo: '/usr/bin/sudo', hasDisplay: false, sudoNonInteractive: true }).args, ['-n', '/bin/sh', '-c', script]);
  const r = rootRun(script, { euid: 1000, sudo: '/usr/bin/sudo', hasDisplay: false, sudoNonInteractive: false, password: 's3cret' });
  assert.deepEqual(r.args, ['-S', '-k', '-p', '', '/bin/sh', '-c', script]);
  assert.equal(r.password, 's3cret');
  assert.ok(!r.args.some((a) => a.includes('s3cret')));
  assert.throws(() => rootRun(script, { euid: 1000, hasDisplay: false, sudoNonInteractive: false }), /needs root/);
});

test('the installed launcher passes only the pkexec/sudo ids and a fixed environment', () => {
  const s = launcherScript('1.2.3', '/usr/local/lib/ebpf-studio/1.2.3', '/usr/bin/node', false);
  assert.match(s, /^#!\/bin\/sh\n/);
  assert.match(s, /exec \/usr\/bin\/env -i PATH=\S+ LANG=C\.UTF-8 "PKEXEC_UID=\$\{PKEXEC_UID-\}" "SUDO_UID=\$\{SUDO_UID-\}" "SUDO_GID=\$\{SUDO_GID-\}" '\/usr\/bin\/node' '\/usr\/local\/lib\/ebpf-studio\/1\.2\.3\/helper\.js'/);
  assert.equal(shq("a'b"), `'a'\\''b'`);
  // A node the user can write is never chosen; a plain node is copied, Electron refused.
  assert.deepEqual(chooseNode(['/home/a/node', '/usr/bin/node'], '/x', false, (f) => f === '/usr/bin/node' || f === '/home/a/node' ? f.startsWith('/usr') : false), { path: '/usr/bin/node', electron: false });
  assert.deepEqual(chooseNode([], '/home/a/.cache/code-server/lib/node', false, () => false), { path: 'copy', copyFrom: '/home/a/.cache/code-server/lib/node', electron: false });
  assert.throws(() => chooseNode([], '/home/a/VSCode/code', true, () => false), /apt-get install nodejs/);
});

test('identity: pkexec, then sudo, then the parent decide; a request never does', () => {
  assert.deepEqual(invokingUser({ PKEXEC_UID: '1001', SUDO_UID: '0' }, 0, 1), { uid: 1001, gid: primaryGid(1001), source: 'PKEXEC_UID' });
  assert.deepEqual(invokingUser({ SUDO_UID: '1002', SUDO_GID: '1003' }, 0, 1), { uid: 1002, gid: 1003, source: 'SUDO_UID' });
  assert.equal(invokingUser({ PKEXEC_UID: '', SUDO_UID: 'x' }, 0, process.pid).source, 'parent');
  assert.equal(primaryGid(1000, 'root:x:0:0::/root:/bin/sh\nalice:x:1000:1005::/home/alice:/bin/sh\n'), 1005);
  const alice = { uid: 1000, gid: 1000, source: 'SUDO_UID' as const };
  assert.deepEqual(launchIdentity({ uid: 4242, gid: 4242 }, alice), { uid: 1000, gid: 1000 });
  assert.deepEqual(launchIdentity({}, alice), { uid: 1000, gid: 1000 });
  assert.throws(() => launchIdentity({ uid: 0 }, alice), /refused: the request asks to run the command as root/);
  assert.deepEqual(launchIdentity({ uid: 5 }, { uid: 0, gid: 0, source: 'parent' }), { uid: 0, gid: 0 }, 'a root user launching for itself stays root');
});
