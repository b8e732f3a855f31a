// Folded stacks and speedscope export/import: round trips keep names, kinds and weights;
// bad files get errors that say what was expected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromFolded, fromSpeedscope, importProfile, ImportError, parseAnnotation, toFolded, toSpeedscope } from '../../extension/model/flamegraph/formats';
import { fromProfileResult, type FlameProfile } from '../../extension/model/flamegraph/profileData';
import type { ProfileResult } from '../../extension/protocol/profile';

const result: ProfileResult = {
  tracer: 'profile',
  frequency: 99,
  samples: 7,
  lost: 1,
  stacks: [
    {
      count: 4,
      pid: 10,
      tid: 11,
      comm: 'java',
      frames: [
        { address: '0xffffffff81000000', module: '[kernel]', function: 'do_syscall_64', file: null, line: null, kind: 'kernel' },
        { address: '0x7f0000001000', module: '[jit]', function: 'long HotMethod.hotLoop(long)', file: null, line: null, kind: 'jit' },
        { address: '0x7f0000002000', module: '[jit]', function: 'Interpreter', file: null, line: null, kind: 'interpreted' },
        { address: '0x401000', module: '/usr/bin/app', function: 'main', file: '/src/app.c', line: 12, kind: 'native' },
      ],
    },
    {
      count: 3,
      pid: 10,
      tid: 12,
      comm: 'java',
      frames: [
        { address: '0x401010', module: '/usr/bin/app', function: 'work;odd', file: '/src/app.c', line: 30, kind: 'native' },
        { address: '0x401020', module: '/usr/bin/app', function: 'main', file: '/src/app.c', line: 14, kind: 'native' },
        { address: '0x7f00000000aa', module: '/lib/libc.so.6', function: null, file: null, line: null, kind: 'native' },
      ],
    },
  ],
};

/** A profile as a sorted list of "name[kind];... weight" lines, for comparisons. */
function canonical(p: FlameProfile): string[] {
  const m = new Map<string, number>();
  for (const s of p.stacks) {
    const k = s.frames.map((i) => `${p.frames[i].name}[${p.frames[i].kind}]`).join(';');
    m.set(k, (m.get(k) ?? 0) + s.weight);
  }
  return [...m].map(([k, w]) => `${k} ${w}`).sort();
}

test('the profiler result becomes root-first stacks with kinds and the hottest line per frame', () => {
  const p = fromProfileResult(result);
  assert.equal(p.total, 7);
  assert.equal(p.lost, 1);
  assert.deepEqual(canonical(p), [
    '[libc.so.6][native];main[native];work;odd[native] 3',
    'main[native];Interpreter[interpreted];long HotMethod.hotLoop(long)[jit];do_syscall_64[kernel] 4',
  ]);
  const main = p.frames.find((f) => f.name === 'main')!;
  assert.equal(main.file, '/src/app.c');
  assert.equal(main.line, 12, 'line 12 carries 4 samples, line 14 only 3');
});

test('folded export writes root;...;leaf count with kind annotations', () => {
  const text = toFolded(fromProfileResult(result));
  assert.equal(
    text,
    'main;Interpreter_[0];long HotMethod.hotLoop(long)_[j];do_syscall_64_[k] 4\n[libc.so.6];main;work,odd 3\n',
  );
});

test('folded round trip keeps stacks, kinds and weights', () => {
  const p = fromProfileResult(result);
  const back = fromFolded(toFolded(p));
  assert.deepEqual(canonical(back), canonical(p).map((l) => l.replace('work;odd', 'work,odd')));
  assert.equal(back.total, p.total);
  assert.deepEqual(canonical(fromFolded(toFolded(back))), canonical(back));
});

test('speedscope round trip keeps stacks, kinds, weights and file:line', () => {
  const p = fromProfileResult(result);
  const file = toSpeedscope(p);
  assert.equal(file.$schema, 'https://www.speedscope.app/file-format-schema.json');
  assert.equal(file.profiles[0].type, 'sampled');
  const back = fromSpeedscope(JSON.parse(JSON.stringify(file)));
  assert.deepEqual(canonical(back), canonical(p));
  const main = back.frames.find((f) => f.name === 'main')!;
  assert.equal(main.file, '/src/app.c');
  assert.equal(main.line, 12);
});

test('speedscope evented profiles are weighed by time between events', () => {
  const p = fromSpeedscope({
    $schema: 'https://www.speedscope.app/file-format-schema.json',
    shared: { frames: [{ name: 'main' }, { name: 'work' }] },
    profiles: [{ type: 'evented', name: 'x', unit: 'milliseconds', startValue: 0, endValue: 10, events: [{ type: 'O', at: 0, frame: 0 }, { type: 'O', at: 2, frame: 1 }, { type: 'C', at: 7, frame: 1 }, { type: 'C', at: 10, frame: 0 }] }],
  });
  assert.deepEqual(canonical(p), ['main[native] 5', 'main[native];work[native] 5']);
});

test('importProfile detects folded, speedscope and the CLI --json document', () => {
  const p = fromProfileResult(result);
  assert.deepEqual(canonical(importProfile(JSON.stringify(result))), canonical(p));
  assert.deepEqual(canonical(importProfile(JSON.stringify(toSpeedscope(p)))), canonical(p));
  assert.equal(importProfile('a;b 3\n\n# comment\na 1\n').total, 4);
});

