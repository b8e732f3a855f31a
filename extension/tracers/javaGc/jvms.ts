// Which libjvm.so files java-gc attaches to, and the JVMs it checks against their own counters.
// Every libjvm.so is reached through the JVM that maps it (sys/proc/mappedFile.ts), so a JVM in a
// container is probed in its own file, and one file (by its real identity) is attached once.
import fs from 'node:fs';
import type { JavaGcEvent, JavaGcJvmCount, JavaGcKind } from '../../protocol/javaGc';
import { unsuitableError } from '../../protocol/errors';
import { checkJvmCount } from '../../model/javaGcCheck';
import { checkPid, findJdks, isKernelThread, pidAlive, libjvmUsdt, mapsOrExplain, noUsdtMessage, readStat, sameProcess, type ProcessIdentity } from '../../sys/proc/processes';
import { parseMaps, type Mapping } from '../../sys/proc/maps';
import { hostFileIdentity, reachMapped, type ReachedFile } from '../../sys/proc/mappedFile';
import { gcCollectors, HsperfFile } from '../../sys/jvm/hsperfdata';

const LIBJVM = /\/libjvm\.so$/;

/** Processes older than this when a scan of /proc first sees them are judged once (clock ticks: 10 s). */
const SETTLED_TICKS = 1000;

