// The run-queue latency view's pure model: accumulation, interval selection, histogram bars with
// percentages, the heat-map grid and its hit-testing, the key table, Clear and Export.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toBuckets } from '../../extension/model/log2hist';
import type { RunqlatUpdate } from '../../extension/protocol/runqlat';
import { bucketRange, heatCellAt, heatIntensity, heatLayout, heatMap, histogramBars, MAX_INTERVALS, LatencyModel } from '../../webview/common/latencyModel';

function update(ts: number, counts: number[], keys: { key: number; comm: string; counts: number[] }[] = [], dropped = 0): RunqlatUpdate {
  return {
    interval: { timestampNs: ts, buckets: toBuckets(counts) },
    keys: keys.map((k) => ({ key: k.key, comm: k.comm, count: k.counts.reduce((a, b) => a + b, 0), buckets: toBuckets(k.counts) })),
    dropped,
  };
}

test('updates add up; a selected interval shows only its own histogram', () => {
  const m = new LatencyModel('runqlat');
  m.apply(update(1e9, [0, 2, 8]));
  m.apply(update(2e9, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10]));
  assert.deepEqual(m.counts, [0, 2, 8, 0, 0, 0, 0, 0, 0, 0, 0, 10]);
  assert.equal(m.stats().count, 20);
  m.select(1);
  assert.equal(m.stats().count, 10);
  assert.ok(m.stats().p50 >= 1024, 'the selected interval is the slow one');
  m.select(5);
  assert.equal(m.selected, undefined, 'out of range selects the whole session');
});

test('histogram bars: labels in the unit, percent and cumulative percent', () => {
  const b = histogramBars([0, 1, 3, 0, 4], 'us');
  assert.equal(b.total, 8);
  assert.deepEqual(b.counts, [0, 1, 3, 0, 4]);
  assert.deepEqual(b.low, [0, 1, 2, 4, 8]);
  assert.deepEqual(b.high, [0, 1, 3, 7, 15]);
  assert.deepEqual(b.percent, [0, 12.5, 37.5, 0, 50]);
  assert.deepEqual(b.cumPercent, [0, 12.5, 50, 50, 100]);
  assert.equal(b.labels[4], '8 µs');
  assert.equal(bucketRange(7, 'us'), '64 µs – 127 µs');
  assert.equal(histogramBars([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5], 'ms').labels[11], '1.02 s');
  assert.equal(bucketRange(11, 'us'), '1.02 ms – 2.05 ms');
  assert.deepEqual(histogramBars([], 'us').counts, [0]);
});

test('heat map: last N columns, bucket range of non-empty cells, log color scale', () => {
  const ivs = [
    { timestampNs: 1, counts: [0, 0, 5] },
    { timestampNs: 2, counts: [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 100] },
    { timestampNs: 3, counts: [0, 0, 0, 2] },
  ];
  const all = heatMap(ivs, 10);
  assert.deepEqual([all.firstIndex, all.columns.length, all.minBucket, all.maxBucket, all.max], [0, 3, 2, 11, 100]);
  const last2 = heatMap(ivs, 2);
  assert.deepEqual([last2.firstIndex, last2.columns.length, last2.minBucket], [1, 2, 2]);
  assert.deepEqual(heatMap([], 5), { firstIndex: 0, columns: [], minBucket: 0, maxBucket: 0, max: 0 });
  assert.equal(heatIntensity(0, 100), 0);
  assert.equal(heatIntensity(100, 100), 1);
  const one = heatIntensity(1, 100);
  assert.ok(one > 0.15 && one < 0.4, 'a single wait among hundreds stays visible');
  assert.ok(heatIntensity(10, 100) > one);
});

test('heat map hit-testing maps points to interval and bucket', () => {
  const ivs = Array.from({ length: 4 }, (_, i) => ({ timestampNs: i, counts: [0, 0, 1, 1, 1, 1] }));
  const map = heatMap(ivs, 10);
  const lay = heatLayout(map, 672, 222, 10); // plot 600 x 194 from (64, 6): 60 px columns, 4 rows
  assert.equal(lay.cellW, 60);
  const { plot } = lay;
  assert.deepEqual(heatCellAt(map, lay, plot.x + 1, plot.y + plot.h - 1), { interval: 0, bucket: 2 });
  assert.deepEqual(heatCellAt(map, lay, plot.x + 3 * 60 + 5, plot.y + 1), { interval: 3, bucket: 5 });
  assert.equal(heatCellAt(map, lay, plot.x + 4 * 60 + 5, plot.y + 10), undefined, 'no column there yet');
  assert.equal(heatCellAt(map, lay, 2, 50), undefined);
  const later = heatMap([...ivs, ...ivs, ...ivs], 10);
  assert.deepEqual(heatCellAt(later, heatLayout(later, 672, 222, 10), plot.x + 1, plot.y + 5)?.interval, 2, 'columns scroll with time');
});

