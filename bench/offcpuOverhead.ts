// `offcpu overhead`: two threads of one process pass a token through pipes
// (bench/workloads/pingpong.c), with the work per pass chosen at the start so that the pair makes
// ~50k context switches a second on the machine at hand (the load the target is set at), and
// report round trips per second over rounds of fixed wall time: untraced; with an empty program on
// the same tracepoint (the floor any sched_switch tracer starts from); traced by our CLI
// (`profile --event offcpu --pid`: kernel + user stack ids at every switch-out, reused when the
// thread blocks where it blocked before, time summed in the kernel, per thread first in its task
// storage); and traced by bcc offcputime's method written in bpftrace on the same sched_switch
// tracepoint (kernel and user stack at switch-out, summed per stack at switch-in). Rounds
// alternate; each tracer attaches for its rounds only. The row is the slowdown in round trips per
// CPU second of the workload (its threads' schedstat time; a switch's program time is charged to
// the thread switched to): on this shared VM the wall-clock rate swings by 2-4× with other
// tenants' load, the CPU cost per round trip far less. Wall-clock rates are in the detail, and
// each tracer's BPF run time per run and per round trip (kernel.bpf_stats_enabled) from one more
// round each.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openObject } from '../extension/tracers/bpfObject';
import { benchTracerEnv, interleave, LineProcess, median, progStats, ratioOfRounds, round, startBpftrace, startCli, type Attached, type BenchContext, type Row } from './lib';

/** bcc offcputime's work, in bpftrace: stacks at switch-out, time per stack at switch-in (of one process, or of every thread as `offcputime` without -p). */
function bpftraceProgram(pid?: number): string {
  return [
    `tracepoint:sched:sched_switch { if (${pid ? `pid == ${pid}` : 'tid != 0'}) { @start[tid] = nsecs; @ks[tid] = kstack; @us[tid] = ustack; }`,
    `$s = @start[args->next_pid]; if ($s) { @off[@ks[args->next_pid], @us[args->next_pid]] = sum(nsecs - $s);`,
    `delete(@start[args->next_pid]); delete(@ks[args->next_pid]); delete(@us[args->next_pid]); } }`,
    'END { clear(@start); clear(@ks); clear(@us); }',
  ].join(' ');
}

/** An empty program on the same tracepoint (bpf/bench_floor.bpf.c): what any sched_switch tracer pays before doing anything. */
function attachSwitchFloor(log: (m: string) => void): { close(): void } {
  const obj = openObject(benchTracerEnv(log), 'bench_floor');
  try {
    obj.load();
    obj.attach('floor_switch');
  } catch (e) {
    obj.close();
    throw e;
  }
  return obj;
}

/** On-CPU ns of all threads of pid (schedstat's first field). */
function cpuNs(pid: number): number {
  let sum = 0;
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      /* thread exited */
    }
  }
  return sum;
}

/** One round of `secs` s on every pair at once: round trips per CPU second of their threads, round trips per wall second, and context switches per second, summed over the pairs. */
async function pairsRound(procs: LineProcess[], secs: number): Promise<{ perCpuS: number; perWallS: number; cs: number }> {
  const cpu = () => procs.reduce((a, p) => a + cpuNs(p.pid), 0);
  const c0 = cpu();
  for (const p of procs) p.send(String(secs));
  const lines = await Promise.all(procs.map((p) => p.next('ops_per_sec')));
  const cpuS = (cpu() - c0) / 1e9;
  const perWallS = lines.reduce((a, l) => a + Number(l.split(/\s+/)[1]), 0);
  const cs = lines.reduce((a, l) => a + Number(l.split(/\s+/)[3]), 0);
  return { perCpuS: (perWallS * secs) / cpuS, perWallS, cs };
}

/**
 * Interleaved rounds of measure(variant): untraced, over an empty program on sched_switch, under
 * our CLI and under bpftrace (each attached for its round only). Every round starts after a pause
 * (the traced ones after their tracer attached): starting a tracer's process (node's or
 * bpftrace's start-up, on 2 CPUs) moves the workload's threads between CPUs for a few hundred ms
 * after it, which measured +2-4 % with a program that does nothing, and that is not a cost per
 * context switch.
 */
function compareTracers(ctx: BenchContext, rounds: number, measure: (variant: string) => Promise<number>, tracers: { ours: () => Promise<Attached>; bpftrace: () => Promise<Attached> }): Promise<Record<string, number[]>> {
  const settled = async (k: string) => {
    await new Promise((r) => setTimeout(r, ctx.quick ? 500 : 1000));
    return measure(k);
  };
  const traced = (k: 'ours' | 'bpftrace') => async () => {
    const t = await tracers[k]();
    try {
      return await settled(k);
    } finally {
      await t.stop();
    }
  };
  return interleave(
    rounds,
    {
      untraced: () => settled('untraced'),
      floor: async () => {
        const f = attachSwitchFloor(ctx.log);
        try {
          return await settled('floor');
        } finally {
          f.close();
        }
      },
      ours: traced('ours'),
      bpftrace: traced('bpftrace'),
    },
    ctx.log,
  );
}