/** CLOCK_BOOTTIME in clock ticks, the unit of /proc/PID/stat's start time (0: unknown, nothing is settled). */
function uptimeTicks(): number {
  try {
    return Math.floor(Number(fs.readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 100);
  } catch {
    return 0;
  }
}

/** Those of `pids` that are running now (all of them when /proc cannot be listed). */
function running(pids: Iterable<number>): number[] {
  const list = [...pids];
  if (list.length < 8) return list;
  try {
    const now = new Set(fs.readdirSync('/proc'));
    return list.filter((p) => now.has(String(p)));
  } catch {
    return list;
  }
}

/**
 * The programs whose execs --all looks at within a second: the JDK's launchers (a JVM each) and
 * jsvc (Apache Commons Daemon, which creates the JVM of many services in-process). 15 bytes at
 * most (the kernel's comm); with the configured ones (MAX_EXTRA_LAUNCHERS), 32 at most
 * (bpf/java-gc.bpf.c JAVA_GC_LAUNCHERS).
 */
export const JVM_LAUNCHERS = ['java', 'jsvc', 'javac', 'jshell', 'jcmd', 'jar', 'jdb', 'keytool'];
/** Launcher names a user may add (the agent's jvm.launchers, java-gc's `launchers`). */
export const MAX_EXTRA_LAUNCHERS = 24;

/** A program name as the kernel keeps it in comm: its first 15 bytes. */
export function launcherComm(name: string): Buffer {
  return Buffer.from(name, 'utf8').subarray(0, 15);
}

/** The JDK's launchers and `extra`, each once, as comm holds them. */
export function launcherNames(extra: readonly string[] = []): Buffer[] {
  const byComm = new Map<string, Buffer>();
  for (const name of [...JVM_LAUNCHERS, ...extra]) {
    const comm = launcherComm(name);
    byComm.set(comm.toString('hex'), comm);
  }
  return [...byComm.values()];
}

/** judge()'s reads of /proc/PID/maps, one buffer for all (a JVM's maps are 20-100 KB; a slow look reads dozens of processes). */
const MAPS_CHUNK = Buffer.allocUnsafe(64 * 1024);
const LIBJVM_NAME = '/libjvm.so';

/**
 * The libjvm.so mapping of a process, from its /proc/PID/maps read in chunks into MAPS_CHUNK:
 * most processes map none, and a byte search decides without a string of the whole file (the
 * garbage of a look was mostly those strings) or any parse; only lines naming libjvm.so are parsed.
 */
function libjvmInMaps(pid: number): Mapping | undefined {
  const fd = fs.openSync(`/proc/${pid}/maps`, 'r');
  try {
    let kept = 0;
    for (;;) {
      const n = fs.readSync(fd, MAPS_CHUNK, kept, MAPS_CHUNK.length - kept, null);
      const end = kept + n;
      // Whole lines only, but for the last one at the end of the file.
      const whole = n > 0 ? MAPS_CHUNK.lastIndexOf(10, end - 1) + 1 : end;
      // Searched within what was read: indexOf on the whole buffer would scan all 64 KiB each time.
      const lines = MAPS_CHUNK.subarray(0, whole);
      for (let at = lines.indexOf(LIBJVM_NAME, 0, 'latin1'); at >= 0; at = lines.indexOf(LIBJVM_NAME, at + 1, 'latin1')) {
        const stop = lines.indexOf(10, at);
        const m = libjvmMapping(parseMaps(lines.toString('utf8', lines.lastIndexOf(10, at) + 1, stop < 0 ? whole : stop)));
        if (m) return m;
      }
      // The end, or one line longer than the buffer (no mapping line is).
      if (n <= 0 || whole === 0) return undefined;
      MAPS_CHUNK.copy(MAPS_CHUNK, 0, whole, end);
      kept = end - whole;
    }
  } finally {
    fs.closeSync(fd);
  }
}

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
 * How many looks a process that exec'd gets before it is judged not a JVM: a launcher (looked at
 * every second) maps libjvm.so milliseconds after its exec on an idle machine but seconds later on
 * a loaded one (3 looks missed a CI run's JVM); others are looked at only at slow looks.
 */
const LAUNCHER_LOOKS = 15;
const OTHER_LOOKS = 3;
const youngLooks = (s: { slow: boolean }) => (s.slow ? OTHER_LOOKS : LAUNCHER_LOOKS);

/**
 * Finds JVMs by their maps. The first scan reads every process; later scans read only processes
 * not seen before, those that exec'd since (another name), and young ones whose launcher has not
 * mapped libjvm.so yet, so following new JVMs costs a /proc/PID/stat read per process. Given the
 * pids that exec'd since the last look (an exec event), a scan reads only those and the young
 * ones, and not /proc at all.
 */
export class JvmScanner {
  /** `slow`: looked at again only at slow looks (found by a scan of /proc, or exec'd a program of no launcher's name) */
  private seen = new Map<number, { startTime: number; comm: string; jvm: boolean; looks: number; slow: boolean }>();
  private scans = 0;
  /** the launchers' names as /proc/PID/stat shows comm */
  private readonly launchers: Set<string>;

  constructor(launchers: Buffer[] = launcherNames()) {
    this.launchers = new Set(launchers.map((b) => b.toString('utf8')));
  }

  /** Whether a launcher that exec'd has not mapped libjvm.so yet and is still to be looked at again (at the next look). */
  get watchingYoung(): boolean {
    for (const s of this.seen.values()) if (!s.jvm && s.looks < youngLooks(s) && !s.slow) return true;
    return false;
  }

  /**
   * JVMs not returned by an earlier scan. Processes already judged are read again only every
   * `recheckEvery` scans (one that exec'd java after a long start-up script is found then): a
   * /proc/PID/stat read costs ~70 µs, so a busy host is not read whole every second.
   */
  scan(recheckEvery = 10): RunningJvm[] {
    const out: RunningJvm[] = [];
    const recheck = this.scans++ % recheckEvery === 0;
    const alive = new Set<number>();
    // A process running for a while without libjvm.so is not a launcher about to map it: it is
    // judged once (one that execs later is looked at again from its exec).
    const settled = uptimeTicks() - SETTLED_TICKS;
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
      if (known && !recheck && (known.jvm || known.looks >= youngLooks(known))) {
        alive.add(pid);
        continue;
      }
      if (this.judge(pid, out, false, true, settled)) alive.add(pid);
    }
    for (const pid of this.seen.keys()) if (!alive.has(pid)) this.seen.delete(pid);
    return out;
  }

  /**
   * JVMs among the pids that exec'd since the last look and the young processes still being
   * watched; every other process is left as judged. Exited ones are dropped by the next scan().
   * `others` (a slow look): the pids that exec'd a program of no launcher's name; young processes
   * found that way, or by a scan of /proc, are looked at again at slow looks only.
   */
  scanExecs(execd: Iterable<number>, others?: Iterable<number>): RunningJvm[] {
    const out: RunningJvm[] = [];
    const fresh = new Set(execd);
    // Most of them ran a moment (a shell's commands): one listing of /proc drops those that
    // exited without a failed open (and a thrown error) each.
    const slowFresh = new Set(others ? running(others) : []);
    const look = new Set([...fresh, ...slowFresh]);
    for (const [pid, s] of this.seen) if (!s.jvm && s.looks < youngLooks(s) && (others || !s.slow)) look.add(pid);
    for (const pid of look) if (!this.judge(pid, out, fresh.has(pid) || slowFresh.has(pid), slowFresh.has(pid) && !fresh.has(pid))) this.seen.delete(pid);
    return out;
  }

  /**
   * Reads one process; pushes it to `out` when it is a JVM not returned before (`execd`: it runs
   * another program now, whatever its name). False: gone or a kernel thread.
   */
  private judge(pid: number, out: RunningJvm[], execd: boolean, slow: boolean, settledBefore = 0): boolean {
    const st = readStat(pid);
    if (!st || isKernelThread(st)) return false;
    const prev = this.seen.get(pid);
    const same = !execd && prev && prev.startTime === st.startTime && prev.comm === st.comm;
    if (same && (prev.jvm || prev.looks >= youngLooks(prev))) return true;
    let m: Mapping | undefined;
    try {
      m = libjvmInMaps(pid);
    } catch {
      /* gone, or not ours to read */
    }
    this.seen.set(pid, { startTime: st.startTime, comm: st.comm, jvm: Boolean(m), looks: same ? prev.looks + 1 : st.startTime < settledBefore ? LAUNCHER_LOOKS : 1, slow: same ? prev.slow : slow && !this.launchers.has(st.comm) });
    if (m) out.push({ pid, startTime: st.startTime, libjvm: m });
    return true;
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
  /** not opened yet: the book is lazy and nothing asked for its counts */
  deferred?: boolean;
}

/**
 * Each traced JVM's own collection counters (hsperfdata) beside what was traced in it, from when
 * its probes were in place. A JVM that started after its libjvm.so was attached counts from 0.
 */
export class JvmCounterBook {
  private jvms = new Map<number, Tracked>();
  private ours = new Map<number, Map<JavaGcKind, number>>();
  private prepared = new Map<number, ReturnType<typeof HsperfFile.open>>();

  /**
   * `lazy`: a JVM's file is opened (as its owner: a fork) when its counts are first asked for, not
   * when it is found, and both sides count from then: a service that never asks (the agent) forks
   * nothing per JVM.
   */
  constructor(private readonly lazy = false) {}

  /** Opens a JVM's counters ahead (as its owner: a fork), so track() right after attaching only reads them. */
  prepare(pid: number): void {
    this.prepared.set(pid, HsperfFile.open(pid));
  }

  track(id: ProcessIdentity, attachedTo: string, fromZero: boolean): void {
    if (this.jvms.get(id.pid)?.id.startTime === id.startTime) return;
    this.jvms.get(id.pid)?.hs?.close();
    if (this.lazy && !this.prepared.has(id.pid)) {
      this.jvms.set(id.pid, { id, names: new Map(), base: new Map(), now: new Map(), attachedTo, deferred: true });
      return;
    }
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
    if (t.deferred) return `pid ${pid}: its own counters are read when a result asks for them`;
    if (t.unreadable) return `pid ${pid}: its own counters cannot be read: ${t.unreadable}`;
    const total = [...t.now.values()].reduce((a, b) => a + b, 0);
    return `pid ${pid}: its own counters (${t.hs?.path ?? 'hsperfdata'}) read: ${total} collections since it started`;
  }

  count(e: JavaGcEvent): void {
    this.countMany(e.pid, e.kind, 1);
  }

  /** n collections of one kind at once (counted in the kernel: metrics-only mode). */
  countMany(pid: number, kind: JavaGcKind, n: number): void {
    let m = this.ours.get(pid);
    if (!m) this.ours.set(pid, (m = new Map()));
    m.set(kind, (m.get(kind) ?? 0) + n);
  }

  /** Reads every JVM's counters; a JVM that exited gets its last read, then its file is closed. */
  refresh(): void {
    for (const t of this.jvms.values()) {
      if (t.deferred) this.openDeferred(t);
      if (!t.hs) continue;
      this.read(t);
      if (!sameProcess(t.id)) {
        t.hs.close();
        t.hs = undefined;
      }
    }
  }

  private openDeferred(t: Tracked): void {
    t.deferred = false;
    if (!sameProcess(t.id)) {
      t.unreadable = 'it exited before its counters were asked for';
      return;
    }
    const hs = HsperfFile.open(t.id.pid);
    if ('problem' in hs) {
      t.unreadable = hs.problem;
      return;
    }
    t.hs = hs;
    this.read(t);
    // Both sides from now: what was traced before its counters were first read is not compared.
    t.base = new Map(t.now);
    this.ours.delete(t.id.pid);
  }

  /** Drops JVMs that exited (their files closed unread) and what was counted for pids not tracked: for sessions whose counts are read only at the end. */
  forgetExited(): void {
    for (const [pid, t] of this.jvms) {
      if (sameProcess(t.id)) continue;
      t.hs?.close();
      this.jvms.delete(pid);
      this.ours.delete(pid);
    }
    for (const pid of this.ours.keys()) if (!this.jvms.has(pid) && !pidAlive(pid)) this.ours.delete(pid);
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
