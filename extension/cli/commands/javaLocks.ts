// `ebpf-studio profile --pid P --event lock`: where a JVM's threads wait for locks — contended
// `synchronized` monitors and java.util.concurrent parks — by the waiter's Java stack, with a leaf
// frame naming the lock's class and its holder, as a text summary, --json (the profile document,
// unit µs), --folded or --pprof. `--event vthread`: where a JVM's virtual threads wait (the time
// each spent unmounted, by its Java stack). Reached from profile.ts, which only dispatches here.
import fs from 'node:fs';
import type { Io } from '../command';
import { commonOptions, durationFlag, numberFlag, parse, pidFlag } from '../args';
import { runTracer } from '../runTracer';
import { javaLocksTracer } from '../../tracers/javaLocks/tracer';
import { inputError, usageError } from '../../protocol/errors';
import { encodePprofGz } from '../../sys/profileFile';
import { JAVA_LOCKS_DEFAULT_DEPTH, JAVA_LOCKS_DEFAULT_PARK_PERIOD_US, JAVA_LOCKS_MAX_DEPTH, JAVA_LOCKS_MAX_PARK_PERIOD_US, JAVA_LOCKS_MIN_PARK_PERIOD_US, LOCK_MODULE } from '../../protocol/javaLocks';
import type { ProfileResult } from '../../protocol/profile';
import { fromProfileResult } from '../../model/flamegraph/profileData';
import { toFolded } from '../../model/flamegraph/formats';
import { processInfo } from '../../sys/proc/processes';
import { checkOutputFile } from './profileOutput';

export const LOCK_USAGE = `ebpf-studio profile --pid P --event lock [--depth N] [--park-period-us N] [--duration S] [--json | --folded] [--pprof FILE]
  Where the JVM P's threads wait for locks, through eBPF Studio's JVMTI agent (no restart; the agent
  stays loaded but idle afterwards): contended synchronized monitors, timed exactly (JVMTI
  MonitorContendedEnter/Entered), and threads parked in java.util.concurrent (ReentrantLock,
  read-write locks, semaphores, conditions: LockSupport.park), sampled. Each stack is the waiter's
  Java stack under a frame "[lock <class> held by <thread> at <Class.method(File.java:line)>]"
  ("[park <blocker class> ...]" for parks; the holder where the JVM knows it: a monitor's owner, a
  ReentrantLock's or write lock's exclusive owner).
  --depth N           Java frames kept per wait (default ${JAVA_LOCKS_DEFAULT_DEPTH}, at most ${JAVA_LOCKS_MAX_DEPTH})
  --park-period-us N  how often parked threads are looked at (default ${JAVA_LOCKS_DEFAULT_PARK_PERIOD_US} µs, ${JAVA_LOCKS_MIN_PARK_PERIOD_US}..${JAVA_LOCKS_MAX_PARK_PERIOD_US});
                      each look weighs the time since the previous one
  --json              the profile document: "unit": "us", each stack's "value" the µs waited
  --folded            folded stacks weighted by µs, the lock frame last
  --pprof FILE        also write gzipped pprof (lock_wait/microseconds)
  Not covered: Object.wait (a thread waiting to be notified is not contending), virtual threads'
  parks (only platform threads are looked at; see --event vthread), and locks held by native code.`;

export const VTHREAD_USAGE = `ebpf-studio profile --pid P --event vthread [--depth N] [--duration S] [--json | --folded] [--pprof FILE]
  Where the virtual threads of the JVM P (JDK 21+) wait: the time each spent unmounted from its
  carrier (parked, sleeping, blocked on a lock or on I/O), by its Java stack when it unmounted,
  through eBPF Studio's JVMTI agent (HotSpot's VirtualThreadMount/Unmount events; no restart).
  State: sleeping (Thread.sleep), I/O (under the JDK's socket/file code), else lock; a park with a
  blocker gets a "[park <class>]" leaf frame. Carrier threads are not counted: their idle time in
  ForkJoinPool is not the program's wait. --event offcpu shows the carriers' own OS-level time.
  --depth N           Java frames kept per wait (default ${JAVA_LOCKS_DEFAULT_DEPTH}, at most ${JAVA_LOCKS_MAX_DEPTH})
  --json              the profile document: "event": "vthread", "unit": "us", a state per stack
  --folded            folded stacks weighted by µs
  --pprof FILE        also write gzipped pprof (vthread_wait/microseconds)
  Not covered: a virtual thread pinned to its carrier (inside native code, or a synchronized block
  before JDK 24) blocks the carrier without unmounting, so its wait is not here but in --event
  offcpu under the carrier; the time between being made runnable and mounted again (waiting for a
  free carrier) counts as waiting; the agent's first virtual-thread session makes HotSpot report
  every mount and unmount to JVMTI from then on (a small cost per switch, while the JVM lives).`;