/** Context switches a second the target is set at. */
const TARGET_CS = 50_000;

/**
 * The first work per pass (spin iterations; 4000, then 0.6× each step) at which the untraced pair
 * makes at least 95 % of TARGET_CS context switches a second here; the smallest tried when the
 * machine cannot reach it (the detail shows the rate the rounds reached either way).
 */
async function calibrate(p: LineProcess, log: (m: string) => void): Promise<number> {
  let work = 4000;
  for (;;) {
    await p.ask(`work ${work}`, 'work');
    await pairsRound([p], 0.5); // the threads settle on their CPUs at this work
    const { cs } = await pairsRound([p], 1);
    log(`  calibration: work ${work} per pass, ${Math.round(cs).toLocaleString('en-US')} context switches/s`);
    if (cs >= 0.95 * TARGET_CS || work <= 200) return work;
    work = Math.round(work * 0.6);
  }
}

export async function benchOffcpu(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 7 : 11;
  const seconds = ctx.quick ? 1 : 2;
  const p = new LineProcess(path.join(ctx.buildDir, 'pingpong'), []);
  try {
    await p.next('ready');
    const work = await calibrate(p, ctx.log);
    const cs: number[] = [];
    const wall: Record<string, number[]> = { untraced: [], floor: [], ours: [], bpftrace: [] };
    const r = await compareTracers(
      ctx,
      rounds,
      async (k) => {
        const m = await pairsRound([p], seconds);
        cs.push(m.cs);
        wall[k].push(m.perWallS);
        return m.perCpuS;
      },
      { ours: () => startCli(['profile', '--event', 'offcpu', '--pid', String(p.pid)]), bpftrace: () => startBpftrace(bpftraceProgram(p.pid)) },
    );
    // Then the kernel's own accounting of each tracer's BPF run time over one more round each
    // (kernel.bpf_stats_enabled, which adds two clock reads per run: on only here, not in the
    // rounds above). Every run counts: the workload's switches and the machine's others.
    const bpf: Record<string, { ns: number; runs: number; roundTrips: number }> = {};
    const knob = '/proc/sys/kernel/bpf_stats_enabled';
    const was = fs.readFileSync(knob, 'utf8').trim();
    for (const [k, start] of [
      ['ours', () => startCli(['profile', '--event', 'offcpu', '--pid', String(p.pid)])],
      ['bpftrace', () => startBpftrace(bpftraceProgram(p.pid))],
    ] as const) {
      const t = await start();
      try {
        fs.writeFileSync(knob, '1');
        const s0 = progStats(t.child.pid ?? 0);
        const { perWallS } = await pairsRound([p], seconds);
        const s1 = progStats(t.child.pid ?? 0);
        bpf[k] = { ns: s1.ns - s0.ns, runs: s1.runs - s0.runs, roundTrips: perWallS * seconds };
      } finally {
        fs.writeFileSync(knob, was);
        await t.stop();
      }
    }
    const usPerRun = (k: string) => round(bpf[k].ns / Math.max(1, bpf[k].runs) / 1000, 3);
    const usPerRoundTrip = (k: string) => round(bpf[k].ns / Math.max(1, bpf[k].roundTrips) / 1000, 3);
    ctx.log(`  BPF run time: ours ${usPerRun('ours')} µs per run, ${usPerRoundTrip('ours')} µs per round trip; bpftrace ${usPerRun('bpftrace')} µs per run, ${usPerRoundTrip('bpftrace')} µs per round trip`);
    const ours = ratioOfRounds(r.untraced, r.ours);
    const peer = ratioOfRounds(r.untraced, r.bpftrace);
    const floor = ratioOfRounds(r.untraced, r.floor);
    return [
      {
        name: 'offcpu overhead (~50k context switches/s, untraced / traced round trips per CPU second)',
        value: round(ours, 4),
        unit: '×',
        target: 1.03,
        better: 'lower',
        peer: { name: 'bpftrace (bcc offcputime method)', value: round(peer, 4) },
        limit: `an empty program on sched_switch already costs ${round(floor, 3)}× here (a round trip is ~${round(1e6 / median(r.untraced), 0)} µs of CPU, most of it the kernel's pipe and switch work); what ours adds is the program itself, ${usPerRun('ours')} µs per sched_switch run in this run (bpftrace ${usPerRun('bpftrace')} µs), ${usPerRoundTrip('ours')} µs of BPF time per round trip: the tracepoint call, the thread's task storage (at switch-out and switch-in), and the one read of the thread's frame records from user memory that makes a reused user stack exact (~0.2 µs of it, the cost of one user-memory read here, whatever its size); a thread preempted in user code, or blocking at a new place, still has both stacks walked (~2.5 µs), as have a few reuses to check the cache`,
        detail: `work per pass ${work} (chosen for ~${TARGET_CS.toLocaleString('en-US')} context switches/s untraced); ${rounds} interleaved rounds of ${seconds} s; an empty program on the same tracepoint (the floor any sched_switch tracer starts from): ${round(floor, 4)}×; median ${Math.round(median(cs)).toLocaleString('en-US')} context switches/s; median round trips per CPU second untraced ${Math.round(median(r.untraced)).toLocaleString('en-US')}, ours ${Math.round(median(r.ours)).toLocaleString('en-US')}, bpftrace ${Math.round(median(r.bpftrace)).toLocaleString('en-US')}; per wall second untraced ${Math.round(median(wall.untraced)).toLocaleString('en-US')}, ours ${Math.round(median(wall.ours)).toLocaleString('en-US')}, bpftrace ${Math.round(median(wall.bpftrace)).toLocaleString('en-US')} (wall-clock slowdown ours ${round(ratioOfRounds(wall.untraced, wall.ours), 3)}×, bpftrace ${round(ratioOfRounds(wall.untraced, wall.bpftrace), 3)}×); BPF run time (kernel.bpf_stats_enabled, one more round each after these): ours ${usPerRun('ours')} µs per run over ${bpf.ours.runs.toLocaleString('en-US')} runs, ${usPerRoundTrip('ours')} µs per round trip; bpftrace ${usPerRun('bpftrace')} µs per run over ${bpf.bpftrace.runs.toLocaleString('en-US')} runs, ${usPerRoundTrip('bpftrace')} µs per round trip`,
      },
      // the pair is idle (blocked reading its stdin) while the busy row runs
      await busyRow(ctx),
    ];
  } finally {
    await p.close();
  }
}

