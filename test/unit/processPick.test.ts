// The process picker every tracing command shares: order (JVMs and the user's programs first, the
// machine's own processes behind "Show all"), and typed pids — a pid that is not running gets a
// message saying so, not a silent return (the picker runs against the `vscode` mock and a fake
// helper that answers with a fixed process list).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { installVscodeMock, recorded } from '../mocks/vscode';
import type { ProcessInfo } from '../../extension/protocol/protocol';
import { checkTypedPid, groupOf, isSystemProcess, orderProcesses, typedPid } from '../../extension/model/processPick';

const vscode = installVscodeMock();

const { pickProcess } = require('../../extension/editor/ui/processPicker') as typeof import('../../extension/editor/ui/processPicker');

const { setHelper } = require('../../extension/editor/helperClient/helperClient') as typeof import('../../extension/editor/helperClient/helperClient');

const ws = '/home/alice/project';
function proc(pid: number, comm: string, cmdline: string[], extra: Partial<ProcessInfo> = {}): ProcessInfo {
  return { pid, ppid: 1, user: 'alice', uid: 1000, comm, cmdline, kernelThread: false, ...extra };
}
const jvm = { libjvm: '/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so', usdt: true, main: 'com.acme.App', javaHome: '/usr/lib/jvm/java-17-openjdk-amd64', preserveFramePointer: false };
// What this machine's picker listed before: sandbox plumbing first, then the user's work.
const machine: ProcessInfo[] = [
  proc(1, 'process_api', ['/process_api', '--firecracker-init'], { uid: 0, user: 'root' }),
  proc(2, 'kthreadd', [], { uid: 0, user: 'root', kernelThread: true }),
  proc(40, 'memfd:sealed-91', ['line_io_tools/binary_backend', '--uid', '0'], { uid: 0, user: 'root' }),
  proc(41, 'chrome_crashpad', ['/opt/chromium/chrome_crashpad_handler', '--database=/tmp/x'], { uid: 1000 }),
  proc(42, 'chrome', ['/opt/chromium/chrome', '--type=renderer', '--lang=en'], { uid: 1000 }),
  proc(43, 'node', ['/usr/bin/node', '/opt/ebpf-studio/dist/helper.js'], { uid: 0, user: 'root' }),
  proc(44, 'node', ['/usr/lib/code-server/lib/node', '/usr/lib/code-server/out/node/entry'], { uid: 1000 }),
  proc(45, 'systemd', ['/lib/systemd/systemd', '--user'], { uid: 1000 }),
  proc(300, 'nginx', ['nginx: worker process'], { uid: 33, user: 'www-data' }),
  proc(400, 'bash', ['-bash']),
  proc(500, 'leaky', [`${ws}/scripts/demo/leaky`], { exe: `${ws}/scripts/demo/leaky` }),
  proc(600, 'java', ['java', '-cp', 'app.jar', 'com.acme.App'], { jvm }),
  proc(700, 'sleep', ['sleep', '100']),
];
const ctx = { uid: 1000, roots: [ws], selfPids: [44] };

describe('process picker order', () => {
  test('JVMs, then programs from the workspace, your processes, other users’; the machine’s own last', () => {
    const order = orderProcesses(machine, ctx).map((x) => `${x.group}:${x.process.comm}`);
    assert.deepEqual(order, [
      'jvm:java',
      'workspace:leaky',
      'own:sleep',
      'own:bash',
      'others:nginx',
      'system:systemd',
      'system:node',
      'system:node',
      'system:chrome',
      'system:chrome_crashpad',
      'system:memfd:sealed-91',
      'system:process_api',
    ]);
  });

  test('what counts as a system or helper process', () => {
    const sys = machine.filter((p) => !p.kernelThread && isSystemProcess(p, ctx)).map((p) => p.pid);
    assert.deepEqual(sys, [1, 40, 41, 42, 43, 44, 45]);
    // a user's node program is theirs, not a helper
    assert.equal(groupOf(proc(800, 'node', ['node', `${ws}/server.js`]), ctx), 'own');
  });
});

