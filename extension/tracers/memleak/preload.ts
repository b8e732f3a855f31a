// memleak in preload mode: the launched command runs with our interposer
// (native/preload/ebpf_studio_preload.c → dist/libebpf-studio-preload.so) in LD_PRELOAD. The
// interposer keeps the outstanding table and interned stacks in a file it maps MAP_SHARED;
// this session reads that file (decoder: memleakPreloadDecode.ts) for every report and once
// more after the program has ended, and symbolizes the stacks with our symbolizer into the same
// MemleakResult the uprobe mode produces. No BPF, no kernel trap per allocation.
//
// The program tells the session two things over a socket it can never block on (the fourth
// stdio slot, a socketpair; the interposer sends with MSG_DONTWAIT): "s" when tracing starts,
// so the session captures its modules while it lives, and "x" from exit(), after which it waits
// (at most 3 s) until the session has captured any module loaded since and writes RELEASED.
//
// Which targets cannot be preloaded (preloadBlocker): static executables (no PT_INTERP: no
// dynamic loader to read LD_PRELOAD) and setuid/setgid ones (the loader ignores LD_PRELOAD in
// secure-execution mode). The tracer falls back to uprobes for them and says why.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { launchIdentity } from '../../sys/identity';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Socket } from 'node:net';
import { Symbolizer, type Frame, type ProcessImage } from '../../sys/symbolize';
import type { MemleakOptions, MemleakResult } from '../../protocol/memleak';
import { inputError, StudioError } from '../../protocol/errors';
import { withElf } from '../../sys/elf/elf';
import type { Session, SessionEvents, TracerEnv } from '../tracer';
import { launcherPath, resolveCommand } from '../launchStopped';
import { mkdirAs, openAs, rmdirAs, unlinkAs, type FileOwner } from '../../sys/asUser';
import crypto from 'node:crypto';
import { aggregate, type AllocRecord } from './decode';
import { exitMessage, LeakReports, liveUpdate, StackFrames, toStack } from './report';
import { decodeHeader, decodeSlots, HEADER_SIZE, stackOf, STATE, STATE_OFFSET, type LeakHeader } from './preloadDecode';

const PT_INTERP = 3;
const PT_DYNAMIC = 2;
export const PRELOAD_LIB = 'libebpf-studio-preload.so';

export function preloadLibPath(assetDir: string): string | undefined {
  return [path.join(assetDir, PRELOAD_LIB), path.resolve(assetDir, '..', 'dist', PRELOAD_LIB)].find((f) => fs.existsSync(f));
}

/**
 * Why `exe` cannot run with our library preloaded, or undefined when it can. Scripts are judged
 * by their interpreter (#!), which is what the loader starts.
 */
export function preloadBlocker(exe: string, depth = 0): string | undefined {
  let st: fs.Stats;
  try {
    st = fs.statSync(exe);
  } catch (e) {
    return `${exe} cannot be read (${(e as Error).message})`;
  }
  if (st.mode & 0o4000) return `${exe} is setuid: the dynamic loader ignores LD_PRELOAD for setuid programs`;
  if (st.mode & 0o2000) return `${exe} is setgid: the dynamic loader ignores LD_PRELOAD for setgid programs`;
  let head: Buffer;
  try {
    const fd = fs.openSync(exe, 'r');
    try {
      head = Buffer.alloc(256);
      head = head.subarray(0, fs.readSync(fd, head, 0, 256, 0));
    } finally {
      fs.closeSync(fd);
    }
  } catch (e) {
    return `${exe} cannot be read (${(e as Error).message})`;
  }
  if (head.subarray(0, 2).toString() === '#!') {
    const interp = head.subarray(2).toString().split('\n')[0].trim().split(/\s+/)[0];
    if (!interp || depth > 2) return `${exe} is a script whose interpreter could not be found`;
    return preloadBlocker(interp, depth + 1);
  }
  try {
    return withElf(exe, (elf) => {
      const interp = elf.segments.find((s) => s.type === PT_INTERP);
      if (!interp) {
        return elf.segments.some((s) => s.type === PT_DYNAMIC)
          ? `${exe} has no program interpreter (a static-pie or a shared library): nothing reads LD_PRELOAD`
          : `${exe} is statically linked: there is no dynamic loader to preload the leak tracer into it`;
      }
      const loader = elf.read(Number(interp.offset), Math.min(Number(interp.filesz), 4096)).toString('latin1').replace(/\0.*$/s, '');
      // the interposer is built against glibc; musl's loader cannot load it
      if (!/\/ld-linux[^/]*\.so\.\d+$/.test(loader)) return `${exe} runs under the dynamic loader ${loader}, not glibc's, and the leak tracer library is built for glibc`;
      return undefined;
    });
  } catch (e) {
    return `${exe} is not an ELF program (${(e as Error).message})`;
  }
}

