// memleak in inject mode: a running process (--pid) gets the leak interposer without a restart.
// dist/ebpf-studio-inject (native/inject/inject.c) borrows one of its threads through ptrace, makes
// it dlopen the library and call ebpf_studio_inject_start(config), which redirects the process's
// allocator calls (the GOT entries of the malloc family in every module) to the wrappers that
// keep the outstanding table, as in preload mode; Stop calls ebpf_studio_inject_stop(), which puts
// the entries back. The table is read exactly as in preload mode (leakTableReader). No kernel trap
// per call: this is what makes attaching cost what a launch costs instead of a uprobe trap per
// malloc and free.
//
// Refused, with the reason, so the tracer falls back to uprobes (injectRefusal): no injector or
// library built, a statically linked program (no libc.so.6 mapped), a process already being
// traced, a setuid/setgid process (its ids differ), one that runs under a seccomp filter (a call
// it does not expect could kill it), one in another mount namespace (a container: the library
// and the table would have to be placed inside it), and another user's process unless the
// requester is root.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { MemleakOptions, MemleakResult } from '../../protocol/memleak';
import { StudioError } from '../../protocol/errors';
import { foreignOwner } from '../../sys/ownership';
import { namespacePid } from '../../sys/symbolize/perfMap';
import type { Session, SessionEvents, TracerEnv } from '../tracer';
import { createAs, writeAllAndClose, type FileOwner } from '../../sys/asUser';
import { glibcBlocker, leakTableReader, preloadLibPath, readReport, removeReportDir, reportDir } from './preload';
import { LeakReports } from './report';

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

function procStatus(pid: number): ProcStatus | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
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
  const glibc = glibcBlocker(lib);
  if (glibc) return glibc;
  const st = procStatus(pid);
  if (!st) return `process ${pid} cannot be read`;
  if (st.tracerPid) return `process ${pid} is already being traced (by pid ${st.tracerPid}, a debugger or another tracer)`;
  if (new Set(st.uid).size > 1 || new Set(st.gid).size > 1) return `process ${pid} runs with changed ids (setuid or setgid)`;
  if (st.seccomp === 2) return `process ${pid} runs under a seccomp filter, which could kill it for a system call the injected code makes`;
  const foreign = foreignOwner(pid);
  if (foreign !== undefined) return `process ${pid} belongs to uid ${foreign}, not to you (only root may load code into another user's process)`;
  try {
    if (fs.readlinkSync(`/proc/${pid}/ns/mnt`) !== fs.readlinkSync('/proc/self/ns/mnt')) return `process ${pid} runs in another mount namespace (a container)`;
  } catch {
    return `the mount namespace of process ${pid} cannot be read`;
  }
  let maps: string;
  try {
    maps = fs.readFileSync(`/proc/${pid}/maps`, 'utf8');
  } catch (e) {
    return `the memory map of process ${pid} cannot be read (${(e as Error).message})`;
  }
  if (!/\/libc\.so\.6$/m.test(maps)) return `process ${pid} has no libc.so.6 mapped (statically linked, or not a glibc program)`;
  return undefined;
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

