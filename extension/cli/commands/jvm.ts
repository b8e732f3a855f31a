// `ebpf-studio jvm --pid PID [--duration S] [--frequency HZ] [--slice-ms MS] [--range FROM:TO] [--json]`:
// the JVM timeline (GC by collector, safepoints, run-queue waits per thread group, CPU samples
// per thread group) of one JVM. Text: a line per collection while tracing, then a report of the
// whole session, or of the range FROM:TO (seconds since the start) with its hottest stacks.
// JSON: the session document (JvmResult), with "range" holding that range's statistics.
import { cliSummary } from '../../protocol/catalog';
import type { Command } from '../command';
import { commonOptions, durationFlag, numberFlag, parse, pidFlag } from '../args';
import { runTracer } from '../runTracer';
import { jvmTracer } from '../../tracers/jvm/tracer';
import { usageError } from '../../protocol/errors';
import { ALLOC_RATE_UNAVAILABLE, formatMb, formatRate } from '../../model/allocRate';
import { RAW_WINDOW_NS, OFF_STATE_LABEL, OFF_STATES, GROUP_LABEL, JvmTimeline, type JvmResult, type RangeStats } from '../../model/jvmTimeline';
import { formatDuration } from '../../model/log2hist';
import { PROFILE_MAX_FREQUENCY } from '../../protocol/profile';
import { formatGcLines } from './javaGc';

/** "2.5:4" → seconds [2.5, 4]. */
export function rangeFlag(v: unknown): [number, number] | undefined {
  if (v === undefined) return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*$/.exec(String(v));
  if (!m || Number(m[1]) >= Number(m[2])) throw usageError(`--range takes FROM:TO in seconds since the start, FROM < TO (e.g. --range 2.5:4), got "${String(v)}"`);
  return [Number(m[1]), Number(m[2])];
}

function topFunctions(r: RangeStats, n: number): { name: string; self: number }[] {
  const self = new Map<string, number>();
  for (const s of r.stacks) {
    // The leaf as the flame graph names it: an address no symbol covers is "[module]" or "[unknown]".
    const leaf = s.frames[0];
    const name = !leaf ? '[no frames]' : (leaf.function ?? (leaf.module ? `[${leaf.module.split('/').pop()}]` : '[unknown]'));
    self.set(name, (self.get(name) ?? 0) + s.count);
  }
  return [...self].map(([name, c]) => ({ name, self: c })).sort((a, b) => b.self - a.self).slice(0, n);
}

/** The allocation rate of a range, from eden before/after each GC (model/allocRate.ts). */
export function allocLine(t: JvmTimeline, r: RangeStats): string {
  if (r.alloc.intervals) return `${formatRate(r.alloc.rate)} (${formatMb(r.alloc.bytes)} allocated in ${(r.alloc.coveredNs / 1e9).toFixed(1)} s over ${r.alloc.intervals} intervals between GCs; eden before each GC − eden after the previous)`;
  return t.alloc.unavailable() ? `not available: ${ALLOC_RATE_UNAVAILABLE}` : 'no two collections with eden figures in the range';
}

export function formatRange(t: JvmTimeline, r: RangeStats): string {
  const d = (ns: number) => formatDuration(ns, 'ns');
  const s = (ns: number) => ((ns - t.startNs) / 1e9).toFixed(3);
  const out = [`Range ${s(r.startNs)} s – ${s(r.endNs)} s (${d(r.endNs - r.startNs)}):`];
  if (r.coveredFromNs !== undefined) out.push(`  (covers from ${s(r.coveredFromNs)} s: the session kept only its last ${Math.round(RAW_WINDOW_NS / 60e9)} minutes of raw events)`);
  out.push(`  GC: ${r.collectors.reduce((n, c) => n + c.count, 0)} collections, ${d(r.pauseNs)} paused${r.collectors.length ? ` (${r.collectors.map((c) => `${c.collector} ${c.count}`).join(', ')})` : ''}`);
  out.push(`  Allocation: ${allocLine(t, r)}`);
  for (const e of r.gc) out.push(`    ${s(e.timestampNs)} s  ${e.collector} ${e.kind}${e.escalated ? ' (escalated)' : ''} ${d(e.durationNs)}${e.operation ? `  ${e.operation}` : ''}`);
  out.push(t.safepointsAvailable ? `  Safepoints: ${r.safepoints.count}, ${d(r.safepoints.totalNs)}, time to safepoint max ${d(r.safepoints.ttsMaxNs)}` : `  Safepoints: not available (${t.safepointsReason})`);
  out.push(`  Run-queue waits: ${r.runq.map((g) => `${GROUP_LABEL[g.group]} ${g.stats.count} (p99 ≤ ${formatDuration(g.stats.p99, 'us')})`).join(', ') || 'none'}`);
  out.push(`  CPU samples: ${r.cpuTotal}${r.cpu.length ? ` — ${r.cpu.map((g) => `${GROUP_LABEL[g.group]} ${g.samples} (${((100 * g.samples) / Math.max(1, r.cpuTotal)).toFixed(0)} %)`).join(', ')}` : ''}`);
  if (t.offcpuAvailable) out.push(`  Off CPU (thread-seconds, counted when each thread woke): ${r.offcpu.map((g) => `${GROUP_LABEL[g.group]}: ${OFF_STATES.map((st, i) => (g.us[i] ? `${OFF_STATE_LABEL[st]} ${(g.us[i] / 1e6).toFixed(2)}` : '')).filter(Boolean).join(', ') || 'none'}`).join('; ') || 'none'}`);
  else if (t.offcpuReason) out.push(`  Off CPU: ${t.offcpuReason}`);
  for (const th of r.cpuThreads.slice(0, 8)) out.push(`    ${String(th.samples).padStart(6)}  ${th.comm} [${th.tid}]`);
  const top = topFunctions(r, 8);
  if (top.length) {
    out.push('  Hottest functions (self samples):');
    for (const f of top) out.push(`    ${String(f.self).padStart(6)}  ${f.name}`);
  }
  return out.join('\n');
}

