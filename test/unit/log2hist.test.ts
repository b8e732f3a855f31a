import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bucketIndex, bucketHigh, bucketLow, formatDuration, fromBuckets, quantileExact, quantileFromCounts, toBuckets } from '../../extension/model/log2hist';

test('bucket index matches the kernel side log2(v)+1', () => {
  assert.equal(bucketIndex(0), 0);
  assert.equal(bucketIndex(1), 1);
  assert.equal(bucketIndex(2), 2);
  assert.equal(bucketIndex(3), 2);
  assert.equal(bucketIndex(4), 3);
  assert.equal(bucketIndex(1023), 10);
  assert.equal(bucketIndex(1024), 11);
  assert.equal(bucketIndex(2n ** 40n), 41);
  for (let i = 1; i < 30; i++) {
    assert.equal(bucketIndex(bucketLow(i)), i);
    assert.equal(bucketIndex(bucketHigh(i)), i);
  }
});

test('toBuckets and fromBuckets round-trip and drop trailing zeros', () => {
  const counts = [0, 3, 0, 5, 0, 0];
  const b = toBuckets(counts);
  assert.deepEqual(b.map((x) => [x.low, x.high, x.count]), [[0, 0, 0], [1, 1, 3], [2, 3, 0], [4, 7, 5]]);
  assert.deepEqual(fromBuckets(b), [0, 3, 0, 5]);
});

test('quantiles from buckets fall in the right bucket', () => {
  const counts: number[] = [];
  counts[bucketIndex(100)] = 90; // 64..127
  counts[bucketIndex(5000)] = 10; // 4096..8191
  for (let i = 0; i < counts.length; i++) counts[i] ??= 0;
  const p50 = quantileFromCounts(counts, 0.5);
  const p99 = quantileFromCounts(counts, 0.99);
  assert.ok(p50 >= 64 && p50 < 128, `p50 ${p50}`);
  assert.ok(p99 >= 4096 && p99 < 8192, `p99 ${p99}`);
  assert.equal(quantileFromCounts([0, 0], 0.5), 0);
});

test('exact quantiles use nearest rank', () => {
  const v = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  assert.equal(quantileExact(v, 0.5), 5);
  assert.equal(quantileExact(v, 0.9), 9);
  assert.equal(quantileExact(v, 0.99), 10);
  assert.equal(quantileExact(v, 1), 10);
});

test('durations are labelled in µs/ms/s', () => {
  assert.equal(formatDuration(812, 'us'), '812 µs');
  assert.equal(formatDuration(3400, 'us'), '3.40 ms');
  assert.equal(formatDuration(1.2e6, 'us'), '1.20 s');
  assert.equal(formatDuration(500, 'ns'), '500 ns');
});
