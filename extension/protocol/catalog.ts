// The tracer catalog: every fact about a tracer that more than one place needs (the Sessions view,
// the session-file reader, restorable panels, the CLI's help, loss advice, tests and benchmarks),
// kept once. Pure data: each table that used to name the tracers by hand now reads this one, and
// test/unit/catalog.test.ts checks package.json against it.
import type { TracingName } from './protocol';

/** What one run needs at least: the whole system, any process, or a JVM. */
export type TracerTarget = 'system' | 'process' | 'jvm';

/** Nouns a latency view and CLI use for a log2-histogram tracer ("waits", "I/Os"). */
export interface HistogramNouns {
  /** one measured event, plural: "waits" */
  events: string;
  /** what the histogram's axis measures: "time waiting for a CPU" */
  measure: string;
  /** one line of what an event is, for legends and tooltips */
  meaning: string;
  /** the key labels by "per" mode (table header and CLI heading): { process: 'pid' } */
  keyLabels: Readonly<Record<string, string>>;
  /** the key as a noun by "per" mode ("process", "disk"), for the table title */
  keyNouns: Readonly<Record<string, string>>;
  /** "per" modes whose key is a device number (the kernel's dev_t), shown as major:minor */
  devKeys?: readonly string[];
  /** "per" modes whose key is an IPv4 address (network byte order read as a little-endian u32), shown as 10.0.0.1 */
  addressKeys?: readonly string[];
  /** the tracer's own options beyond the kit's, all boolean (each a CLI flag of its name): with
   *  keyLabels' modes they make its TracerTypes entry (protocol.ts), unless it writes its own */
  flags?: readonly string[];
  /** the editor command's pickers and panel: "Run Queue Latency" titles them all */
  editor: { title: string; scopes: readonly HistogramScope[] };
  /** its BPF side can keep to one container's cgroup subtree (bpf/cgroup_filter.bpf.h): the CLI's
   *  --container and the editor's container scope (added after "One process…") */
  containers?: boolean;
}

/** One choice of the editor's scope picker. */
export interface HistogramScope {
  label: string;
  detail: string;
  per: string;
  /** asks for a process (its pid becomes the option) */
  oneProcess?: boolean;
}

export interface TracerEntry {
  /** what its sessions are called in the Sessions view */
  title: string;
  /** codicon of its sessions */
  icon: string;
  /** editor commands that start it (each must be in package.json's contributes.commands) */
  commands: readonly string[];
  /** the CLI command that runs it, and the one line of `ebpf-studio --help` */
  /** operandExample: an operand the command needs after its options, valid for any process (tests start it with it) */
  cli?: { command: string; summary: string; operandExample?: string };
  /** takes --pid; kernelThreads: a kernel thread is a valid target (it has no user code to probe) */
  pid?: { kernelThreads: boolean };
  target: TracerTarget;
  /** what makes it lose less, in the CLI's words */
  lossAdvice?: string;
  /** the bundled view (dist/webview/<view>.js, viewType ebpfStudio.<view>) its saved sessions open in */
  sessionView?: string;
  /** its BPF programs' names as the kernel keeps them (16 bytes): tests find ours by them */
  programs?: string;
  /** a log2-histogram tracer (the kit: bpf/hist_tracer.bpf.h, tracers/histTracer.ts, webview/common/latencyView.ts) */
  histogram?: HistogramNouns;
}

/** Every tracer a user runs (TracingName), and java-heap, whose sessions are saved and listed. */
export type CatalogName = TracingName | 'java-heap';

