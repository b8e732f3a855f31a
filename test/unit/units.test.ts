// formatCount must print what toLocaleString('en-US') prints for counts (views use it instead, to
// keep ICU's number formatting off a flame graph's first paint).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatCount, formatWeight } from '../../extension/model/units';

test('formatCount groups thousands like en-US toLocaleString', () => {
  for (const n of [0, 7, 999, 1000, 12_345, 999_999, 1_000_000, 123_456_789, -1, -1234, -1_000_000, 2 ** 40]) {
    assert.equal(formatCount(n), n.toLocaleString('en-US'), String(n));
  }
  assert.equal(formatCount(1234.6), '1,235');
});

test('a weighted profile reads in its own unit, not as samples', () => {
  assert.equal(formatWeight(252_471_550, 'us'), '252 s');
  assert.equal(formatWeight(18_237_144_563, 'bytes'), '18.2 GB');
  assert.equal(formatWeight(1234, 'samples'), '1,234 samples');
  assert.equal(formatWeight(1, undefined), '1 sample');
});
