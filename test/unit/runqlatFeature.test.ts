// The "Show Run Queue Latency" command's pickers (with the `vscode` mock and a fake helper): the
// scope choices (the catalog's, and "A container…": histogramContainerScope.test.ts); "One
// process…" opens the shared process picker, which offers "Enter a pid…", says so when the typed
// pid has exited, and starts the session on a picked process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fakeContext, installVscodeMock, recorded } from '../mocks/vscode';
import { fakeJvm, listingHelper } from '../mocks/jvms';
import type { ProcessInfo } from '../../extension/protocol/protocol';

const vscode = installVscodeMock();

const feature = require('../../extension/editor/features/histograms') as typeof import('../../extension/editor/features/histograms');

const { setHelper } = require('../../extension/editor/helperClient/helperClient') as typeof import('../../extension/editor/helperClient/helperClient');

type Row = { label: string; per?: string; unit?: string; process?: { pid: number }; askPid?: boolean };
const win = vscode.window as unknown as Record<string, unknown>;
feature.activate(fakeContext('/tmp') as never);

/** A program the user runs (not a JVM, not a system process). */
const program = (pid: number, comm: string): ProcessInfo => ({ ...fakeJvm(pid, true), comm, cmdline: [`/home/alice/bin/${comm}`], jvm: undefined });

/** Answers the scope and unit pickers as a user would, and hands the process picker's rows to `inPicker`. */
function answer(scope: RegExp, inPicker: (rows: Row[]) => Row | undefined, seen: { scopes: Row[]; picker: Row[] }) {
  win.showQuickPick = async (items: Row[], o: { title: string; quickPick?: unknown }) => {
    if (o.quickPick) return inPicker((seen.picker = items));
    if (o.title === 'Show Run Queue Latency: scope') return (seen.scopes = items).find((i) => scope.test(i.label));
    if (o.title === 'Show Run Queue Latency: unit') return items.find((i) => i.unit === 'us');
    throw new Error(`unexpected picker ${o.title}`);
  };
}

test('scopes: whole system, one process, a container, per process, per thread, per PID namespace', async () => {
  const calls: string[] = [];
  const params: unknown[] = [];
  setHelper(listingHelper([program(300, 'server')], calls, params));
  const seen = { scopes: [] as Row[], picker: [] as Row[] };
  answer(/Per thread/, () => undefined, seen);
  await vscode.commands.executeCommand('ebpfStudio.showRunQueueLatency');
  assert.deepEqual(
    seen.scopes.map((s) => s.label.replace(/^\$\([a-z-]+\) /, '')),
    ['Whole system', 'One process…', 'A container…', 'Per process', 'Per thread', 'Per PID namespace'],
  );
  assert.deepEqual(calls, ['session/start'], 'no process list for a system-wide scope');
  assert.deepEqual(params[0], { tracer: 'runqlat', options: { pid: 0, per: 'thread', unit: 'us', intervalS: 1 } });
});

test('"One process…": the shared picker offers "Enter a pid…" and the process; a picked one is traced', async () => {
  const calls: string[] = [];
  const params: unknown[] = [];
  setHelper(listingHelper([program(300, 'server')], calls, params));
  const seen = { scopes: [] as Row[], picker: [] as Row[] };
  answer(/One process/, (rows) => rows.find((r) => r.process?.pid === 300), seen);
  await vscode.commands.executeCommand('ebpfStudio.showRunQueueLatency');
  assert.ok(seen.picker.some((r) => r.askPid && r.label === '$(edit) Enter a pid…'), 'Enter a pid… is offered');
  assert.equal(seen.picker.find((r) => r.process?.pid === 300)!.label, '300  server');
  assert.deepEqual(calls, ['listProcesses', 'session/start']);
  assert.deepEqual(params[1], { tracer: 'runqlat', options: { pid: 300, per: 'none', unit: 'us', intervalS: 1 } });
});

test('"One process…" then "Enter a pid…" with a pid that has exited: a message says so and nothing starts', async () => {
  const calls: string[] = [];
  setHelper(listingHelper([program(300, 'server')], calls));
  const seen = { scopes: [] as Row[], picker: [] as Row[] };
  answer(/One process/, (rows) => rows.find((r) => r.askPid), seen);
  win.showInputBox = async () => '4242';
  const before = recorded.errors.length;
  assert.equal(await vscode.commands.executeCommand('ebpfStudio.showRunQueueLatency'), undefined);
  assert.match(recorded.errors.slice(before).join('\n'), /Show Run Queue Latency: No process with pid 4242 is running: it has exited, or the pid is mistyped/);
  assert.deepEqual(calls, ['listProcesses', 'listProcesses'], 'the pid was checked against a fresh listing; no session was started');
});