export const CATALOG = {
  'java-gc': {
    title: 'Java GC',
    icon: 'coffee',
    commands: ['ebpfStudio.traceJavaGc'],
    cli: { command: 'java-gc', summary: 'trace Java GC (hotspot USDT): each collection by its collector as the JVM counts it, pauses, safepoints, pool usage' },
    pid: { kernelThreads: false },
    target: 'jvm',
    lossAdvice: 'trace one JVM (--pid) instead of --all, or drop short pauses in the kernel with --min-us N',
    sessionView: 'javaGc',
    programs: '^handle_(gc|pool)_',
  },
  runqlat: {
    title: 'Run-queue latency',
    icon: 'watch',
    commands: ['ebpfStudio.showRunQueueLatency'],
    cli: { command: 'runqlat', summary: 'run-queue latency: how long runnable threads wait for a CPU (log2 histograms)' },
    pid: { kernelThreads: true },
    target: 'system',
    lossAdvice: 'narrow it with --pid P, or use --per-process instead of --per-thread (fewer histogram keys)',
    sessionView: 'latencyKit',
    programs: '^(wakeup|wakeup_new|switch|runq_exec)_(btf|raw)$',
    histogram: {
      events: 'waits',
      measure: 'time waiting for a CPU',
      meaning: 'a thread runnable but not running',
      keyLabels: { none: '', process: 'pid', thread: 'tid', pidns: 'pidns', cgroup: 'cgroup' },
      keyNouns: { none: '', process: 'process', thread: 'thread', pidns: 'PID namespace', cgroup: 'cgroup' },
      containers: true,
      editor: {
        title: 'Run Queue Latency',
        scopes: [
          { label: '$(globe) Whole system', detail: 'One histogram of every thread’s waits', per: 'none' },
          { label: '$(symbol-method) One process…', detail: 'Only the threads of a process you pick', per: 'none', oneProcess: true },
          { label: '$(list-tree) Per process', detail: 'A histogram per process, in a table sortable by p99 or count', per: 'process' },
          { label: '$(list-flat) Per thread', detail: 'A histogram per thread id', per: 'thread' },
          { label: '$(package) Per PID namespace', detail: 'A histogram per PID namespace (containers)', per: 'pidns' },
        ],
      },
    },
  },
  biolatency: {
    title: 'Block I/O latency',
    icon: 'database',
    commands: ['ebpfStudio.showBlockIoLatency'],
    cli: { command: 'biolatency', summary: 'block I/O latency: how long disk requests take, per disk or process (log2 histograms)' },
    pid: { kernelThreads: true },
    target: 'system',
    lossAdvice: 'narrow it with --pid P, or use --per-disk instead of --per-process (fewer histogram keys)',
    sessionView: 'latencyKit',
    programs: '^rq_(insert|issue|complete)_(btf|raw)$',
    histogram: {
      events: 'I/Os',
      measure: 'time from issue (or queueing) to completion',
      meaning: 'a block request completed by a disk',
      keyLabels: { none: '', disk: 'disk', process: 'pid' },
      keyNouns: { none: '', disk: 'disk', process: 'process' },
      devKeys: ['disk'],
      flags: ['queued'],
      containers: true,
      editor: {
        title: 'Block I/O Latency',
        scopes: [
          { label: '$(globe) All disks', detail: 'One histogram of every block request', per: 'none' },
          { label: '$(symbol-method) One process…', detail: 'Only the I/O a process you pick starts', per: 'none', oneProcess: true },
          { label: '$(database) Per disk', detail: 'A histogram per disk, in a table sortable by p99 or count', per: 'disk' },
          { label: '$(list-tree) Per process', detail: 'A histogram per process that started the I/O', per: 'process' },
        ],
      },
    },
  },
  cpudist: {
    title: 'CPU time per run',
    icon: 'pulse',
    commands: ['ebpfStudio.showCpuDistribution'],
    cli: { command: 'cpudist', summary: 'CPU time per run: how long threads stay on a CPU each time (or off it, --offcpu), per process or thread (log2 histograms)' },
    pid: { kernelThreads: true },
    target: 'system',
    lossAdvice: 'narrow it with --pid P, or use --per-process instead of --per-thread (fewer histogram keys)',
    sessionView: 'latencyKit',
    programs: '^cpu_(switch|exit|exec)_(btf|raw)$',
    histogram: {
      events: 'runs',
      measure: 'time on a CPU per run (off it with --offcpu)',
      meaning: 'a thread switched in and later out of a CPU',
      keyLabels: { none: '', process: 'pid', thread: 'tid' },
      keyNouns: { none: '', process: 'process', thread: 'thread' },
      flags: ['offcpu', 'preempted'],
      containers: true,
      editor: {
        title: 'On-CPU Time per Run',
        scopes: [
          { label: '$(globe) Whole system', detail: 'One histogram of every thread’s runs', per: 'none' },
          { label: '$(symbol-method) One process…', detail: 'Only the threads of a process you pick', per: 'none', oneProcess: true },
          { label: '$(list-tree) Per process', detail: 'A histogram per process, in a table sortable by p99 or count', per: 'process' },
          { label: '$(list-flat) Per thread', detail: 'A histogram per thread id', per: 'thread' },
        ],
      },
    },
  },
  tcplat: {
    title: 'TCP latency',
    icon: 'plug',
    commands: ['ebpfStudio.showTcpLatency'],
    cli: { command: 'tcplat', summary: 'TCP latency: connect latency, or round-trip times with --rtt, per remote address or process (log2 histograms)' },
    pid: { kernelThreads: true }, // kernel threads open TCP connections too (NFS, iSCSI clients)
    target: 'system',
    lossAdvice: 'narrow it with --pid P, or use --per-address instead of --per-process (fewer histogram keys)',
    sessionView: 'latencyKit',
    programs: '^tcp_(state|probe)_(btf|raw)$',
    histogram: {
      events: 'connects',
      measure: 'time from SYN sent to established (round-trip time with --rtt)',
      meaning: 'a TCP connect that completed (a received segment with --rtt)',
      keyLabels: { none: '', address: 'address', process: 'pid' },
      keyNouns: { none: '', address: 'remote address', process: 'process' },
      addressKeys: ['address'],
      flags: ['rtt'],
      editor: {
        title: 'TCP Connect Latency',
        scopes: [
          { label: '$(globe) Every connect', detail: 'One histogram of every outgoing TCP connect', per: 'none' },
          { label: '$(symbol-method) One process…', detail: 'Only the connects of a process you pick', per: 'none', oneProcess: true },
          { label: '$(remote) Per remote address', detail: 'A histogram per IPv4 address connected to', per: 'address' },
          { label: '$(list-tree) Per process', detail: 'A histogram per process that connected', per: 'process' },
        ],
      },
    },
  },
  latency: {
    title: 'Function latency',
    icon: 'dashboard',
    commands: ['ebpfStudio.measureLatency', 'ebpfStudio.profileSlowCalls'],
    cli: { command: 'latency', summary: 'how long one function of a running process takes (FUNCTION or FILE:LINE): p50/p99, log2 histogram, the slow calls with their stacks', operandExample: 'clock_nanosleep' },
    pid: { kernelThreads: false },
    target: 'process',
    lossAdvice: 'raise --threshold-ms so fewer slow calls are sent with their stacks',
    programs: '^lat_(entry|return|exit_btf|exit_raw|prof_switch|prof_sample)$',
  },
  memleak: {
    title: 'Memory leaks',
    icon: 'debug-breakpoint-data',
    commands: ['ebpfStudio.findMemoryLeaks', 'ebpfStudio.runWithLeakTracing'],
    cli: { command: 'memleak', summary: 'outstanding allocations by stack, on source lines (attach to --pid or launch -- COMMAND)' },
    pid: { kernelThreads: false },
    target: 'process',
    lossAdvice: 'record fewer allocations with --sample-rate N (e.g. 10) or --min-size BYTES, or allow more with --max-outstanding N',
    sessionView: 'memleak',
    programs: '^(malloc|calloc|realloc|free|alloc|mmap|munmap|exit|posix|aligned|pvalloc|reallocarray)_',
  },
  profile: {
    title: 'CPU profile',
    icon: 'flame',
    commands: ['ebpfStudio.profileCpu'],
    cli: { command: 'profile', summary: 'CPU profile: sampled on-CPU stacks with Java frames (folded stacks, JSON, or the hottest functions)' },
    pid: { kernelThreads: false },
    target: 'system',
    lossAdvice: 'sample less often (--frequency 49), copy less stack per sample (--stack-copy-kb 8), for a shorter --duration, or keep more stacks with --stack-storage-size N',
    sessionView: 'flamegraph',
    programs: '^on_sample$',
  },
  jvm: {
    title: 'JVM timeline',
    icon: 'timeline-open',
    commands: ['ebpfStudio.openJvmTimeline'],
    cli: { command: 'jvm', summary: 'the JVM timeline of one JVM: GC by collector, safepoints, run-queue waits and CPU samples per thread group, on one clock' },
    pid: { kernelThreads: false },
    target: 'jvm',
    lossAdvice: 'sample less often (--frequency 49) or trace for a shorter --duration',
    // the java-gc, runqlat and profile programs on one JVM, and the off-CPU tracer's
    programs: '^(handle_(gc|pool)_|(wakeup|wakeup_new|switch|runq_exec)_(btf|raw)$|on_sample$|thread_exit$|dump_threads$)',
  },
  'java-heap': {
    title: 'Java heap leaks',
    icon: 'symbol-class',
    commands: [],
    target: 'jvm',
    sessionView: 'memleak',
  },
} as const satisfies Record<string, TracerEntry>;