function runInjector(injector: string, args: string[], log: (m: string) => void): Promise<{ ok: boolean; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(injector, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', (e) => resolve({ ok: false, out: e.message }));
    child.on('exit', (code) => {
      log(`memleak: ${path.basename(injector)} ${args[0]}: exit ${code}: ${out.trim()}`);
      resolve({ ok: code === 0, out: out.trim() });
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
  const pid = options.pid!;
  const lib = fs.realpathSync(preloadLibPath(env.assetDir)!);
  const injector = injectorPath(env.assetDir)!;
  const st = procStatus(pid);
  if (!st) throw new StudioError('unsuitable', `process ${pid} exited`);
  const [uid, gid] = [st.uid[0], st.gid[0]];
  if (!readableBy(lib, uid)) {
    throw new StudioError('unsuitable', `${lib} is not readable by the owner of process ${pid} (uid ${uid}): install the helper (ebpf-studio install-helper) so the library sits in a world-readable root-owned folder, or use --mode uprobe`);
  }
  // The report folder and the settings file are made by the process's owner (sys/asUser.ts): root
  // never creates, writes or deletes in a folder that user controls.
  const owner: FileOwner = { uid, gid };
  const dir = reportDir(owner);
  const conf = path.join(dir, 'settings');
  const lines = [`EBPF_STUDIO_PRELOAD_DIR=${dir}`, `EBPF_STUDIO_PRELOAD_MAX_OUTSTANDING=${options.maxOutstanding ?? 1_000_000}`];
  if (options.minSize) lines.push(`EBPF_STUDIO_PRELOAD_MIN_SIZE=${options.minSize}`);
  if (options.maxSize) lines.push(`EBPF_STUDIO_PRELOAD_MAX_SIZE=${options.maxSize}`);
  if (options.sampleRate > 1) lines.push(`EBPF_STUDIO_PRELOAD_SAMPLE_RATE=${options.sampleRate}`);
  if (options.sampleBytes) lines.push(`EBPF_STUDIO_PRELOAD_SAMPLE_BYTES=${options.sampleBytes}`);
  if (process.env.EBPF_STUDIO_PRELOAD_UNWINDER) lines.push(`EBPF_STUDIO_PRELOAD_UNWINDER=${process.env.EBPF_STUDIO_PRELOAD_UNWINDER}`);
  // created exclusively: never an existing file or a planted link
  writeAllAndClose(createAs(owner, conf, 0o600), Buffer.from(lines.join('\n') + '\n'));
  const file = path.join(dir, `${namespacePid(pid)}.leak`);
  const cleanup = () => removeReportDir(dir, owner, env.log);
  const t0 = process.hrtime.bigint();
  const started = await runInjector(injector, ['start', String(pid), lib, conf], env.log);
  if (!started.ok) {
    cleanup();
    const why = START_FAILURES[started.out.split('\n').pop() ?? ''] ?? started.out.replace(/^ebpf-studio-inject: /gm, '');
    throw new StudioError('unsuitable', `cannot inject the leak tracer into process ${pid}: ${why}. Use --mode uprobe to trace it with uprobes instead`);
  }
  env.log(`memleak: injected ${lib} into pid ${pid} in ${Number((process.hrtime.bigint() - t0) / 1_000_000n)} ms; report file ${file}`);
  const { sym, capture, measure, dropped, sampling, empty, tick } = leakTableReader(pid, file, owner, t0, options, env, warnings, 'inject');
  capture();

  let detached = false;
  const detach = async () => {
    if (detached) return;
    detached = true;
    if (fs.existsSync(`/proc/${pid}`)) {
      const r = await runInjector(injector, ['stop', String(pid), lib], env.log);
      if (!r.ok) warnings.push(`restoring the allocator of process ${pid} failed (${r.out}); its leak tracer stays loaded and keeps counting`);
    }
  };
  const reports = new LeakReports(events, () => {
    clearInterval(timer);
    clearInterval(watch);
    sym.dispose();
    cleanup();
  });
  const timer = setInterval(() => void tick(reports), options.intervalS * 1000);

  const resultNow = async (): Promise<MemleakResult> => {
    await detach();
    const snap = readReport(file, owner);
    if (!snap) return empty();
    const { stacks } = await measure(snap, process.hrtime.bigint());
    env.log(`memleak: inject report: ${snap.header.allocs} allocations, ${snap.header.frees} frees recorded since attach, ${snap.header.stacksUsed} stacks`);
    return { tracer: 'memleak', pid, stacks, dropped: dropped(snap.header), lost: 0, mode: 'inject', ...sampling };
  };
  // The process may exit while traced: its table file stays readable for the final report.
  const watch = setInterval(() => {
    if (fs.existsSync(`/proc/${pid}`)) return;
    detached = true;
    void reports.finish(`process ${pid} exited`, resultNow, () => Number((process.hrtime.bigint() - t0) / 1_000_000n));
  }, 250);

  return {
    targets: [pid],
    warnings,
    snapshot: () => reports.result ?? empty(),
    stop: () => reports.stop(resultNow, empty, () => undefined),
  };
}
