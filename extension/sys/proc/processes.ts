// What /proc says about processes: listing, pid checks with user-facing reasons, and which
// processes are JVMs (libjvm.so mapped) and whether their libjvm carries USDT probes.
import fs from 'node:fs';
import path from 'node:path';
import type { JdkInfo, ProcessInfo } from '../../protocol/protocol';
import { inputError, privilegeError, unsuitableError } from '../../protocol/errors';
import { PID_MAX } from '../../protocol/validate';
import { mappedFiles, readMaps } from './maps';
import { hostFileIdentity, reachMappedByName } from './mappedFile';
import { ElfError, ElfFile, type UsdtProbe } from '../elf/elf';
import { jdkFeature, jdkVersion } from '../jvm/release';
import { containerOf } from './container';
import { pidNamespaceRefusal } from './insideContainer';
import { containerLabel } from './targetLabel';

const PF_KTHREAD = 0x00200000;

export interface Stat {
  pid: number;
  comm: string;
  state: string;
  ppid: number;
  flags: number;
  /** process start time in clock ticks since boot */
  startTime: number;
  /** minor page faults so far (first touches of memory) */
  minflt: number;
  /** utime + stime in clock ticks (USER_HZ, 100 a second on Linux) */
  cpuTicks: number;
}

export function parseStat(text: string): Stat {
  // comm may contain spaces and parentheses: it runs from the first '(' to the last ')'.
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  const rest = text.slice(close + 2).split(' ');
  return {
    pid: Number(text.slice(0, open).trim()),
    comm: text.slice(open + 1, close),
    state: rest[0],
    ppid: Number(rest[1]),
    flags: Number(rest[6]),
    startTime: Number(rest[19]),
    minflt: Number(rest[7]),
    cpuTicks: Number(rest[11]) + Number(rest[12]),
  };
}

