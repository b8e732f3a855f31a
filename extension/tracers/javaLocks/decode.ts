// Pure half of the Java lock tracer (no I/O): parses the records native/jvmagent/locks.c writes
// (L, M, W, T, E lines) and sums each wait into a stack: the waiter's Java frames under a leaf
// frame "[lock <class> held by <thread> at <Class.method(File.java:line)>]".
import type { ProfileFrame, ProfileResult, ProfileStack, ThreadState } from '../../protocol/profile';
import { LOCK_MODULE } from '../../protocol/javaLocks';
import { javaFrame, type JavaFrameRef, type JavaMethod } from '../javaAgent/decode';
import { javaClassName } from '../javaHeap/decode';

export interface LockWait {
  /** a contended monitor, a park (platform thread), or a virtual thread's time unmounted */
  kind: 'monitor' | 'park' | 'vthread';
  /** a virtual thread unmounted while entering a contended monitor (JDK 24+), not parked */
  onMonitor?: boolean;
  /** the waiter's OS thread id (monitors; a virtual thread's carrier at its next mount; 0 for parks, which another thread observed) */
  tid: number;
  endNs: bigint;
  waitedNs: number;
  thread: string;
  /** the lock object's class ("java.lang.Object"), or undefined (a park without a blocker) */
  lockClass?: string;
  /** the thread that held the lock: its name, "virtual#<id>" for an unnamed virtual thread, "readers (not named)" for a read lock */
  holder?: string;
  holderFrames: JavaFrameRef[];
  frames: JavaFrameRef[];
}

const frameRefs = (fields: string[]): JavaFrameRef[] =>
  fields.map((t) => {
    const [method, bci, line] = t.split(':').map(Number);
    return { method, bci, line };
  });

/** JDK code a holder passes through on its way to where it holds the lock (Thread.sleep, Object.wait, the lock's own methods). */
const JDK_CLASS = /^(java|javax|jdk|sun|com\.sun)\./;

export class JavaLocksModel {
  readonly methods = new Map<number, JavaMethod>();
  readonly waits: LockWait[] = [];
  pid = 0;
  periodNs = 0;
  ended = false;
  end = { monitorWaits: 0, parks: 0, looks: 0, callbackNs: 0, lookNs: 0, vthreadWaits: 0 };
  private tail = '';

  /** Feeds more of the file; incomplete last lines wait for the next call. */
  feed(text: string): void {
    const lines = (this.tail + text).split('\n');
    this.tail = lines.pop() ?? '';
    for (const line of lines) this.line(line);
  }

  private line(line: string): void {
    const f = line.split('\t');
    switch (f[0]) {
      case 'L':
        this.pid = Number(f[1]);
        this.periodNs = Number(f[3]);
        break;
      case 'M':
        this.methods.set(Number(f[1]), { className: f[2] ?? '?', method: f[3] ?? '?', sourceFile: f[4] && f[4] !== '-' ? f[4] : null, native: f[5] === '1' });
        break;
      case 'W': {
        if (f.length < 9) break;
        this.waits.push({
          kind: f[1] === 'm' ? 'monitor' : f[1] === 'v' || f[1] === 'V' ? 'vthread' : 'park',
          ...(f[1] === 'V' ? { onMonitor: true } : {}),
          tid: Number(f[2]),
          endNs: BigInt(f[3]),
          waitedNs: Number(f[4]),
          thread: f[5],
          lockClass: f[6] && f[6] !== '-' ? javaClassName(f[6]) : undefined,
          holder: f[7] && f[7] !== '-' ? f[7] : undefined,
          holderFrames: f[8] && f[8] !== '-' ? frameRefs(f[8].split(',')) : [],
          frames: frameRefs(f.slice(9)),
        });
        break;
      }
      case 'E':
        this.ended = true;
        this.end = { monitorWaits: Number(f[1]) || 0, parks: Number(f[2]) || 0, looks: Number(f[3]) || 0, callbackNs: Number(f[4]) || 0, lookNs: Number(f[5]) || 0, vthreadWaits: Number(f[6]) || 0 };
        break;
      default:
        break; // T (heartbeat), or a newer agent's record
    }
  }