// Every tracer has an entry and every entry is a tracer. Checked apart from the literal above:
// TracerTypes derives the kit tracers' entries from it, so its type may not depend on TracerTypes.
const _everyTracer: Record<CatalogName, TracerEntry> = CATALOG;
type NotATracer = Exclude<keyof typeof CATALOG, CatalogName>;
const _onlyTracers: [NotATracer] extends [never] ? true : NotATracer = true;
void _everyTracer;
void _onlyTracers;

type Catalog = typeof CATALOG;

/** Tracers whose finished sessions are saved as session files (the JVM timeline saves its own). */
export type SessionTracer = { [K in CatalogName]: Catalog[K] extends { sessionView: string } ? K : never }[CatalogName];
/** The log2-histogram tracers (built on the kit). */
export type HistogramTracer = { [K in keyof Catalog]: Catalog[K] extends { histogram: HistogramNouns } ? K : never }[keyof Catalog];
type KitNouns<N extends HistogramTracer> = Catalog[N]['histogram'];
/** A kit tracer's "per" modes (its keyLabels) and own boolean options (its flags). */
export type KitPer<N extends HistogramTracer> = keyof KitNouns<N>['keyLabels'] & string;
export type KitFlags<N extends HistogramTracer> = { [F in (KitNouns<N> extends { flags: readonly string[] } ? KitNouns<N>['flags'][number] : never)]: boolean };

