// Folded-stack export weighted by bytes, the leak view's row model, and the command-line and
// launch-configuration handling of "Run with Leak Tracing".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MemleakStack } from '../../extension/protocol/memleak';
import { toFolded, reportText } from '../../extension/model/memleakFormat';
import { sparklinePoints, toRows } from '../../webview/memleak/model';
import { CommandLineError, fromLaunchConfig, splitCommandLine } from '../../extension/editor/features/memleak/leakLaunch';

const frames = (...names: (string | undefined)[]) => names.map((n, i) => ({ address: `0x${((i + 1) * 16).toString(16)}`, module: '/opt/app/bin/app', function: n }));

test('folded stacks: root first, weighted by bytes, equal paths merged, unknown names as module+address', () => {
  const stacks: MemleakStack[] = [
    { bytes: 10000, allocations: 10, oldestAgeMs: 1, frames: frames('leak_malloc', 'main') },
    { bytes: 3000, allocations: 1, oldestAgeMs: 1, frames: frames(undefined, 'main') },
    { bytes: 1, allocations: 1, oldestAgeMs: 1, frames: [{ address: '0x7f00', module: '/lib/libz.so', offset: '0x1f00' }] },
    { bytes: 500, allocations: 1, oldestAgeMs: 1, frames: frames('leak_malloc', 'main') },
    { bytes: 7, allocations: 1, oldestAgeMs: 1, frames: frames('operator new(unsigned long)', 'a;b') },
  ];
  assert.equal(toFolded({ stacks }), ['main;leak_malloc 10500', 'main;app+0x10 3000', 'libz.so+0x1f00 1', 'a_b;operator_new(unsigned_long) 7'].join('\n'));
  assert.match(reportText(stacks.slice(0, 1), 'final'), /10000 bytes in 10 allocations/);
});

test('view rows: sorted by bytes, sparkline geometry, clickable frames only with a file', () => {
  const rows = toRows([
    { key: 'a', bytes: 10, allocations: 1, oldestAgeMs: 5, history: [10], frames: [{ address: '0x1', module: '/x/lib.so' }] },
    { key: 'b', bytes: 409600, allocations: 100, oldestAgeMs: 12000, history: [0, 409600], frames: [{ address: '0x2', module: '/x/app', function: 'f', file: '/src/f.c', line: 3 }] },
  ]);
  assert.deepEqual(rows.map((r) => [r.key, r.bytes, r.oldest]), [['b', '400 KB', '12 s'], ['a', '10 B', '5 ms']]);
  assert.deepEqual(rows[0].frames[0].location, { file: '/src/f.c', line: 3, column: undefined });
  assert.equal(rows[1].frames[0].location, undefined);
  assert.equal(rows[1].frames[0].label, 'lib.so+0x1');
  assert.equal(sparklinePoints([0, 5, 10], 80, 18), '0.0,18.0 40.0,9.0 80.0,0.0');
});

test('command lines split like sh without running one', () => {
  assert.deepEqual(splitCommandLine(`./app --name 'a b' "c \\"d\\"" e\\ f ''`), ['./app', '--name', 'a b', 'c "d"', 'e f', '']);
  assert.deepEqual(splitCommandLine('  '), []);
  assert.throws(() => splitCommandLine(`./app 'oops`), CommandLineError);
});

test('launch configurations: program, args, cwd, env and variables', () => {
  const r = fromLaunchConfig(
    { name: 'Debug', program: '${workspaceFolder}/build/app', args: ['--in', '${workspaceFolder}/data'], cwd: '${workspaceFolder}', env: { A: '1', H: '${env:HOME}' }, environment: [{ name: 'B', value: '2' }] },
    { workspaceFolder: '/w', env: { HOME: '/home/u' } },
  );
  assert.deepEqual(r, { command: ['/w/build/app', '--in', '/w/data'], cwd: '/w', env: { A: '1', H: '/home/u', B: '2' } });
  assert.throws(() => fromLaunchConfig({ name: 'x' }, { env: {} }), /has no "program"/);
  assert.throws(() => fromLaunchConfig({ program: '${command:pickProcess}' }, { env: {} }), /not supported/);
});
