// Which libjvm.so files java-gc attaches to, and the JVMs it checks against their own counters.
// Every libjvm.so is reached through the JVM that maps it (sys/proc/mappedFile.ts), so a JVM in a
// container is probed in its own file, and one file (by its real identity) is attached once.
import fs from 'node:fs';
import type { JavaGcEvent, JavaGcJvmCount, JavaGcKind } from '../../protocol/javaGc';
import { unsuitableError } from '../../protocol/errors';
import { checkJvmCount } from '../../model/javaGcCheck';
import { checkPid, findJdks, isKernelThread, libjvmUsdt, mapsOrExplain, noUsdtMessage, readStat, sameProcess, type ProcessIdentity } from '../../sys/proc/processes';
import { readMaps, type Mapping } from '../../sys/proc/maps';
import { hostFileIdentity, reachMapped, type ReachedFile } from '../../sys/proc/mappedFile';
import { gcCollectors, HsperfFile } from '../../sys/jvm/hsperfdata';

const LIBJVM = /\/libjvm\.so$/;

/** A libjvm.so to attach to: `path` opens it from here, `identity` names the real file. */
export interface LibjvmTarget {
  path: string;
  /** how reports name it: the host path, or the JVM's path and the file's identity */
  label: string;
  identity: string;
}

export function libjvmMapping(maps: Mapping[]): Mapping | undefined {
  return maps.find((m) => LIBJVM.test(m.path));
}

function targetOf(f: ReachedFile, pid: number): LibjvmTarget {
  return { path: f.path, identity: f.identity, label: `${f.name} as pid ${pid} maps it (file ${f.identity})` };
}

/** The libjvm.so a JVM runs (its own file, even in a container), or why it cannot be traced. */
export function libjvmTargetOf(pid: number): LibjvmTarget {
  const stat = checkPid(pid);
  const m = libjvmMapping(mapsOrExplain(pid));
  if (!m) throw unsuitableError(`pid ${pid} (${stat.comm}) has no libjvm.so mapped: is it a JVM?`);
  const f = reachMapped(pid, m);
  if (!libjvmUsdt(f.path).usdt) throw unsuitableError(noUsdtMessage(m.path));
  return targetOf(f, pid);
}

/** A running JVM: its identity and its libjvm.so mapping. */
export interface RunningJvm extends ProcessIdentity {
  libjvm: Mapping;
}

/**
 * Finds JVMs by their maps. The first scan reads every process; later scans read only processes
 * not seen before, those that exec'd since (another name), and young ones whose launcher has not
 * mapped libjvm.so yet, so following new JVMs costs a /proc/PID/stat read per process.
 */
export class JvmScanner {
  private seen = new Map<number, { startTime: number; comm: string; jvm: boolean; looks: number }>();
  private scans = 0;

  /**
   * JVMs not returned by an earlier scan. Processes already judged are read again only every
   * `recheckEvery` scans (one that exec'd java after a long start-up script is found then): a
   * /proc/PID/stat read costs ~70 µs, so a busy host is not read whole every second.
   */
  scan(recheckEvery = 10): RunningJvm[] {
    const out: RunningJvm[] = [];
    const recheck = this.scans++ % recheckEvery === 0;
    const alive = new Set<number>();
    let names: string[] = [];
    try {
      names = fs.readdirSync('/proc');
    } catch {
      return out;
    }
    for (const name of names) {
      if (!/^\d+$/.test(name)) continue;
      const pid = Number(name);
      const known = this.seen.get(pid);
      if (known && !recheck && (known.jvm || known.looks >= 3)) {
        alive.add(pid);
        continue;
      }
      const st = readStat(pid);
      if (!st || isKernelThread(st)) continue;
      alive.add(pid);
      const prev = this.seen.get(pid);
      const same = prev && prev.startTime === st.startTime && prev.comm === st.comm;
      if (same && (prev.jvm || prev.looks >= 3)) continue;
      let m: Mapping | undefined;
      try {
        m = libjvmMapping(readMaps(pid));
      } catch {
        /* gone, or not ours to read */
      }
      this.seen.set(pid, { startTime: st.startTime, comm: st.comm, jvm: Boolean(m), looks: same ? prev.looks + 1 : 1 });
      if (m) out.push({ pid, startTime: st.startTime, libjvm: m });
    }
    for (const pid of this.seen.keys()) if (!alive.has(pid)) this.seen.delete(pid);
    return out;
  }
}

/** Installed JDKs' libjvm.so files with USDT probes, and those without. */
export function hostLibjvms(): { libs: LibjvmTarget[]; skipped: string[] } {
  const libs: LibjvmTarget[] = [];
  const skipped: string[] = [];
  for (const j of findJdks()) {
    const identity = hostFileIdentity(j.libjvm);
    if (!identity) continue;
    if (j.usdt) libs.push({ path: j.libjvm, label: j.libjvm, identity });
    else skipped.push(j.libjvm);
  }
  return { libs, skipped };
}