test('bad files say what was expected', () => {
  assert.throws(() => fromFolded('a;b three'), (e: Error) => e instanceof ImportError && /line 1 is not folded stacks/.test(e.message));
  assert.throws(() => fromFolded('\n\n'), /holds no stacks/);
  assert.throws(() => importProfile('{"nope": 1}'), /not a speedscope file/);
  assert.throws(() => importProfile('{broken'), /does not parse/);
  assert.throws(() => fromSpeedscope({ shared: { frames: [{ name: 'a' }] }, profiles: [{ type: 'sampled', name: 'x', unit: 'none', startValue: 0, endValue: 1, samples: [[3]], weights: [1] }] }), /refers to frame 3/);
});

test('annotations parse back to kinds', () => {
  assert.deepEqual(parseAnnotation('schedule_[k]'), { name: 'schedule', kind: 'kernel' });
  assert.deepEqual(parseAnnotation('foo_[j]'), { name: 'foo', kind: 'jit' });
  assert.deepEqual(parseAnnotation('Interpreter_[0]'), { name: 'Interpreter', kind: 'interpreted' });
  assert.deepEqual(parseAnnotation('Interpreter_[i]'), { name: 'Interpreter', kind: 'interpreted' }, 'files written before frame types marked the interpreter _[i]');
  assert.deepEqual(parseAnnotation('Work.step_[i]'), { name: 'Work.step', kind: 'jit', javaType: 'inlined' });
  assert.deepEqual(parseAnnotation('Work.run_[1]'), { name: 'Work.run', kind: 'jit', javaType: 'c1' });
  assert.deepEqual(parseAnnotation('plain'), { name: 'plain', kind: 'native' });
});

// Java frames of an agent profile, leaf first: step inlined into hot (C2), run C1, main interpreted.
const javaResult: ProfileResult = {
  tracer: 'profile',
  frequency: 99,
  samples: 5,
  lost: 0,
  stacks: [
    {
      count: 5,
      pid: 10,
      tid: 11,
      comm: 'java',
      frames: [
        { address: '0x0', module: '[java]', function: 'Work.step', file: 'Work.java', line: 9, kind: 'jit', javaType: 'inlined', inlined: true },
        { address: '0x0', module: '[java]', function: 'Work.hot', file: 'Work.java', line: 15, kind: 'jit', javaType: 'c2' },
        { address: '0x0', module: '[java]', function: 'Work.run', file: 'Work.java', line: 21, kind: 'jit', javaType: 'c1' },
        { address: '0x0', module: '[java]', function: 'Work.main', file: 'Work.java', line: 28, kind: 'interpreted', javaType: 'interpreted' },
      ],
    },
  ],
};

test('Java frame types: async-profiler suffixes in folded stacks, kept through folded and speedscope round trips', () => {
  const p = fromProfileResult(javaResult);
  assert.deepEqual(
    p.frames.map((f) => f.javaType),
    ['interpreted', 'c1', 'c2', 'inlined'],
  );
  assert.equal(toFolded(p), 'Work.main_[0];Work.run_[1];Work.hot_[j];Work.step_[i] 5\n');
  const types = (q: FlameProfile) => q.stacks[0].frames.map((i) => `${q.frames[i].name}:${q.frames[i].kind}:${q.frames[i].javaType ?? '-'}`);
  // C2 and "compiled, tier unknown" share _[j]: read back, the frame is JIT code without a tier
  assert.deepEqual(types(fromFolded(toFolded(p))), ['Work.main:interpreted:-', 'Work.run:jit:c1', 'Work.hot:jit:-', 'Work.step:jit:inlined']);
  assert.deepEqual(types(fromSpeedscope(JSON.parse(JSON.stringify(toSpeedscope(p))))), ['Work.main:interpreted:-', 'Work.run:jit:c1', 'Work.hot:jit:-', 'Work.step:jit:inlined']);
});

test('the same method interpreted and compiled is two frames of the flame graph', () => {
  const twice: ProfileResult = {
    ...javaResult,
    stacks: [
      { ...javaResult.stacks[0], count: 1, frames: [{ address: '0x0', module: '[java]', function: 'Work.hot', file: null, line: null, kind: 'interpreted', javaType: 'interpreted' }] },
      { ...javaResult.stacks[0], count: 1, frames: [{ address: '0x0', module: '[java]', function: 'Work.hot', file: null, line: null, kind: 'jit', javaType: 'c2' }] },
    ],
  };
  assert.equal(fromProfileResult(twice).frames.length, 2);
});

test('frame colours and tooltip labels tell Java frame types apart; C2 and unknown-tier code share the JIT colour', async () => {
  const { colorClass, frameColor, frameLabel, LEGEND } = await import('../../webview/flamegraph/colors');
  assert.deepEqual(
    (['interpreted', 'c1', 'c2', 'compiled', 'inlined'] as const).map((t) => colorClass('jit', t)),
    ['interpreted', 'c1', 'jit', 'jit', 'inlined'],
  );
  assert.equal(colorClass('jit'), 'jit', 'a perf-map JIT frame without a type');
  const hue = (c: string) => Number(/hsl\(([\d.]+)/.exec(c)![1]);
  const c1 = hue(frameColor('jit', 'Work.run', false, 'c1'));
  const c2 = hue(frameColor('jit', 'Work.run', false, 'c2'));
  const inl = hue(frameColor('jit', 'Work.run', false, 'inlined'));
  assert.ok(new Set([c1, c2, inl]).size === 3, 'the same method gets a different colour per type');
  assert.equal(frameLabel({ kind: 'jit', javaType: 'inlined' }), 'Java, inlined into its caller');
  assert.equal(frameLabel({ kind: 'kernel' }), 'kernel');
  assert.deepEqual(LEGEND.map(([, c]) => c), ['native', 'kernel', 'jit', 'c1', 'inlined', 'interpreted'], 'every colour class has a legend entry');
});
