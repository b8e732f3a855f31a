// The run-queue latency tracer (runqlat): log2 histograms of how long runnable threads wait for a
// CPU, built in the kernel per key and read once per interval; each read is one heat-map column.
// Decoder mirrors bpf/runqlat.h.
import type { BpfObject, MapDump } from '../../../native/index';
import type { RunqlatHistogram, RunqlatInterval, RunqlatOptions, RunqlatPer, RunqlatResult, RunqlatUnit, RunqlatUpdate } from '../../protocol/runqlat';
import { addCounts, toBuckets, total } from '../../model/log2hist';
import { asObject, bool, int, num, oneOf, PID_MAX } from '../../protocol/validate';
import { fromBpfError, inputError } from '../../protocol/errors';
import { pidAlive, readStat } from '../../sys/proc/processes';
import type { Tracer } from '../tracer';
import { cString, loadFirstWorking, setRodata } from '../bpfObject';

// ---- bpf/runqlat.h --------------------------------------------------------------------------
export const RUNQLAT_MAX_SLOTS = 32;
export const RUNQLAT_KEY_SIZE = 8;
export const RUNQLAT_HIST_SIZE = 272;
const COMM_OFFSET = 256;
const COMM_LEN = 16;
const KEY_MODE: Record<RunqlatPer, number> = { none: 0, process: 1, thread: 2, pidns: 3 };
const CTR_START_FULL = 0;
const CTR_HIST_FULL = 1;

export interface HistEntry {
  /** tgid / tid / pidns inode; -1 without a per-key mode (the kernel's 0xffffffff) */
  key: number;
  epoch: number;
  slots: number[];
  comm: string;
}

/** struct runqlat_key (8 bytes) + struct runqlat_hist (272 bytes) of each dumped map entry. */
export function decodeHistEntries(dump: MapDump, per: RunqlatPer): HistEntry[] {
  const out: HistEntry[] = [];
  for (let i = 0; i < dump.count; i++) {
    const k = dump.keys.subarray(i * RUNQLAT_KEY_SIZE, (i + 1) * RUNQLAT_KEY_SIZE);
    const v = dump.values.subarray(i * RUNQLAT_HIST_SIZE, (i + 1) * RUNQLAT_HIST_SIZE);
    const slots: number[] = [];
    for (let s = 0; s < RUNQLAT_MAX_SLOTS; s++) slots.push(Number(v.readBigUInt64LE(s * 8)));
    const raw = k.readUInt32LE(0);
    out.push({ key: per === 'none' ? -1 : raw, epoch: k.readUInt32LE(4), slots, comm: cString(v, COMM_OFFSET, COMM_LEN) });
  }
  return out;
}

// ---- aggregation (pure: unit-tested without a kernel) -----------------------------------------
/** Cumulative per-key histograms plus one column per interval. */
export class RunqlatAggregate {
  private readonly byKey = new Map<number, { comm: string; counts: number[] }>();
  private readonly intervals: RunqlatInterval[] = [];

  constructor(
    readonly per: RunqlatPer,
    readonly unit: RunqlatUnit,
    /** false: no interval columns are kept for the result */
    readonly keepIntervals = true,
  ) {}

  /** Folds one interval's entries in and returns that interval's update. */
  addInterval(entries: HistEntry[], timestampNs: number, dropped: number): RunqlatUpdate {
    const sum: number[] = [];
    const fresh = new Map<number, { comm: string; counts: number[] }>();
    for (const e of entries) {
      addCounts(sum, e.slots);
      const f = fresh.get(e.key) ?? { comm: '', counts: [] };
      addCounts(f.counts, e.slots);
      if (e.comm) f.comm = e.comm;
      fresh.set(e.key, f);
      const acc = this.byKey.get(e.key) ?? { comm: '', counts: [] };
      addCounts(acc.counts, e.slots);
      if (e.comm) acc.comm = e.comm;
      this.byKey.set(e.key, acc);
    }
    const interval = { timestampNs, buckets: toBuckets(sum) };
    if (this.keepIntervals) this.intervals.push(interval);
    const keys = this.per === 'none' ? [] : [...fresh].map(([key, f]) => this.histogram(key, f)).sort((a, b) => a.key - b.key);
    return { interval, keys, dropped };
  }

  private histogram(key: number, h: { comm: string; counts: number[] }): RunqlatHistogram {
    return { key, comm: this.per === 'none' ? 'all' : h.comm, count: total(h.counts), buckets: toBuckets(h.counts) };
  }