export function formatJvmResult(res: JvmResult, range?: [number, number]): string {
  const t = JvmTimeline.fromResult(res);
  const out: string[] = [''];
  out.push(`JVM ${res.pid}: ${((res.endNs - res.startNs) / 1e9).toFixed(1)} s traced, ${res.threads.length} threads (${t.groups().map((g) => `${GROUP_LABEL[g]}: ${res.threads.filter((x) => x.group === g).length}`).join(', ')})`);
  const whole = t.range(res.startNs, res.endNs + 1);
  const from = range ? res.startNs + range[0] * 1e9 : res.startNs;
  const to = range ? res.startNs + range[1] * 1e9 : res.endNs + 1;
  out.push(formatRange(t, range ? t.range(from, to) : whole));
  if (res.lost) out.push(`warning: ${res.lost} events or samples lost in the kernel`);
  if (res.dropped) out.push(`warning: ${res.dropped} run-queue waits dropped (kernel map full)`);
  return out.join('\n');
}

export const jvmCommand: Command = {
  name: 'jvm',
  summary: cliSummary('jvm'),
  usage: 'ebpf-studio jvm --pid PID [--duration S] [--frequency HZ] [--slice-ms MS] [--range FROM:TO] [--json]',
  async run(argv, io) {
    const { values } = parse(argv, { ...commonOptions, pid: { type: 'string', short: 'p' }, frequency: { type: 'string', short: 'F' }, 'slice-ms': { type: 'string' }, range: { type: 'string' } });
    if (values.help) {
      io.out(this.usage);
      return 0;
    }
    const pid = pidFlag(values.pid);
    if (pid === undefined) throw usageError(`give --pid PID of a running JVM. Usage: ${this.usage}`);
    const frequency = numberFlag(values.frequency, '--frequency', 1, PROFILE_MAX_FREQUENCY, { integer: true }) ?? 99;
    const sliceMs = numberFlag(values['slice-ms'], '--slice-ms', 100, 10_000, { integer: true }) ?? 250;
    const range = rangeFlag(values.range);
    // With --json and --range, the document also carries the range's statistics.
    const tracer: typeof jvmTracer = !range
      ? jvmTracer
      : {
          ...jvmTracer,
          async start(options, env, events) {
            const session = await jvmTracer.start(options, env, events);
            return {
              ...session,
              snapshot: () => session.snapshot(),
              async stop() {
                const r = await session.stop();
                const t = JvmTimeline.fromResult(r);
                return { ...r, range: t.range(r.startNs + range[0] * 1e9, r.startNs + range[1] * 1e9) };
              },
            };
          },
        };
    return runTracer(
      {
        tracer,
        options: { pid, frequency, sliceMs },
        privilege: 'uprobe',
        json: Boolean(values.json),
        verbose: Boolean(values.verbose),
        durationS: durationFlag(values.duration),
        formatUpdate: (u) => formatGcLines({ events: u.gc, lost: u.lost, pids: [pid], startNs: u.startNs, nowNs: u.nowNs }).join('\n'),
        formatResult: (r) => formatJvmResult(r, range),
        banner: () => `Tracing the JVM timeline of pid ${pid} (GC, safepoints, run queue, CPU at ${frequency} Hz)... Ctrl-C to end.`,
      },
      io,
    );
  },
};
