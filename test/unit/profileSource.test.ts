// Source annotations of a CPU profile (CodeLens and line heat): per-function and per-line
// self/total samples, and finding a function's definition line above its sampled lines.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { annotationsFromResult, definitionLine, shortFunctionName } from '../../extension/model/profileSource';
import type { ProfileFrame } from '../../extension/protocol/profile';

const f = (fn: string, line: number, file = '/src/a.c'): ProfileFrame => ({ address: '0x1', module: '/bin/a', function: fn, file, line, kind: 'native' });

test('per-function and per-line shares; recursion counted once per sample', () => {
  const a = annotationsFromResult({
    tracer: 'profile',
    frequency: 99,
    samples: 10,
    lost: 0,
    stacks: [
      { count: 6, pid: 1, tid: 1, comm: 'a', frames: [f('hot', 12), f('hot', 14), f('main', 30)] },
      { count: 4, pid: 1, tid: 1, comm: 'a', frames: [f('cold', 20), f('main', 31), f('x', 1, 'relative.c')] },
    ],
  });
  assert.equal(a.samples, 10);
  const fns = new Map(a.functions.get('/src/a.c')!.map((x) => [x.name, x]));
  assert.deepEqual(fns.get('hot'), { name: 'hot', line: 12, self: 6, total: 6 });
  assert.deepEqual(fns.get('main'), { name: 'main', line: 30, self: 0, total: 10 });
  assert.deepEqual(a.lines.get('/src/a.c')!.get(12), { self: 6, total: 6 });
  assert.deepEqual(a.lines.get('/src/a.c')!.get(31), { self: 0, total: 4 });
  assert.ok(!a.functions.has('relative.c'), 'relative paths cannot match editor files');
});

test('definition line: the nearest line above naming the function with a call paren', () => {
  const src = ['#include <x.h>', '', 'void hot_a(unsigned long n)', '{', '  for (;;)', '    sink++;', '}'];
  assert.equal(definitionLine(src, 'hot_a', 6), 3);
  assert.equal(definitionLine(src, 'nothere', 6), 6);
  assert.equal(shortFunctionName('long HotMethod.hotLoop(long)'), 'hotLoop');
  assert.equal(shortFunctionName('ns::Parser::parse(int) const'), 'parse');
  assert.equal(shortFunctionName('main'), 'main');
});
