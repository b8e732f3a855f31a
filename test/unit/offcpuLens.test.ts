// Off-CPU CodeLens on Java source: the line of the innermost Java frame of each waiting stack (the
// agent's file:line, relative to a source root) gets the time waited there and its states, on the
// workspace file whose path ends with that name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { annotationsFromResult, waitLensTitle, waitsForFile } from '../../extension/model/profileSource';
import type { ProfileFrame, ProfileResult, ProfileStack, ThreadState } from '../../extension/protocol/profile';
import { installVscodeMock } from '../mocks/vscode';

installVscodeMock();

const vscode = require('vscode') as typeof import('vscode');
const { waitLenses } = require('../../extension/editor/features/profile/profile') as typeof import('../../extension/editor/features/profile/profile');

const kernel = (fn: string): ProfileFrame => ({ address: '0x1', module: '[kernel]', function: fn, file: null, line: null, kind: 'kernel' });
const native = (fn: string): ProfileFrame => ({ address: '0x2', module: '/usr/lib/jvm/lib/server/libjvm.so', function: fn, file: null, line: null, kind: 'native' });
const java = (fn: string, file: string, line: number): ProfileFrame => ({ address: '0x3', module: '[java]', function: fn, file, line, kind: 'interpreted', javaType: 'interpreted' });
const stack = (state: ThreadState, value: number, frames: ProfileFrame[]): ProfileStack => ({ count: 1, value, state, pid: 1, tid: 2, comm: 'java', frames });

const result: ProfileResult = {
  tracer: 'profile',
  unit: 'us',
  event: 'offcpu',
  frequency: 0,
  samples: 4,
  lost: 0,
  stacks: [
    // the lock wait: futex in the kernel and the JVM, then Work.take at Work.java:42
    stack('lock', 1_100_000, [kernel('futex_wait'), native('ObjectMonitor::enter'), java('com.x.Work.take', 'com/x/Work.java', 42), java('com.x.Work.run', 'com/x/Work.java', 17)]),
    stack('sleep', 1_200_000, [kernel('do_nanosleep'), java('java.lang.Thread.sleep', 'java/lang/Thread.java', 500), java('com.x.Work.run', 'com/x/Work.java', 20)]),
    stack('sleep', 600_000, [kernel('do_nanosleep'), java('com.x.Work.take', 'com/x/Work.java', 42)]),
    // a park under ReentrantLock.lock: the JDK's frames are not where the application waits
    stack('lock', 300_000, [kernel('futex_wait'), java('java.util.concurrent.locks.LockSupport.park', 'java/util/concurrent/locks/LockSupport.java', 211), java('com.x.Work.lockIt', 'com/x/Work.java', 60)]),
    stack('preempted', 100_000, [kernel('schedule'), native('spin')]),
  ],
};

const work_ = (a: ReturnType<typeof annotationsFromResult>) => a.waits!.get('com/x/Work.java')!;

test('each waiting stack adds its time and state to the line where its application code waits (innermost Java frame outside the JDK)', () => {
  const a = annotationsFromResult(result);
  assert.equal(a.waitTotal, 3_300_000);
  assert.deepEqual(work_(a).get(60), { total: 300_000, states: { lock: 300_000 } }, 'the caller of the JDK lock gets the park');
  assert.equal(a.waits!.get('java/util/concurrent/locks/LockSupport.java'), undefined);
  const work = a.waits!.get('com/x/Work.java')!;
  assert.deepEqual(work.get(42), { total: 1_700_000, states: { lock: 1_100_000, sleep: 600_000 } });
  assert.equal(work.get(17), undefined, 'an outer frame is not where the thread waited');
  assert.deepEqual(work.get(20), { total: 1_200_000, states: { sleep: 1_200_000 } }, 'Thread.sleep is the JDK: its caller waits');
  assert.equal(annotationsFromResult({ ...result, event: 'cpu' }).waits, undefined, 'CPU profiles have no waits');
});

test('a workspace file matches the frame’s source-root-relative name; another file with the same base name does not', () => {
  const a = annotationsFromResult(result);
  assert.equal(waitsForFile(a, '/home/u/proj/src/main/java/com/x/Work.java')!.get(42)!.total, 1_700_000);
  assert.equal(waitsForFile(a, '/home/u/proj/src/main/java/com/y/Work.java'), undefined);
  assert.equal(waitsForFile(a, '/home/u/proj/src/main/java/com/x/OtherWork.java'), undefined);
});

test('the lens: time waited, its share of all off-CPU time, then each state, largest first', () => {
  assert.equal(waitLensTitle({ total: 1_700_000, states: { lock: 1_100_000, sleep: 600_000 } }, 3_000_000), '⏸ 1.7 s waiting (57%) · lock 1.1 s · sleep 600 ms');
  assert.equal(waitLensTitle({ total: 2_300, states: { io: 2_300 } }, 0), '⏸ 2.3 ms waiting · I/O 2.3 ms');
});

test('the editor puts the lens on the Java line (0-based range), none past the end of the file', () => {
  const a = annotationsFromResult(result);
  const doc = { uri: vscode.Uri.file('/ws/src/com/x/Work.java'), lineCount: 100 };
  const lenses = waitLenses(a, doc);
  assert.equal(lenses.length, 3, 'lines 20, 42 and 60');
  assert.deepEqual(lenses.map((l) => l.range.start.line), [19, 41, 59]);
  assert.equal(lenses[1].command?.title, '⏸ 1.7 s waiting (52%) · lock 1.1 s · sleep 600 ms');
  assert.equal(lenses[1].command?.command, 'ebpfStudio.hideProfileAnnotations');
  assert.deepEqual(waitLenses(a, { ...doc, lineCount: 30 }).map((l) => l.range.start.line), [19], 'lines 42 and 60 are past a 30-line file (the source changed)');
  assert.deepEqual(waitLenses(a, { uri: vscode.Uri.file('/ws/src/Other.java'), lineCount: 100 }), []);
});
