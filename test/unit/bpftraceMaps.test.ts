// bpftrace's exit dump → map view shapes: hist() blocks become log2 histograms (one series per
// key), counts become tables, lhist() keeps its linear buckets as rows, printf lines are ignored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseBound, parseBpftraceMaps } from '../../extension/model/bpftraceMaps';
import type { HistogramView, TableView } from '../../extension/protocol/bpfRun';

const DUMP = `Attaching 2 probes...
hello from printf: 3
@bytes: 
[0]                  247 |@@@@                                                |
[1]                 2841 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[2, 4)                 4 |                                                    |
[8, 16)                7 |                                                    |
[512, 1K)            117 |@@                                                  |
[1K, 2K)              36 |                                                    |
[64K, 128K)            3 |                                                    |

@c[timeout]: 3
@c[memfd:sealed-91]: 7
@k[bash]: 
(..., 0)               2 |@@                                                  |
[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[2, 4)                 5 |                                                    |

@k[sshd, 22]: 
[4, 8)                 9 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

@total: 42
@lin: 
[0, 10)                4 |@@@@                                                |
[10, 20)               6 |@@@@@@                                              |
`;

test('bucket bounds with K/M suffixes', () => {
  assert.equal(parseBound('16K'), 16384);
  assert.equal(parseBound('2M'), 2 * 1024 * 1024);
  assert.equal(parseBound('7'), 7);
  assert.equal(parseBound('x'), undefined);
});

test('a hist() dump becomes a log2 histogram in bcc bucket order', () => {
  const maps = parseBpftraceMaps(DUMP);
  assert.deepEqual(maps.map((m) => `${m.name}:${m.kind}`), ['@bytes:histogram', '@c:table', '@k:histogram', '@total:table', '@lin:table']);
  const bytes = maps[0] as HistogramView;
  assert.equal(bytes.series.length, 1);
  assert.equal(bytes.series[0].key, null);
  const c = bytes.series[0].counts;
  assert.equal(c[0], 247 + 2841, '[0] and [1] share bcc bucket 0');
  assert.equal(c[1], 4);
  assert.equal(c[2], 0, 'missing buckets are zero');
  assert.equal(c[3], 7);
  assert.equal(c[9], 117);
  assert.equal(c[10], 36);
  assert.equal(c[16], 3);
  assert.equal(c.length, 17);
});

test('keyed hist() gives one series per key; the negative bucket is left out of log2 counts', () => {
  const k = parseBpftraceMaps(DUMP).find((m) => m.name === '@k') as HistogramView;
  assert.deepEqual(k.series.map((s) => s.label), ['bash', 'sshd, 22']);
  assert.deepEqual(k.series[0].counts, [1, 5]);
  assert.deepEqual(k.series[1].counts, [0, 0, 9]);
});

test('counts become table rows; lhist() keeps its linear buckets; printf lines are not maps', () => {
  const maps = parseBpftraceMaps(DUMP);
  const c = maps.find((m) => m.name === '@c') as TableView;
  assert.deepEqual(c.rows, [{ key: 'timeout', value: 3 }, { key: 'memfd:sealed-91', value: 7 }]);
  assert.deepEqual((maps.find((m) => m.name === '@total') as TableView).rows, [{ key: null, value: 42 }]);
  assert.deepEqual((maps.find((m) => m.name === '@lin') as TableView).rows, [{ key: '[0, 10)', value: 4 }, { key: '[10, 20)', value: 6 }]);
  assert.ok(!maps.some((m) => /hello/.test(m.name)));
  assert.deepEqual(parseBpftraceMaps('no maps here\n'), []);
  assert.deepEqual(parseBpftraceMaps(''), []);
});

test('a map printed more than once (print() in an interval, then the exit dump) shows each key once, with the final values', () => {
  const out = [
    'Attaching 3 probes...',
    '@[node, 15129]: 3',
    '@[ls, 6966]: 1',
    '',
    'tick',
    '@[node, 15129]: 9',
    '@[ls, 6966]: 2',
    '@[bash, 100]: 1',
    '',
    '@h:',
    '[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|',
    '',
    'tick',
    '',
    '',
    '@[node, 15129]: 12',
    '@[ls, 6966]: 2',
    '@[bash, 100]: 4',
    '',
    '@h:',
    '[0]                    2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|',
    '[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@                         |',
    '',
  ].join('\n');
  const maps = parseBpftraceMaps(out);
  const t = maps.find((m) => m.name === '@') as TableView;
  assert.deepEqual(t.rows, [
    { key: 'node, 15129', value: 12 },
    { key: 'ls, 6966', value: 2 },
    { key: 'bash, 100', value: 4 },
  ]);
  assert.equal(t.entries, 3);
  const h = maps.find((m) => m.name === '@h') as HistogramView;
  assert.equal(h.series.length, 1);
  assert.deepEqual(h.series[0].counts, [3]);
});