test('key table: sort by p99 or count, comm kept, rows carry their histogram', () => {
  const m = new LatencyModel('runqlat');
  m.per = 'thread';
  m.apply(update(1, [0, 5], [
    { key: 11, comm: 'fast', counts: [0, 0, 100] },
    { key: 12, comm: 'slow', counts: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5] },
  ]));
  m.apply(update(2, [0, 5], [{ key: 11, comm: '', counts: [0, 0, 50] }], 4));
  assert.deepEqual(m.keyRows().map((r) => [r.key, r.comm]), [[12, 'slow'], [11, 'fast']]);
  m.sortBy = 'count';
  assert.deepEqual(m.keyRows().map((r) => [r.key, r.count]), [[11, 150], [12, 5]]);
  assert.equal(m.keyLabel(), 'tid');
  assert.equal(m.dropped, 4);
  assert.equal(m.histogram(m.keyRows()[1].counts).total, 5);
});

test('export is the CLI document; clear empties the view but keeps the session state', () => {
  const m = new LatencyModel('runqlat');
  m.per = 'process';
  m.unit = 'ms';
  m.apply(update(7, [1, 2], [{ key: 300, comm: 'java', counts: [1, 2] }], 1));
  const r = m.toResult();
  assert.deepEqual(Object.keys(r).sort(), ['dropped', 'histograms', 'intervals', 'tracer', 'unit']);
  assert.deepEqual([r.tracer, r.unit, r.dropped], ['runqlat', 'ms', 1]);
  assert.deepEqual(r.histograms, [{ key: 300, comm: 'java', count: 3, buckets: toBuckets([1, 2]) }]);
  assert.deepEqual(r.intervals, [{ timestampNs: 7, buckets: toBuckets([1, 2]) }]);
  const none = new LatencyModel('runqlat');
  none.apply(update(1, [0, 3]));
  assert.deepEqual(none.toResult().histograms.map((h) => [h.key, h.comm, h.count]), [[-1, 'all', 3]]);
  m.select(0);
  m.expanded.add(300);
  m.end('stopped');
  m.clear();
  assert.deepEqual([m.counts.length, m.intervals.length, m.keys.size, m.selected, m.expanded.size, m.state], [0, 0, 0, undefined, 0, 'stopped']);
});

test('intervals are capped; the selection follows its column', () => {
  const m = new LatencyModel('runqlat');
  for (let i = 0; i < MAX_INTERVALS; i++) m.apply(update(i, [0, 1]));
  m.select(10);
  m.apply(update(MAX_INTERVALS, [0, 1]));
  assert.equal(m.intervals.length, MAX_INTERVALS);
  assert.equal(m.droppedIntervals, 1);
  assert.equal(m.selected, 9);
  assert.equal(m.intervals[m.selected!].timestampNs, 10);
  assert.equal(m.counts[1], MAX_INTERVALS + 1, 'the cumulative histogram keeps every interval');
});

test('the saved figures restore the same view, and go on as if never saved; the kept state is bounded', async () => {
  const fc = (await import('fast-check')).default;
  const { HistLive } = await import('../../extension/model/histLive');
  fc.assert(
    fc.property(
      fc.array(fc.record({ counts: fc.array(fc.nat(50), { maxLength: 20 }), key: fc.integer({ min: 1, max: 6 }) }), { minLength: 1, maxLength: 60 }),
      fc.nat(),
      (ivs, cut) => {
        const ups = ivs.map((iv, i) => update((i + 1) * 1e9, iv.counts, [{ key: iv.key, comm: `t${iv.key}`, counts: iv.counts }]));
        const k = cut % ups.length;
        const whole = new LatencyModel('runqlat');
        ups.forEach((u) => whole.apply(u));
        const first = new HistLive();
        ups.slice(0, k).forEach((u) => first.apply(u));
        const restored = new LatencyModel('runqlat');
        restored.restore(JSON.parse(JSON.stringify(first.toJSON())));
        ups.slice(k).forEach((u) => restored.apply(u));
        assert.deepEqual(restored.toJSON(), whole.toJSON());
        assert.deepEqual(restored.stats(), whole.stats());
        assert.deepEqual(restored.keyRows(), whole.keyRows());
      },
    ),
    { numRuns: 100 },
  );
  const long = new HistLive();
  for (let i = 0; i < MAX_INTERVALS + 500; i++) long.apply(update(i * 1e9, [0, 1, 2], [{ key: 1, comm: 'x', counts: [0, 1, 2] }]));
  const state = long.toJSON();
  assert.equal(state.intervals.length, MAX_INTERVALS);
  assert.equal(state.droppedIntervals, 500);
  assert.deepEqual(state.counts, [0, MAX_INTERVALS + 500, 2 * (MAX_INTERVALS + 500)], 'cumulative counts keep the intervals that left the heat map');
});

