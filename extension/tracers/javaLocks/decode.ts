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
  /** the waiter's OS thread id (monitors; a virtual thread's carrier at its next mount; 0 for parks, which another thread observed) */
  tid: number;
  endNs: bigint;
  waitedNs: number;
  thread: string;
  /** the lock object's class ("java.lang.Object"), or undefined (a park without a blocker) */
  lockClass?: string;
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
  end = { monitorWaits: 0, parks: 0, looks: 0, callbackNs: 0, lookNs: 0 };
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
          kind: f[1] === 'm' ? 'monitor' : f[1] === 'v' ? 'vthread' : 'park',
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
        this.end = { monitorWaits: Number(f[1]) || 0, parks: Number(f[2]) || 0, looks: Number(f[3]) || 0, callbackNs: Number(f[4]) || 0, lookNs: Number(f[5]) || 0 };
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
    const what = w.kind === 'monitor' ? `lock ${w.lockClass ?? '?'}` : w.lockClass ? `park ${w.lockClass}` : 'park (no blocker)';
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
      const frames: ProfileFrame[] = label ? [{ address: '0x0', module: LOCK_MODULE, function: label, file: null, line: null, kind: 'jit' }, ...java] : java;
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

