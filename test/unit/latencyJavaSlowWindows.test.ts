// "Profile the slow calls" of a Java method, its pure parts: the agent's slow-call windows parsed
// without trust from its snapshot, and the filter the wall-clock profile's Java join asks per
// sample (inside a window of its thread, decided only once the horizon passed it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_WINDOWS, parseSnapshot, SnapshotError, type JavaSnapshot } from '../../extension/tracers/latency/javaSnapshot';
import { SlowWindows } from '../../extension/tracers/latency/javaSlowWindows';

const base = { v: 1, state: 'running', id: 'abc', t: 5, count: 3, sum: 30, max: 20, slowCalls: 1, methods: ['Foo.bar()V'], log2: [], fine: [], slow: [] };
const snap = (extra: object) => JSON.stringify({ ...base, ...extra });

test('windows and the horizon parse; a snapshot without them (not profiling) has neither', () => {
  const s = parseSnapshot(snap({ horizon: 9000, windows: [[1, 42, 1000, 2000], [2, 43, 1500, 2500]] }));
  assert.equal(s.horizonNs, 9000n);
  assert.deepEqual(s.windows, [
    { seq: 1, tid: 42, startNs: 1000n, endNs: 2000n },
    { seq: 2, tid: 43, startNs: 1500n, endNs: 2500n },
  ]);
  const plain = parseSnapshot(snap({}));
  assert.equal(plain.windows, undefined);
  assert.equal(plain.horizonNs, undefined);
});

test('hostile windows are refused with SnapshotError', () => {
  const tooMany = Array.from({ length: MAX_WINDOWS + 1 }, (_, i) => [i + 1, 1, 0, 1]);
  for (const extra of [
    { horizon: 1, windows: [[1, 1, 2000, 1000]] },
    { horizon: 1, windows: [[1, -1, 0, 1]] },
    { horizon: 1, windows: [[1, 1, 'x', 1]] },
    { horizon: 1, windows: [[1, 1, 0, 1, 5]] },
    { horizon: 1, windows: {} },
    { horizon: -5, windows: [] },
    { windows: [] },
    { horizon: 1, windows: tooMany },
  ])
    assert.throws(() => parseSnapshot(snap(extra)), SnapshotError, JSON.stringify(extra).slice(0, 80));
});

function snapshotOf(horizonNs: bigint, windows: [number, number, number, number][]): JavaSnapshot {
  return { state: 'running', id: 'abc', count: 0, sumNs: 0, maxNs: 0, slowCalls: 0, methods: [], log2: [], fine: [], slow: [], horizonNs, windows: windows.map(([seq, tid, s, e]) => ({ seq, tid, startNs: BigInt(s), endNs: BigInt(e) })) };
}

test('a sample is kept inside a window of its own thread only; seen windows count once, overwritten ones are counted', () => {
  const w = new SlowWindows();
  w.add(snapshotOf(5000n, [[1, 7, 100, 200], [2, 7, 300, 400], [3, 8, 100, 400]]));
  w.add(snapshotOf(6000n, [[2, 7, 300, 400], [3, 8, 100, 400], [6, 7, 1000, 1200], [7, 0, 1, 2]]));
  assert.deepEqual({ windows: w.n.windows, missed: w.n.missed, noTid: w.n.noTid }, { windows: 5, missed: 2, noTid: 1 });
  assert.equal(w.horizonNs(), 6000n);
  assert.equal(w.keep(7, 99, 150n), true);
  assert.equal(w.keep(7, 99, 250n), false, 'between two windows of the thread');
  assert.equal(w.keep(7, 99, 400n), true, 'the end is inside');
  assert.equal(w.keep(7, 99, 1100n), true);
  assert.equal(w.keep(9, 99, 150n), false, 'another thread');
  assert.equal(w.keep(0, 8, 350n), true, 'no namespace tid: the host tid');
  assert.deepEqual({ kept: w.n.kept, outside: w.n.outside }, { kept: 4, outside: 2 });
  w.end();
  assert.equal(w.horizonNs(), undefined, 'after the agent stopped every window is known');
});

test('windows added one by one (JFR\'s events), out of order and nested, are sorted and merged at the end', () => {
  const w = new SlowWindows();
  w.addWindow(5, 300n, 400n);
  w.addWindow(5, 120n, 180n); // an inner call of the next: recursion
  w.addWindow(5, 100n, 200n);
  w.addWindow(5, 150n, 250n);
  assert.equal(w.horizonNs(), 0n, 'nothing can be decided before the end');
  w.end();
  assert.deepEqual([110n, 240n, 260n, 350n].map((t) => w.keep(5, 5, t)), [true, true, false, true]);
});

test('JFR\'s reads give every window each time: the last read replaces them, its horizon only moves on; long ones at the end are counted partial', () => {
  const w = new SlowWindows();
  w.resetTo([{ tid: 3, startNs: 100n, endNs: 200n }], 1000n);
  w.resetTo([{ tid: 3, startNs: 100n, endNs: 200n }, { tid: 3, startNs: 300n, endNs: 400n }], 900n);
  assert.equal(w.horizonNs(), 1000n, 'never back');
  assert.equal(w.n.windows, 2, 'not counted twice');
  w.resetTo([{ tid: 3, startNs: 100n, endNs: 200n }, { tid: 3, startNs: 300n, endNs: 400n }, { tid: 4, startNs: 0n, endNs: 5000n }], undefined, 1000n);
  w.end();
  assert.deepEqual({ windows: w.n.windows, partial: w.n.partial }, { windows: 3, partial: 1 });
  assert.deepEqual([150n, 250n, 350n].map((t) => w.keep(3, 3, t)), [true, false, true]);
  assert.equal(w.keep(4, 4, 4000n), true);
});