export function readStat(pid: number): Stat | undefined {
  try {
    return parseStat(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * utime + stime of a whole process (its exited threads included) in ms, from /proc/PID/stat's
 * clock ticks (USER_HZ, 100 a second on Linux); undefined when it is gone.
 */
export function processCpuMs(pid: number): number | undefined {
  const st = readStat(pid);
  return st && st.cpuTicks * 10;
}

export function isKernelThread(stat: Stat): boolean {
  return (stat.flags & PF_KTHREAD) !== 0 || stat.pid === 2 || stat.ppid === 2;
}

export function pidAlive(pid: number): boolean {
  return fs.existsSync(`/proc/${pid}`);
}

/**
 * A process as its pid and its start time (clock ticks since boot, /proc/PID/stat field 22): a pid
 * alone names whichever process holds that number now, and after the target exits the next
 * process to get it may be another user's. Sessions keep this and compare it, never the number.
 */
export interface ProcessIdentity {
  pid: number;
  startTime: number;
}

/** The identity of the process holding `pid` now, or undefined when none does. */
export function identify(pid: number): ProcessIdentity | undefined {
  const st = readStat(pid);
  return st ? { pid, startTime: st.startTime } : undefined;
}

/** Whether the process `id` names is still running: same pid, same start, not a zombie (it has exited; its pid is about to be free). */
export function sameProcess(id: ProcessIdentity): boolean {
  const st = readStat(id.pid);
  return st !== undefined && st.startTime === id.startTime && st.state !== 'Z' && st.state !== 'X';
}

/** USER_HZ: the unit of /proc/PID/stat's start time (100 on every Linux architecture we build for). */
const CLOCK_TICKS_PER_S = 100n;

/**
 * The target's start as the BPF programs see it: [lo, hi) ns of CLOCK_BOOTTIME (the kernel's
 * task->start_boottime, which /proc shows divided down to clock ticks), for the start-time check
 * of bpf/task.bpf.h current_started_in. Zeros (no check) without a target.
 */
export function bootStartRange(id: ProcessIdentity | undefined): { target_start_lo: bigint; target_start_hi: bigint } {
  if (!id) return { target_start_lo: 0n, target_start_hi: 0n };
  const tick = 1_000_000_000n / CLOCK_TICKS_PER_S;
  const lo = BigInt(id.startTime) * tick;
  return { target_start_lo: lo, target_start_hi: lo + tick };
}

/**
 * Checks a pid given by a user: in range, exists, not a kernel thread. Returns its stat.
 * Throws input errors (exit 2) with the reason.
 */
/** `forBpf`: the pid will filter BPF events, which carry the host's pids (false: /proc reads only). */
export function checkPid(pid: number, forBpf = true): Stat {
  if (!Number.isInteger(pid) || pid <= 0 || pid > PID_MAX) {
    throw inputError(`pid ${pid} is not valid: a pid is a whole number from 1 to ${PID_MAX}`);
  }
  const refusal = forBpf ? pidNamespaceRefusal(pid) : undefined;
  if (refusal) throw unsuitableError(refusal);
  const stat = readStat(pid);
  if (!stat) throw inputError(`no process with pid ${pid} is running (check with: ps -p ${pid})`);
  if (isKernelThread(stat)) throw unsuitableError(`pid ${pid} (${stat.comm}) is a kernel thread: it has no user-space code to trace`);
  return stat;
}

/** Reads /proc/PID/maps or explains that ptrace access is missing. */
export function mapsOrExplain(pid: number) {
  try {
    return readMaps(pid);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM') {
      if (process.geteuid?.() === 0) {
        throw unsuitableError(`cannot read /proc/${pid}/maps (${code}) even as root: the process is protected from ptrace access (another user namespace, or the sandbox's init); trace a process started inside this namespace`);
      }
      throw privilegeError(`cannot read /proc/${pid}/maps (${code}): reading another user's process needs root or CAP_SYS_PTRACE`);
    }
    if (code === 'ENOENT' || code === 'ESRCH') throw inputError(`process ${pid} exited`);
    throw e;
  }
}

let passwd: Map<number, string> | undefined;
function userName(uid: number): string {
  if (!passwd) {
    passwd = new Map();
    try {
      for (const line of fs.readFileSync('/etc/passwd', 'utf8').split('\n')) {
        const f = line.split(':');
        if (f.length > 2) passwd.set(Number(f[2]), f[0]);
      }
    } catch {
      /* no passwd: numeric uids */
    }
  }
  return passwd.get(uid) ?? String(uid);
}

function readUid(pid: number): number {
  try {
    const m = /^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : -1;
  } catch {
    return -1;
  }
}

function readCmdline(pid: number): string[] {
  try {
    const raw = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return raw.split('\0').filter((s, i, a) => s.length > 0 || i < a.length - 1);
  } catch {
    return [];
  }
}

type UsdtNotes = { probes: UsdtProbe[] } | { problem: string };
const usdtCache = new Map<string, { key: string; notes: UsdtNotes }>();
/** files with probes, by device, inode, mtime, ctime and size (problems name a path: those stay by path) */
const usdtByFile = new Map<string, { key: string; notes: UsdtNotes }>();

/**
 * The USDT probes (.note.stapsdt) of a binary, or why it has none (missing, not a regular file,
 * not ELF, no notes), cached by path + inode + mtime so callers may ask on every keystroke.
 */
export function usdtNotes(file: string): UsdtNotes {
  let key = '';
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) return { problem: `${file} is not a regular file` };
    // ctime too: a write or a utimes() that puts mtime back still moves it.
    key = `${st.dev}:${st.ino}:${st.mtimeMs}:${st.ctimeMs}:${st.size}`;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return { problem: code === 'ENOENT' ? `${file} does not exist` : `cannot read ${file} (${code ?? (e as Error).message})` };
  }
  const hit = usdtCache.get(file);
  if (hit && hit.key === key) return hit.notes;
  const same = usdtByFile.get(key);
  if (same) return same.notes;
  let notes: UsdtNotes;
  try {
    const elf = new ElfFile(file);
    try {
      notes = elf.hasUsdt() ? { probes: elf.usdtProbes() } : { problem: `${file} has no .note.stapsdt section (it was built without USDT probes)` };
    } finally {
      elf.close();
    }
  } catch (e) {
    notes = { problem: e instanceof ElfError ? e.message : `cannot read ${file} (${(e as Error).message})` };
  }
  // Paths through /proc/PID are one per process: the cache stays bounded however many come and go.
  if (usdtCache.size >= 256) usdtCache.clear();
  usdtCache.set(file, { key, notes });
  // One libjvm.so reached through each JVM's /proc/PID is one file: its probes are read once.
  if ('probes' in notes) {
    if (usdtByFile.size >= 256) usdtByFile.clear();
    usdtByFile.set(key, { key, notes });
  }
  return notes;
}

/** Whether a libjvm.so has hotspot USDT probes. */
export function libjvmUsdt(libjvm: string): { usdt: boolean; count: number } {
  const notes = usdtNotes(libjvm);
  const count = 'probes' in notes ? notes.probes.filter((p) => p.provider === 'hotspot').length : 0;
  return { usdt: count > 0, count };
}

/** The main class, -jar file or -m module of a java command line. */
export function javaMain(cmdline: string[]): string {
  const withArg = new Set(['-cp', '-classpath', '--class-path', '-p', '--module-path', '--add-opens', '--add-exports', '--add-modules', '--add-reads', '-d']);
  for (let i = 1; i < cmdline.length; i++) {
    const a = cmdline[i];
    if (a === '-jar') return cmdline[i + 1] ?? 'jar';
    if (a === '-m' || a === '--module') return cmdline[i + 1] ?? 'module';
    if (a.startsWith('--module=')) return a.slice('--module='.length);
    if (withArg.has(a)) {
      i++;
      continue;
    }
    if (a.startsWith('-')) continue;
    return a;
  }
  return path.basename(cmdline[0] ?? 'java');
}

