// Wall-clock and off-CPU profiles of a JVM in the flame graph: each stack sits under its thread
// group ("[Application threads]", "[GC threads]", "[Compiler threads]", "[VM thread]", "[Other
// JVM threads]", as the JVM timeline groups them), and the view hides the service groups by
// default, so the application's own threads fill the graph; one toggle shows them again. A C
// program's profile, and a CPU profile, are left as they were.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromProfileResult, jvmPids } from '../../extension/model/flamegraph/profileData';
import { filterStacks, NO_FILTER, serviceWeight, withServiceHidden } from '../../extension/model/flamegraph/views';
import { threadGroup } from '../../extension/model/jvmThreads';
import { makeSession, readSession, writeSession } from '../../extension/model/sessionFile';
import type { ProfileFrame, ProfileResult, ProfileStack, ThreadState } from '../../extension/protocol/profile';

const futex: ProfileFrame[] = [{ kind: 'kernel', module: null, function: 'futex_wait', file: null, line: null, address: '0x1' } as unknown as ProfileFrame];
const app: ProfileFrame[] = [
  { kind: 'jit', module: null, function: 'com.acme.Worker.run', file: null, line: null, address: '0x2' } as unknown as ProfileFrame,
];

function stack(pid: number, comm: string, state: ThreadState, us: number, frames = futex): ProfileStack {
  return { count: 1, value: us, state, pid, tid: pid + comm.length, comm, frames };
}

/** The demo JVM's wall clock, as issue 39 saw it: 92 % service threads waiting on futexes. */
function wallOfJvm(): ProfileResult {
  const service = ['VM Thread', 'GC Thread#0', 'G1 Conc#0', 'G1 Refine#0', 'C2 CompilerThre', 'C1 CompilerThre', 'Signal Dispatch', 'Service Thread', 'Common-Cleaner', 'Reference Handl', 'Finalizer', 'VM Periodic Tas', 'Attach Listener', 'Notification Th', 'Monitor Deflati'];
  return {
    tracer: 'profile', unit: 'us', event: 'wall', frequency: 99, samples: 0, lost: 0,
    stacks: [
      ...service.map((c) => stack(10, c, 'lock', 6_000_000)),
      stack(10, 'main', 'oncpu', 300_000, app),
      stack(10, 'worker-1', 'lock', 7_500_000, app),
    ],
  };
}

test('JVM service threads by name: GC of every collector, compilers, the VM thread and the rest; the application\'s own', () => {
  for (const c of ['GC Thread#3', 'G1 Main Marker', 'G1 Conc#0', 'G1 Refine#0', 'G1 Service', 'ZDirector', 'ZWorker#0', 'Shenandoah Cont']) assert.equal(threadGroup(c), 'gc', c);
  for (const c of ['C1 CompilerThre', 'C2 CompilerThre', 'Sweeper thread']) assert.equal(threadGroup(c), 'compiler', c);
  assert.equal(threadGroup('VM Thread'), 'vm');
  for (const c of ['Signal Dispatch', 'Service Thread', 'Common-Cleaner', 'Reference Handl', 'Finalizer', 'VM Periodic Tas', 'Attach Listener', 'Notification Th', 'Monitor Deflati']) assert.equal(threadGroup(c), 'jvm', c);
  for (const c of ['main', 'worker-1', 'pool-1-thread-3', 'http-nio-8080-e']) assert.equal(threadGroup(c), 'application', c);
});

