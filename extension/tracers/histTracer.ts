// The user-space half of a log2-histogram tracer (runqlat, biolatency, ...): validates the kit's
// options, loads the tp_btf twins or else the raw_tp ones (bpf/hist_tracer.bpf.h), reads and
// resets the kernel histograms each interval (HistEpochs: one heat-map column each), ends the
// session when the target process exits, and returns the kit's result document. A tracer built
// on it is a spec: its object, its programs, what it keeps histograms per, its own options and its
// command line (data the CLI turns into a command: the spec is the tracer's one registration).
import type { BpfObject } from '../../native/index';
import type { HistOptions } from '../protocol/histogram';
import { histogramOf, type HistogramTracer, type KitFlags } from '../protocol/catalog';
import type { OptionsOf, ResultOf, TracerName, UpdateOf } from '../protocol/protocol';
import { total } from '../model/log2hist';
import { asObject, bool, int, num, oneOf, PID_MAX, str } from '../protocol/validate';
import { CONTAINER_QUERY, containerCgroup } from '../sys/proc/containerCgroup';
import { fromBpfError, inputError } from '../protocol/errors';
import { identify, sameProcess, type ProcessIdentity } from '../sys/proc/processes';
import { watchTarget } from './targetWatch';
import type { SessionEvents, Tracer, TracerEnv } from './tracer';
import { loadFirstWorking, readCounter, setRodata, type RodataValue } from './bpfObject';
import { HistEpochs } from './histEpochs';
import { CTR_HIST_FULL, CTR_START_FULL, decodeHistEntries, HIST_KEY_SIZE, HistAggregate } from './histDecode';

/** A catalog name of a kit tracer. */
export type HistName = HistogramTracer & TracerName;
type Opts<N extends HistName> = OptionsOf<N> & HistOptions;

export interface HistTracerSpec<N extends HistName> {
  name: N;
  /** bpf/<object>.bpf.c */
  object: string;
  /** the twins' base names (HIST_TWIN(tp, prog, fn) makes prog_btf and prog_raw) */
  programs: readonly string[];
  /** the twins these options need, where not all of them (an idle program still costs its runs); only they are loaded */
  attachOnly?(options: Opts<N>): readonly string[];
  /** twins of tracepoints older kernels lack: where a load with them fails, it is tried without them */
  newerKernel?: readonly string[];
  /** what is attached, for errors: "the scheduler tracepoints" */
  attaches: string;
  /** what a histogram can be kept per; the index is the key_mode the BPF side reads */
  per: readonly string[];
  /** the tracer's options beyond the kit's and its catalog flags (false unless given), from untrusted input */
  options?(o: Record<string, unknown>): Partial<OptionsOf<N>>;
  /** read-only data beyond the kit's (unit_ns, key_mode, target_tgid), knowing which twins are loaded */
  rodata?(options: Opts<N>, loaded: readonly string[]): Record<string, RodataValue>;
  /** its BPF object filters by cgroup (bpf/cgroup_filter.bpf.h): the `container` option selects one */
  containerFilter?: boolean;
  /** a name for a key the kernel could not name (a disk from its device number) */
  nameKey?(key: number, per: string): string | undefined;
  cli: HistCliSpec<N>;
}

/** A kit tracer's command line, `ebpf-studio <the catalog's cli.command>` (cli/histCommand.ts builds it). */
export interface HistCliSpec<N extends HistName> {
  /** help of --pid: "only threads of process P" */
  pid: string;
  /** --per-X flags: X is the per mode; the text is its help */
  per: Readonly<Record<string, string>>;
  /** help of the tracer's own boolean options (the catalog's flags), each a flag of the same name */
  flags?: Readonly<Record<keyof KitFlags<N>, string>>;
  /** how the flags show in the usage line when not "[--a] [--b]" ("[--offcpu | --preempted]") */
  usage?: string;
  banner(targets: number[], options: OptionsOf<N>): string;
}

/** A tracer built on the kit, with the spec it was built from. */
export type KitTracer<N extends HistName> = Tracer<N> & { readonly spec: HistTracerSpec<N> };

/** The kit's options (pid, per, unit, intervalS, retain) and the tracer's own. */
function validate<N extends HistName>(spec: HistTracerSpec<N>, raw: unknown): Opts<N> {
  const o = asObject(raw, 'options');
  return {
    pid: int(o, 'pid', 0, PID_MAX, 0),
    per: oneOf(o, 'per', spec.per as readonly string[], 'none'),
    unit: oneOf(o, 'unit', ['us', 'ms'] as const, 'us'),
    intervalS: num(o, 'intervalS', 0.1, 3600, 1),
    ...Object.fromEntries((histogramOf(spec.name).flags ?? []).map((f) => [f, bool(o, f, false)])),
    ...spec.options?.(o),
    ...containerOption(spec, o),
    // Only when asked (the agent): the options document stays as it was for everyone else.
    ...(o.retain !== undefined ? { retain: bool(o, 'retain', true) } : {}),
  } as Opts<N>;
}

/** The `container` option, where the tracer can filter by one. */
function containerOption<N extends HistName>(spec: HistTracerSpec<N>, o: Record<string, unknown>): { container?: string } {
  if (o.container === undefined) return {};
  if (!spec.containerFilter) throw inputError(`${spec.name} cannot select a container: trace its processes with --pid`);
  const container = str(o, 'container', 128);
  if (!CONTAINER_QUERY.test(container)) throw inputError(`container takes a container's name or id, not "${container.slice(0, 80)}"`);
  if (o.pid) throw inputError('give a pid or a container, not both');
  return { container };
}