/** A running JVM's libjvm.so as a target, or why it is not one (no USDT notes, unreachable). */
export function runningTarget(j: RunningJvm): LibjvmTarget | { problem: string } {
  let f: ReachedFile;
  try {
    f = reachMapped(j.pid, j.libjvm);
  } catch (e) {
    return { problem: (e as Error).message };
  }
  if (!libjvmUsdt(f.path).usdt) return { problem: noUsdtMessage(j.libjvm.path) };
  return targetOf(f, j.pid);
}

interface Tracked {
  id: ProcessIdentity;
  hs?: HsperfFile;
  unreadable?: string;
  names: Map<number, string>;
  base: Map<number, number>;
  now: Map<number, number>;
  attachedTo: string;
}

/**
 * Each traced JVM's own collection counters (hsperfdata) beside what was traced in it, from when
 * its probes were in place. A JVM that started after its libjvm.so was attached counts from 0.
 */
export class JvmCounterBook {
  private jvms = new Map<number, Tracked>();
  private ours = new Map<number, Map<JavaGcKind, number>>();
  private prepared = new Map<number, ReturnType<typeof HsperfFile.open>>();

  /** Opens a JVM's counters ahead (as its owner: a fork), so track() right after attaching only reads them. */
  prepare(pid: number): void {
    this.prepared.set(pid, HsperfFile.open(pid));
  }

  track(id: ProcessIdentity, attachedTo: string, fromZero: boolean): void {
    if (this.jvms.get(id.pid)?.id.startTime === id.startTime) return;
    this.jvms.get(id.pid)?.hs?.close();
    const hs = this.prepared.get(id.pid) ?? HsperfFile.open(id.pid);
    this.prepared.delete(id.pid);
    const t: Tracked = { id, names: new Map(), base: new Map(), now: new Map(), attachedTo, ...('problem' in hs ? { unreadable: hs.problem } : { hs }) };
    this.jvms.set(id.pid, t);
    this.read(t);
    // Counted from now on both sides, unless everything it did was traced.
    if (!fromZero) {
      t.base = new Map(t.now);
      this.ours.delete(id.pid);
    }
  }

  /** For --verbose: where a tracked JVM's counters are read from and what they say now, or why there are none. */
  describe(pid: number): string {
    const t = this.jvms.get(pid);
    if (!t) return `pid ${pid}: not tracked`;
    if (t.unreadable) return `pid ${pid}: its own counters cannot be read: ${t.unreadable}`;
    const total = [...t.now.values()].reduce((a, b) => a + b, 0);
    return `pid ${pid}: its own counters (${t.hs?.path ?? 'hsperfdata'}) read: ${total} collections since it started`;
  }

  count(e: JavaGcEvent): void {
    let m = this.ours.get(e.pid);
    if (!m) this.ours.set(e.pid, (m = new Map()));
    m.set(e.kind, (m.get(e.kind) ?? 0) + 1);
  }

  /** Reads every JVM's counters; a JVM that exited gets its last read, then its file is closed. */
  refresh(): void {
    for (const t of this.jvms.values()) {
      if (!t.hs) continue;
      this.read(t);
      if (!sameProcess(t.id)) {
        t.hs.close();
        t.hs = undefined;
      }
    }
  }

  private read(t: Tracked): void {
    if (!t.hs) return;
    try {
      for (const c of gcCollectors(t.hs.read())) {
        t.names.set(c.index, c.name);
        t.now.set(c.index, c.invocations);
      }
    } catch (e) {
      t.unreadable = `its hsperfdata could not be parsed: ${(e as Error).message}`;
      t.hs.close();
      t.hs = undefined;
    }
  }

  results(minUs: number, lost: number): JavaGcJvmCount[] {
    const out = [...this.jvms.values()].map((t) => {
      const jvm = t.now.size ? [...t.now].map(([i, n]) => ({ name: t.names.get(i) ?? `collector ${i}`, invocations: n - (t.base.get(i) ?? 0) })) : undefined;
      return checkJvmCount({ pid: t.id.pid, ours: this.ours.get(t.id.pid) ?? new Map(), jvm, unreadable: t.unreadable ?? 'no GC counters in its hsperfdata', minUs, lost, attachedTo: t.attachedTo });
    });
    // Traced, but never looked at (it started and ended between two looks for new JVMs).
    for (const [pid, ours] of this.ours) {
      if (!this.jvms.has(pid)) out.push(checkJvmCount({ pid, ours, unreadable: 'it was not seen running: it ended before it was looked for', minUs, lost }));
    }
    return out.sort((a, b) => a.pid - b.pid);
  }

  close(): void {
    for (const t of this.jvms.values()) t.hs?.close();
    for (const h of this.prepared.values()) if (!('problem' in h)) h.close();
  }
}
