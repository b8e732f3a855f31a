// runBoundedWorker, the worker start of the file readers (profiles, JFR recordings): a worker that
// answers settles with its answer after its progress messages; one that hangs, outgrows its heap,
// throws or exits ends in the matching error, once (a hung worker left running would keep
// this file's process alive).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { runBoundedWorker, type BoundedWorker } from '../../extension/sys/boundedWorker';

type Message = { progress: number } | { ok: number };

function run(what: string, extra: Partial<BoundedWorker<Message, number>> = {}): Promise<number> {
  return runBoundedWorker<Message, number>({
    script: path.join(__dirname, '..', 'fixtures', 'boundedWorker'),
    workerData: what,
    heapMb: 32,
    timeoutMs: 20_000,
    onMessage: (m) => ('ok' in m ? { ok: m.ok } : undefined),
    timedOut: () => new Error('timed out'),
    outOfMemory: () => new Error('out of memory'),
    crashed: (why) => new Error(`crashed: ${why}`),
    ...extra,
  });
}

test('runBoundedWorker: the answer after the progress messages', async () => {
  const seen: Message[] = [];
  assert.equal(await run('answer', { onMessage: (m) => (seen.push(m), 'ok' in m ? { ok: m.ok } : undefined) }), 42);
  assert.deepEqual(seen, [{ progress: 1 }, { ok: 42 }]);
});

test('runBoundedWorker: a worker that hangs is stopped at its timeout', async () => {
  const t0 = Date.now();
  await assert.rejects(run('hang', { timeoutMs: 1500 }), /^Error: timed out$/);
  const ms = Date.now() - t0;
  assert.ok(ms >= 1400 && ms < 15_000, `stopped after ${ms} ms`);
});

test('runBoundedWorker: a worker past its heap limit ends in the out-of-memory error', async () => {
  await assert.rejects(run('heap'), /^Error: out of memory$/);
});

test('runBoundedWorker: a worker that throws or exits ends in the crash error, with why', async () => {
  await assert.rejects(run('throw'), /^Error: crashed: boom in the worker$/);
  await assert.rejects(run('exit'), /^Error: crashed: the reader stopped \(exit code 3\)$/);
});

test('runBoundedWorker: an onMessage that throws rejects with its error', async () => {
  const bad = new Error('a bad answer');
  await assert.rejects(
    run('answer', {
      onMessage: () => {
        throw bad;
      },
    }),
    (e) => e === bad,
  );
});