/**
 * Why this machine's glibc cannot load the interposer, or undefined: the library needs the
 * newest GLIBC_x.y version named in its .dynstr (2.34 when built on Debian 12), and a program
 * whose loader refuses LD_PRELOAD runs untraced.
 */
export function glibcBlocker(
  lib: string,
  runtime = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime,
  whose = "this machine's",
  fix = 'rebuild it here with npm run build',
): string | undefined {
  if (!runtime) return undefined; // not glibc here: the loader check speaks for the program
  let need: number[] = [0, 0];
  try {
    const names = withElf(lib, (elf) => {
      const d = elf.section('.dynstr');
      return d ? elf.sectionData(d).toString('latin1') : '';
    });
    for (const m of names.matchAll(/GLIBC_(\d+)\.(\d+)/g)) {
      const v = [Number(m[1]), Number(m[2])];
      if (v[0] > need[0] || (v[0] === need[0] && v[1] > need[1])) need = v;
    }
  } catch {
    return undefined;
  }
  const have = runtime.split('.').map(Number);
  const older = have[0] < need[0] || (have[0] === need[0] && (have[1] ?? 0) < need[1]);
  return older ? `${whose} glibc ${runtime} is older than the ${need.join('.')} the leak tracer library was built for (${fix})` : undefined;
}

/** Where an allocator library's symbols stand with preloading, or why it needs uprobes. */
export function allocatorLibBlocker(lib: string, prefix: string | undefined): string | undefined {
  if (prefix) return `--symbol-prefix ${prefix}: prefixed entry points (${prefix}malloc, ...) are not the names a preloaded library can interpose`;
  try {
    const exported = withElf(lib, (elf) => elf.symbols('dynsym').some((s) => s.name === 'malloc' && s.value !== 0n));
    // A library exporting malloc is interposed by name: our malloc comes first in the lookup
    // order and forwards to the next definition, the library's own when the program links it.
    return exported ? undefined : `${lib} exports no malloc: its allocator is reached only through other names`;
  } catch (e) {
    return `${lib} cannot be read as ELF (${(e as Error).message})`;
  }
}

/**
 * A private folder the target can write its report into, tmpfs first: made by the user the
 * program runs as (extension/sys/asUser.ts), mode 0700, under a random name, so root never creates
 * or chowns anything in a shared folder. With owner.pid, the bases are folders of that process's
 * root (a container's own /dev/shm or /tmp).
 */
export function reportDir(owner: FileOwner, bases = ['/dev/shm', os.tmpdir()]): string {
  const failures: string[] = [];
  for (const base of bases) {
    const dir = path.join(base, `ebpf-studio-leak-${crypto.randomBytes(8).toString('hex')}`);
    try {
      mkdirAs(owner, dir, 0o700);
      return dir;
    } catch (e) {
      failures.push(`${dir}: ${(e as Error).message}`);
    }
  }
  throw new StudioError('internal', `cannot make a folder for the leak report as uid ${owner.uid}: ${failures.join('; ')}`);
}