/** The rodata of a container filter: its cgroup, resolved now (the container runs). */
function cgroupRodata(options: HistOptions, env: TracerEnv): Record<string, RodataValue> {
  if (!options.container) return {};
  const c = containerCgroup(options.container);
  env.log(`container ${c.label}: cgroup ${c.cgroupPath} (id ${c.id32}, level ${c.level}) and below`);
  return { target_cgroup: c.id32, target_cgroup_level: c.level };
}

function load<N extends HistName>(spec: HistTracerSpec<N>, options: Opts<N>, env: TracerEnv): BpfObject {
  const cgroup = cgroupRodata(options, env);
  const needed = spec.attachOnly?.(options) ?? spec.programs;
  const wanted = spec.programs.filter((p) => needed.includes(p));
  const older = wanted.filter((p) => !spec.newerKernel?.includes(p));
  // tp_btf then raw_tp, each with every twin wanted, then without those of newer kernels
  const sets = older.length < wanted.length ? [wanted, wanted, older, older] : [wanted, wanted];
  const variants = sets.map((set, i) => set.map((p) => `${p}_${i % 2 ? 'raw' : 'btf'}`));
  const { obj, variant } = loadFirstWorking(env, spec.object, variants, (o, i) =>
    setRodata(o, { target_tgid: options.pid, key_mode: spec.per.indexOf(options.per), unit_ns: options.unit === 'ms' ? 1_000_000 : 1000, ...cgroup, ...spec.rodata?.(options, sets[i]) }),
  );
  const kind = variant % 2 === 0 ? 'tp_btf' : 'raw_tp';
  try {
    for (const prog of variants[variant]) obj.attach(prog);
  } catch (e) {
    obj.close();
    throw fromBpfError(`attaching ${spec.attaches} (${kind})`, e);
  }
  env.log(`${spec.name}: attached via ${kind}`);
  return obj;
}

/** One running session: reads are serialized (the interval timer and stop() must not flip the epoch twice at once). */
class HistSession<N extends HistName> {
  private readonly agg: HistAggregate<N>;
  private readonly epochs: HistEpochs;
  private dropped = 0;
  private closed = false;
  private ending = false;
  private reading: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;
  private readonly unwatch: () => void;

  constructor(
    private readonly spec: HistTracerSpec<N>,
    private readonly options: Opts<N>,
    private readonly obj: BpfObject,
    private readonly env: TracerEnv,
    private readonly events: SessionEvents<N>,
    private readonly target: ProcessIdentity | undefined,
  ) {
    this.agg = new HistAggregate(spec.name, options.per, options.unit, options.retain !== false);
    this.epochs = new HistEpochs(obj, HIST_KEY_SIZE);
    this.timer = setInterval(() => void this.tick(), options.intervalS * 1000);
    this.unwatch = target ? watchTarget(target, () => void this.ended()) : () => undefined;
  }

  private async tick(): Promise<void> {
    await this.serial(false);
    if (this.target && !this.closed && !sameProcess(this.target)) await this.ended();
  }

  private async collect(final: boolean): Promise<void> {
    if (this.closed) return;
    const taken = await this.epochs.take(() => this.closed);
    if (!taken) return;
    const entries = decodeHistEntries(taken.dump, this.options.per);
    for (const e of entries) if (!e.comm && this.spec.nameKey) e.comm = this.spec.nameKey(e.key, this.options.per) ?? '';
    this.dropped = readCounter(this.obj, 'counters', CTR_START_FULL) + readCounter(this.obj, 'counters', CTR_HIST_FULL);
    if (final && entries.every((e) => total(e.slots) === 0)) return;
    this.events.update(this.agg.addInterval(entries, taken.endedNs, this.dropped) as unknown as UpdateOf<N>);
  }

  serial(final: boolean): Promise<void> {
    this.reading = this.reading.then(() => this.collect(final)).catch((e) => this.env.log(`${this.spec.name}: reading histograms failed: ${(e as Error).message}`));
    return this.reading;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.unwatch();
    this.obj.close();
  }

  private async ended(): Promise<void> {
    if (this.closed || this.ending) return;
    this.ending = true;
    // The target's last interval is read before the programs go: its final events are in it.
    await this.serial(true);
    this.close();
    this.events.ended('target-exited', `process ${this.options.pid} exited`);
  }

  result() {
    return this.agg.result(this.dropped);
  }
}

/** A Tracer from a spec. */
export function histTracer<N extends HistName>(spec: HistTracerSpec<N>): KitTracer<N> {
  return {
    name: spec.name,
    spec,
    validate: (raw) => validate(spec, raw),
    async start(options, env, events) {
      const o = options as Opts<N>;
      // By pid and start time: the session ends when this process exits, not when the pid is free.
      const target = o.pid ? identify(o.pid) : undefined;
      if (o.pid && !target) throw inputError(`no process with pid ${o.pid} is running (check with: ps -p ${o.pid})`);
      const s = new HistSession(spec, o, load(spec, o, env), env, events, target);
      return {
        targets: o.pid ? [o.pid] : [],
        warnings: [],
        snapshot: () => s.result() as unknown as ResultOf<N>,
        // Reads the kernel's histograms now (an update is sent before this resolves): a service
        // that reads on each scrape can keep a long interval.
        refresh: () => s.serial(false),
        async stop() {
          await s.serial(true);
          s.close();
          return s.result() as unknown as ResultOf<N>;
        },
      };
    },
  };
}