export function jvmInfo(pid: number, cmdline: string[]): ProcessInfo['jvm'] {
  let maps;
  try {
    maps = readMaps(pid);
  } catch {
    return undefined;
  }
  const libjvm = mappedFiles(maps, /^libjvm\.so$/)[0];
  if (!libjvm) return undefined;
  // Its own file (a container's JDK, or one the host lacks), not the host's of the same name.
  let own = libjvm;
  try {
    const f = reachMappedByName(pid, maps, /^libjvm\.so$/);
    if (f && f.identity !== hostFileIdentity(libjvm)) own = f.path;
  } catch {
    /* unreachable: judged by its name */
  }
  const { usdt } = libjvmUsdt(own);
  // .../<home>/lib/server/libjvm.so
  const javaHome = path.dirname(path.dirname(path.dirname(libjvm)));
  const version = jdkVersion(pid, javaHome);
  const feature = version ? jdkFeature(version) : NaN;
  return {
    libjvm,
    usdt,
    main: javaMain(cmdline),
    javaHome,
    preserveFramePointer: cmdline.includes('-XX:+PreserveFramePointer'),
    ...(version ? { version } : {}),
    ...(Number.isInteger(feature) ? { feature } : {}),
  };
}

export function processInfo(pid: number): ProcessInfo | undefined {
  const stat = readStat(pid);
  if (!stat) return undefined;
  const kernelThread = isKernelThread(stat);
  const cmdline = kernelThread ? [] : readCmdline(pid);
  const uid = readUid(pid);
  let exe: string | undefined;
  try {
    exe = fs.readlinkSync(`/proc/${pid}/exe`);
  } catch {
    exe = undefined;
  }
  const info: ProcessInfo = { pid, ppid: stat.ppid, user: userName(uid), uid, comm: stat.comm, cmdline, exe, kernelThread };
  const container = kernelThread ? undefined : containerOf(pid);
  if (container) info.container = containerLabel(container);
  if (!kernelThread && (/java/.test(stat.comm) || (exe && /\/java$/.test(exe)) || /java/.test(cmdline[0] ?? ''))) {
    info.jvm = jvmInfo(pid, cmdline);
  } else if (!kernelThread && exe && !/^(bash|sh|zsh|dash)$/.test(stat.comm)) {
    // Launchers may embed the JVM under another name (e.g. an IDE): check the maps lazily only
    // for processes whose command line mentions a JDK.
    if (cmdline.some((a) => a.includes('/jvm/') || a.includes('jdk'))) info.jvm = jvmInfo(pid, cmdline);
  }
  return info;
}

export function listProcesses(opts: { jvmOnly?: boolean; includeKernelThreads?: boolean } = {}): ProcessInfo[] {
  const out: ProcessInfo[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const info = processInfo(Number(name));
    if (!info) continue;
    if (info.kernelThread && !opts.includeKernelThreads) continue;
    if (opts.jvmOnly && !info.jvm) continue;
    out.push(info);
  }
  return out.sort((a, b) => a.pid - b.pid);
}

/** JDKs installed in the usual places, with whether their libjvm.so carries USDT probes. */
export function findJdks(roots = ['/usr/lib/jvm', '/opt', '/usr/local']): JdkInfo[] {
  const out: JdkInfo[] = [];
  const seen = new Set<string>();
  for (const root of roots) {
    let entries: string[] = [];
    try {
      entries = fs.readdirSync(root);
    } catch {
      continue;
    }
    for (const e of entries) {
      const home = path.join(root, e);
      for (const rel of ['lib/server/libjvm.so', 'jre/lib/amd64/server/libjvm.so']) {
        const libjvm = path.join(home, rel);
        let real: string;
        try {
          real = fs.realpathSync(libjvm);
        } catch {
          continue;
        }
        if (seen.has(real)) continue;
        seen.add(real);
        const { usdt, count } = libjvmUsdt(real);
        out.push({ home, libjvm: real, usdt, probeCount: count });
      }
    }
  }
  return out;
}

/** Names the JDK build problem when a libjvm.so has no USDT notes. */
export function noUsdtMessage(libjvm: string): string {
  return `${libjvm} has no .note.stapsdt section: this JDK was built without DTrace/USDT probes (configure --enable-dtrace), so its GC cannot be traced this way. Use a JDK that has them, e.g. Debian/Ubuntu's openjdk-17-jdk (check with: readelf -n ${libjvm} | grep -c stapsdt).`;
}
