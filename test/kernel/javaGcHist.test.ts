// java-gc's metrics-only mode (what the agent runs): pauses counted in kernel histograms at the
// agent's Prometheus bounds, no record per pause. In the same run of
// test/fixtures/java/GcWorkload.java (SerialGC), against
//  - the JVM's own -Xlog:gc: as many pauses per collector; the summed durations no smaller than
//    the log's (less its 1 µs rounding) and larger by at most 0.1 ms a pause: the USDT bracket
//    (gc__begin/gc__end) holds HotSpot's own timer plus tens of µs of bookkeeping;
//  - a per-event session on the same probes (the CLI's mode): the same count, the same sum
//    within a few µs a pause, each pause in the bucket of its event's duration.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cliEnv } from '../../extension/cli/env';
import type { JavaGcPauseCounts, JavaGcUpdate } from '../../extension/protocol/javaGc';
import { javaGcTracer } from '../../extension/tracers/javaGc/tracer';
import { JAVA_GC_HIST_EDGES_NS, JAVA_GC_HIST_SLOTS } from '../../extension/tracers/javaGc/decode';
import { kernelSkipReason, waitFor } from '../helpers';
import { GcWorkloads, noJdkReason } from './gcWorkload';

const skip = kernelSkipReason() ?? noJdkReason;

/** "[0.123s][info][gc] GC(4) Pause Young (Allocation Failure) 17M->1M(61M) 2.345ms" → kind and ms. */
function xlogPauses(file: string): { full: boolean; ms: number }[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => /\] GC\(\d+\) Pause (Young|Full) .* (\d+(?:\.\d+)?)ms$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ full: m[1] === 'Full', ms: Number(m[2]) }));
}

/** Bucket of a duration as the kernel counts it: the first edge it does not exceed. */
const slotOf = (ns: number) => {
  const i = JAVA_GC_HIST_EDGES_NS.findIndex((e) => ns <= e);
  return i < 0 ? JAVA_GC_HIST_EDGES_NS.length : i;
};

describe('java-gc metrics-only histograms', { skip }, () => {
  let workloads: GcWorkloads;
  let dir: string;
  before(() => {
    workloads = new GcWorkloads();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-gchist-'));
  });
  after(() => {
    workloads?.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('count and sum per collector equal -Xlog:gc of the same JVM; no event goes through the ring buffer', { timeout: 120_000 }, async (t) => {
    const log = path.join(dir, 'gc.log');
    const jvm = await workloads.start(3, 1500, 0, [`-Xlog:gc:file=${log}`]);
    const updates: JavaGcUpdate[] = [];
    let ended = false;
    const env = { ...cliEnv(false), log: () => undefined };
    const session = await javaGcTracer.start(javaGcTracer.validate({ pid: jvm.pid, metricsOnly: true, liveCounts: false, retain: false }), env, {
      update: (u) => updates.push(u),
      ended: () => (ended = true),
    });
    const peer = await javaGcTracer.start(javaGcTracer.validate({ pid: jvm.pid }), env, { update: () => undefined, ended: () => undefined });
    try {
      jvm.go();
      const own = await jvm.done;
      assert.ok(await waitFor(() => ended, 20_000), 'the session did not end when the JVM exited');
      const events = (await peer.stop()).events.filter((e) => e.pid === jvm.pid);
      const counted = updates.flatMap((u) => u.histograms ?? []).filter((c) => c.pid === jvm.pid);
      assert.deepEqual(updates.flatMap((u) => u.events), [], 'metrics-only sent events');
      assert.deepEqual(updates.flatMap((u) => u.safepoints ?? []), [], 'metrics-only sent safepoints');
      const sumUp = (what: (c: JavaGcPauseCounts) => boolean) => {
        const counts = new Array<number>(JAVA_GC_HIST_SLOTS).fill(0);
        let sumNs = 0;
        for (const c of counted.filter(what)) {
          c.counts.forEach((n, i) => (counts[i] += n));
          sumNs += c.sumNs;
        }
        return { counts, n: counts.reduce((a, b) => a + b, 0), sumNs };
      };
      const logged = xlogPauses(log);
      for (const [collector, full] of [['Copy', false], ['MarkSweepCompact', true]] as const) {
        const ours = sumUp((c) => c.what === 'pause' && c.collector === collector);
        const theirs = logged.filter((p) => p.full === full);
        const logMs = theirs.reduce((a, p) => a + p.ms, 0);
        t.diagnostic(`${collector}: kernel ${ours.n} pauses, ${(ours.sumNs / 1e6).toFixed(3)} ms; -Xlog:gc ${theirs.length} pauses, ${logMs.toFixed(3)} ms; MXBeans ${full ? own.full : own.young}`);
        assert.equal(ours.n, theirs.length, `${collector}: pauses counted in the kernel and in -Xlog:gc`);
        assert.equal(ours.n, full ? own.full : own.young, `${collector}: pauses counted in the kernel and by the JVM's MXBeans`);
        const rounding = theirs.length * 0.0005;
        assert.ok(ours.sumNs / 1e6 >= logMs - rounding, `${collector}: kernel sum ${ours.sumNs / 1e6} ms is below -Xlog:gc's ${logMs} ms, whose pauses the USDT bracket holds`);
        assert.ok(ours.sumNs / 1e6 <= logMs + rounding + theirs.length * 0.1, `${collector}: kernel sum ${ours.sumNs / 1e6} ms exceeds -Xlog:gc's ${logMs} ms by more than 0.1 ms a pause`);
        // The per-event session: same brackets, its programs run a µs or so apart on each probe.
        const mine = events.filter((e) => e.collector === collector);
        const eventNs = mine.reduce((a, e) => a + e.durationNs, 0);
        t.diagnostic(`${collector}: per-event session ${mine.length} pauses, ${(eventNs / 1e6).toFixed(3)} ms`);
        assert.equal(ours.n, mine.length, `${collector}: pauses counted in the kernel and sent one by one`);
        assert.ok(Math.abs(ours.sumNs - eventNs) <= mine.length * 5000, `${collector}: kernel sum ${ours.sumNs} ns, events ${eventNs} ns`);
        const hi = new Array<number>(JAVA_GC_HIST_SLOTS).fill(0);
        for (const e of mine) for (let s = slotOf(e.durationNs - 5000); s <= slotOf(e.durationNs + 5000); s++) hi[s]++;
        ours.counts.forEach((n, s) => assert.ok(n <= hi[s], `${collector}: bucket ${s} (≤ ${JAVA_GC_HIST_EDGES_NS[s] ?? 'inf'} ns) has ${n} pauses; the events put at most ${hi[s]} there`));
      }
      const safepoints = sumUp((c) => c.what === 'safepoint');
      assert.ok(safepoints.n >= logged.length, `${safepoints.n} safepoints counted, fewer than the ${logged.length} pauses (each runs in one)`);
    } finally {
      await session.stop();
      await peer.stop();
    }
  });
});