test('the key table is bounded: keys beyond MAX_KEYS are summed in one "other" row; no wait is lost', async () => {
  const { MAX_KEYS, OTHER_KEY, OTHER_COMM } = await import('../../extension/model/histLive');
  const m = new LatencyModel('runqlat');
  m.per = 'thread';
  // Short-lived threads: 3 new tids every interval, each waiting 4 times; 1,000 intervals.
  let waits = 0;
  for (let i = 0; i < 1000; i++) {
    const keys = [0, 1, 2].map((k) => ({ key: 10_000 + i * 3 + k, comm: `t${i * 3 + k}`, counts: [0, 0, 4] }));
    waits += 12;
    m.apply(update(i, [0, 0, 12], keys));
  }
  assert.equal(m.keys.size, MAX_KEYS + 1, 'the first MAX_KEYS keys and the "other" row');
  const other = m.keyRows().find((r) => r.key === OTHER_KEY)!;
  assert.equal(other.comm, OTHER_COMM);
  assert.equal(other.count, (3000 - MAX_KEYS) * 4);
  assert.equal(m.keyRows().reduce((n, r) => n + r.count, 0), waits, 'every wait is in some row');
  // A key that has its row keeps adding to it; the saved state stays bounded too.
  m.apply(update(1000, [0, 0, 4], [{ key: 10_000, comm: 't0', counts: [0, 0, 4] }]));
  assert.equal(m.keyRows().find((r) => r.key === 10_000)!.count, 8);
  assert.equal(m.toJSON().keys.length, MAX_KEYS + 1);
});

test('key table: a name only where it says more than the key (a command, a disk), not an address repeated', () => {
  const tcp = new LatencyModel('tcplat');
  tcp.per = 'address';
  // 10.0.0.1 and 127.0.0.1 as the kernel keeps them; the tracer names an IPv4 key by its own text
  tcp.apply(update(1, [0, 3], [{ key: 0x0100000a, comm: '10.0.0.1', counts: [0, 2] }, { key: 0x0100007f, comm: '127.0.0.1', counts: [0, 1] }]));
  assert.deepEqual(tcp.keyRows().map((r) => [r.label, r.name]), [['10.0.0.1', ''], ['127.0.0.1', '']]);
  assert.equal(tcp.showsNames(), false, 'no name column of addresses beside the addresses');
  // folded IPv6 peers are a hash: their name is the only thing that says what they are
  tcp.apply(update(2, [0, 1], [{ key: 0x12345678, comm: 'IPv6', counts: [0, 1] }]));
  assert.equal(tcp.keyRows().find((r) => r.key === 0x12345678)?.name, 'IPv6');
  assert.equal(tcp.showsNames(), true);

  const bio = new LatencyModel('biolatency');
  bio.per = 'disk';
  bio.apply(update(1, [0, 1], [{ key: (254 << 20) | 0, comm: 'vda', counts: [0, 1] }]));
  assert.deepEqual(bio.keyRows().map((r) => [r.label, r.name]), [['254:0', 'vda']]);
  assert.equal(bio.showsNames(), true);

  const cpu = new LatencyModel('cpudist');
  cpu.per = 'process';
  cpu.apply(update(1, [0, 1], [{ key: 4242, comm: 'java', counts: [0, 1] }]));
  assert.deepEqual(cpu.keyRows().map((r) => [r.label, r.name, r.comm]), [['4242', 'java', 'java']]);
  assert.equal(cpu.showsNames(), true);
});
