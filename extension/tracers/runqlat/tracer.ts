// The run-queue latency tracer (runqlat): log2 histograms of how long runnable threads wait for a
// CPU, built in the kernel per key and read once per interval; each read is one heat-map column.
// Map decoder and aggregation: ./decode.ts.
import type { BpfObject } from '../../../native/index';
import type { RunqlatOptions } from '../../protocol/runqlat';
import { total } from '../../model/log2hist';
import { asObject, bool, int, num, oneOf, PID_MAX } from '../../protocol/validate';
import { fromBpfError, inputError } from '../../protocol/errors';
import { identify, sameProcess } from '../../sys/proc/processes';
import { watchTarget } from '../targetWatch';
import type { Tracer } from '../tracer';
import { loadFirstWorking, readCounter, setRodata } from '../bpfObject';
import { HistEpochs } from '../histEpochs';
import { CTR_HIST_FULL, CTR_START_FULL, decodeHistEntries, KEY_MODE, RUNQLAT_KEY_SIZE, RunqlatAggregate } from './decode';

const VARIANTS = [
  ['wakeup_btf', 'wakeup_new_btf', 'switch_btf'],
  ['wakeup_raw', 'wakeup_new_raw', 'switch_raw'],
];

function readDropped(obj: BpfObject): number {
  return readCounter(obj, 'counters', CTR_START_FULL) + readCounter(obj, 'counters', CTR_HIST_FULL);
}

export const runqlatTracer: Tracer<'runqlat'> = {
  name: 'runqlat',
  validate(raw): RunqlatOptions {
    const o = asObject(raw, 'options');
    return {
      pid: int(o, 'pid', 0, PID_MAX, 0),
      per: oneOf(o, 'per', ['none', 'process', 'thread', 'pidns', 'cgroup'] as const, 'none'),
      unit: oneOf(o, 'unit', ['us', 'ms'] as const, 'us'),
      intervalS: num(o, 'intervalS', 0.1, 3600, 1),
      // Only when asked (the agent): the options document stays as it was for everyone else.
      ...(o.retain !== undefined ? { retain: bool(o, 'retain', true) } : {}),
    };
  },
  async start(options, env, events) {
    // Kernel threads wait in run queues too, so unlike the uprobe tracers any live pid will do.
    // By pid and start time: the session ends when this process exits, not when the pid is free.
    const target = options.pid ? identify(options.pid) : undefined;
    if (options.pid && !target) throw inputError(`no process with pid ${options.pid} is running (check with: ps -p ${options.pid})`);
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
    const epochs = new HistEpochs(obj, RUNQLAT_KEY_SIZE);
    let dropped = 0;
    let closed = false;
    // Reads are serialized: the interval timer and stop() must not flip the epoch twice at once.
    let reading: Promise<void> = Promise.resolve();

    const collect = async (final: boolean) => {
      if (closed) return;
      const taken = await epochs.take(() => closed);
      if (!taken) return;
      const old = decodeHistEntries(taken.dump, options.per);
      dropped = readDropped(obj);
      if (final && old.every((e) => total(e.slots) === 0)) return;
      events.update(agg.addInterval(old, taken.endedNs, dropped));
    };
    const serial = (final: boolean) => (reading = reading.then(() => collect(final)).catch((e) => env.log(`runqlat: reading histograms failed: ${(e as Error).message}`)));

    const close = () => {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      unwatch();
      obj.close();
    };
    const timer = setInterval(() => {
      void serial(false).then(() => {
        if (target && !closed && !sameProcess(target)) ended();
      });
    }, options.intervalS * 1000);
    const ended = () => {
      if (closed) return;
      close();
      events.ended('target-exited', `process ${options.pid} exited`);
    };
    const unwatch = target ? watchTarget(target, ended) : () => undefined;

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