describe('typed pids', () => {
  test('a pid is digits, spaces around allowed', () => {
    assert.equal(typedPid(' 1234 '), 1234);
    assert.equal(typedPid('12a'), undefined);
    assert.equal(typedPid(''), undefined);
  });

  test('an exited or unknown pid, a kernel thread, a non-JVM for a JVM command: each says why', () => {
    const exited = checkTypedPid('99999', machine, { command: 'Profile CPU' });
    assert.equal(exited.ok, false);
    assert.match(!exited.ok ? exited.message : '', /^No process with pid 99999 is running: it has exited, or the pid is mistyped/);
    const kthread = checkTypedPid('2', machine, { command: 'Profile CPU' });
    assert.match(!kthread.ok ? kthread.message : '', /kernel thread/);
    const notJvm = checkTypedPid('700', machine, { command: 'Trace Java GC', jvmOnly: true });
    assert.match(!notJvm.ok ? notJvm.message : '', /pid 700 \(sleep\) is not a JVM .*Trace Java GC needs a running Java program/);
    assert.match(!checkTypedPid('0', machine).ok ? (checkTypedPid('0', machine) as { message: string }).message : '', /not a pid/);
    const ok = checkTypedPid('600', machine, { command: 'Trace Java GC', jvmOnly: true });
    assert.equal(ok.ok && ok.process.comm, 'java');
  });
});

describe('the picker', () => {
  setHelper({ request: async () => machine } as never);
  (vscode.workspace as unknown as Record<string, unknown>).workspaceFolders = [{ uri: { fsPath: ws }, name: 'project', index: 0 }];
  const win = vscode.window as unknown as Record<string, unknown>;
  type Row = { label: string; process?: ProcessInfo; showAll?: boolean; askPid?: boolean; kind?: number };

  test('system and helper processes hide behind "Show all"; "Enter a pid…" is always there', async () => {
    const seen: Row[][] = [];
    win.showQuickPick = async (items: Row[]) => {
      seen.push(items);
      return seen.length === 1 ? items.find((i) => i.showAll) : items.find((i) => i.process?.pid === 1);
    };
    const r = await pickProcess({ command: 'Find Memory Leaks' });
    const first = seen[0].filter((i) => i.process).map((i) => i.process!.pid);
    // (the tests run as root or as another user than 'alice': her processes are "other users'" here)
    assert.deepEqual(first, [600, 500, 700, 400, 300]);
    assert.match(seen[0].find((i) => i.showAll)!.label, /Show all \(7 system and helper processes\)/);
    assert.ok(seen[0].some((i) => i.askPid && /Enter a pid…/.test(i.label)));
    assert.equal(seen[1].filter((i) => i.process).length, 12, 'Show all lists every process but kernel threads');
    assert.equal(r && 'process' in r ? r.process.pid : undefined, 1);
  });

  test('a typed pid that is not running: Enter shows why, instead of returning silently', async () => {
    recorded.errors.length = 0;
    let offered: Row | undefined;
    win.showQuickPick = async (_items: Row[], o: { quickPick: { value: string; items: Row[] } }) => {
      o.quickPick.value = '99999'; // typed into the filter: no process matches it
      offered = o.quickPick.items.find((i) => i.askPid);
      return 'accept';
    };
    const r = await pickProcess({ command: 'Profile CPU' });
    assert.equal(r, undefined);
    assert.match(offered!.label, /Use pid 99999/);
    assert.equal(recorded.errors.length, 1);
    assert.match(recorded.errors[0], /Profile CPU: No process with pid 99999 is running: it has exited, or the pid is mistyped/);
  });

  test('a process the command cannot trace says why on its row and when picked', async () => {
    recorded.errors.length = 0;
    let rows: Row[] = [];
    win.showQuickPick = async (items: Row[]) => ((rows = items), items.find((i) => i.process?.pid === 600));
    const why = 'its libjvm.so has no USDT probes';
    const r = await pickProcess({ command: 'Trace Java GC', jvmOnly: true, refuse: (p) => (p.pid === 600 ? why : undefined) });
    assert.equal(r, undefined);
    const row = rows.find((i) => i.process?.pid === 600) as Row & { detail?: string };
    assert.match(row.label, /^\$\(circle-slash\) 600/);
    assert.equal(row.detail, `Cannot trace: ${why}`);
    assert.deepEqual(recorded.errors, [`eBPF Studio: Trace Java GC: ${why}`]);
  });

  test('a typed pid of a running process picks it', async () => {
    win.showQuickPick = async (_items: Row[], o: { quickPick: { value: string; items: Row[] } }) => {
      o.quickPick.value = '45'; // systemd --user: hidden behind Show all, still accepted when typed
      return o.quickPick.items.find((i) => i.askPid);
    };
    const r = await pickProcess({ command: 'Find Memory Leaks' });
    assert.equal(r && 'process' in r ? r.process.comm : undefined, 'systemd');
  });
});
