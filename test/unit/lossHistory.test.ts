// The loss history behind doctor's "this happens often" advice: what is recorded, what is read
// back, the cap, and when advice is given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { lossAdvice, lossOf, OFTEN_SESSIONS, OFTEN_WINDOW_MS, readLossHistory, recordLosses } from '../../extension/tracers/lossHistory';

const tmpFile = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'loss-history-')), 'state', 'losses.jsonl');

test('only results that lost or dropped something are recorded, with their counts', () => {
  const file = tmpFile();
  recordLosses({ tracer: 'runqlat', lost: 0, dropped: 0 }, file);
  recordLosses(null, file);
  recordLosses({ lost: 5 }, file);
  assert.deepEqual(readLossHistory(file), []);
  recordLosses({ tracer: 'runqlat', lost: 0, dropped: 7 }, file);
  recordLosses({ tracer: 'java-gc', lost: 3 }, file);
  const got = readLossHistory(file).map(({ atMs: _a, ...r }) => r);
  assert.deepEqual(got, [
    { tracer: 'runqlat', lost: 0, dropped: 7 },
    { tracer: 'java-gc', lost: 3, dropped: 0 },
  ]);
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
});

test('the history keeps the last 200 sessions and skips torn lines', () => {
  const file = tmpFile();
  for (let i = 1; i <= 205; i++) recordLosses({ tracer: 'profile', lost: i }, file);
  fs.appendFileSync(file, '{"tracer":"prof');
  const h = readLossHistory(file);
  assert.equal(h.length, 200);
  assert.equal(h[0].lost, 6);
  assert.equal(h[199].lost, 205);
});

test('a history that cannot be written is no error', () => {
  const file = tmpFile();
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, '');
  // a regular file where the folder should be: ENOTDIR
  assert.doesNotThrow(() => recordLosses({ tracer: 'memleak', dropped: 1 }, path.join(file, 'sub', 'losses.jsonl')));
  assert.deepEqual(readLossHistory('/nonexistent/losses.jsonl'), []);
});

test('advice per tracer that lost data in several recent sessions, naming its option', () => {
  const now = 1_000_000_000_000;
  const rec = (tracer: string, agoMs: number, lost: number, dropped = 0) => ({ tracer, atMs: now - agoMs, lost, dropped });
  assert.equal(OFTEN_SESSIONS, 2);
  const advice = lossAdvice(
    [
      rec('memleak', 1000, 0, 40),
      rec('memleak', 2000, 0, 2),
      rec('profile', 3000, 9), // once only
      rec('runqlat', OFTEN_WINDOW_MS + 1, 0, 5), // too old
      rec('runqlat', 1000, 0, 5),
    ],
    now,
  );
  assert.equal(advice.length, 1);
  assert.match(advice[0], /^memleak lost data in 2 sessions in the last 7 days \(42 dropped\): .*--sample-rate/);
  assert.equal(lossOf({ tracer: 'profile', lost: 2, dropped: -1 })?.dropped, 0);
  // the profiler loses samples (a full stack map), not ring-buffer events
  const profile = lossAdvice([rec('profile', 1000, 30), rec('profile', 2000, 12)], now);
  assert.match(profile[0], /^profile lost data in 2 sessions in the last 7 days \(42 samples lost\): .*--stack-storage-size/);
});
