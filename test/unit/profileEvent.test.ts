// Profile CPU's measure step with the Java measures (with the `vscode` mock and a fake helper):
// "Java locks" is offered while a JVM runs, "Virtual threads" too when one runs JDK 21+ (else
// listed but refused with the JDK it found); once picked, the target list has only JVMs, a
// native process or a too-old JDK refused with why. A lock profile (the agent's records through
// the real decoder) gets its flame graph title and the wait CodeLens on the line that waits.
import { beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { installVscodeMock, recorded } from '../mocks/vscode';
import type { ProcessInfo } from '../../extension/protocol/protocol';
import { JavaLocksModel } from '../../extension/tracers/javaLocks/decode';
import { annotationsFromResult, waitLensTitle, waitsForFile } from '../../extension/model/profileSource';

const vscode = installVscodeMock();

const feature = require('../../extension/editor/features/profile/profile') as typeof import('../../extension/editor/features/profile/profile');

const events = require('../../extension/editor/features/profile/profileEvent') as typeof import('../../extension/editor/features/profile/profileEvent');

const { setHelper } = require('../../extension/editor/helperClient/helperClient') as typeof import('../../extension/editor/helperClient/helperClient');

function proc(pid: number, comm: string, jdk?: { main: string; feature?: number; version?: string }): ProcessInfo {
  return {
    pid, ppid: 1, user: 'alice', uid: 1000, comm, cmdline: [comm], kernelThread: false,
    ...(jdk ? { jvm: { libjvm: '/jdk/lib/server/libjvm.so', usdt: true, main: jdk.main, javaHome: '/jdk', preserveFramePointer: false, ...(jdk.feature ? { feature: jdk.feature, version: jdk.version ?? String(jdk.feature) } : {}) } } : {}),
  };
}

interface Item {
  label: string;
  description?: string;
  detail?: string;
  event?: string;
  refused?: string;
  changeEvent?: boolean;
  process?: ProcessInfo;
  target?: { pid: number };
}

let processes: ProcessInfo[] = [];
const asked: string[] = [];
const shown = new Map<string, Item[]>();
let onPick: (title: string, items: Item[]) => Item | undefined = () => undefined;
setHelper({ request: async () => processes } as never);
const win = vscode.window as unknown as Record<string, unknown>;
win.showQuickPick = async (items: Item[], o: { title: string }) => {
  asked.push(o.title);
  shown.set(o.title, items);
  return onPick(o.title, items);
};
win.showInputBox = async () => '99';
(vscode.workspace as unknown as Record<string, unknown>).getConfiguration = () => ({ get: <T>(_k: string, d?: T) => d, inspect: () => undefined });

class Memento {
  private readonly m = new Map<string, unknown>();
  get<T>(k: string, d?: T): T | undefined {
    return this.m.has(k) ? (this.m.get(k) as T) : d;
  }
  async update(k: string, v: unknown) {
    this.m.set(k, v);
  }
}

const TARGETS = 'Profile CPU: what to sample';
const MEASURE = 'Profile: what to measure';

beforeEach(() => {
  asked.length = 0;
  shown.clear();
  recorded.errors.length = 0;
});

describe('the measure step per JDK version', () => {
  test('no JVM running: only CPU, off-CPU and wall clock', () => {
    assert.deepEqual(events.eventItems([]).map((i) => i.event), ['cpu', 'offcpu', 'wall']);
  });

  test('JDK 17 only: Java locks offered, virtual threads listed but refused naming the JDK', () => {
    const items = events.eventItems([17]);
    assert.deepEqual(items.map((i) => i.event), ['cpu', 'offcpu', 'wall', 'lock', 'vthread']);
    const lock = items.find((i) => i.event === 'lock')!;
    assert.match(lock.label, /Java locks \(contended monitors and parks\)/);
    assert.equal(lock.refused, undefined);
    const vt = items.find((i) => i.event === 'vthread')!;
    assert.match(vt.label, /^\$\(circle-slash\) Virtual threads \(where they wait\)/);
    assert.match(vt.description!, /needs JDK 21\+/);
    assert.match(vt.refused!, /JDK 21 or newer, and the running JVMs are JDK 17/);
  });

  test('JDK 21, 25, or a JDK not known: virtual threads offered', () => {
    for (const jdks of [[17, 21], [25], [undefined]]) {
      const vt = events.eventItems(jdks).find((i) => i.event === 'vthread')!;
      assert.equal(vt.refused, undefined, `JDKs ${jdks.join(', ')}`);
      assert.match(vt.label, /^\$\(coffee\) Virtual threads \(where they wait\)/);
    }
  });

  test('which targets each measure refuses, and why', () => {
    const native = proc(200, 'nginx');
    const jdk17 = proc(100, 'java', { main: 'Old', feature: 17, version: '17.0.9' });
    const jdk25 = proc(300, 'java', { main: 'New', feature: 25 });
    const unknown = proc(400, 'java', { main: 'Container' });
    assert.equal(events.eventRefusal('offcpu', native), undefined, 'the OS-level measures take any process');
    assert.match(events.eventRefusal('lock', native)!, /pid 200 \(nginx\) is not a JVM: .*measure "Where threads wait \(off-CPU\)"/);
    assert.equal(events.eventRefusal('lock', jdk17), undefined);
    assert.match(events.eventRefusal('vthread', jdk17)!, /pid 100 runs JDK 17\.0\.9, which has no virtual threads \(JDK 21 or newer\)/);
    assert.equal(events.eventRefusal('vthread', jdk25), undefined);
    assert.equal(events.eventRefusal('vthread', unknown), undefined, 'a JDK not known is left to the tracer, which says why if it refuses');
  });
});

describe('Profile CPU → Measure: Java locks / Virtual threads', () => {
  test('Java locks: the target list has only JVMs (a native process refused), and the pick measures lock', async () => {
    processes = [proc(100, 'java', { main: 'com.acme.App', feature: 17 }), proc(200, 'nginx')];
    let round = 0;
    onPick = (title, items) => {
      if (title === MEASURE) return items.find((i) => i.event === 'lock');
      if (title === TARGETS) return ++round === 1 ? items.find((i) => i.changeEvent) : items.find((i) => i.process?.pid === 100);
      return items.find((i) => /Until I press Stop/.test(i.label));
    };
    const state = new Memento();
    const r = await feature.askProfile(state as never);
    assert.equal(r?.event, 'lock');
    assert.equal((state.get('ebpfStudio.profile.last') as { frequency?: number }).frequency, undefined, 'no frequency remembered that was never asked');
    assert.equal(r?.target.pid, 100);
    assert.equal(r?.target.kind, 'jvm');
    assert.ok(!asked.some((q) => /samples per second/.test(q)), `a lock profile has no sampling frequency to ask: ${asked.join(' / ')}`);
    const targets = shown.get(TARGETS)!;
    assert.ok(!targets.some((i) => /Whole system/.test(i.label)), 'no whole-system row for a JVM measure');
    assert.ok(targets.some((i) => /Measure: Java locks/.test(i.label)), 'the Measure item names the measure');
    // (the fake helper ignores jvmOnly, as a pid typed into the filter would: the row is refused)
    const nginx = targets.find((i) => i.process?.pid === 200);
    assert.ok(nginx, 'the fake helper listed nginx');
    assert.match(nginx.detail!, /Cannot trace: pid 200 \(nginx\) is not a JVM/);
  });

  test('Virtual threads with only a JDK 17 JVM: refused at the measure step, the measure stays CPU', async () => {
    processes = [proc(100, 'java', { main: 'com.acme.App', feature: 17 })];
    let round = 0;
    onPick = (title, items) => {
      if (title === MEASURE) return items.find((i) => i.event === 'vthread');
      if (title === TARGETS) return ++round === 1 ? items.find((i) => i.changeEvent) : items.find((i) => i.process?.pid === 100);
      return items.find((i) => /Until I press Stop/.test(i.label));
    };
    const r = await feature.askProfile(new Memento() as never);
    assert.equal(r?.event, 'cpu');
    assert.match(recorded.errors.join('\n'), /Virtual threads \(where they wait\) needs a JVM on JDK 21 or newer, and the running JVMs are JDK 17/);
  });

  test('Virtual threads beside a JDK 17 and a JDK 25 JVM: the JDK 17 row is refused with its version', async () => {
    processes = [proc(100, 'java', { main: 'Old', feature: 17, version: '17.0.9' }), proc(300, 'java', { main: 'New', feature: 25 })];
    let round = 0;
    onPick = (title, items) => {
      if (title === MEASURE) return items.find((i) => i.event === 'vthread');
      if (title === TARGETS) return ++round === 1 ? items.find((i) => i.changeEvent) : items.find((i) => i.process?.pid === 300);
      return items.find((i) => /Until I press Stop/.test(i.label));
    };
    const r = await feature.askProfile(new Memento() as never);
    assert.equal(r?.event, 'vthread');
    assert.equal(r?.target.pid, 300);
    const old = shown.get(TARGETS)!.find((i) => i.process?.pid === 100)!;
    assert.match(old.label, /^\$\(circle-slash\)/);
    assert.match(old.detail!, /runs JDK 17\.0\.9, which has no virtual threads/);
  });
});

test('a lock profile: the wait CodeLens on the line that waits says lock', () => {
  const m = new JavaLocksModel();
  m.feed(
    [
      'L\t4242\t1000\t2000000',
      'M\t1\tLockContention\tenterMonitor\tLockContention.java\t0',
      'M\t2\tjava.lang.Thread\trun\tThread.java\t0',
      'M\t11\tjdk.internal.misc.Unsafe\tpark\tUnsafe.java\t1',
      'M\t12\tjava.util.concurrent.locks.LockSupport\tpark\tLockSupport.java\t0',
      'M\t13\tLockContention\ttakeReentrant\tLockContention.java\t0',
      'W\tm\t101\t5000\t30000000\tmon-waiter-0\tLLockContention$Account;\tmon-holder\t-\t1:10:28\t2:11:840',
      'W\tp\t0\t8000\t10000000\trl-waiter-0\tLjava/util/concurrent/locks/ReentrantLock$NonfairSync;\trl-holder\t-\t11:-1:-1\t12:14:211\t13:7:40\t2:11:840',
      '',
    ].join('\n'),
  );
  const a = annotationsFromResult(m.result(4242, 'lock'));
  assert.equal(a.event, 'lock');
  assert.equal(a.waitTotal, 40000);
  const lines = waitsForFile(a, '/ws/src/LockContention.java')!;
  assert.ok(lines, 'the lock waits land on the workspace file');
  assert.equal(waitLensTitle(lines.get(28)!, a.waitTotal!), '⏸ 30.0 ms waiting (75%) · lock 30.0 ms');
  assert.equal(waitLensTitle(lines.get(40)!, a.waitTotal!), '⏸ 10.0 ms waiting (25%) · lock 10.0 ms', 'a park lands on the caller of ReentrantLock, not in the JDK');
  const lenses = feature.waitLenses(a, { uri: vscode.Uri.file('/ws/src/LockContention.java') as never, lineCount: 100 });
  assert.deepEqual(lenses.map((l) => [l.range.start.line, l.command?.title]), [
    [27, '⏸ 30.0 ms waiting (75%) · lock 30.0 ms'],
    [39, '⏸ 10.0 ms waiting (25%) · lock 10.0 ms'],
  ]);
  assert.match(lenses[0].command!.tooltip ?? '', /Java lock wait time/);
});
