// One function's latency machine-wide, for the fleet agent: the probes of bpf/latency.bpf.c put
// on a file for every process that runs it (pid -1), those started later included, with the log2
// histogram kept in the kernel per cgroup (the agent names each cgroup's container). Uprobes live
// on an inode: a process in a container runs its image's own file, reached through
// /proc/PID/map_files or /proc/PID/root and told apart by its real file (mappedFile.ts), and each
// real file is probed once however many processes run it; a copy that is not root's is left alone. Such files are found by a look through
// /proc (scan()): a readlink per process (one look a second serves every entry), and the maps of a process only when it runs the file (a
// library: of each process once per program it runs). Nothing per call reaches user space; the
// histograms are read when the agent asks (read()).
import fs from 'node:fs';
import type { BpfObject } from '../../../native/index';
import { fromBpfError, inputError, unsuitableError } from '../../protocol/errors';
import { mapsOrExplain } from '../../sys/proc/processes';
import { hostFileIdentity, reachMapped, type ReachedFile } from '../../sys/proc/mappedFile';
import type { TracerEnv } from '../tracer';
import { loadFirstWorking, readCounter, setRodata } from '../bpfObject';
import { HistEpochs } from '../histEpochs';
import { CTR_HIST_FULL, CTR_START_FULL, decodeHistEntries, HIST_KEY_SIZE, type HistEntry } from '../histDecode';
import { configureSlowProfile } from './slowProfile';
import { resolveInFile, type ResolvedFunction } from './resolve';

/** bpf/latency.bpf.c's LAT_KEY_CGROUP */
const KEY_CGROUP = 1;

const INFLIGHT_MAX = 4096;
const CGROUPS_MAX = 4096;

type Returns = 'ret' | 'uretprobe';

/** One loaded object: the returns of every file it probes are caught the same way (a constant of the object). */
interface ProbeSet {
  obj: BpfObject;
  epochs: HistEpochs;
}

export interface FleetFile {
  /** the file as the processes running it name it, and the first pid it was reached through (none: the host's file) */
  name: string;
  pid?: number;
  identity: string;
}

/**
 * How a function's returns are caught: at its ret instructions where an exception or a moving
 * stack may pass through a call, else the cheaper uretprobe (whose swapped return address an
 * unwinder cannot step past: the program would abort). A library may be loaded by any program, a
 * C++ one among them, so its functions are always probed at their ret instructions.
 */
function returnsOf(fn: ResolvedFunction, library: boolean): Returns {
  if (fn.tailCalls.length) return 'uretprobe';
  return fn.unwinds || library ? 'ret' : 'uretprobe';
}