test('a JVM\'s wall clock: each stack under its thread group, the state still at the root', () => {
  const p = fromProfileResult(wallOfJvm());
  const name = (i: number) => p.frames[i].name;
  const worker = p.stacks.find((s) => s.frames.some((f) => name(f) === 'com.acme.Worker.run') && name(s.frames[0]) === '[off-CPU: lock (futex wait)]')!;
  assert.deepEqual(worker.frames.slice(0, 2).map(name), ['[off-CPU: lock (futex wait)]', '[Application threads]']);
  const groups = new Set(p.stacks.map((s) => name(s.frames[1])));
  assert.deepEqual([...groups].sort(), ['[Application threads]', '[Compiler threads]', '[GC threads]', '[Other JVM threads]', '[VM thread]']);
  assert.deepEqual(p.serviceFrames!.map(name).sort(), ['[Compiler threads]', '[GC threads]', '[Other JVM threads]', '[VM thread]']);
  // 15 service threads × 6 s of 97.8 s: 92 %, what the view hides by default
  const hidden = serviceWeight(p);
  assert.equal(hidden, 90_000_000);
  assert.equal(Math.round((100 * hidden) / p.total), 92);
  const shown = filterStacks(p.stacks, withServiceHidden(p, NO_FILTER, false));
  assert.equal(shown.reduce((s, x) => s + x.weight, 0), 7_800_000, 'hidden: only the application\'s threads');
  assert.ok(shown.every((s) => name(s.frames[1]) === '[Application threads]'));
  assert.equal(filterStacks(p.stacks, withServiceHidden(p, NO_FILTER, true)).length, p.stacks.length, 'one toggle shows them all again');
  // the user's own exclusions stay beside the hidden groups
  const f = withServiceHidden(p, { ...NO_FILTER, excluded: [7] }, false);
  assert.deepEqual(f.excluded.slice(0, 1), [7]);
});

test('a C program\'s wall clock, a CPU profile and threadGroups: false are left as they were', () => {
  const c: ProfileResult = { tracer: 'profile', unit: 'us', event: 'wall', frequency: 99, samples: 0, lost: 0, stacks: [stack(20, 'Finalizer', 'lock', 5), stack(20, 'app', 'oncpu', 5)] };
  assert.equal(jvmPids(c).size, 0, 'a thread merely named Finalizer does not make a JVM');
  const pc = fromProfileResult(c);
  assert.equal(pc.serviceFrames, undefined);
  assert.ok(pc.frames.every((f) => !/threads?\]$/.test(f.name)));
  const cpu = wallOfJvm();
  cpu.stacks = cpu.stacks.map(({ state: _s, ...s }) => s);
  cpu.event = 'cpu';
  const pcpu = fromProfileResult(cpu);
  assert.equal(pcpu.serviceFrames, undefined, 'CPU profiles: the compiler threads\' CPU time is real work, shown');
  assert.equal(fromProfileResult(wallOfJvm(), { threadGroups: false }).serviceFrames, undefined);
  assert.equal(serviceWeight(pc), 0);
  assert.equal(withServiceHidden(pc, NO_FILTER, false), NO_FILTER);
});

test('a JVM is told by a Java frame, libjvm.so or a thread only HotSpot names so', () => {
  const r = (stacks: ProfileStack[]) => jvmPids({ stacks });
  assert.deepEqual([...r([stack(1, 'main', 'lock', 1, app)])], [1]);
  assert.deepEqual([...r([stack(2, 'x', 'lock', 1, [{ kind: 'native', module: '/jdk/lib/server/libjvm.so', function: 'os::park', file: null, line: null } as unknown as ProfileFrame])])], [2]);
  assert.deepEqual([...r([stack(3, 'VM Thread', 'lock', 1)])], [3]);
  assert.deepEqual([...r([stack(4, 'nginx', 'lock', 1)])], []);
});

test('a saved wall-clock session keeps its hidden groups; a session file with bad ones is refused', () => {
  const p = fromProfileResult(wallOfJvm());
  const t0 = new Date(0);
  const text = writeSession(makeSession('profile', 'Wall clock: pid 10 (java)', { profile: p, warnings: [] }, t0, t0));
  const back = readSession(text) as { data: { profile: typeof p } };
  assert.deepEqual(back.data.profile.serviceFrames, p.serviceFrames);
  const json = JSON.parse(text);
  for (const bad of [5, [p.frames.length], [-1], [0, 0], ['x']]) {
    json.data.profile.serviceFrames = bad;
    assert.throws(() => readSession(JSON.stringify(json)), /serviceFrames must list distinct frame ids/, JSON.stringify(bad));
  }
});
