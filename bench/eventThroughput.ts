// `event throughput`: sustained events/s from a BPF ring buffer to JavaScript. A tiny program
// (bench/workloads/sysloop.c) calls getppid() in a loop; bpf/bench_events.bpf.c turns each call
// into events_per_hit 32-byte events. The addon's polling thread hands batches to JS, where each
// record is split off with the tracers' records() helper and decoded, as a tracer would. Loss is
// what the kernel counted when bpf_ringbuf_reserve found no room.
import path from 'node:path';
import { loadFirstWorking, readCounter, records, setRodata } from '../extension/tracers/bpfObject';
import { benchTracerEnv, LineProcess, median, round, sleep, type BenchContext, type Row } from './lib';

const CTR_SUBMITTED = 0;
const CTR_DROPPED = 1;

interface Run {
  delivered: number;
  dropped: number;
  seconds: number;
  calls: number;
}

interface Series {
  /** median events/s delivered to JS */
  rate: number;
  /** median events/s produced (delivered + dropped) */
  offered: number;
  /** median share dropped in the kernel */
  loss: number;
}

async function measure(ctx: BenchContext, gen: LineProcess, perHit: number, rounds: number, seconds: number): Promise<Series> {
  const env = benchTracerEnv(ctx.log);
  const { obj } = loadFirstWorking(env, 'bench_events', [['bench_sys_enter']], (o) => setRodata(o, { target_tgid: gen.pid, events_per_hit: perHit }));
  try {
    obj.attach('bench_sys_enter');
    let delivered = 0;
    let lastAt = 0;
    let checksum = 0;
    const rb = obj.openRingBuffer('events', (batch, offsets) => {
      for (const r of records(batch, offsets)) {
        // Decode what a tracer would: the per-CPU sequence, the pid and the index.
        checksum = (checksum + r.readUInt32LE(0) + r.readUInt32LE(16) + r.readUInt32LE(20)) | 0;
        delivered++;
      }
      lastAt = performance.now();
    });
    const counter = (i: number) => readCounter(obj, 'counters', i);
    const runs: Run[] = [];
    try {
      for (let i = 0; i < rounds; i++) {
        const d0 = delivered;
        const s0 = counter(CTR_SUBMITTED);
        const x0 = counter(CTR_DROPPED);
        const t0 = performance.now();
        gen.send(String(seconds));
        const calls = Number((await gen.next('calls')).split(' ')[1]);
        // Drain: wait until every submitted event has reached JS (or delivery stalls).
        const submitted = counter(CTR_SUBMITTED) - s0;
        for (let w = 0; w < 100 && delivered - d0 < submitted; w++) await sleep(20);
        const run = { delivered: delivered - d0, dropped: counter(CTR_DROPPED) - x0, seconds: (lastAt - t0) / 1000, calls };
        runs.push(run);
        ctx.log(`  ${perHit}/call, round ${i + 1}/${rounds}: ${Math.round(run.delivered / run.seconds).toLocaleString('en-US')} events/s delivered, ${run.dropped.toLocaleString('en-US')} dropped of ${(run.delivered + run.dropped).toLocaleString('en-US')} (${run.calls.toLocaleString('en-US')} syscalls)`);
      }
    } finally {
      rb.close();
    }
    void checksum;
    return {
      rate: median(runs.map((r) => r.delivered / r.seconds)),
      offered: median(runs.map((r) => (r.delivered + r.dropped) / r.seconds)),
      loss: median(runs.map((r) => r.dropped / Math.max(1, r.delivered + r.dropped))),
    };
  } finally {
    obj.close();
  }
}

export async function benchEvents(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 3 : 5;
  const seconds = ctx.quick ? 1 : 3;
  const gen = new LineProcess(path.join(ctx.buildDir, 'sysloop'), []);
  try {
    await gen.next('ready');
    // Saturated: more events than JS can take, so the delivered rate is the pipeline's ceiling.
    const sat = await measure(ctx, gen, 8, rounds, seconds);
    // One event per call: the offered rate is what one CPU of syscalls makes (~1M/s here).
    const one = await measure(ctx, gen, 1, rounds, seconds);
    const n = (x: number) => Math.round(x).toLocaleString('en-US');
    return [
      {
        name: 'event throughput (BPF ring buffer → JS, saturated)',
        value: Math.round(sat.rate),
        unit: 'events/s',
        target: 1_000_000,
        better: 'higher',
        peer: null,
        detail: `32-byte events, 8 per traced getppid() call, 8 MB ring buffer, addon polling thread → JS batches → records() + decode; ${rounds} runs of ${seconds} s; offered ${n(sat.offered)}/s, delivered ${n(sat.rate)}/s, ${round(sat.loss * 100, 1)}% dropped in the kernel (ring buffer full)`,
      },
      {
        name: 'event throughput loss (1 event per syscall)',
        value: round(one.loss * 100, 2),
        unit: '%',
        target: null,
        better: 'lower',
        peer: null,
        detail: `offered ${n(one.offered)} events/s (as fast as one CPU makes syscalls), delivered ${n(one.rate)}/s; loss counted in the kernel at bpf_ringbuf_reserve`,
      },
    ];
  } finally {
    await gen.close();
  }
}
