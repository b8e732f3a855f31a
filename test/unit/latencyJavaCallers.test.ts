// "By caller" for Java methods, its pure parts: the call-site table the JFR path fills from each
// jdk.MethodTrace event's top frame (capped, the rest as "other"), the merge per calling method
// both paths end in, the CLI's table of it, and the agent's per-caller figures in its snapshot
// parsed without trust.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JavaCallSiteTable, javaCallerRows, otherCallersName } from '../../extension/model/javaCallers';
import { parseSnapshot, SnapshotError } from '../../extension/tracers/latency/javaSnapshot';
import { callersText } from '../../extension/model/latencyFormat';

test('the call-site table: one site per caller and line, calls past the cap and without a caller are "other"', () => {
  const t = new JavaCallSiteTable(2);
  for (let i = 0; i < 3; i++) t.add('com.x.A.run', 'com/x/A.java', 10, 100, 7);
  t.add('com.x.A.run', 'com/x/A.java', 12, 5000, 13);
  t.add('com.x.B.go', 'com/x/B.java', 3, 50, 6); // a third site: over the cap of 2
  t.add(undefined, null, null, 70, 7);
  const sites = t.list();
  assert.deepEqual(
    sites.map((s) => [s.caller, s.line, s.count, s.sumNs, s.maxNs]),
    [
      ['com.x.A.run', 10, 3, 300, 100],
      ['com.x.A.run', 12, 1, 5000, 5000],
    ],
  );
  assert.equal(sites[0].log2[7], 3);
  assert.deepEqual([t.other.count, t.other.sumNs, t.other.maxNs], [2, 120, 70]);
  const rows = javaCallerRows(sites, t.other, 2);
  assert.deepEqual(
    rows.map((r) => [r.caller, r.sites, r.count, r.totalNs, r.maxNs, r.file, r.line]),
    [
      ['com.x.A.run', 2, 4, 5300, 5000, 'com/x/A.java', 10], // its busiest site's line
      [otherCallersName(2), 0, 2, 120, 70, null, null],
    ],
  );
  assert.equal(rows[0].buckets.reduce((n, b) => n + b.count, 0), 4);
  const text = callersText(rows);
  assert.match(text, /^by caller \(2\):/);
  assert.match(text, /4\s+66\.7%\s+1\.32 µs\s+5\.00 µs\s+5\.30 µs\s+com\.x\.A\.run \(2 call sites\)\s+com\/x\/A\.java:10/);
  assert.match(text, /\(other callers: beyond the first 2 call sites, or unknown\)/);
});

test('callers merged per method: most calls first, no "other" row when it has no calls', () => {
  const site = (caller: string, line: number, count: number) => ({ caller, file: 'F.java', line, count, sumNs: count * 10, maxNs: 10, log2: [count] });
  const rows = javaCallerRows([site('F.viaA', 50, 3000), site('F.viaB', 56, 5000)], { count: 0, sumNs: 0, maxNs: 0, log2: [] });
  assert.deepEqual(
    rows.map((r) => [r.caller, r.count, r.line]),
    [
      ['F.viaB', 5000, 56],
      ['F.viaA', 3000, 50],
    ],
  );
});

const base = { v: 1, state: 'running', id: 'abc', t: 5, count: 8, sum: 800, max: 300, slowCalls: 0, methods: ['F.leaf(J)J'], log2: [8], fine: [[20, 8]], slow: [] };
const site = ['F', 'viaA', 'F.java', 50, 3, 300, 200, [3]];
const callers = { max: 256, sites: [site, ['p.G', 'run', null, 0, 4, 400, 300, [4]]], other: [1, 100, 100, [1]] };

test('the agent\'s per-caller figures: call sites as Class.method with file:line, and the calls beyond its cap', () => {
  const s = parseSnapshot(JSON.stringify({ ...base, callers }));
  assert.deepEqual(s.callers?.sites.map((x) => [x.caller, x.file, x.line, x.count, x.sumNs, x.maxNs, x.log2]), [
    ['F.viaA', 'F.java', 50, 3, 300, 200, [3]],
    ['p.G.run', 'p/G.java', null, 4, 400, 300, [4]], // no file (an old method's frame): its class's
  ]);
  assert.deepEqual(s.callers?.other, { count: 1, sumNs: 100, maxNs: 100, log2: [1] });
  assert.equal(parseSnapshot(JSON.stringify(base)).callers, undefined, 'not asked: none');
});

test('hostile per-caller figures are refused with SnapshotError', () => {
  const bad: unknown[] = [
    [],
    { ...callers, max: 257 },
    { ...callers, max: 1 },
    { ...callers, max: -1 },
    { ...callers, sites: {} },
    { ...callers, sites: [site.slice(0, 7)] },
    { ...callers, sites: [[...site, 1]] },
    { ...callers, sites: [['F', 'viaA', 'F.java', -1, 3, 300, 200, [3]]] },
    { ...callers, sites: [['F', 'viaA', 'F.java', 50, 3, 300, 200, new Array(33).fill(0)]] },
    { ...callers, sites: [['F', 'viaA', 'F.java', 50, 3.5, 300, 200, [3]]] },
    { ...callers, sites: [[1, 'viaA', 'F.java', 50, 3, 300, 200, [3]]] },
    { ...callers, sites: [['F', 'viaA', 'F.java', 50, 3, 300, 200, 3]] },
    { ...callers, other: [1, 2, 3] },
    { ...callers, other: null },
  ];
  for (const c of bad) assert.throws(() => parseSnapshot(JSON.stringify({ ...base, callers: c })), SnapshotError, JSON.stringify(c).slice(0, 80));
});
