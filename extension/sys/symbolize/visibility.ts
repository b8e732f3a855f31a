// What a requester may see of a trace result. The helper runs as root for a user (sudo/pkexec);
// a machine-wide profile holds frames of every user's processes, so before a result leaves for a
// non-root requester each frame is cut to what that user could learn alone:
//  - kernel addresses only where /proc/kallsyms would show them to a user without CAP_SYSLOG
//    (the kernel's kallsyms_show_value: kptr_restrict 0 and perf_event_paranoid <= 1); kernel
//    function names stay (they say nothing about the layout);
//  - of a process that is not wholly the requester's (every uid in /proc/PID/status), or that
//    may hold a pid another process had earlier in the session (started after it began, and not
//    a target the session pins by pid and start time): no addresses at all (they are its ASLR
//    layout, or, for a frame outside any mapping, bytes of its stack read by the walk); function,
//    file:line and module+offset only from a module file the requester may read; the module's
//    path only when the requester may reach it; else [unknown];
//  - in warnings, a path only when the requester could look it up (its folders searchable).
// The requester's own processes keep everything: they could read all of it themselves (the
// symbolizer, for a non-root requester, already names an address in a data mapping [unknown]).
// Root requesters get results untouched. Applied once, to everything a helper session sends
// (extension/helper/sessions.ts), whatever the tracer.
import fs from 'node:fs';
import path from 'node:path';
import { primaryGid } from '../identity';
import { readStat } from '../proc/processes';

export interface Viewer {
  uid: number;
  /** primary gid; from /etc/passwd when absent */
  gid?: number;
}

/** The sysctls and files the policy reads; tests replace them. */
export interface VisibilitySources {
  sysctl(name: 'kptr_restrict' | 'perf_event_paranoid'): number | undefined;
  passwd(): string;
  group(): string;
  /** uids of a process (real, effective, saved, fs), undefined when it is gone */
  processUids(pid: number): number[] | undefined;
  /** start of a process in clock ticks since boot (/proc/PID/stat), undefined when it is gone */
  processStart(pid: number): number | undefined;
  lstat(file: string): fs.Stats | undefined;
  /** where a live process's files are seen (its mount namespace), '' for the host's view */
  processRoot(pid: number): string;
}

export const systemSources: VisibilitySources = {
  sysctl(name) {
    const n = Number(readOr(`/proc/sys/kernel/${name}`).trim());
    return Number.isInteger(n) ? n : undefined;
  },
  passwd: () => readOr('/etc/passwd'),
  group: () => readOr('/etc/group'),
  processUids(pid) {
    const m = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(readOr(`/proc/${pid}/status`));
    return m ? m.slice(1, 5).map(Number) : undefined;
  },
  lstat(file) {
    try {
      return fs.lstatSync(file);
    } catch {
      return undefined;
    }
  },
  processStart: (pid) => readStat(pid)?.startTime,
  processRoot(pid) {
    return pid > 0 && fs.existsSync(`/proc/${pid}/root/`) ? `/proc/${pid}/root` : '';
  },
};