/** `--event lock|vthread` (or `--event=...`) among profile's arguments: which, else undefined. */
export function wantsLockEvent(argv: string[]): 'lock' | 'vthread' | undefined {
  const i = argv.indexOf('--event');
  const v = i >= 0 ? argv[i + 1] : argv.find((a) => a.startsWith('--event='))?.slice(8);
  return v === 'lock' || v === 'vthread' ? v : undefined;
}

const ms = (us: number) => (us >= 10_000_000 ? `${(us / 1e6).toFixed(1)} s` : `${(us / 1000).toFixed(1)} ms`);

/** The text report: each lock and holder with its total wait, then the waiting sites under it. */
export function formatLockSummary(r: ProfileResult, top = 20): string {
  const total = r.stacks.reduce((a, s) => a + (s.value ?? 0), 0);
  const byLock = new Map<string, { us: number; waits: number; sites: Map<string, number> }>();
  for (const s of r.stacks) {
    const lock = s.frames[0]?.module === LOCK_MODULE ? (s.frames[0].function ?? '[lock ?]') : '[lock ?]';
    const waiter = s.frames.find((f, i) => i > 0 && !/^(java|jdk|sun)\./.test(f.function ?? '')) ?? s.frames[1];
    const site = waiter ? `${waiter.function}${waiter.file ? ` (${waiter.file}${waiter.line ? `:${waiter.line}` : ''})` : ''}` : '?';
    const e = byLock.get(lock) ?? { us: 0, waits: 0, sites: new Map() };
    e.us += s.value ?? 0;
    e.waits += s.count;
    e.sites.set(site, (e.sites.get(site) ?? 0) + (s.value ?? 0));
    byLock.set(lock, e);
  }
  const pct = (n: number) => (total ? ((100 * n) / total).toFixed(1).padStart(5) : '  0.0');
  const lines = [`Java lock waits: ${ms(total)} in ${r.samples} waits, ${r.stacks.length} distinct stacks`, ''];
  for (const [lock, e] of [...byLock.entries()].sort((a, b) => b[1].us - a[1].us).slice(0, top)) {
    lines.push(`${pct(e.us)}% ${ms(e.us).padStart(10)}  ${lock}  (${e.waits} waits)`);
    for (const [site, us] of [...e.sites.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5)) lines.push(`         ${ms(us).padStart(10)}    waiting in ${site}`);
  }
  return lines.join('\n');
}

/** The text report of virtual threads' waits: per state, then the innermost program frames they waited in. */
export function formatVthreadSummary(r: ProfileResult, top = 20): string {
  const total = r.stacks.reduce((a, s) => a + (s.value ?? 0), 0);
  const pct = (n: number) => (total ? ((100 * n) / total).toFixed(1).padStart(5) : '  0.0');
  const sites = new Map<string, number>();
  for (const s of r.stacks) {
    const f = s.frames.find((x) => x.module !== LOCK_MODULE && !/^(java|jdk|sun)\./.test(x.function ?? '')) ?? s.frames[0];
    const site = f ? `${f.function}${f.file ? ` (${f.file}${f.line ? `:${f.line}` : ''})` : ''}` : '?';
    sites.set(site, (sites.get(site) ?? 0) + (s.value ?? 0));
  }
  const states = Object.entries(r.states ?? {}).map(([k, v]) => `  ${k.padEnd(10)} ${ms(v ?? 0).padStart(10)}  ${pct(v ?? 0)}%`);
  const rows = [...sites.entries()].sort((a, b) => b[1] - a[1]).slice(0, top).map(([site, us]) => `${pct(us)}% ${ms(us).padStart(10)}  ${site}`);
  return [`virtual threads' waits (unmounted): ${ms(total)} in ${r.samples} waits, ${r.stacks.length} distinct stacks`, '', ...states, '', ' share       time  where (innermost frame of the program)', ...rows].join('\n');
}

