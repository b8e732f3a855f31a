// The Java lock tracer's pure half: the agent's lock records (native/jvmagent/locks.c, lines as it
// writes them) summed into profile stacks under a leaf frame naming the lock, its holder and where
// the holder held it; the text summary; and the pprof round trip keeping the event.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addLockFrames, JavaLocksModel } from '../../extension/tracers/javaLocks/decode';
import { formatLockSummary } from '../../extension/cli/commands/javaLocks';
import { fromPprof, toPprof } from '../../extension/model/pprof';

// Method 7 is Thread.sleep (JDK, native): the holder's site is its first frame outside the JDK.
const AGENT_TEXT = [
  'L\t4242\t1000\t2000000',
  'M\t1\tLockContention\tenterMonitor\tLockContention.java\t0',
  'M\t2\tjava.lang.Thread\trun\tThread.java\t0',
  'M\t7\tjava.lang.Thread\tsleep\tThread.java\t1',
  'M\t8\tLockContention\tholdMonitor\tLockContention.java\t0',
  'M\t11\tjdk.internal.misc.Unsafe\tpark\tUnsafe.java\t1',
  'M\t12\tjava.util.concurrent.locks.LockSupport\tpark\tLockSupport.java\t0',
  'M\t13\tLockContention\ttakeReentrant\tLockContention.java\t0',
  'W\tm\t101\t5000\t20000000\tmon-waiter-0\tLLockContention$Account;\tmon-holder\t7:-1:-1,8:3:23\t1:10:28\t2:11:840',
  'W\tm\t101\t6000\t10000000\tmon-waiter-0\tLLockContention$Account;\tmon-holder\t7:-1:-1,8:3:23\t1:10:28\t2:11:840',
  'W\tm\t102\t7000\t500000\tmon-waiter-1\tLjava/lang/Object;\t-\t-\t1:10:28\t2:11:840',
  'W\tp\t0\t8000\t4000000\trl-waiter-0\tLjava/util/concurrent/locks/ReentrantLock$NonfairSync;\trl-holder\t7:-1:-1\t11:-1:-1\t12:14:211\t13:7:40\t2:11:840',
  'W\tp\t0\t9000\t2000000\tpool-1\t-\t-\t-\t11:-1:-1\t12:14:211\t2:11:840',
  'T\t9500',
  'E\t3\t2\t400\t900000\t1200000',
  'W\tm\t1', // a torn line of a newer agent: skipped
].join('\n');

