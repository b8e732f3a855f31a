// memleak in inject mode: a running process (--pid) gets the leak interposer without a restart.
// dist/ebpf-studio-inject (native/inject/inject.c) borrows one of its threads through ptrace, makes
// it dlopen the library and call ebpf_studio_inject_start(config), which redirects the process's
// allocator calls (the GOT entries of the malloc family in every module) to the wrappers that
// keep the outstanding table, as in preload mode; Stop calls ebpf_studio_inject_stop(), which puts
// the entries back. The table is read exactly as in preload mode (leakTableReader). No kernel trap
// per call: this is what makes attaching cost what a launch costs instead of a uprobe trap per
// malloc and free.
//
// The table file: made here, as the process's owner, in a fresh private folder, before the start
// (the library opens it by name and maps it); this side keeps its fd, holds a shared flock on it
// for the whole session, and unlinks it, the settings file and the folder as soon as the library
// runs. So nothing of the session stays in any filesystem, however it ends, the table is read
// through the fd (also after the process exited, also when /proc/PID/root is gone with it), and
// the library learns that its tracer is gone when that lock is (a SIGKILL included): it puts the
// entries back itself and goes idle (native/preload, tracer_gone).
//
// Containers (another mount namespace, or another root): the process cannot see the host's
// files. The library is copied into its own filesystem (the first of /tmp, /var/tmp, /dev/shm
// that its mounts let hold an executable, named by content hash and reused, as the Java agent's
// copy is), and the folder for the table and the settings is made in its /dev/shm or /tmp; all
// of it as the process's owner inside its root (sys/asUser.ts), with paths as the process sees
// them. The table stays reachable from here through the fd, not through a path.
//
// Whose rights: the ids read here are old by the time the injector attaches (the process may have
// exec'd a setuid program since, or a thread may have switched ids). So the injector gets the ids
// and the start time (field 22 of /proc/PID/stat) found here, drops to those ids before it
// attaches, so that the kernel's own ptrace rule (every thread, at attach time) decides, and
// checks every thread and the start time again once it holds a thread, before anything runs in
// it (native/inject/inject.c). The library opens the table and the settings without following a
// link and only as files of its own uid (native/preload).
//
// Refused, with the reason, so the tracer falls back to uprobes (injectRefusal): no injector or
// library built, a statically linked program (no libc.so.6 mapped), a process already being
// traced, a setuid/setgid process or one with a thread whose ids differ, one whose seccomp filters
// (read by the injector as root, evaluated in seccomp.ts) do not allow every system call the injected
// code makes, a container whose /tmp, /var/tmp and /dev/shm are all
// read-only or noexec (nowhere to place the library) or whose glibc is older than the library's,
// and another user's process unless the requester is root.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { MemleakOptions, MemleakResult } from '../../protocol/memleak';
import { StudioError } from '../../protocol/errors';
import { foreignOwner } from '../../sys/ownership';
import { namespacePid } from '../../sys/symbolize/perfMap';
import type { Session, SessionEvents, TracerEnv } from '../tracer';
import { createAs, openAs, rmdirAs, unlinkAs, writeAllAndClose, type FileOwner } from '../../sys/asUser';
import { execBlocker, readMountinfo } from '../../sys/proc/mounts';
import { contentTag, placeCopy } from '../../sys/placeCopy';
import { readMaps } from '../../sys/proc/maps';
import { readStat, sameProcess } from '../../sys/proc/processes';
import { TARGET_WATCH_MS } from '../targetWatch';
import { withElf } from '../../sys/elf/elf';
import { glibcBlocker, leakTableReader, PRELOAD_LIB, preloadLibPath, readReport, reportDir } from './preload';
import { LeakReports } from './report';
import { ProcessActivity } from './activity';
import { filterRefusal, INJECTED_SYSCALLS, parseFilters, type ProcessFilters } from './seccomp';

export const INJECTOR = 'ebpf-studio-inject';

export function injectorPath(assetDir: string): string | undefined {
  return [path.join(assetDir, INJECTOR), path.resolve(assetDir, '..', 'dist', INJECTOR)].find((f) => fs.existsSync(f));
}

interface ProcStatus {
  uid: number[];
  gid: number[];
  tracerPid: number;
  seccomp: number;
}