export async function runLockProfile(argv: string[], io: Io): Promise<number> {
  const event = wantsLockEvent(argv) ?? 'lock';
  const vthreads = event === 'vthread';
  const usage = vthreads ? VTHREAD_USAGE : LOCK_USAGE;
  const { values } = parse(argv, { ...commonOptions, pid: { type: 'string' }, event: { type: 'string' }, depth: { type: 'string' }, 'park-period-us': { type: 'string' }, folded: { type: 'boolean' }, pprof: { type: 'string' } });
  if (values.help) {
    io.out(usage);
    return 0;
  }
  const pid = pidFlag(values.pid);
  if (pid === undefined) throw usageError(`--event ${event} reads one JVM: give --pid P\n${usage}`);
  if (vthreads && values['park-period-us'] !== undefined) throw usageError('--park-period-us applies to --event lock: virtual threads are timed at each unmount and mount, not looked at');
  if (values.json && values.folded) throw usageError('--json and --folded exclude each other: give one');
  if (values.pprof === '') throw usageError('--pprof takes a file name, e.g. --pprof locks.pb.gz');
  const info = processInfo(pid);
  if (info && !info.jvm) throw inputError(`--event ${event} reads Java ${vthreads ? 'virtual threads' : 'monitors and parks'}, and pid ${pid} (${info.comm}) is not a JVM: for a native program's lock waits use \`ebpf-studio profile --pid ${pid} --event offcpu\` (the lock state is futex waits)`);
  const pprofFile = typeof values.pprof === 'string' ? checkOutputFile(values.pprof, '--pprof', 'locks.pb.gz') : undefined;
  const depth = numberFlag(values.depth, '--depth', 1, JAVA_LOCKS_MAX_DEPTH, { integer: true }) ?? JAVA_LOCKS_DEFAULT_DEPTH;
  const parkPeriodUs = numberFlag(values['park-period-us'], '--park-period-us', JAVA_LOCKS_MIN_PARK_PERIOD_US, JAVA_LOCKS_MAX_PARK_PERIOD_US, { integer: true }) ?? JAVA_LOCKS_DEFAULT_PARK_PERIOD_US;
  const startMs = Date.now();
  return runTracer(
    {
      tracer: javaLocksTracer,
      options: { pid, depth, parkPeriodUs, vthreads },
      privilege: 'none',
      json: Boolean(values.json),
      verbose: Boolean(values.verbose),
      durationS: durationFlag(values.duration),
      formatUpdate: () => '',
      formatResult: (r) => (values.folded ? toFolded(fromProfileResult(r, { groupByProcess: false })).trimEnd() : vthreads ? formatVthreadSummary(r) : formatLockSummary(r)),
      onResult: (r, out) => {
        if (!pprofFile) return;
        try {
          fs.writeFileSync(pprofFile, encodePprofGz(r, { startMs, durationMs: Date.now() - startMs }));
          out.err(`wrote ${r.stacks.length} stacks (${vthreads ? 'vthread_wait' : 'lock_wait'}/microseconds) to ${pprofFile} (pprof: go tool pprof -top ${pprofFile})`);
        } catch (e) {
          throw inputError(`cannot write ${pprofFile}: ${(e as Error).message}`);
        }
      },
      banner: values.json || values.folded ? undefined : () => `Tracing ${vthreads ? "virtual threads' waits" : 'contended Java monitors and parks'} of pid ${pid}... Ctrl-C to end.`,
    },
    io,
  );
}
