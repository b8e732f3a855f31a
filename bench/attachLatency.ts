// `attach latency`: CLI start → every probe attached, per tracer, against bpftrace doing the same
// attach. Ours: spawn `node dist/cli.js <tracer> ...` → its banner on stderr (printed once
// tracer.start() has attached everything). bpftrace: spawn → its BEGIN probe's output (BEGIN
// fires after all probes are attached). Both include process start-up; ours also the Node
// start and bundle load. Runs alternate ours, bpftrace, ours, ...
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import type { TracingName } from '../extension/protocol/protocol';
import { cli, JAVA_HOME, libc, libjvm, LineProcess, median, round, startBpftrace, startCli, type Attached, type BenchContext, type Row } from './lib';

interface Case {
  tracer: string;
  ours: string[];
  bpftrace: { program: string; args: string[] };
  probes: string;
}

/** Time spent stopping tracers (detach), reported so the suite's run time is explained. */
const stopMs: Record<string, number[]> = {};

async function measure(key: string, start: () => Promise<Attached>): Promise<number> {
  const a = await start();
  const t = performance.now();
  await a.stop();
  (stopMs[key] ??= []).push(performance.now() - t);
  return a.attachMs;
}

export async function benchAttach(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 2 : 5;
  const jvm = new LineProcess(path.join(JAVA_HOME, 'bin', 'java'), ['-XX:+UseSerialGC', '-Xmx64m', '-cp', ctx.buildDir, 'GcHeavy']);
  const c = new LineProcess(path.join(ctx.buildDir, 'mallocfree'), ['bench']);
  try {
    await jvm.next('ready');
    await c.next('ready');
    const jvmPid = String(jvm.pid);
    const cPid = String(c.pid);
    const lib = libjvm();
    const lc = libc();
    // Same probe set as memleak on a C program: entry on 12 libc functions, return on 10.
    const entries = ['malloc', 'calloc', 'realloc', 'free', 'reallocarray', 'posix_memalign', 'aligned_alloc', 'memalign', 'valloc', 'pvalloc', 'mmap', 'munmap'];
    const rets = entries.filter((f) => f !== 'free' && f !== 'munmap');
    // Keyed by the registry: a new tracer gets a row here or says why not (a missing key fails the type check).
    const byTracer: Record<TracingName, Omit<Case, 'tracer'> | null> = {
      'java-gc': {
        ours: ['java-gc', '--pid', jvmPid],
        bpftrace: { program: ['gc__begin', 'gc__end', 'mem__pool__gc__begin', 'mem__pool__gc__end'].map((p) => `usdt:${lib}:hotspot:${p} { @[probe] = count(); }`).join(' '), args: ['-p', jvmPid] },
        probes: '4 USDT probes in libjvm.so',
      },
      runqlat: {
        ours: ['runqlat'],
        bpftrace: { program: 'tracepoint:sched:sched_wakeup, tracepoint:sched:sched_wakeup_new { @qtime[args->pid] = nsecs; } tracepoint:sched:sched_switch { @ns = hist(nsecs); }', args: [] },
        probes: '3 sched tracepoints',
      },
      biolatency: {
        ours: ['biolatency'],
        // from issue (the default) attaches issue and complete; --queued adds insert
        bpftrace: { program: 'tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; } tracepoint:block:block_rq_complete { @us = hist(nsecs); }', args: [] },
        probes: '2 block tracepoints',
      },
      cpudist: {
        ours: ['cpudist'],
        bpftrace: { program: 'tracepoint:sched:sched_switch { @start[args->next_pid] = nsecs; @ns = hist(nsecs - @start[args->prev_pid]); }', args: [] },
        probes: 'sched_switch',
      },
      tcplat: {
        ours: ['tcplat'],
        // connect latency (the default) attaches inet_sock_set_state only; --rtt, tcp_probe only
        bpftrace: { program: 'tracepoint:sock:inet_sock_set_state /args->newstate == 2/ { @start[args->skaddr] = nsecs; } tracepoint:sock:inet_sock_set_state /args->oldstate == 2/ { @us = hist(nsecs - @start[args->skaddr]); }', args: [] },
        probes: 'inet_sock_set_state',
      },
      memleak: {
        ours: ['memleak', '--pid', cPid, '--mode', 'uprobe'],
        bpftrace: { program: `${entries.map((f) => `uprobe:${lc}:${f}`).join(', ')} /pid == ${cPid}/ { @e[tid] = arg0; } ${rets.map((f) => `uretprobe:${lc}:${f}`).join(', ')} /pid == ${cPid}/ { @r[retval] = @e[tid]; }`, args: [] },
        probes: '12 uprobes + 10 uretprobes in libc',
      },
      profile: {
        ours: ['profile', '--pid', cPid, '--frequency', '99'],
        bpftrace: { program: `profile:hz:99 /pid == ${cPid}/ { @[ustack, kstack] = count(); }`, args: [] },
        probes: 'cpu-clock perf event on each CPU',
      },
      // the JVM timeline attaches what java-gc, runqlat and profile attach (rows above) on one JVM; bpftrace has no counterpart
      jvm: null,
      latency: {
        ours: ['latency', '--pid', cPid, 'free'],
        bpftrace: { program: `uprobe:${lc}:free /pid == ${cPid}/ { @s[tid] = nsecs; } uretprobe:${lc}:free /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }`, args: [] },
        probes: "1 uprobe on free's entry + its returns (ours: a uprobe per ret instruction; bpftrace: a uretprobe)",
      },
    };
    const cases: Case[] = Object.entries(byTracer).flatMap(([tracer, k]) => (k ? [{ tracer, ...k }] : []));
    // The floor under every figure: starting Node and loading the CLI bundle, tracing nothing.
    const startup = median(
      Array.from({ length: rounds + 1 }, () => {
        const t = performance.now();
        spawnSync(process.execPath, [cli, '--help'], { stdio: 'ignore' });
        return performance.now() - t;
      }),
    );
    const rows: Row[] = [];
    for (const k of cases) {
      const ours: number[] = [];
      const peer: number[] = [];
      for (let r = 0; r < rounds; r++) {
        ours.push(await measure(`ours ${k.tracer}`, () => startCli(k.ours)));
        peer.push(await measure(`bpftrace ${k.tracer}`, () => startBpftrace(k.bpftrace.program, k.bpftrace.args)));
      }
      const ms = (xs: number[]) => xs.map((x) => Math.round(x)).join(' ');
      ctx.log(`  ${k.tracer}: attach ours ${ms(ours)} ms, bpftrace ${ms(peer)} ms; stop ours ${ms(stopMs[`ours ${k.tracer}`])} ms, bpftrace ${ms(stopMs[`bpftrace ${k.tracer}`])} ms`);
      rows.push({
        name: `attach latency ${k.tracer}`,
        value: round(median(ours), 0),
        unit: 'ms',
        target: 300,
        better: 'lower',
        peer: { name: 'bpftrace', value: round(median(peer), 0) },
        detail: `${k.probes}; spawn → attached, median of ${rounds} alternating runs (ours: min ${Math.round(Math.min(...ours))}, max ${Math.round(Math.max(...ours))} ms), of which ~${Math.round(startup)} ms is Node start-up + CLI bundle load (\`ebpf-studio --help\`)`,
        limit: `Node start-up and bundle load take ~${Math.round(startup)} ms before any BPF work; the rest is load + attach`,
      });
    }
    return rows;
  } finally {
    await jvm.close();
    await c.close();
  }
}
