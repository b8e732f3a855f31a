// The selftest tracer: exec events of a parent's children through a ring buffer. It proves
// the four layers (BPF → addon → helper/CLI → client) with nothing tracer-specific in the way.
// Decoder mirrors bpf/selftest.h.
import type { SelftestEvent, SelftestOptions, SelftestResult } from '../../protocol/selftest';
import { asObject, int, oneOf, PID_MAX } from '../../protocol/validate';
import { ensureTracefs } from '../../sys/tracefs';
import { fromBpfError } from '../../protocol/errors';
import type { Tracer } from '../tracer';
import { cString, loadFirstWorking, records, setRodata } from '../bpfObject';

/** struct selftest_event (bpf/selftest.h), 40 bytes */
export function decodeSelftestEvent(b: Buffer): SelftestEvent & { tgid: number; ppid: number; source: number } {
  return {
    magic: Number(b.readBigUInt64LE(0)),
    pid: b.readUInt32LE(8),
    tgid: b.readUInt32LE(12),
    ppid: b.readUInt32LE(16),
    source: b.readUInt32LE(20),
    comm: cString(b, 24, 16),
  };
}

const PROGRAMS = { tracepoint: 'on_exec_tp', raw_tp: 'on_exec_raw', tp_btf: 'on_exec_btf' } as const;

export const selftestTracer: Tracer<'selftest'> = {
  name: 'selftest',
  validate(raw): SelftestOptions {
    const o = asObject(raw, 'options');
    return {
      parentPid: int(o, 'parentPid', 0, PID_MAX, 0),
      magic: int(o, 'magic', 0, Number.MAX_SAFE_INTEGER, 0),
      attach: oneOf(o, 'attach', ['tracepoint', 'raw_tp', 'tp_btf'] as const, 'tracepoint'),
    };
  },
  async start(options, env, events) {
    const prog = PROGRAMS[options.attach];
    const { obj } = loadFirstWorking(env, 'selftest', [[prog]], (o) => setRodata(o, { target_ppid: options.parentPid, magic: BigInt(options.magic) }));
    const all: SelftestEvent[] = [];
    try {
      if (options.attach === 'tracepoint') {
        ensureTracefs();
        obj.attachTracepoint(prog, 'sched', 'sched_process_exec');
      } else {
        obj.attach(prog);
      }
    } catch (e) {
      obj.close();
      throw fromBpfError(`attaching ${options.attach} sched_process_exec`, e);
    }
    const rb = obj.openRingBuffer('events', (batch, offsets) => {
      const fresh: SelftestEvent[] = [];
      for (const r of records(batch, offsets)) {
        const e = decodeSelftestEvent(r);
        fresh.push({ pid: e.pid, comm: e.comm, magic: e.magic });
      }
      all.push(...fresh);
      events.update({ events: fresh });
    });
    let closed = false;
    const result = (): SelftestResult => ({ tracer: 'selftest', events: [...all], lost: 0 });
    return {
      targets: options.parentPid ? [options.parentPid] : [],
      warnings: [],
      snapshot: result,
      async stop() {
        if (!closed) {
          closed = true;
          rb.close();
          obj.close();
        }
        return result();
      },
    };
  },
};
