// The latency tracer's "profile the slow calls" options: refused without a threshold (every call
// would be "slow"), the sampling frequency bounded, and off unless asked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { latencyTracer } from '../../extension/tracers/latency/tracer';
import { WALL_DEFAULT_FREQUENCY } from '../../extension/protocol/offcpu';

const base = { pid: 1, target: 'work' };

test('profileSlow needs a threshold above 0, with a clear error', () => {
  assert.throws(() => latencyTracer.validate({ ...base, profileSlow: true }), /needs a threshold/);
  assert.throws(() => latencyTracer.validate({ ...base, profileSlow: true, thresholdMs: 0 }), /needs a threshold/);
});

test('profileSlow with a threshold: on, at the wall profile default frequency unless given; bad frequencies refused', () => {
  const o = latencyTracer.validate({ ...base, profileSlow: true, thresholdMs: 5 });
  assert.equal(o.profileSlow, true);
  assert.equal(o.frequency, WALL_DEFAULT_FREQUENCY);
  assert.equal(latencyTracer.validate({ ...base, profileSlow: true, thresholdMs: 5, frequency: 999 }).frequency, 999);
  for (const frequency of [0, -1, 1e9, 'x']) assert.throws(() => latencyTracer.validate({ ...base, profileSlow: true, thresholdMs: 5, frequency }), /frequency/);
  assert.throws(() => latencyTracer.validate({ ...base, profileSlow: 'yes', thresholdMs: 5 }), /profileSlow/);
});

test('without profileSlow the profile stays off', () => {
  assert.equal(latencyTracer.validate({ ...base, thresholdMs: 5 }).profileSlow, false);
});
