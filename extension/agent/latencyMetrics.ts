// One "latency" entry of the config as series of ebpf_studio_function_latency_seconds, in the
// shape of the kit tracers' histograms (kitMetrics.ts): the kernel's log2 buckets, read from the
// kernel on each scrape and every intervalSeconds between, added to cumulative series. The calls
// are counted per cgroup in the kernel; each cgroup's container (named as the JVMs' are, from its
// runtime's files) gives the series' container labels, and calls outside any container share one
// series. The probes are on the file machine-wide (tracers/latency/fleet.ts); processes are looked
// through for new copies of it (a container started from another image) every intervalSeconds.
import type { TracerEnv } from '../tracers/tracer';
import { FleetLatency, nothingToProbe } from '../tracers/latency/fleet';
import type { HistEntry } from '../tracers/histDecode';
import { containerOfCgroupPath, type ContainerLookup } from '../sys/proc/container';
import type { CgroupNames } from '../sys/cgroup';
import type { LatencyExportConfig } from './config';
import { addLog2Slots, Histograms, type Labels } from './exposition';
import { containerLabels, JvmSelector } from './select';

export const FUNCTION_LATENCY_METRIC = 'ebpf_studio_function_latency_seconds';
export const FUNCTION_LATENCY_HELP =
  'Time calls of a native function took (uprobe at its entry, uretprobe or its ret instructions at its return), in every process running its file (containers: labelled as their runtime names them); kernel log2 buckets, _sum estimated at bucket middles.';

/** cgroups whose labels are remembered; past this the memory starts over (each is looked up again) */
const MAX_CGROUPS_KEPT = 4096;

export class LatencyExport {
  session?: FleetLatency;
  /** the health id of the entry: ebpf_studio_tracer_up{tracer="latency:BINARY:FUNCTION"} */
  readonly id: string;
  private readonly base: Labels;
  private readonly select?: JvmSelector;
  /** cgroup id → its series' labels, undefined when the config's containers leave it out */
  private readonly byCgroup = new Map<number, Labels | undefined>();

  constructor(
    readonly cfg: LatencyExportConfig,
    /** the family every entry's series are in */
    private readonly hist: Histograms,
    private readonly cgroups: CgroupNames,
    private readonly containers: ContainerLookup,
  ) {
    this.id = `latency:${cfg.binary}:${cfg.function}`;
    this.base = { function: cfg.function, binary: cfg.binary, ...cfg.labels };
    if (cfg.containers) this.select = new JvmSelector(undefined, cfg.containers);
  }

  /**
   * Loads the probes on whatever runs the file now; throws (the caller keeps the health and looks
   * again every interval) when nothing could be probed, saying why. Returns the warnings.
   */
  start(env: TracerEnv): string[] {
    this.session ??= new FleetLatency(this.cfg.binary, this.cfg.function, env);
    const found = this.session.scan();
    if (this.session.attached.length === 0) throw nothingToProbe(this.cfg.binary, this.cfg.function, this.session.problems);
    return found.problems;
  }

  /** A later look: new copies of the file (new containers), and what was refused among them. */
  look(): { added: number; problems: string[] } {
    if (!this.session) return { added: 0, problems: [] };
    const r = this.session.scan();
    return { added: r.added.length, problems: r.problems };
  }

  get up(): boolean {
    return (this.session?.attached.length ?? 0) > 0;
  }

  /** Reads the kernel's counts since the last read into the series. */
  async read(): Promise<void> {
    if (!this.up) return;
    this.add(await this.session!.read());
  }

  lost(): number {
    return this.up ? this.session!.lost() : 0;
  }

  /**
   * Counts of a cgroup not named yet (made since the cgroup tree was last walked) wait for the next
   * read, once; a cgroup gone by then is counted without container labels (or, with the config's
   * containers, left out).
   */
  private add(entries: HistEntry[]): void {
    const prior = new Map(this.waiting);
    const waiting = new Map([...prior].map(([id, w]) => [id, { slots: w.slots, again: true }]));
    this.waiting.clear();
    for (const e of entries) waiting.set(e.key, { slots: addSlots(waiting.get(e.key)?.slots, e.slots), again: prior.has(e.key) });
    for (const [id, w] of waiting) {
      const labels = this.labels(id, w.again);
      if (labels === 'later') this.waiting.set(id, { slots: w.slots, again: true });
      else if (labels) {
        addLog2Slots(this.hist, labels, w.slots);
        this.seen.set(Object.values(labels).join('\u0000'), Date.now());
      }
    }
  }

  private readonly waiting = new Map<number, { slots: number[]; again: boolean }>();
  /** when each series last counted a call (Date.now()), by its label values */
  private readonly seen = new Map<string, number>();

  /** Drops the series that counted no call for `ms` (a container removed). */
  forgetIdle(now: number, ms: number): void {
    for (const [key, at] of this.seen) {
      if (now - at < ms) continue;
      this.seen.delete(key);
      this.hist.forget((l) => Object.values(l).join('\u0000') === key);
    }
  }

  /** The labels of a cgroup's calls: its container's, none outside one; undefined when the config's containers leave it out. */
  private labels(cgroupId: number, last: boolean): Labels | undefined | 'later' {
    if (this.byCgroup.has(cgroupId)) return this.byCgroup.get(cgroupId);
    const path = this.cgroups.name(cgroupId);
    if (path === undefined && !last) return 'later';
    const c = path === undefined ? undefined : containerOfCgroupPath(path);
    const info = c ? this.containers.describe(c) : undefined;
    const covered = !this.select || this.select.coversCgroup(path, info?.id);
    const labels = covered ? { ...this.base, ...containerLabels(info) } : undefined;
    // A cgroup not named yet (made since the last walk) is asked again next time.
    if (path !== undefined) {
      if (this.byCgroup.size >= MAX_CGROUPS_KEPT) this.byCgroup.clear();
      this.byCgroup.set(cgroupId, labels);
    }
    return labels;
  }

  close(): void {
    this.session?.close();
    this.session = undefined;
  }
}

function addSlots(into: number[] | undefined, from: number[]): number[] {
  const out = into ?? [];
  from.forEach((c, i) => (out[i] = (out[i] ?? 0) + c));
  return out;
}