/** The files a session puts in its report folder: the interposer's reports (PID.leak, one per
 * traced process) and, in inject mode, the settings file the injected library reads. */
const REPORT_NAME = /^(\d{1,10}\.leak|settings)$/;

/**
 * Removes the report folder as its user, and nothing but the interposer's report files in it, by
 * name: no recursive delete, so a folder swapped for a link (or a sub-folder planted in it) costs
 * only what its owner could delete anyway, and then the folder stays.
 */
export function removeReportDir(dir: string, owner: FileOwner, log: (m: string) => void): void {
  let names: string[] = [];
  try {
    names = fs.readdirSync(dir);
  } catch {
    /* gone */
  }
  for (const n of names.filter((n) => REPORT_NAME.test(n))) {
    try {
      unlinkAs(owner, path.join(dir, n));
    } catch (e) {
      log(`memleak: could not remove ${path.join(dir, n)} as uid ${owner.uid}: ${(e as Error).message}`);
    }
  }
  try {
    rmdirAs(owner, dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') log(`memleak: left ${dir} in place (${(e as Error).message}): it holds files eBPF Studio did not make`);
  }
}

/** Reads one region of the report file. */
function readAt(fd: number, offset: number, length: number): Buffer {
  const b = Buffer.alloc(length);
  let got = 0;
  while (got < length) {
    const n = fs.readSync(fd, b, got, length - got, offset + got);
    if (n <= 0) break;
    got += n;
  }
  return b.subarray(0, got);
}

export interface Snapshot {
  header: LeakHeader;
  records: AllocRecord[];
  /** stack id → return addresses */
  stack: (id: number) => bigint[];
}

/**
 * Opens the report file without following links, and only when it is a regular file with one
 * link owned by the uid the program runs as: the folder belongs to that user, and this side may
 * be root, so a link planted there must not make it read, or write, another file.
 */
export function openReport(file: string, owner: FileOwner, write: boolean): number | undefined {
  let fd: number;
  try {
    fd = openAs(owner, file, write ? fs.constants.O_RDWR : fs.constants.O_RDONLY);
  } catch {
    return undefined;
  }
  const st = fs.fstatSync(fd);
  if (!st.isFile() || st.nlink !== 1 || st.uid !== owner.uid) {
    fs.closeSync(fd);
    return undefined;
  }
  return fd;
}

/** Bounds the interposer never exceeds (see open_table): a file claiming more is not ours. */
const LIMITS = { slots: 1 << 28, stacks: 1 << 20, frames: 1 << 24 };

/**
 * The interposer's table as it is now. `file` is its path (opened and checked each time), or an
 * fd this side holds on it already (inject mode: the file it made and unlinked at the start).
 */
export function readReport(file: string | number, owner: FileOwner): Snapshot | undefined {
  const fd = typeof file === 'number' ? file : openReport(file, owner, false);
  if (fd === undefined) return undefined;
  try {
    const header = decodeHeader(readAt(fd, 0, HEADER_SIZE));
    if (!header) return undefined;
    const size = fs.fstatSync(fd).size;
    const n = Math.min(header.stacksUsed, header.maxStacks);
    const nFrames = Math.min(header.framesUsed, header.maxFrames);
    const fits = (off: number, len: number) => Number.isSafeInteger(off) && off >= HEADER_SIZE && off + len <= size;
    if (
      header.slots > LIMITS.slots ||
      n > LIMITS.stacks ||
      nFrames > LIMITS.frames ||
      !fits(header.slotsOff, header.slots * 32) ||
      !fits(header.dirOff, n * 8) ||
      !fits(header.framesOff, nFrames * 8)
    ) {
      return undefined;
    }
    // in 4 MiB pieces: the table is mostly empty and can be 64 MiB
    const records: AllocRecord[] = [];
    const piece = (4 << 20) / 32;
    for (let i = 0; i < header.slots; i += piece) {
      for (const r of decodeSlots(readAt(fd, header.slotsOff + i * 32, Math.min(piece, header.slots - i) * 32))) records.push(r);
    }
    const dir = readAt(fd, header.dirOff, n * 8);
    const frames = readAt(fd, header.framesOff, nFrames * 8);
    return { header, records, stack: (id) => stackOf(dir, frames, id) };
  } finally {
    if (fd !== file) fs.closeSync(fd);
  }
}

/**
 * What a session does with the interposer's table, whichever way the library got into the
 * process (preloaded at launch, or injected into a running one): capture its modules while it
 * lives, aggregate and symbolize the outstanding records, and build the result document.
 */
export function leakTableReader(pid: number, file: string | number, owner: FileOwner, t0: bigint, options: MemleakOptions, env: TracerEnv, warnings: string[], mode: 'preload' | 'inject') {
  const sym = new Symbolizer({ log: env.log });
  let image: ProcessImage | undefined;
  const capture = () => {
    try {
      if (!image) image = sym.captureProcess(pid);
      else sym.refreshMaps(image);
      for (const w of sym.warnings(image)) if (!warnings.includes(w)) warnings.push(w);
    } catch (e) {
      env.log(`memleak: capturing the modules of ${pid} failed: ${(e as Error).message}`);
    }
  };
  const frames = new StackFrames();
  const symbolize = async (snap: Snapshot, ids: number[]) => {
    const todo = frames.todo(ids);
    if (!todo.length) return;
    const stacks = todo.map((id) => snap.stack(id));
    const addrs = stacks.flat();
    let resolved: Frame[] | undefined;
    try {
      if (image) resolved = await sym.symbolizeUser(image, addrs, { returnAddresses: addrs.map(() => true) });
    } catch (e) {
      env.log(`memleak: symbolization failed: ${(e as Error).message}`);
    }
    frames.store(todo, stacks, resolved);
  };
  const inRange = (r: AllocRecord) => r.size >= options.minSize && (!options.maxSize || r.size <= options.maxSize);
  const measure = async (snap: Snapshot, nowNs: bigint) => {
    const aggs = aggregate(snap.records.filter(inRange), nowNs, options.minAgeMs, options.sampleBytes ?? 0);
    const shown = options.top ? aggs.slice(0, options.top) : aggs;
    await symbolize(snap, shown.map((a) => a.stackId));
    return { aggs, stacks: shown.map((a) => toStack(a, nowNs, frames.of(a.stackId))) };
  };
  const dropped = (h: LeakHeader) => h.tableFull + h.stackLost;
  const sampling = options.sampleBytes ? { sampleBytes: options.sampleBytes } : {};
  const empty = (): MemleakResult => ({ tracer: 'memleak', pid, stacks: [], dropped: 0, lost: 0, mode, ...sampling });
  /** One live report: the table as it is now, while the session is open. */
  const tick = (reports: LeakReports) =>
    reports
      .serial(async () => {
        if (reports.closed) return;
        const snap = readReport(file, owner);
        if (!snap) return;
        capture();
        const now = process.hrtime.bigint();
        const { aggs, stacks } = await measure(snap, now);
        reports.update(liveUpdate(Number((now - t0) / 1_000_000n), aggs, stacks, dropped(snap.header), options.sampleBytes));
      })
      .catch((e) => env.log(`memleak: report failed: ${(e as Error).message}`));
  return { sym, capture, measure, dropped, sampling, empty, tick };
}

export async function startPreload(options: MemleakOptions, env: TracerEnv, events: SessionEvents<'memleak'>, warnings: string[]): Promise<Session<'memleak'>> {
  const session = new PreloadSession(options, env, events, warnings);
  await session.launch();
  session.collect();
  return session;
}

type LeakTableReader = ReturnType<typeof leakTableReader>;
type LaunchSpec = NonNullable<MemleakOptions['launch']>;

/** One launched program with the interposer preloaded: its report folder and table, its notices channel and the timer. */
class PreloadSession implements Session<'memleak'> {
  private readonly launchSpec: LaunchSpec;
  private readonly reports: LeakReports;
  private owner!: FileOwner;
  private dir!: string;
  private t0 = 0n;
  private child!: ChildProcess;
  private exited!: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private channel: Socket | null = null;
  private pid = 0;
  private file!: string;
  private reader!: LeakTableReader;
  private started = false;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly options: MemleakOptions,
    private readonly env: TracerEnv,
    events: SessionEvents<'memleak'>,
    readonly warnings: string[],
  ) {
    this.launchSpec = options.launch!;
    this.reports = new LeakReports(events, () => {
      clearInterval(this.timer);
      this.channel?.destroy();
      this.reader.sym.dispose();
      removeReportDir(this.dir, this.owner, env.log);
    });
  }

  get targets(): number[] {
    return [this.pid];
  }

  /** Starts the command with the interposer preloaded, as the launch's user, and listens to its notices. */
  async launch(): Promise<void> {
    const { options, env, launchSpec: launch } = this;
    const lib = preloadLibPath(env.assetDir);
    if (!lib) throw new StudioError('internal', `the leak interposer ${PRELOAD_LIB} is missing from ${env.assetDir}: run "npm run build"`);
    const cwd = launch.cwd ?? process.cwd();
    if (!fs.existsSync(cwd) || !fs.statSync(cwd).isDirectory()) throw inputError(`the working directory ${cwd} does not exist`);
    const baseEnv = { ...process.env, ...(launch.env ?? {}) };
    const exe = resolveCommand(launch.command[0], baseEnv.PATH, cwd);
    // Who the command runs as is the helper's decision (extension/sys/identity.ts), never the request's.
    const { uid, gid } = launchIdentity(launch);
    this.owner = { uid, gid };
    this.dir = reportDir(this.owner);
    this.t0 = process.hrtime.bigint();
    const pid = (this.pid = await this.spawn(cwd, exe, this.childEnv(lib, baseEnv), { uid, gid }));
    this.file = path.join(this.dir, `${pid}.leak`);
    env.log(`memleak: ${launch.command[0]} (pid ${pid}) runs with ${lib} preloaded; report file ${this.file}`);
    this.reader = leakTableReader(pid, this.file, this.owner, this.t0, options, env, this.warnings, 'preload');
    this.listen();
  }

  private childEnv(lib: string, baseEnv: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    const { options } = this;
    const childEnv: NodeJS.ProcessEnv = {
      ...baseEnv,
      // The launcher moves this into LD_PRELOAD right before the exec (not into itself).
      EBPF_STUDIO_LAUNCH_PRELOAD: baseEnv.LD_PRELOAD ? `${lib}:${baseEnv.LD_PRELOAD}` : lib,
      EBPF_STUDIO_PRELOAD_DIR: this.dir,
      EBPF_STUDIO_PRELOAD_FD: '3',
      EBPF_STUDIO_PRELOAD_MAX_OUTSTANDING: String(options.maxOutstanding ?? 1_000_000),
    };
    if (options.minSize) childEnv.EBPF_STUDIO_PRELOAD_MIN_SIZE = String(options.minSize);
    if (options.maxSize) childEnv.EBPF_STUDIO_PRELOAD_MAX_SIZE = String(options.maxSize);
    if (options.sampleRate > 1) childEnv.EBPF_STUDIO_PRELOAD_SAMPLE_RATE = String(options.sampleRate);
    if (options.sampleBytes) childEnv.EBPF_STUDIO_PRELOAD_SAMPLE_BYTES = String(options.sampleBytes);
    return childEnv;
  }

  /** Spawns the launcher; its pid, or the report folder removed and an error. */
  private async spawn(cwd: string, exe: string, childEnv: NodeJS.ProcessEnv, ids: { uid: number; gid: number }): Promise<number> {
    const { env, launchSpec: launch } = this;
    const stdio: StdioOptions = launch.output === 'inherit' ? ['inherit', 'inherit', 'inherit', 'pipe'] : launch.output === 'stderr' ? ['inherit', 2, 2, 'pipe'] : ['ignore', 'pipe', 'pipe', 'pipe'];
    // The launcher enters cwd after libuv dropped to uid/gid (libuv itself would chdir as root),
    // then execs exe with the command's own argv[0] and the interposer preloaded; same pid.
    const child = (this.child = spawn(launcherPath(env.assetDir), ['--cwd', cwd, '--no-stop', '--exec', exe, '--preload', '--', ...launch.command], { cwd: '/', env: childEnv, stdio, uid: ids.uid, gid: ids.gid }));
    child.stdout?.on('data', (d: Buffer) => (this.reports.output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (this.reports.output += d.toString()));
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const spawnFailed = await new Promise<Error | undefined>((resolve) => {
      child.once('spawn', () => resolve(undefined));
      child.once('error', (e) => resolve(e));
    });
    if (spawnFailed || !child.pid) {
      removeReportDir(this.dir, this.owner, env.log);
      throw new StudioError('internal', `cannot start ${launch.command[0]}: ${spawnFailed?.message ?? 'no pid'}`);
    }
    return child.pid;
  }

  // ---- the program's notices ---------------------------------------------------------------
  private listen(): void {
    const channel = (this.channel = this.child.stdio[3] as Socket | null);
    channel?.on('data', (d: Buffer) => {
      for (const c of d.toString('latin1')) {
        if (c === 's') {
          this.started = true;
          this.reader.capture();
        } else if (c === 'x') {
          this.reader.capture(); // libraries loaded since the last capture; their files stay open after exit
          this.release();
        }
      }
    });
    channel?.on('error', () => undefined);
  }

  private release(): void {
    try {
      const fd = openReport(this.file, this.owner, true);
      if (fd === undefined) return;
      const b = Buffer.alloc(4);
      b.writeUInt32LE(STATE.released);
      fs.writeSync(fd, b, 0, 4, STATE_OFFSET);
      fs.closeSync(fd);
    } catch (e) {
      this.env.log(`memleak: releasing the program at exit failed: ${(e as Error).message}`);
    }
  }

  /** Live reports every interval, and the final one when the program exits. */
  collect(): void {
    const { options, launchSpec: launch } = this;
    this.timer = setInterval(() => void this.reader.tick(this.reports), options.intervalS * 1000);
    void this.exited.then((exit) => this.reports.finish(exitMessage(launch.command[0], exit), () => this.resultNow(), () => Number((process.hrtime.bigint() - this.t0) / 1_000_000n)));
  }

  private async resultNow(): Promise<MemleakResult> {
    const { reader, launchSpec: launch } = this;
    const snap = readReport(this.file, this.owner);
    if (!snap) {
      const r = reader.empty();
      if (!this.started) this.warnings.push(`${launch.command[0]} never loaded the leak tracer (${PRELOAD_LIB}): nothing was recorded`);
      return r;
    }
    const { stacks } = await reader.measure(snap, process.hrtime.bigint());
    this.env.log(`memleak: preload report: ${snap.header.allocs} allocations, ${snap.header.frees} frees recorded, ${snap.header.stacksUsed} stacks, unwinder ${snap.header.unwinder === 1 ? 'libunwind' : 'libgcc'}`);
    return { tracer: 'memleak', pid: this.pid, stacks, dropped: reader.dropped(snap.header), lost: 0, mode: 'preload', ...reader.sampling };
  }

  snapshot(): MemleakResult {
    return this.reports.result ?? this.reader.empty();
  }

  stop(): Promise<MemleakResult> {
    const { child } = this;
    return this.reports.stop(
      () => this.resultNow(),
      () => this.reader.empty(),
      () => {
        // Stop ends a launched program: it was started for this session.
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      },
    );
  }
}