  /** "Class.method(File.java:31)": the holder's innermost frame outside the JDK (else its innermost frame). */
  holderSite(w: LockWait): string | undefined {
    const named = w.holderFrames.map((r) => ({ r, m: this.methods.get(r.method) })).filter((x) => x.m);
    const pick = named.find((x) => !JDK_CLASS.test(x.m!.className)) ?? named[0];
    if (!pick) return undefined;
    const m = pick.m!;
    const where = m.native ? 'Native Method' : `${m.sourceFile ?? 'Unknown Source'}${pick.r.line > 0 ? `:${pick.r.line}` : ''}`;
    return `${m.className}.${m.method}(${where})`;
  }

  /** The leaf frame naming the lock: "[lock java.lang.Object held by worker-2 at Foo.run(Foo.java:31)]"; undefined for a virtual thread without a blocker. */
  lockLabel(w: LockWait): string | undefined {
    if (w.kind === 'vthread' && !w.lockClass) return undefined;
    const what = w.kind === 'monitor' || w.onMonitor ? `lock ${w.lockClass ?? '?'}` : w.lockClass ? `park ${w.lockClass}` : 'park (no blocker)';
    const site = this.holderSite(w);
    const held = w.holder ? ` held by ${w.holder}${site ? ` at ${site}` : ''}` : '';
    return `[${what}${held}]`;
  }

  /**
   * Why a wait waited: monitors and parks are lock waits; a virtual thread's, from where it
   * unmounted — in Thread.sleep sleeping, under the JDK's socket and file code I/O, else a lock.
   */
  stateOf(w: LockWait): ThreadState {
    if (w.kind !== 'vthread') return 'lock';
    const names = w.frames.map((r) => this.methods.get(r.method)).map((m) => (m ? `${m.className}.${m.method}` : ''));
    if (names.some((n) => n === 'java.lang.Thread.sleep' || n === 'java.lang.VirtualThread.sleepNanos')) return 'sleep';
    if (names.some((n) => /^(sun\.nio\.ch|java\.net|java\.nio\.channels|sun\.nio\.fs)\./.test(n))) return 'io';
    return 'lock';
  }

  /** The waits as profile stacks (µs), summed per thread, stack and lock frame; most time first. */
  stacks(pid: number): ProfileStack[] {
    const byKey = new Map<string, ProfileStack>();
    for (const w of this.waits) {
      const label = this.lockLabel(w);
      const java = w.frames.map((r) => javaFrame(r, this.methods, 'jit'));
      const frames: ProfileFrame[] = label ? [{ address: '0x0', module: LOCK_MODULE, function: label, file: null, line: null, kind: 'native' }, ...java] : java;
      const state = this.stateOf(w);
      const key = `${w.thread}\0${label ?? ''}\0${state}\0${w.frames.map((r) => `${r.method}:${r.bci}`).join(',')}`;
      const s = byKey.get(key);
      const us = w.waitedNs / 1000;
      if (s) {
        s.count++;
        s.value = (s.value ?? 0) + us;
      } else {
        // a virtual thread has no OS thread of its own: the process stands in for its tid
        const tid = w.kind === 'vthread' || !w.tid ? pid : w.tid;
        byKey.set(key, { count: 1, value: us, state, pid, tid, comm: w.thread || (w.kind === 'vthread' ? 'virtual thread' : '?'), frames });
      }
    }
    return [...byKey.values()].map((s) => ({ ...s, value: Math.round(s.value ?? 0) })).sort((a, b) => (b.value ?? 0) - (a.value ?? 0));
  }

  result(pid: number, event: 'lock' | 'vthread' = 'lock'): ProfileResult {
    const stacks = this.stacks(pid);
    const states: Partial<Record<ThreadState, number>> = {};
    for (const s of stacks) if (s.state) states[s.state] = (states[s.state] ?? 0) + (s.value ?? 0);
    return { tracer: 'profile', unit: 'us', event, states, frequency: 0, samples: this.waits.length, lost: 0, stacks };
  }
}


/** The Java frames' functions of a stack, leaf first (frames the agent gave: module "[java]"). */
const javaFunctions = (frames: ProfileFrame[]) => frames.filter((f) => f.module === '[java]').map((f) => f.function ?? '');

