// The Java agent path of the latency tracer, its pure parts: the Class.method operand, which path
// a JDK takes, and the agent's snapshot parsed without trust (the file is written inside the JVM,
// by code its owner controls).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { javaLatencyPath, parseJavaMethod } from '../../extension/tracers/latency/javaTarget';
import { parseSnapshot, SNAPSHOT_MAX_BYTES, SnapshotError } from '../../extension/tracers/latency/javaSnapshot';
import { agentStats } from '../../extension/tracers/latency/javaAgentLatency';
import { fineSlot } from '../../extension/tracers/latency/decode';

test('Class.method operands: full, simple, nested, ::, one overload by descriptor; others are not Java', () => {
  assert.deepEqual(parseJavaMethod('com.x.Foo.parse'), { className: 'com.x.Foo', method: 'parse', descriptor: '' });
  assert.deepEqual(parseJavaMethod('Foo.parse'), { className: 'Foo', method: 'parse', descriptor: '' });
  assert.deepEqual(parseJavaMethod('com.x.Foo$Inner::run'), { className: 'com.x.Foo$Inner', method: 'run', descriptor: '' });
  assert.deepEqual(parseJavaMethod('Foo.parse(Ljava/lang/String;[I)I'), { className: 'Foo', method: 'parse', descriptor: '(Ljava/lang/String;[I)I' });
  for (const bad of ['parse', 'main.c:12', 'Foo.', '.parse', 'Foo.parse(Ljava/lang/String)I', 'Foo.parse(I', 'Foo.pa rse', 'Foo.parse,out=/etc/x', 'Foo.parse(I)I,x', 'Foo.parse(Lx,out=/etc/passwd;)V', `${'a.'.repeat(300)}b`]) assert.equal(parseJavaMethod(bad), undefined, bad);
});

test('JDK 25 and later go to JFR method tracing, 17 to 23 (and unknown) to the agent', () => {
  assert.equal(javaLatencyPath(17), 'agent');
  assert.equal(javaLatencyPath(21), 'agent');
  assert.equal(javaLatencyPath(undefined), 'agent');
  assert.equal(javaLatencyPath(25), 'jfr');
});

const good = {
  v: 1,
  state: 'running',
  id: 'abc',
  t: 5,
  count: 3,
  sum: 3_000_000,
  max: 2_000_000,
  slowCalls: 1,
  methods: ['Foo.work(I)J'],
  log2: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1],
  fine: [[fineSlot(500_000), 2], [fineSlot(2_000_000), 1]],
  slow: [{ seq: 1, d: 2_000_000, end: 9, tid: 12, frames: [['Foo', 'work', 'Foo.java', 20], ['Foo', 'worker', null, 30], ['java.lang.Thread', 'run', 'Thread.java', 840]] }],
};

test('a snapshot: figures, percentiles from the log-linear slots, Java frames with file:line', () => {
  const s = parseSnapshot(JSON.stringify(good));
  assert.equal(s.count, 3);
  assert.deepEqual(s.slow[0].stack.map((f) => [f.function, f.file, f.line]), [
    ['Foo.work', 'Foo.java', 20],
    ['Foo.worker', 'Foo.java', 30], // an obsolete frame's file, from its class's other frame
    ['java.lang.Thread.run', 'Thread.java', 840],
  ]);
  const st = agentStats(s, 1, 1);
  assert.ok(Math.abs(st.p50Ns - 500_000) < 500_000 * 0.04 && Math.abs(st.p99Ns - 2_000_000) < 2_000_000 * 0.04, JSON.stringify(st));
  assert.equal(st.slowCalls, 1);
  assert.equal(parseSnapshot('{"v":1,"state":"error","error":"class Foo is not loaded"}').error, 'class Foo is not loaded');
});

test('hostile snapshots are refused with SnapshotError, never another throw', () => {
  const bad: unknown[] = [
    'not json',
    '[]',
    'null',
    { ...good, v: 2 },
    { ...good, state: 'x' },
    { ...good, count: -1 },
    { ...good, count: 1.5 },
    { ...good, count: '3' },
    { ...good, sum: 2 ** 60 },
    { ...good, fine: [[99999, 1]] },
    { ...good, fine: [[1]] },
    { ...good, fine: new Array(5000).fill([1, 1]) },
    { ...good, log2: new Array(33).fill(0) },
    { ...good, methods: new Array(51).fill('x') },
    { ...good, slow: [{ ...good.slow[0], frames: new Array(49).fill(['a', 'b', 'c', 1]) }] },
    { ...good, slow: [{ ...good.slow[0], frames: [[1, 2, 3, 4]] }] },
    { ...good, slow: [null] },
    { ...good, slow: {} },
  ];
  for (const b of bad) assert.throws(() => parseSnapshot(typeof b === 'string' ? b : JSON.stringify(b)), SnapshotError, JSON.stringify(b).slice(0, 80));
  assert.throws(() => parseSnapshot(' '.repeat(SNAPSHOT_MAX_BYTES + 1)), /too large/);
  const long = parseSnapshot(JSON.stringify({ ...good, methods: ['m'.repeat(10_000)] }));
  assert.equal(long.methods[0].length, 300);
});