function readOr(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** How much of a module file a requester may see. */
export type ModuleAccess = 'read' | 'path' | 'none';

/** A frame of any result document (ProfileFrame, MemleakFrame, Frame): the fields this looks at. */
interface AnyFrame {
  address?: string;
  kind?: string;
  module?: string | null;
  function?: string | null;
  file?: string | null;
  line?: number | null;
  column?: number;
  offset?: string;
  inlined?: unknown;
  buildId?: string;
}

const NO_ADDRESS = '0x0';
/** USER_HZ, the unit of /proc/PID/stat's start time and what /proc/uptime is turned into */
export const TICKS_PER_S = 100;
/** started this close to the session's start: may have taken a pid that was someone else's in it */
const START_MARGIN_TICKS = 2 * TICKS_PER_S;

/** Now, in the clock of processStart (CLOCK_BOOTTIME in clock ticks). */
export function bootTicksNow(): number {
  return Math.floor(Number(readOr('/proc/uptime').split(' ')[0]) * TICKS_PER_S);
}

/** What the session knows of its pids. */
export interface SessionPids {
  /** when the session started (bootTicksNow()); without it no pid could have been reused */
  startTicks?: number;
  /** targets the session holds by pid and start time (it ends when they exit) */
  pinned?: readonly number[];
  /** what was judged of each pinned target while it ran (kept by the session across results) */
  seen?: Map<number, { start: number; owned: boolean }>;
}

const MAX_DEPTH = 24;
/** an absolute path inside a message (not the path part of a URL) */
const PATH_IN_TEXT = /(?<![\w:/.~-])\/[\w.+@%~-]+(?:\/[\w.+@%~-]+)*/g;

/** The decisions for one requester, taken afresh for each result (sysctls and processes change). */
export class Visibility {
  readonly everything: boolean;
  readonly kernelAddresses: boolean;
  private readonly groups: Set<number>;
  private readonly owned = new Map<number, boolean>();
  private readonly access = new Map<string, ModuleAccess>();
  private readonly lookups = new Map<string, boolean>();
  private readonly roots = new Map<number, string>();

  constructor(
    readonly viewer: Viewer,
    private readonly src: VisibilitySources = systemSources,
    private readonly session: SessionPids = {},
  ) {
    this.everything = viewer.uid === 0;
    this.kernelAddresses = this.everything || (src.sysctl('kptr_restrict') === 0 && (src.sysctl('perf_event_paranoid') ?? 2) <= 1);
    this.groups = this.everything ? new Set() : groupsOf(viewer, src);
  }

  /**
   * Whether the process holding `pid` is the requester's and held it for the whole session: every
   * uid the requester's, and a target the session pins or started before the session (a gone
   * pid is nobody's). Stacks carry pids, not start times: a pid reused during the session would
   * otherwise hand the requester another process's frames.
   */
  ownsProcess(pid: number): boolean {
    if (this.everything) return true;
    let v = this.owned.get(pid);
    if (v === undefined) this.owned.set(pid, (v = pid > 0 && this.judgeOwner(pid)));
    return v;
  }

  private judgeOwner(pid: number): boolean {
    const start = this.src.processStart(pid);
    const uids = this.src.processUids(pid);
    const alive = start !== undefined && uids !== undefined && this.src.processStart(pid) === start;
    const mine = alive && uids.every((u) => u === this.viewer.uid);
    const { startTicks, pinned, seen } = this.session;
    if (seen && pinned?.includes(pid)) {
      // A target: judged while it runs (once not the requester's, never again), and after it
      // exits, or its pid went to another process, by what it was.
      const before = seen.get(pid);
      if (!alive || (before && before.start !== start)) return before?.owned ?? false;
      const owned = mine && (before?.owned ?? true);
      seen.set(pid, { start: start!, owned });
      return owned;
    }
    return mine && (startTicks === undefined || start! < startTicks - START_MARGIN_TICKS);
  }

  /**
   * 'read' when the requester may open `file` for reading, 'path' when it may only reach it
   * (search permission on every folder above), else 'none'. A link anywhere counts as 'none':
   * mapped paths come canonical from the kernel. `root` is the process's root (/proc/PID/root),
   * so a file inside a container is judged, not the host's file of the same name.
   */
  moduleAccess(file: string, root = ''): ModuleAccess {
    if (this.everything) return 'read';
    const key = `${root}\0${file}`;
    let v = this.access.get(key);
    if (v === undefined) this.access.set(key, (v = this.judge(file, root)));
    return v;
  }

  private judge(file: string, root: string): ModuleAccess {
    if (!path.isAbsolute(file) || file.includes('\0') || path.normalize(file) !== file) return 'none';
    const parts = file.split('/').filter(Boolean);
    let at = root;
    for (let i = 0; i < parts.length; i++) {
      // "/proc/PID/root/" with its slash: the process's root folder, through the link
      const dir = this.src.lstat(`${at}/`);
      if (!dir?.isDirectory() || !this.allowed(dir, 1)) return 'none';
      at = `${at}/${parts[i]}`;
    }
    const st = this.src.lstat(at);
    if (!st?.isFile()) return 'none';
    return this.allowed(st, 4) ? 'read' : 'path';
  }

  /** The kernel's mode check: the owner class, else the group class, else others (ACLs not read: a grant they add is not seen). */
  private allowed(st: fs.Stats, bit: number): boolean {
    if (st.uid === this.viewer.uid) return ((st.mode >> 6) & bit) !== 0;
    if (this.groups.has(st.gid)) return ((st.mode >> 3) & bit) !== 0;
    return (st.mode & bit) !== 0;
  }

  /** A copy of `doc` cut to what the requester may see; `doc` itself when it may see everything. */
  shape<T>(doc: T, defaultPid?: number): T {
    if (this.everything) return doc;
    return this.walk(doc, defaultPid ?? 0, 0) as T;
  }

  private walk(v: unknown, pid: number, depth: number): unknown {
    if (v === null || typeof v !== 'object' || depth > MAX_DEPTH) return v;
    if (Array.isArray(v)) return v.map((x) => this.walk(x, pid, depth + 1));
    const o = v as Record<string, unknown>;
    const here = typeof o.pid === 'number' && Number.isInteger(o.pid) ? o.pid : pid;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o)) {
      // `stack`: a latency slow call's frames (the same frame shape under another name)
      if (Array.isArray(x) && (k === 'frames' || (k === 'stack' && x.every(isFrameLike)))) out[k] = this.frames(x, here);
      else if (k === 'warnings' && Array.isArray(x)) out[k] = x.map((w) => (typeof w === 'string' ? this.message(w) : w));
      else if (k === 'buildIds' && x && typeof x === 'object' && !Array.isArray(x)) out[k] = this.buildIds(x as Record<string, unknown>);
      else if (k === 'modules' && Array.isArray(x)) out[k] = x.filter((m) => !isModuleEntry(m) || this.moduleAccess(m.module, this.rootOf(here)) === 'read');
      else out[k] = this.walk(x, here, depth + 1);
    }
    return out;
  }

  /** A message with every path the requester cannot reach replaced (a module of someone else's process, a private folder). */
  message(text: string): string {
    if (this.everything) return text;
    return text.replace(PATH_IN_TEXT, (p) => {
      const file = p.replace(/[.]+$/, '');
      return this.reachable(file) ? p : `[a path you cannot see]${p.slice(file.length)}`;
    });
  }

  /** Whether the requester may look `file` up itself (search permission on every folder above it). */
  private reachable(file: string): boolean {
    if (file === '/') return true;
    let v = this.lookups.get(file);
    if (v === undefined) {
      const parent = path.dirname(file);
      const dir = this.src.lstat(`${parent === '/' ? '' : parent}/`);
      v = path.normalize(file) === file && this.reachable(parent) && !!dir?.isDirectory() && this.allowed(dir, 1);
      this.lookups.set(file, v);
    }
    return v;
  }

  private buildIds(ids: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [m, id] of Object.entries(ids)) if (!m.startsWith('/') || this.moduleAccess(m) === 'read') out[m] = id;
    return out;
  }

  /** A profile's frames for inlined functions go with the symbols of the address they sit at. */
  private frames(list: unknown[], pid: number): unknown[] {
    const out: unknown[] = [];
    for (const f of list) {
      if (!f || typeof f !== 'object') continue;
      const cut = this.frame(f as AnyFrame, pid);
      if (cut !== f && (f as AnyFrame).inlined === true && (cut.function ?? null) === null) continue;
      out.push(cut);
    }
    return out;
  }

  /** One frame of process `pid`, as this requester may see it. */
  frame(f: AnyFrame, pid: number): AnyFrame {
    if (this.everything) return f;
    if (f.kind === 'kernel' || f.module === '[kernel]') return this.kernelAddresses ? f : { ...f, address: NO_ADDRESS };
    if (this.ownsProcess(pid)) return f;
    const out: AnyFrame = { ...f };
    if (out.address !== undefined) out.address = NO_ADDRESS;
    delete out.buildId;
    const mod = typeof f.module === 'string' ? f.module : undefined;
    if (mod?.startsWith('/')) {
      const access = this.moduleAccess(mod, this.rootOf(pid));
      if (access === 'read') return out;
      if (access === 'path') return withoutSymbols(out, mod);
      return withoutSymbols(out, unknownModule(f));
    }
    // The vdso is the kernel's, the same for everyone; JIT names come only from perf maps the
    // requester may read (sys/symbolize/perfMap.ts) and markers ("[lost user stack]") are ours.
    if (mod === '[vdso]' || (typeof f.function === 'string' && f.function !== '')) return out;
    return withoutSymbols(out, unknownModule(f));
  }

  /** Where a live process's files are (its mount namespace); '' (the host's) once it is gone. */
  private rootOf(pid: number): string {
    let r = this.roots.get(pid);
    if (r === undefined) this.roots.set(pid, (r = this.src.processRoot(pid)));
    return r;
  }
}