export const CATALOG_NAMES = Object.keys(CATALOG) as CatalogName[];
export const HISTOGRAM_TRACERS = CATALOG_NAMES.filter((n) => 'histogram' in CATALOG[n]) as HistogramTracer[];

/** Whether a tracer is built on the log2-histogram kit. */
export function isHistogramTracer(name: string): name is HistogramTracer {
  return (HISTOGRAM_TRACERS as string[]).includes(name);
}

/** A histogram's key as the CLI and the key table show it: a pid, a disk's "254:0", an address's "10.0.0.1". */
export function keyText(name: HistogramTracer, per: string, key: number): string {
  const nouns = histogramOf(name);
  if (nouns.devKeys?.includes(per)) return `${key >>> 20}:${key & 0xfffff}`;
  if (nouns.addressKeys?.includes(per)) return [0, 8, 16, 24].map((s) => (key >>> s) & 255).join('.');
  return String(key);
}

/** The nouns and editor pickers of a log2-histogram tracer. */
export function histogramOf(name: HistogramTracer): HistogramNouns {
  return (CATALOG[name] as TracerEntry).histogram!;
}

/** The entry of a tracer named in data (a session file, a loss record); undefined when unknown. */
export function catalogEntry(name: string): TracerEntry | undefined {
  return Object.prototype.hasOwnProperty.call(CATALOG, name) ? (CATALOG as Record<string, TracerEntry>)[name] : undefined;
}

/** The CLI command's help line of a tracer. */
export function cliSummary(name: TracingName): string {
  return (CATALOG[name] as TracerEntry).cli?.summary ?? '';
}