function procStatus(pid: number, tid = pid): ProcStatus | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
    const field = (name: string) => (new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(text)?.[1] ?? '').trim().split(/\s+/).map(Number);
    return { uid: field('Uid'), gid: field('Gid'), tracerPid: field('TracerPid')[0] ?? 0, seccomp: field('Seccomp')[0] ?? 0 };
  } catch {
    return undefined;
  }
}

/**
 * undefined: inject into this process. '': uprobes, as asked. Otherwise why it cannot be
 * injected (the caller falls back to uprobes and says so, or refuses with --mode inject).
 */
export function injectRefusal(options: MemleakOptions, env: TracerEnv): string | undefined {
  if (options.pid === undefined || options.kernel || options.mode === 'uprobe' || options.mode === 'preload') return '';
  if (options.allocatorLib && options.symbolPrefix) return `--allocator-lib with --symbol-prefix ${options.symbolPrefix} names functions the interposer does not wrap, so it needs uprobes`;
  const pid = options.pid;
  const lib = preloadLibPath(env.assetDir);
  if (!lib) return `the leak interposer (${env.assetDir}/libebpf-studio-preload.so) is not built`;
  if (!injectorPath(env.assetDir)) return `the injector (${env.assetDir}/${INJECTOR}) is not built`;
  const st = procStatus(pid);
  if (!st) return `process ${pid} cannot be read`;
  if (st.tracerPid) return `process ${pid} is already being traced (by pid ${st.tracerPid}, a debugger or another tracer)`;
  if (new Set(st.uid).size > 1 || new Set(st.gid).size > 1) return `process ${pid} runs with changed ids (setuid or setgid)`;
  const mixed = threadWithOtherIds(pid, st);
  if (mixed) return mixed;
  const foreign = foreignOwner(pid);
  if (foreign !== undefined) return `process ${pid} belongs to uid ${foreign}, not to you (only root may load code into another user's process)`;
  let container: boolean;
  try {
    container = foreignRoot(pid);
  } catch {
    return `the mount namespace of process ${pid} cannot be read`;
  }
  if (container) {
    const homes = libraryHomes(pid);
    if ('why' in homes) return homes.why;
    const version = targetGlibc(pid);
    const glibc = version ? glibcBlocker(lib, version, `process ${pid}'s`, 'the dynamic loader in its container would refuse the library') : undefined;
    if (glibc) return glibc;
  } else {
    const glibc = glibcBlocker(lib);
    if (glibc) return glibc;
  }
  let maps: string;
  try {
    maps = fs.readFileSync(`/proc/${pid}/maps`, 'utf8');
  } catch (e) {
    return `the memory map of process ${pid} cannot be read (${(e as Error).message})`;
  }
  if (!/\/libc\.so\.6$/m.test(maps)) return `process ${pid} has no libc.so.6 mapped (statically linked, or not a glibc program)`;
  return seccompRefusal(pid, st, injectorPath(env.assetDir)!, env.log);
}

/**
 * Why a seccomp filter of the process would refuse a system call the injected code makes, or
 * undefined (no filter, or every filter of every thread returns ALLOW for all of them: seccomp.ts).
 * The filters are read by the injector as root; any doubt is a refusal.
 */
function seccompRefusal(pid: number, st: ProcStatus, injector: string, log: (m: string) => void): string | undefined {
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return `the threads of process ${pid} cannot be listed`;
  }
  if (!tids.some((tid) => (procStatus(pid, Number(tid))?.seccomp ?? 2) !== 0)) return undefined;
  const under = `process ${pid} runs under a seccomp filter`;
  if (process.geteuid?.() !== 0) return `${under}, which only root can read to tell whether it allows the injected code's system calls`;
  let args: string[];
  try {
    args = targetArgs(pid, st.uid[0], st.gid[0]);
  } catch {
    return `process ${pid} exited`;
  }
  const r = spawnSync(injector, ['filters', ...args], { encoding: 'utf8', timeout: 10_000, killSignal: 'SIGKILL', maxBuffer: 16 << 20 });
  if (r.status !== 0) return `${under} that could not be read (${(r.stderr || r.error?.message || `exit ${r.status}`).trim().replace(/^ebpf-studio-inject: /, '')})`;
  let filters: ProcessFilters;
  try {
    filters = parseFilters(r.stdout);
  } catch (e) {
    return `${under} that could not be read (${(e as Error).message})`;
  }
  const why = filterRefusal(filters);
  const n = filters.filters.size;
  log(`memleak: process ${pid}: ${n} distinct seccomp filter(s) over ${filters.threads.size} thread(s): ${why ?? `ALLOW for all ${INJECTED_SYSCALLS.length} system calls the injected code makes`}`);
  return why && `${why.replace(/^the seccomp filter of thread (\d+)/, `the seccomp filter of process ${pid} (thread $1)`)}`;
}

