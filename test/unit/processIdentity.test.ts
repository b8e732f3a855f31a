// A process is its pid and its start time (sys/proc/processes.ts): the identity of a live
// process holds, another start time or an exited (zombie or reaped) process does not, and the
// start tick turns into the boot-clock range the BPF programs compare with task->start_boottime.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { bootStartRange, identify, sameProcess } from '../../extension/sys/proc/processes';
import { watchTarget } from '../../extension/tracers/targetWatch';

describe('process identity', () => {
  test('the running process is itself; another start time is not', () => {
    const me = identify(process.pid);
    assert.ok(me && me.startTime > 0);
    assert.equal(sameProcess(me), true);
    assert.equal(sameProcess({ pid: process.pid, startTime: me.startTime + 1 }), false);
    assert.equal(identify(0x7fffffff), undefined);
  });

  test('a start tick is 10 ms of CLOCK_BOOTTIME, [lo, hi) in ns; no target, no check', () => {
    assert.deepEqual(bootStartRange({ pid: 1, startTime: 12345 }), { target_start_lo: 123_450_000_000n, target_start_hi: 123_460_000_000n });
    assert.deepEqual(bootStartRange(undefined), { target_start_lo: 0n, target_start_hi: 0n });
  });

  test('a zombie has exited; the watch says so once', async () => {
    const child = spawn('sh', ['-c', 'exit 0'], { stdio: 'ignore' });
    const id = { pid: child.pid!, startTime: identify(child.pid!)?.startTime ?? -1 };
    let gone = 0;
    const stop = watchTarget(id, () => gone++, 10);
    await new Promise((r) => child.once('exit', r));
    await new Promise((r) => setTimeout(r, 100));
    stop();
    assert.equal(sameProcess(id), false);
    assert.equal(gone, 1);
  });
});