  result(dropped: number): RunqlatResult {
    const histograms = [...this.byKey].map(([key, h]) => this.histogram(key, h)).sort((a, b) => a.key - b.key);
    if (this.per === 'none' && histograms.length === 0) histograms.push({ key: -1, comm: 'all', count: 0, buckets: [] });
    return { tracer: 'runqlat', unit: this.unit, histograms, intervals: [...this.intervals], dropped };
  }
}

// ---- the tracer -------------------------------------------------------------------------------
const VARIANTS = [
  ['wakeup_btf', 'wakeup_new_btf', 'switch_btf'],
  ['wakeup_raw', 'wakeup_new_raw', 'switch_raw'],
];

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
}

function readDropped(obj: BpfObject): number {
  let n = 0;
  for (const i of [CTR_START_FULL, CTR_HIST_FULL]) {
    const v = obj.mapLookup('counters', u32(i));
    if (v) n += Number(v.readBigUInt64LE(0));
  }
  return n;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export const runqlatTracer: Tracer<'runqlat'> = {
  name: 'runqlat',
  validate(raw): RunqlatOptions {
    const o = asObject(raw, 'options');
    return {
      pid: int(o, 'pid', 0, PID_MAX, 0),
      per: oneOf(o, 'per', ['none', 'process', 'thread', 'pidns'] as const, 'none'),
      unit: oneOf(o, 'unit', ['us', 'ms'] as const, 'us'),
      intervalS: num(o, 'intervalS', 0.1, 3600, 1),
      // Only when asked (the agent): the options document stays as it was for everyone else.
      ...(o.retain !== undefined ? { retain: bool(o, 'retain', true) } : {}),
    };
  },
  async start(options, env, events) {
    // Kernel threads wait in run queues too, so unlike the uprobe tracers any live pid will do.
    if (options.pid && !readStat(options.pid)) throw inputError(`no process with pid ${options.pid} is running (check with: ps -p ${options.pid})`);
    const { obj, variant } = loadFirstWorking(env, 'runqlat', VARIANTS, (o) =>
      setRodata(o, { target_tgid: options.pid, key_mode: KEY_MODE[options.per], unit_ns: options.unit === 'ms' ? 1_000_000 : 1000 }),
    );
    try {
      for (const p of VARIANTS[variant]) obj.attach(p);
    } catch (e) {
      obj.close();
      throw fromBpfError(`attaching the scheduler tracepoints (${variant === 0 ? 'tp_btf' : 'raw_tp'})`, e);
    }
    env.log(`runqlat: attached via ${variant === 0 ? 'tp_btf' : 'raw_tp'}`);

    const agg = new RunqlatAggregate(options.per, options.unit, options.retain !== false);
    let epoch = 0;
    let dropped = 0;
    let closed = false;
    // Reads are serialized: the interval timer and stop() must not flip the epoch twice at once.
    let reading: Promise<void> = Promise.resolve();

    const collect = async (final: boolean) => {
      if (closed) return;
      epoch = (epoch + 1) >>> 0;
      obj.mapUpdate('ctl', u32(0), u32(epoch));
      const timestampNs = Number(process.hrtime.bigint());
      // A program that read the old epoch just before the flip finishes within microseconds.
      await sleep(2);
      if (closed) return;
      const old = decodeHistEntries(obj.mapDump('hists'), options.per).filter((e) => e.epoch !== epoch);
      for (const e of old) {
        const key = Buffer.alloc(RUNQLAT_KEY_SIZE);
        key.writeUInt32LE(e.key >>> 0, 0);
        key.writeUInt32LE(e.epoch, 4);
        obj.mapDelete('hists', key);
      }
      dropped = readDropped(obj);
      if (final && old.every((e) => total(e.slots) === 0)) return;
      events.update(agg.addInterval(old, timestampNs, dropped));
    };
    const serial = (final: boolean) => (reading = reading.then(() => collect(final)).catch((e) => env.log(`runqlat: reading histograms failed: ${(e as Error).message}`)));

    const close = () => {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      obj.close();
    };
    const timer = setInterval(() => {
      void serial(false).then(() => {
        if (options.pid && !closed && !pidAlive(options.pid)) {
          close();
          events.ended('target-exited', `process ${options.pid} exited`);
        }
      });
    }, options.intervalS * 1000);

    return {
      targets: options.pid ? [options.pid] : [],
      warnings: [],
      snapshot: () => agg.result(dropped),
      async stop() {
        await serial(true);
        close();
        return agg.result(dropped);
      },
    };
  },
};