/**
 * The same comparison on a busy machine: two pairs per CPU keep every CPU busy while making
 * ~TARGET_CS context switches a second in all (their work per pass chosen for that), traced
 * machine-wide (`--all`; bpftrace without a pid filter). Context for the row above, whose single
 * pair leaves the CPUs partly idle and spends most of each round trip in the kernel's own switch
 * and pipe work; here each switch comes with the CPU work a loaded server does between them.
 */
async function busyRow(ctx: BenchContext): Promise<Row> {
  const rounds = ctx.quick ? 5 : 9;
  const seconds = ctx.quick ? 1 : 2;
  const procs = Array.from({ length: 2 * os.cpus().length }, () => new LineProcess(path.join(ctx.buildDir, 'pingpong'), []));
  try {
    await Promise.all(procs.map((p) => p.next('ready')));
    // less work per pass means more switches: grow it until the pairs make at most ~TARGET_CS
    let work = 2000;
    for (;;) {
      await Promise.all(procs.map((p) => p.ask(`work ${work}`, 'work')));
      await pairsRound(procs, 0.5);
      const { cs } = await pairsRound(procs, 1);
      ctx.log(`  busy calibration: ${procs.length} pairs, work ${work} per pass, ${Math.round(cs).toLocaleString('en-US')} context switches/s in all`);
      if (cs <= 1.05 * TARGET_CS || work >= 200_000) break;
      work = Math.round(work * Math.min(3, Math.max(1.1, cs / TARGET_CS)));
    }
    const cs: number[] = [];
    const r = await compareTracers(
      ctx,
      rounds,
      async () => {
        const m = await pairsRound(procs, seconds);
        cs.push(m.cs);
        return m.perCpuS;
      },
      { ours: () => startCli(['profile', '--event', 'offcpu', '--all']), bpftrace: () => startBpftrace(bpftraceProgram()) },
    );
    return {
      name: 'offcpu overhead, busy machine (2 pairs per CPU, ~50k context switches/s in all, traced machine-wide; untraced / traced round trips per CPU second)',
      value: round(ratioOfRounds(r.untraced, r.ours), 4),
      unit: '×',
      target: null,
      better: 'lower',
      peer: { name: 'bpftrace (bcc offcputime method, every thread)', value: round(ratioOfRounds(r.untraced, r.bpftrace), 4) },
      detail: `${procs.length} pingpong pairs, work per pass ${work}; ${rounds} interleaved rounds of ${seconds} s; median ${Math.round(median(cs)).toLocaleString('en-US')} context switches/s in all; median round trips per CPU second untraced ${Math.round(median(r.untraced)).toLocaleString('en-US')} (${round(1e6 / median(r.untraced), 1)} µs of CPU per round trip), an empty program on sched_switch ${round(ratioOfRounds(r.untraced, r.floor), 4)}×`,
    };
  } finally {
    await Promise.all(procs.map((p) => p.close()));
  }
}
