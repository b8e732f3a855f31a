// What a capture keeps of a process: its maps, an open handle on every executable file it maps
// (via /proc/PID/map_files, which reaches deleted files too, else /proc/PID/root/PATH, which
// sees the process's own mount namespace), its vdso, and its JIT perf map. After this the
// process may exit.
import fs from 'node:fs';
import { mapsOrExplain, pidAlive, readStat } from '../proc/processes';
import { readMaps, type Mapping } from '../proc/maps';
import { inputError } from '../../protocol/errors';
import type { AddressTable } from './addressTable';
import { ModuleFile } from './moduleFile';
import { readPerfMap, type PerfMapEntry } from './perfMap';
import type { ProcessImage } from './types';

export interface ModuleRegistry {
  /** The module for an open fd: reuses (and closes fd) when the same file is already held. */
  adopt(fd: number, displayPath: string): ModuleFile;
  /** A module for the bytes of a [vdso] mapping (identical across processes of one kernel). */
  vdso(bytes: Buffer): ModuleFile | undefined;
}

/**
 * Stale-looking addresses re-read the maps at most this often: truncated stacks carry garbage
 * addresses, and a JVM's maps run to thousands of lines.
 */
const REFRESH_INTERVAL_MS = 100;

export class CapturedProcess implements ProcessImage {
  maps: Mapping[];
  /** executable file-backed (and vdso) mappings → their module; absent when unreadable */
  readonly modules = new Map<Mapping, ModuleFile>();
  /** why a mapping's file could not be opened, by path (said once in warnings) */
  readonly unreadable = new Map<string, string>();
  readonly exePath?: string;
  perfMap?: { path: string; table: AddressTable<PerfMapEntry> };
  /** modules symbolizeUser met, for warnings() */
  readonly touched = new Set<ModuleFile>();
  anonymousCodeSeen = false;
  /** clock-tick start time: tells the captured process from a later one reusing its pid */
  private readonly startTime?: number;
  /** dev:inode → module, so refreshes reuse what is open */
  private readonly byFile = new Map<string, ModuleFile | undefined>();
  private lastRefresh = 0;

  constructor(
    readonly pid: number,
    registry: ModuleRegistry,
  ) {
    if (!Number.isInteger(pid) || pid <= 0) throw inputError(`pid ${pid} is not valid: a pid is a whole number from 1 up`);
    if (!pidAlive(pid)) throw inputError(`no process with pid ${pid} is running (check with: ps -p ${pid})`);
    this.startTime = readStat(pid)?.startTime;
    this.maps = mapsOrExplain(pid);
    if (this.maps.length === 0) throw inputError(`process ${pid} has no memory mappings (it exited or is a kernel thread)`);
    try {
      this.exePath = fs.readlinkSync(`/proc/${pid}/exe`).replace(/ \(deleted\)$/, '');
    } catch {
      /* exited or kernel thread: no main-binary advice */
    }
    this.openModules(this.maps, registry);
    this.refreshPerfMap();
  }

  /** Re-reads the maps if the same process still runs; true when they were re-read. */
  refreshMaps(registry: ModuleRegistry, force: boolean): boolean {
    const now = Date.now();
    if (!force && now - this.lastRefresh < REFRESH_INTERVAL_MS) return false;
    this.lastRefresh = now;
    if (this.startTime === undefined || readStat(this.pid)?.startTime !== this.startTime) return false;
    let fresh: Mapping[];
    try {
      fresh = readMaps(this.pid);
    } catch {
      return false;
    }
    const same = (a: Mapping, b: Mapping) =>
      a.start === b.start && a.end === b.end && a.offset === b.offset && a.inode === b.inode && a.dev === b.dev && a.perms === b.perms;
    const old = new Map(this.maps.map((m) => [m.start, m]));
    const next = fresh.map((m) => {
      const o = old.get(m.start);
      return o && same(o, m) ? o : m;
    });
    // Keep mappings that went away (unloaded libraries) where nothing new took their place.
    for (const o of this.maps) {
      if (!fresh.some((m) => m.start < o.end && o.start < m.end)) next.push(o);
    }
    next.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
    this.maps = next;
    this.openModules(next.filter((m) => !this.modules.has(m)), registry);
    return true;
  }

  private openModules(maps: Mapping[], registry: ModuleRegistry): void {
    for (const m of maps) {
      if (m.perms[2] !== 'x') continue;
      if (m.path === '[vdso]') {
        const mod = this.captureVdso(m, registry);
        if (mod) this.modules.set(m, mod);
        continue;
      }
      if (!m.path.startsWith('/')) continue;
      const fileKey = `${m.dev}:${m.inode}`;
      if (!this.byFile.has(fileKey)) this.byFile.set(fileKey, this.openModule(m, registry));
      const mod = this.byFile.get(fileKey);
      if (mod) this.modules.set(m, mod);
    }
  }

  refreshPerfMap(): void {
    const pm = readPerfMap(this.pid);
    if (pm) this.perfMap = pm;
  }

  private openModule(m: Mapping, registry: ModuleRegistry): ModuleFile | undefined {
    const range = `${m.start.toString(16)}-${m.end.toString(16)}`;
    const candidates = [`/proc/${this.pid}/map_files/${range}`, `/proc/${this.pid}/root${m.path}`];
    if (!m.deleted) candidates.push(m.path);
    let lastError = '';
    for (const p of candidates) {
      let fd: number;
      try {
        fd = fs.openSync(p, 'r');
      } catch (e) {
        lastError = (e as NodeJS.ErrnoException).code ?? String(e);
        continue;
      }
      // The name may now point at a different file than the one mapped (rebuilt binary): the
      // inode tells. map_files needs no check: it is the mapped file itself.
      if (!p.includes('/map_files/') && fs.fstatSync(fd).ino !== m.inode) {
        fs.closeSync(fd);
        lastError = 'the file on disk was replaced after the process mapped it';
        continue;
      }
      return registry.adopt(fd, m.path);
    }
    this.unreadable.set(m.path, lastError);
    return undefined;
  }

  private captureVdso(m: Mapping, registry: ModuleRegistry): ModuleFile | undefined {
    let fd: number | undefined;
    try {
      fd = fs.openSync(`/proc/${this.pid}/mem`, 'r');
      const len = Number(m.end - m.start);
      const buf = Buffer.alloc(len);
      const n = fs.readSync(fd, buf, 0, len, m.start);
      return n === len ? registry.vdso(buf) : undefined;
    } catch {
      return undefined;
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
    }
  }
}