/** A frame of any tracer: an object with an address (profile, memleak, latency). */
function isFrameLike(f: unknown): boolean {
  return !!f && typeof f === 'object' && typeof (f as { address?: unknown }).address === 'string';
}

function isModuleEntry(m: unknown): m is { module: string } {
  return !!m && typeof m === 'object' && typeof (m as { module?: unknown }).module === 'string' && (m as { module: string }).module.startsWith('/');
}

/** Profile frames say "unknown" with null; memleak frames (no kind, module always a string) with "[unknown]". */
function unknownModule(f: AnyFrame): string | null {
  return f.module === null || f.kind !== undefined ? null : '[unknown]';
}

function withoutSymbols(f: AnyFrame, module: string | null): AnyFrame {
  const out: AnyFrame = { ...f, module };
  delete out.offset;
  delete out.column;
  delete out.inlined;
  if (f.kind !== undefined) {
    out.function = null;
    out.file = null;
    out.line = null;
  } else {
    out.function = '[unknown]';
    delete out.file;
    delete out.line;
  }
  return out;
}

/** The requester's primary group and every group /etc/group lists it in. */
function groupsOf(v: Viewer, src: VisibilitySources): Set<number> {
  const passwd = src.passwd();
  const gids = new Set<number>([v.gid ?? primaryGid(v.uid, passwd)]);
  const name = passwd
    .split('\n')
    .map((l) => l.split(':'))
    .find((f) => f.length >= 4 && Number(f[2]) === v.uid)?.[0];
  if (!name) return gids;
  for (const line of src.group().split('\n')) {
    const f = line.split(':');
    if (f.length >= 4 && /^\d+$/.test(f[2]) && f[3].split(',').includes(name)) gids.add(Number(f[2]));
  }
  return gids;
}