/** Whether two Java stacks (leaf first) are the same as far as both go (the agents cut them at different depths). */
function sameJava(a: string[], b: string[]): boolean {
  const n = Math.min(a.length, b.length);
  if (n === 0) return false;
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * An off-CPU profile's lock waits of the JVM `pid` gain the lock frame of the waits the lock
 * session saw on the same thread with the same Java stack: parks by the thread's name (the OS
 * name is the Java name cut to 15 characters) and Java stack, monitors by thread id (at a
 * contended monitor the JVM's stack is not walkable from the futex, so there is no Java stack to
 * compare). A stack whose thread waited for several locks there is split between them in
 * proportion to the time the lock session measured for each; stacks it saw nothing for are kept.
 */
export function addLockFrames(stacks: ProfileStack[], model: JavaLocksModel, pid: number): ProfileStack[] {
  const waits = model.waits
    .filter((w) => w.kind !== 'vthread')
    .map((w) => ({ w, label: model.lockLabel(w)!, java: w.frames.map((r) => javaFrame(r, model.methods, 'jit').function ?? '') }));
  if (!waits.length) return stacks;
  const out: ProfileStack[] = [];
  for (const s of stacks) {
    if (s.pid !== pid || s.state !== 'lock') {
      out.push(s);
      continue;
    }
    const java = javaFunctions(s.frames);
    const unwalked = java.length === 0 || s.frames.some((f) => /^\[Java stack not walked/.test(f.function ?? ''));
    const byLabel = new Map<string, number>();
    for (const x of waits) {
      const match = x.w.kind === 'monitor' ? x.w.tid === s.tid && (unwalked || sameJava(java, x.java)) : x.w.thread.slice(0, 15) === s.comm && sameJava(java, x.java);
      if (match) byLabel.set(x.label, (byLabel.get(x.label) ?? 0) + x.w.waitedNs);
    }
    if (!byLabel.size) {
      out.push(s);
      continue;
    }
    const total = [...byLabel.values()].reduce((a, b) => a + b, 0);
    const value = s.value ?? s.count;
    for (const [label, ns] of byLabel) {
      const share = ns / total;
      out.push({ ...s, count: Math.max(1, Math.round(s.count * share)), value: Math.round(value * share), frames: [{ address: '0x0', module: LOCK_MODULE, function: label, file: null, line: null, kind: 'native' }, ...s.frames] });
    }
  }
  return out.sort((a, b) => (b.value ?? b.count) - (a.value ?? a.count));
}

/** Leaf frame of a virtual thread's wait in an off-CPU profile: no OS thread was blocked for it. */
export const UNMOUNTED_FRAME = '[virtual thread unmounted: no OS thread blocked]';
export const CARRIER_IDLE_FRAME = '[carrier idle: no virtual thread mounted]';

/**
 * The off-CPU profile of a JVM with its virtual threads: the virtual threads' waits (the time
 * each spent unmounted, by its own stack, in the state its wait was in) are added as their own
 * stacks, and a carrier's park in ForkJoinPool.awaitWork — a thread the session saw virtual
 * threads mount on — becomes 'idle' (carrier idle) instead of the program's lock wait.
 */
export function addVirtualThreads(stacks: ProfileStack[], model: JavaLocksModel, pid: number): ProfileStack[] {
  const vt = model.waits.filter((w) => w.kind === 'vthread');
  if (!vt.length) return stacks;
  const carriers = new Set(vt.map((w) => w.tid));
  const marked = stacks.map((s): ProfileStack => {
    if (s.pid !== pid || s.state !== 'lock' || !carriers.has(s.tid) || !s.frames.some((f) => f.function === 'java.util.concurrent.ForkJoinPool.awaitWork')) return s;
    const frames = s.frames[0]?.module === LOCK_MODULE ? s.frames.slice(1) : s.frames;
    return { ...s, state: 'idle', frames: [{ address: '0x0', module: LOCK_MODULE, function: CARRIER_IDLE_FRAME, file: null, line: null, kind: 'native' }, ...frames] };
  });
  const own = new JavaLocksModel();
  for (const [k, v] of model.methods) own.methods.set(k, v);
  own.waits.push(...vt);
  const waits = own.stacks(pid).map((s) => ({ ...s, frames: [{ address: '0x0', module: LOCK_MODULE, function: UNMOUNTED_FRAME, file: null, line: null, kind: 'native' as const }, ...s.frames] }));
  return [...marked, ...waits].sort((a, b) => (b.value ?? b.count) - (a.value ?? a.count));
}