/** Why a thread of the process runs with other ids than its main thread (a daemon that switched one thread to a user), or undefined. */
function threadWithOtherIds(pid: number, main: ProcStatus): string | undefined {
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return `the threads of process ${pid} cannot be listed`;
  }
  const ids = (s: ProcStatus) => `uid ${s.uid.join('/')}, gid ${s.gid.join('/')}`;
  for (const tid of tids) {
    const t = procStatus(pid, Number(tid));
    if (t && ids(t) !== ids(main)) return `thread ${tid} of process ${pid} runs with other ids than its main thread (${ids(t)} against ${ids(main)}): the interposer would run with both`;
  }
  return undefined;
}

/**
 * Whether the process sees another filesystem than this one: another mount namespace (a
 * container), or another root (a chroot). Then our paths mean nothing to it.
 */
export function foreignRoot(pid: number): boolean {
  if (fs.readlinkSync(`/proc/${pid}/ns/mnt`) !== fs.readlinkSync('/proc/self/ns/mnt')) return true;
  const theirs = fs.statSync(`/proc/${pid}/root`);
  const ours = fs.statSync('/');
  return theirs.dev !== ours.dev || theirs.ino !== ours.ino;
}

/** Where a copy of the library can go in a container, by its mounts: writable and not noexec. */
export const LIBRARY_HOMES = ['/tmp', '/var/tmp', '/dev/shm'];

export function libraryHomes(pid: number, mountinfo = readMountinfo(pid)): { dirs: string[] } | { why: string } {
  if (mountinfo === undefined) return { why: `the mounts of process ${pid} cannot be read` };
  const dirs: string[] = [];
  const refused: string[] = [];
  for (const dir of LIBRARY_HOMES) {
    const why = execBlocker(dir, mountinfo);
    if (why) refused.push(why);
    else dirs.push(dir);
  }
  if (dirs.length) return { dirs };
  return { why: `process ${pid} runs in a container whose filesystem cannot take the leak tracer library (${refused.join(', ')})` };
}

/** The glibc version ("2.36") of the C library the process has mapped, read in its own root; undefined when unknown. */
function targetGlibc(pid: number): string | undefined {
  try {
    const libc = readMaps(pid).find((m) => /\/libc\.so\.6$/.test(m.path));
    if (!libc) return undefined;
    const names = withElf(`/proc/${pid}/root${libc.path}`, (elf) => {
      const d = elf.section('.dynstr');
      return d ? elf.sectionData(d).toString('latin1') : '';
    });
    let best: number[] | undefined;
    for (const m of names.matchAll(/GLIBC_(\d+)\.(\d+)/g)) {
      const v = [Number(m[1]), Number(m[2])];
      if (!best || v[0] > best[0] || (v[0] === best[0] && v[1] > best[1])) best = v;
    }
    return best?.join('.');
  } catch {
    return undefined;
  }
}

/**
 * Copies the library into the container's filesystem (the first folder of `dirs` that takes it),
 * as the process's owner inside its root; returns its path as the process sees it.
 */