export class FleetLatency {
  private readonly sets = new Map<Returns, ProbeSet>();
  /** real file → what was attached there, or why it was not */
  private readonly files = new Map<string, { file: FleetFile; fn?: ResolvedFunction; problem?: string }>();
  /** pid → the program it ran when last looked at */
  private readonly looked = new Map<number, string>();
  private readonly library: boolean;
  private readonly hostReal?: string;
  private reading: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    readonly binary: string,
    readonly target: string,
    private readonly env: TracerEnv,
  ) {
    this.library = /\.so(\.[0-9.]+)?$/.test(binary);
    try {
      this.hostReal = fs.realpathSync(binary);
    } catch {
      /* not on this machine's root: only processes (containers) may run it */
    }
  }

  /** The files probed, and those refused with the reason. */
  get attached(): FleetFile[] {
    return [...this.files.values()].filter((f) => f.fn).map((f) => f.file);
  }

  get problems(): string[] {
    return [...this.files.values()].flatMap((f) => (f.problem ? [f.problem] : []));
  }

  /**
   * The host's file (if it has one) and every file running processes know by that name. Returns
   * what was newly attached and the new problems; throws only when nothing could be probed at all
   * and there is no file of that name here (the caller says so and looks again later).
   */
  scan(): { added: FleetFile[]; problems: string[] } {
    const added: FleetFile[] = [];
    const problems: string[] = [];
    const note = (r: { added?: FleetFile; problem?: string }) => {
      if (r.added) added.push(r.added);
      if (r.problem) problems.push(r.problem);
    };
    if (this.hostReal) {
      const identity = hostFileIdentity(this.hostReal);
      if (identity && !this.files.has(identity)) note(this.attachFile({ name: this.binary, path: this.hostReal, dev: '', inode: 0, identity }));
    }
    for (const pid of this.newPrograms()) {
      let file: ReachedFile | undefined;
      try {
        const m = mapsOrExplain(pid).find((x) => x.perms.includes('x') && (x.path === this.binary || x.path === this.hostReal));
        if (m) file = reachMapped(pid, m);
      } catch {
        continue; // exited, or closed to us: looked at again if it runs another program
      }
      if (!file || this.files.has(file.identity)) continue;
      const theirs = notRoots(file.path);
      // Not remembered: a user creating files by the thousand would otherwise fill the map.
      if (theirs) this.env.log(`latency: not probing ${file.name} as pid ${pid} runs it: ${theirs}`);
      else note(this.attachFile(file, pid));
    }
    return { added, problems };
  }

  /** Processes that run a program not looked at yet (an exec, a new process); forgets the pids gone. */
  private newPrograms(): number[] {
    const out: number[] = [];
    const programs = programsNow();
    for (const [pid, exe] of programs) {
      if (this.looked.get(pid) === exe) continue;
      this.looked.set(pid, exe);
      const program = exe.replace(/ \(deleted\)$/, '');
      if (this.library || program === this.binary || program === this.hostReal) out.push(pid);
    }
    for (const pid of this.looked.keys()) if (!programs.has(pid)) this.looked.delete(pid);
    return out;
  }

  private attachFile(file: ReachedFile, pid?: number): { added?: FleetFile; problem?: string } {
    const ff: FleetFile = { name: file.name, pid, identity: file.identity };
    const where = pid === undefined ? file.name : `${file.name} as pid ${pid} runs it`;
    try {
      const fn = resolveInFile(file, this.target);
      const returns = returnsOf(fn, this.library);
      if (returns === 'ret' && fn.retOffsets.length === 0) throw unsuitableError(`${fn.name} never returns (no ret instruction): there is no call duration to measure`);
      const set = this.probeSet(returns);
      set.obj.attachUprobe('lat_entry', { binary: file.path, offset: fn.entryOffset, pid: -1, retprobe: false });
      if (returns === 'ret') for (const offset of fn.retOffsets) set.obj.attachUprobe('lat_return', { binary: file.path, offset, pid: -1, retprobe: false });
      else set.obj.attachUprobe('lat_return', { binary: file.path, offset: fn.entryOffset, pid: -1, retprobe: true });
      this.files.set(file.identity, { file: ff, fn });
      const risk = returns === 'uretprobe' && (fn.unwinds || this.library) ? ` (it ends in a tail call, so its returns are caught by a uretprobe: an exception thrown through it aborts the program${fn.unwinds ? `, and ${fn.unwinds}` : ''})` : '';
      this.env.log(`latency: ${fn.name} in ${where}: entry and ${returns === 'ret' ? `${fn.retOffsets.length} ret instructions` : 'a uretprobe'}, every process${risk}`);
      return { added: ff };
    } catch (e) {
      const problem = `${where}: ${(e as Error).message}`;
      // Refused once per real file: the next look does not try (and say) it again.
      this.files.set(file.identity, { file: ff, problem });
      return { problem };
    }
  }

  private probeSet(returns: Returns): ProbeSet {
    const had = this.sets.get(returns);
    if (had) return had;
    const { obj } = loadFirstWorking(this.env, 'latency', [['lat_entry', 'lat_return', 'lat_exit_btf'], ['lat_entry', 'lat_return', 'lat_exit_raw']], (b) => {
      // Preallocated per entry of the config: sized for a machine, not the CLI's defaults. Threads
      // inside the function at once, and cgroups with calls in one read, past these are counted lost.
      b.setMaxEntries('callers', 1);
      b.setMaxEntries('inflight', INFLIGHT_MAX);
      b.setMaxEntries('hists', CGROUPS_MAX);
      b.setMaxEntries('slow', 4096);
      setRodata(b, { target_tgid: 0, key_mode: KEY_CGROUP, unit_ns: 1000, threshold_ns: 0n, ret_insns: returns === 'ret', by_caller: false, ...configureSlowProfile(b, false, 1, undefined) });
    });
    try {
      const exit = obj.programs().find((p) => p.name.startsWith('lat_exit_') && p.autoload);
      if (exit) obj.attach(exit.name);
    } catch (e) {
      obj.close();
      throw fromBpfError('attaching the latency probes\' thread-exit hook', e);
    }
    const set = { obj, epochs: new HistEpochs(obj, HIST_KEY_SIZE) };
    this.sets.set(returns, set);
    return set;
  }

  /** The calls counted since the last read, per cgroup (key: the low 32 bits of its id). Reads never overlap. */
  read(): Promise<HistEntry[]> {
    const run = this.reading.then(async () => {
      const out: HistEntry[] = [];
      for (const set of this.sets.values()) {
        const taken = await set.epochs.take(() => this.closed);
        if (taken) out.push(...decodeHistEntries(taken.dump, 'cgroup'));
      }
      return out;
    });
    this.reading = run.catch(() => undefined);
    return run;
  }

  /** Calls not counted: a map was full. */
  lost(): number {
    let n = 0;
    for (const { obj } of this.sets.values()) n += readCounter(obj, 'counters', CTR_START_FULL) + readCounter(obj, 'counters', CTR_HIST_FULL);
    return n;
  }

  close(): void {
    this.closed = true;
    for (const { obj } of this.sets.values()) obj.close();
    this.sets.clear();
  }
}

/** The last look through /proc, shared by every entry that looks within a second of it. */
let listing: { at: number; programs: Map<number, string> } | undefined;

/** Every process's program (the link /proc/PID/exe), kernel threads left out. */
function programsNow(now = Date.now()): Map<number, string> {
  if (listing && now - listing.at >= 0 && now - listing.at < 1000) return listing.programs;
  const programs = new Map<number, string>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      programs.set(Number(name), fs.readlinkSync(`/proc/${name}/exe`));
    } catch {
      // a kernel thread, or gone
    }
  }
  listing = { at: now, programs };
  return programs;
}

/**
 * Why a copy of the file found through a process is not root's, or undefined. Any user may run a
 * program of their own at that path in a mount namespace of their own (unshare -rm): probing it
 * would count their calls as the configured program's. A rootful container's image files are
 * root's; a rootless container's belong to its user, and are left out with the rest.
 */
function notRoots(file: string): string | undefined {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return 'it is gone';
  }
  if (st.uid !== 0) return `the file is owned by uid ${st.uid}, not root (a user's own copy)`;
  if (st.mode & 0o022) return `the file is writable by ${st.mode & 0o002 ? 'every user' : 'its group'}`;
  return undefined;
}

/** Why nothing of `binary` could be probed yet: no such file here, and no process runs one. */
export function nothingToProbe(binary: string, target: string, problems: string[]): Error {
  if (problems.length) return unsuitableError(`${target} cannot be probed: ${problems.join('; ')}`);
  return inputError(`${binary} is not a file on this machine and no running process runs a file of that name (looked for through /proc/PID/root): check the path (the one the program's own root knows it by); the agent looks again every interval`);
}