test('lock records: waits summed per thread and stack, the lock frame names class, holder and where', () => {
  const m = new JavaLocksModel();
  // fed in two pieces split mid-line, as the file is read while the agent writes
  m.feed(AGENT_TEXT.slice(0, 300));
  m.feed(AGENT_TEXT.slice(300) + '\n');
  assert.equal(m.pid, 4242);
  assert.equal(m.waits.length, 5);
  assert.ok(m.ended);
  assert.deepEqual(m.end, { monitorWaits: 3, parks: 2, looks: 400, callbackNs: 900000, lookNs: 1200000, vthreadWaits: 0 });
  const r = m.result(4242);
  assert.equal(r.unit, 'us');
  assert.equal(r.event, 'lock');
  assert.equal(r.samples, 5);
  assert.equal(r.states?.lock, 36500);
  const [first, ...rest] = r.stacks;
  assert.equal(first.value, 30000, 'two waits of the same thread at the same site: one stack, their µs summed');
  assert.equal(first.count, 2);
  assert.equal(first.comm, 'mon-waiter-0');
  assert.equal(first.tid, 101);
  assert.equal(first.state, 'lock');
  assert.equal(first.frames[0].function, '[lock LockContention$Account held by mon-holder at LockContention.holdMonitor(LockContention.java:23)]');
  assert.equal(first.frames[0].module, '[lock]');
  assert.deepEqual(
    first.frames.slice(1).map((f) => [f.function, f.file, f.line]),
    [
      ['LockContention.enterMonitor', 'LockContention.java', 28],
      ['java.lang.Thread.run', 'java/lang/Thread.java', 840],
    ],
  );
  const labels = rest.map((s) => s.frames[0].function);
  assert.deepEqual(labels, [
    '[park java.util.concurrent.locks.ReentrantLock$NonfairSync held by rl-holder at java.lang.Thread.sleep(Native Method)]',
    '[park (no blocker)]',
    '[lock java.lang.Object]',
  ]);
  assert.equal(rest[0].tid, 4242, 'a park (observed by another thread) has no tid: the pid stands in');

  const text = formatLockSummary(r);
  assert.match(text, /Java lock waits: 36\.5 ms in 5 waits/);
  assert.match(text, /82\.2%\s+30\.0 ms\s+\[lock LockContention\$Account held by mon-holder/);
  assert.match(text, /waiting in LockContention\.takeReentrant \(LockContention\.java:40\)/);
});

test('a lock profile survives pprof: time as lock_wait µs, the event kept', () => {
  const m = new JavaLocksModel();
  m.feed(AGENT_TEXT + '\n');
  const back = fromPprof(toPprof(m.result(4242)));
  assert.equal(back.event, 'lock');
  assert.equal(back.unit, 'us');
  assert.equal(back.stacks.reduce((a, s) => a + (s.value ?? 0), 0), 36500);
});

test("virtual threads' waits: state from where they unmounted, a blocker as a park frame, no carrier tid", () => {
  const m = new JavaLocksModel();
  m.feed(
    [
      'L\t77\t1000\t2000000',
      'M\t1\tjava.lang.VirtualThread\tparkNanos\tVirtualThread.java\t0',
      'M\t2\tjava.lang.Thread\tsleep\tThread.java\t0',
      'M\t3\tApp\twaitLong\tApp.java\t0',
      'M\t4\tjava.lang.VirtualThread\tpark\tVirtualThread.java\t0',
      'M\t5\tjava.util.concurrent.locks.LockSupport\tpark\tLockSupport.java\t0',
      'M\t6\tApp\ttake\tApp.java\t0',
      'M\t7\tsun.nio.ch.NioSocketImpl\tpark\tNioSocketImpl.java\t0',
      'M\t8\tApp\tread\tApp.java\t0',
      'W\tv\t900\t5000\t30000000\tvw-1\t-\t-\t-\t1:2:1\t2:3:500\t3:4:19',
      'W\tv\t901\t6000\t1000000\tvw-1\tLjava/util/concurrent/locks/ReentrantLock$NonfairSync;\t-\t-\t4:1:2\t5:14:211\t6:5:40',
      'W\tv\t902\t7000\t2000000\t\t-\t-\t-\t4:1:2\t7:10:300\t8:3:50',
      'E\t3\t0\t0\t9000\t0',
    ].join('\n') + '\n',
  );
  const r = m.result(77, 'vthread');
  assert.equal(r.event, 'vthread');
  assert.deepEqual(r.states, { sleep: 30000, io: 2000, lock: 1000 });
  const [sleep, io, lock] = r.stacks;
  assert.equal(sleep.state, 'sleep');
  assert.equal(sleep.frames[0].function, 'java.lang.VirtualThread.parkNanos', 'no lock frame without a blocker');
  assert.equal(sleep.tid, 77, 'a virtual thread has no OS thread: the pid stands in, not the carrier');
  assert.equal(io.state, 'io');
  assert.equal(io.comm, 'virtual thread', 'an unnamed virtual thread');
  assert.equal(lock.state, 'lock');
  assert.equal(lock.frames[0].function, '[park java.util.concurrent.locks.ReentrantLock$NonfairSync]');
});

test("virtual threads' lock holders: a virtual holder by its id and line, a monitor as a lock, readers not named", () => {
  const m = new JavaLocksModel();
  m.feed(
    [
      'L\t77\t1000\t2000000',
      'M\t1\tjava.lang.VirtualThread\tpark\tVirtualThread.java\t0',
      'M\t2\tApp\ttake\tApp.java\t0',
      'M\t3\tjava.lang.Thread\tsleep\tThread.java\t0',
      'M\t4\tApp\thold\tApp.java\t0',
      'M\t5\tApp\tenter\tApp.java\t0',
      'M\t6\tApp\twrite\tApp.java\t0',
      'W\tv\t901\t6000\t3000000\tvw-1\tLjava/util/concurrent/locks/ReentrantLock$NonfairSync;\tvirtual#25\t1:1:2,3:5:540,4:3:44\t1:1:2\t2:5:40',
      'W\tV\t902\t7000\t2000000\tvw-2\tLApp$Account;\tmon-holder\t3:5:540,4:3:58\t5:7:61',
      'W\tv\t903\t8000\t1000000\tvw-3\tLjava/util/concurrent/locks/ReentrantReadWriteLock$NonfairSync;\treaders (not named)\t-\t1:1:2\t6:4:70',
    ].join('\n') + '\n',
  );
  const [rl, mon, rw] = m.result(77, 'vthread').stacks;
  assert.equal(rl.frames[0].function, '[park java.util.concurrent.locks.ReentrantLock$NonfairSync held by virtual#25 at App.hold(App.java:44)]');
  assert.equal(mon.frames[0].function, '[lock App$Account held by mon-holder at App.hold(App.java:58)]', 'unmounted entering a monitor: a lock, not a park');
  assert.equal(mon.state, 'lock');
  assert.equal(rw.frames[0].function, '[park java.util.concurrent.locks.ReentrantReadWriteLock$NonfairSync held by readers (not named)]');
});

test('an off-CPU profile: lock waits gain the lock frame of the same thread and Java stack, split by measured time', () => {
  const m = new JavaLocksModel();
  m.feed(AGENT_TEXT + '\n');
  const java = (fn: string, line: number) => ({ address: '0x0', module: '[java]', function: fn, file: null, line, kind: 'jit' as const });
  const kernel = { address: '0x0', module: '[kernel]', function: 'futex_wait', file: null, line: null, kind: 'kernel' as const };
  const stacks = addLockFrames(
    [
      // a monitor wait: no Java stack at the futex; thread 101 waited 30 ms for the Account there
      { count: 4, value: 1000, state: 'lock', pid: 4242, tid: 101, comm: 'mon-waiter-0', frames: [kernel, { address: '0x0', module: null, function: '[Java stack not walked: not in Java]', file: null, line: null, kind: 'native' }] },
      // a park of rl-waiter-0 with the same Java stack as its park record
      { count: 2, value: 500, state: 'lock', pid: 4242, tid: 300, comm: 'rl-waiter-0', frames: [kernel, java('jdk.internal.misc.Unsafe.park', -1), java('java.util.concurrent.locks.LockSupport.park', 211), java('LockContention.takeReentrant', 40)] },
      // the same thread parked elsewhere: no record there, unchanged
      { count: 1, value: 70, state: 'lock', pid: 4242, tid: 300, comm: 'rl-waiter-0', frames: [kernel, java('java.lang.Object.wait', -1)] },
      // sleeping, or another process: unchanged
      { count: 1, value: 90, state: 'sleep', pid: 4242, tid: 101, comm: 'mon-waiter-0', frames: [kernel] },
    ],
    m,
    4242,
  );
  const byLeaf = new Map(stacks.map((s) => [`${s.comm} ${s.frames[0].function}`, s]));
  assert.equal(byLeaf.get('mon-waiter-0 [lock LockContention$Account held by mon-holder at LockContention.holdMonitor(LockContention.java:23)]')?.value, 1000);
  assert.equal(byLeaf.get('rl-waiter-0 [park java.util.concurrent.locks.ReentrantLock$NonfairSync held by rl-holder at java.lang.Thread.sleep(Native Method)]')?.value, 500);
  assert.equal(byLeaf.get('rl-waiter-0 futex_wait')?.value, 70);
  assert.equal(byLeaf.get('mon-waiter-0 futex_wait')?.state, 'sleep');
  assert.equal(stacks.length, 4);
});