function placeLibrary(pid: number, owner: FileOwner, lib: string, dirs: string[]): string {
  const bytes = fs.readFileSync(lib);
  const base = PRELOAD_LIB.replace(/\.so$/, '');
  const refused: string[] = [];
  for (const dir of dirs) {
    // a shared folder may already hold another user's copy (or a planted file) under the common
    // name: then the owner's own name (the hash followed by the uid)
    for (const name of [`${dir}/${base}-${contentTag(bytes)}.so`, `${dir}/${base}-${contentTag(bytes)}${owner.uid.toString(16).padStart(8, '0')}.so`]) {
      try {
        const why = placeCopy(owner, name, bytes);
        if (why === undefined) return name;
        refused.push(why);
      } catch (e) {
        refused.push(`${name}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
        break; // the folder itself refuses (not writable, missing)
      }
    }
  }
  throw new StudioError('unsuitable', `cannot place the leak tracer library in the container of process ${pid} as uid ${owner.uid}: ${refused.join('; ')}. Use --mode uprobe to trace it with uprobes instead`);
}

/** Whether uid can read `file` through its folders by the "other" permission bits (root: always). */
function readableBy(file: string, uid: number): boolean {
  if (uid === 0) return true;
  try {
    let p = fs.realpathSync(file);
    const f = fs.statSync(p);
    if (!(f.mode & 0o004) && f.uid !== uid) return false;
    while (p !== '/') {
      p = path.dirname(p);
      const d = fs.statSync(p);
      if (!(d.mode & 0o001) && d.uid !== uid) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/** The injector's arguments that name the process: pid, the ids it runs with and its start time, as found now. */
function targetArgs(pid: number, uid: number, gid: number): string[] {
  const stat = readStat(pid);
  if (!stat) throw new StudioError('unsuitable', `process ${pid} exited`);
  return [String(pid), String(uid), String(gid), String(stat.startTime)];
}

/** Longer than the injector ever takes by itself (3 s to borrow a thread, 10 s per call): then it is stopped, or stuck. */
const INJECTOR_TIMEOUT_MS = 40_000;

function runInjector(injector: string, args: string[], log: (m: string) => void): Promise<{ ok: boolean; out: string; result?: string }> {
  return new Promise((resolve) => {
    // it drops to the process's owner, who may then stop it: never wait for it forever
    const child = spawn(injector, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: INJECTOR_TIMEOUT_MS, killSignal: 'SIGKILL' });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', (e) => resolve({ ok: false, out: e.message }));
    child.on('exit', (code, signal) => {
      const text = `${err}${out}`.trim();
      log(`memleak: ${path.basename(injector)} ${args[0]}: ${signal ? `killed by ${signal}` : `exit ${code}`}: ${text}`);
      const result = /^ok -?\d+$/m.exec(out)?.[0];
      resolve({ ok: code === 0, out: signal ? `the injector did not finish within ${INJECTOR_TIMEOUT_MS / 1000} s` : text, result });
    });
  });
}

const START_FAILURES: Record<string, string> = {
  'ok 2': 'the injected library could not read its settings',
  'ok 3': 'the injected library found no allocator to forward to',
  'ok 4': 'the injected library could not create its table',
  'ok 5': 'the process already runs with the leak tracer preloaded',
};

export async function startInject(options: MemleakOptions, env: TracerEnv, events: SessionEvents<'memleak'>, warnings: string[]): Promise<Session<'memleak'>> {
  const session = new InjectSession(options, env, events, warnings);
  await session.attach();
  session.collect();
  return session;
}

type LeakTableReader = ReturnType<typeof leakTableReader>;

/** One injected leak session: the library's copy, the table's fd, the injector's target arguments and the timers. */
class InjectSession implements Session<'memleak'> {
  readonly targets: number[];
  private readonly pid: number;
  private readonly reports: LeakReports;
  private injector!: string;
  private uid = 0;
  private gid = 0;
  private owner!: FileOwner;
  private libInTarget!: string;
  private dir!: string;
  private conf!: string;
  private file!: string;
  private table!: number;
  private t0 = 0n;
  /** pid, ids and start time as the injector was given them */
  private target!: string[];
  private reader!: LeakTableReader;
  private detached = false;
  private timer?: NodeJS.Timeout;
  private watch?: NodeJS.Timeout;
  /** the process's CPU and page faults, against which "no allocation seen" is judged */
  private activity: ProcessActivity;

  constructor(
    private readonly options: MemleakOptions,
    private readonly env: TracerEnv,
    events: SessionEvents<'memleak'>,
    readonly warnings: string[],
  ) {
    this.pid = options.pid!;
    this.targets = [this.pid];
    this.activity = new ProcessActivity(this.pid);
    this.reports = new LeakReports(events, () => {
      clearInterval(this.timer);
      clearInterval(this.watch);
      this.reader.sym.dispose();
      // after the detach: the lock goes with the fd, and the library must not take that for our death first
      fs.closeSync(this.table);
    });
  }

  /** Places the library, makes the table and the settings, and has the injector start it in the process. */
  async attach(): Promise<void> {
    const { pid, env } = this;
    this.place();
    this.openTable();
    const lines = this.settings(this.watchTable());
    this.t0 = process.hrtime.bigint();
    try {
      this.target = targetArgs(pid, this.uid, this.gid);
    } catch (e) {
      fs.closeSync(this.table);
      this.removeFiles();
      throw e;
    }
    const started = await this.start(lines);
    if (!started.ok) {
      fs.closeSync(this.table);
      const why = START_FAILURES[started.result ?? ''] ?? started.out.replace(/^ebpf-studio-inject: /gm, '');
      throw new StudioError('unsuitable', `cannot inject the leak tracer into process ${pid}: ${why}. Use --mode uprobe to trace it with uprobes instead`);
    }
    // from here: the injection's own page faults and CPU are not the program's
    this.activity = new ProcessActivity(pid);
    env.log(`memleak: injected ${this.libInTarget} into pid ${pid} in ${Number((process.hrtime.bigint() - this.t0) / 1_000_000n)} ms; table ${this.file} (unlinked, read through its fd)`);
    this.reader = leakTableReader(pid, this.table, this.owner, this.t0, this.options, env, this.warnings, 'inject');
    this.reader.capture();
  }

  /** The process's ids, the library where it can open it, and the names of the report folder's files. */
  private place(): void {
    const { pid, env } = this;
    const lib = fs.realpathSync(preloadLibPath(env.assetDir)!);
    this.injector = injectorPath(env.assetDir)!;
    const st = procStatus(pid);
    if (!st) throw new StudioError('unsuitable', `process ${pid} exited`);
    const [uid, gid] = [st.uid[0], st.gid[0]];
    this.uid = uid;
    this.gid = gid;
    const foreign = foreignRoot(pid);
    // The report folder, the settings file and the table are made by the process's owner
    // (sys/asUser.ts): root never creates, writes or deletes in a folder that user controls. In a
    // container, inside the process's root, with paths as it sees them.
    const owner: FileOwner = (this.owner = foreign ? { uid, gid, pid } : { uid, gid });
    this.libInTarget = lib;
    if (foreign) {
      const homes = libraryHomes(pid);
      if ('why' in homes) throw new StudioError('unsuitable', `${homes.why}. Use --mode uprobe to trace it with uprobes instead`);
      this.libInTarget = placeLibrary(pid, owner, lib, homes.dirs);
      env.log(`memleak: process ${pid} runs in another mount namespace: the library is placed at ${this.libInTarget} in its filesystem`);
    } else if (!readableBy(lib, uid)) {
      throw new StudioError('unsuitable', `${lib} is not readable by the owner of process ${pid} (uid ${uid}): install the helper (ebpf-studio install-helper) so the library sits in a world-readable root-owned folder, or use --mode uprobe`);
    }
    this.dir = reportDir(owner, foreign ? ['/dev/shm', '/tmp'] : undefined);
    this.conf = path.join(this.dir, 'settings');
    this.file = path.join(this.dir, `${namespacePid(pid)}.leak`);
  }

  private removeFiles(): void {
    const { owner, env, uid, dir } = this;
    for (const f of [this.conf, this.file]) {
      try {
        unlinkAs(owner, f);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') env.log(`memleak: could not remove ${f} as uid ${uid}: ${(e as Error).message}`);
      }
    }
    try {
      rmdirAs(owner, dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') env.log(`memleak: left ${dir} in place (${(e as Error).message}): it holds files eBPF Studio did not make`);
    }
  }

  // The table file, made exclusively (never an existing file or a planted link); the library
  // opens it by name. Its fd stays here, with a shared lock the library watches.
  private openTable(): void {
    try {
      this.table = openAs(this.owner, this.file, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600);
    } catch (e) {
      this.removeFiles();
      throw new StudioError('internal', `cannot create the leak table ${this.file} as uid ${this.uid}: ${(e as Error).message}`);
    }
  }

  /** Whether the shared lock on the table was taken, so the library can watch for this session's death. */
  private watchTable(): boolean {
    try {
      this.env.addon.lockShared(this.table);
      return true;
    } catch (e) {
      this.env.log(`memleak: no lock on the table (${(e as Error).message}): the library will not notice if this session dies`);
      return false;
    }
  }

  private settings(watched: boolean): string[] {
    const { options } = this;
    const lines = [`EBPF_STUDIO_PRELOAD_DIR=${this.dir}`, `EBPF_STUDIO_PRELOAD_MAX_OUTSTANDING=${options.maxOutstanding ?? 1_000_000}`];
    if (watched) lines.push('EBPF_STUDIO_PRELOAD_WATCH=1');
    if (options.minSize) lines.push(`EBPF_STUDIO_PRELOAD_MIN_SIZE=${options.minSize}`);
    if (options.maxSize) lines.push(`EBPF_STUDIO_PRELOAD_MAX_SIZE=${options.maxSize}`);
    if (options.sampleRate > 1) lines.push(`EBPF_STUDIO_PRELOAD_SAMPLE_RATE=${options.sampleRate}`);
    if (options.sampleBytes) lines.push(`EBPF_STUDIO_PRELOAD_SAMPLE_BYTES=${options.sampleBytes}`);
    if (process.env.EBPF_STUDIO_PRELOAD_UNWINDER) lines.push(`EBPF_STUDIO_PRELOAD_UNWINDER=${process.env.EBPF_STUDIO_PRELOAD_UNWINDER}`);
    return lines;
  }

  /** Writes the settings and runs the injector's start; the names are removed whatever happened. */
  private async start(lines: string[]): Promise<{ ok: boolean; out: string; result?: string }> {
    try {
      // created exclusively: never an existing file or a planted link
      writeAllAndClose(createAs(this.owner, this.conf, 0o600), Buffer.from(lines.join('\n') + '\n'));
      return await runInjector(this.injector, ['start', ...this.target, this.libInTarget, this.conf], this.env.log);
    } finally {
      // the library has read its settings and mapped its table (or never will): no name is needed any more
      this.removeFiles();
    }
  }

  /** Live reports every interval; the target watched by pid and start time. */
  collect(): void {
    const { options } = this;
    this.timer = setInterval(() => void this.reader.tick(this.reports), options.intervalS * 1000);
    // The process may exit while traced: its table file stays readable for the final report.
    this.watch = setInterval(() => this.watchTarget(), TARGET_WATCH_MS);
  }

  // By pid and start time (the injector's own target arguments): a zombie, or the pid's next process, is not the target.
  private watchTarget(): void {
    const { pid } = this;
    if (sameProcess({ pid, startTime: Number(this.target[3]) })) return this.activity.sample();
    this.detached = true;
    void this.reports.finish(`process ${pid} exited`, () => this.resultNow(), () => Number((process.hrtime.bigint() - this.t0) / 1_000_000n));
  }

  private async detach(): Promise<void> {
    const { pid } = this;
    if (this.detached) return;
    this.detached = true;
    if (sameProcess({ pid, startTime: Number(this.target[3]) })) {
      // the process as found at the start: the injector refuses one that is not that any more
      const r = await runInjector(this.injector, ['stop', ...this.target, this.libInTarget], this.env.log);
      if (!r.ok) this.warnings.push(`restoring the allocator of process ${pid} failed (${r.out}); the injected library puts them back itself once this session has ended`);
    }
  }

  private async resultNow(): Promise<MemleakResult> {
    const { pid, reader } = this;
    await this.detach();
    const snap = readReport(this.table, this.owner);
    if (!snap) return reader.empty();
    const { stacks } = await reader.measure(snap, process.hrtime.bigint());
    this.env.log(`memleak: inject report: ${snap.header.allocs} allocations, ${snap.header.frees} frees recorded since attach, ${snap.header.stacksUsed} stacks`);
    const allocationsSeen = Number(snap.header.allocs) + Number(snap.header.tableFull);
    // recorded allocations only: sampling or a size filter may leave none of a busy process's
    const filtered = this.options.sampleRate > 1 || this.options.sampleBytes || this.options.minSize || this.options.maxSize;
    const problem = filtered ? undefined : this.activity.silence(allocationsSeen, `the malloc family of pid ${pid} (the injected interposer)`);
    return { tracer: 'memleak', pid, stacks, dropped: reader.dropped(snap.header), lost: 0, mode: 'inject', ...reader.sampling, allocationsSeen, ...(problem ? { problem } : {}) };
  }

  snapshot(): MemleakResult {
    return this.reports.result ?? this.reader.empty();
  }

  stop(): Promise<MemleakResult> {
    return this.reports.stop(
      () => this.resultNow(),
      () => this.reader.empty(),
      () => undefined,
    );
  }
}
