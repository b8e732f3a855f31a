// `ebpf-studio java-gc --pid PID | --all [--min-us N] [--duration S] [--json]`: one line per
// collection (time, pid, cpu, collector, kind, duration), then a log2 histogram of the pauses,
// a table per collector (the JVM's own counts), the safepoints and the pools.
import { cliSummary } from '../../protocol/catalog';
import type { Command } from '../command';
import { commonOptions, durationFlag, numberFlag, parse, pidFlag } from '../args';
import { runTracer } from '../runTracer';
import { javaGcTracer } from '../../tracers/javaGc/tracer';
import { usageError } from '../../protocol/errors';
import type { JavaGcResult, JavaGcUpdate } from '../../protocol/javaGc';
import { formatDuration, renderText } from '../../model/log2hist';
import { formatReclaim, formatSize, pausePhases, poolReclaim } from '../../model/javaGcStats';

const HEADER = `${'TIME'.padEnd(12)} ${'PID'.padEnd(8)} ${'CPU'.padEnd(4)} ${'COLLECTOR'.padEnd(20)} ${'KIND'.padEnd(17)} DURATION`;

function clock(ms: number): string {
  const d = new Date(ms);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

export function formatGcLines(u: JavaGcUpdate, nowMs = Date.now()): string[] {
  return u.events.map((e) => {
    const wall = nowMs - (u.nowNs - e.timestampNs) / 1e6;
    const kind = `${e.kind}${e.escalated ? ' (escalated)' : ''}`;
    return `${clock(wall).padEnd(12)} ${String(e.pid).padEnd(8)} ${String(e.cpu).padEnd(4)} ${e.collector.padEnd(20)} ${kind.padEnd(17)} ${formatDuration(e.durationNs, 'ns')}${e.operation ? `  ${e.operation}` : ''}`;
  });
}

export function formatGcResult(r: JavaGcResult): string {
  const s = r.summary;
  const out: string[] = [''];
  if (s.count === 0) out.push('No GC pauses seen.');
  else {
    if (s.pauseCount) out.push(renderText(r.histogram.buckets, 'usecs'), '');
    out.push(`GCs: ${s.count} collections (${s.pauseCount} pauses) in pid${r.pids.length === 1 ? '' : 's'} ${r.pids.join(', ')}`);
    out.push(`pause total ${formatDuration(s.totalPauseNs, 'ns')}   p50 ${formatDuration(s.p50Ns, 'ns')}   p90 ${formatDuration(s.p90Ns, 'ns')}   p99 ${formatDuration(s.p99Ns, 'ns')}   max ${formatDuration(s.maxNs, 'ns')}`);
    out.push('', `${'COLLECTOR'.padEnd(22)} ${'KIND'.padEnd(17)} ${'COUNT'.padStart(6)} ${'ESCALATED'.padStart(9)} ${'TOTAL'.padStart(10)} ${'P50'.padStart(10)} ${'P99'.padStart(10)} ${'MAX'.padStart(10)}`);
    for (const c of r.collectors) {
      const d = (ns: number) => formatDuration(ns, 'ns').padStart(10);
      out.push(`${c.collector.padEnd(22)} ${c.kind.padEnd(17)} ${String(c.count).padStart(6)} ${String(c.escalated).padStart(9)} ${d(c.totalNs)} ${d(c.p50Ns)} ${d(c.p99Ns)} ${d(c.maxNs)}`);
    }
    // With several collectors, each one's own durations (a cycle's are not pause times).
    if (r.collectors.length > 1) for (const c of r.collectors) out.push('', `${c.collector} (${c.kind}):`, renderText(c.histogram, 'usecs'));
    const pools = poolReclaim(r.events).filter((p) => p.lastBefore > 0 || p.lastAfter > 0);
    if (pools.length) {
      out.push('', `${'POOL'.padEnd(34)} ${'LAST GC: BEFORE → AFTER'.padEnd(26)} TOTAL RECLAIMED`);
      for (const p of pools) out.push(`${p.name.padEnd(34)} ${`${formatSize(p.lastBefore)} → ${formatSize(p.lastAfter)}`.padEnd(26)} ${formatReclaim(p.totalReclaimed)}`);
    }
  }
  const phases = phaseTable(r);
  if (phases) out.push('', phases);
  out.push('', formatSafepoints(r));
  for (const c of r.jvmCounts ?? []) out.push(`${c.verdict === 'missed' ? 'ERROR ' : ''}${c.message}`);
  if (r.lost > 0) out.push(`warning: ${r.lost} GC events lost (kernel buffer full)`);
  return out.join('\n');
}

/** Where pause time went, by phase, when the events carry phases (a Flight Recording's); '' otherwise. */
function phaseTable(r: JavaGcResult): string {
  const rows = pausePhases(r.events).slice(0, 15);
  if (!rows.length) return '';
  const w = Math.max(28, ...rows.map((p) => p.name.length));
  return [
    `${'PAUSE PHASE'.padEnd(w)} ${'COUNT'.padStart(6)} ${'TOTAL'.padStart(10)} ${'SHARE'.padStart(6)}`,
    ...rows.map((p) => `${p.name.padEnd(w)} ${String(p.count).padStart(6)} ${formatDuration(p.totalNs, 'ns').padStart(10)} ${`${p.share.toFixed(1)}%`.padStart(6)}`),
  ].join('\n');
}

export function formatSafepoints(r: JavaGcResult): string {
  const sp = r.safepoints;
  if (!sp.available) return `Safepoints: not available (${sp.reason ?? 'no probes'})`;
  const s = sp.summary;
  const d = (ns: number) => formatDuration(ns, 'ns');
  const lines = [`Safepoints: ${s.count}, total ${d(s.totalNs)}   time to safepoint p50 ${d(s.ttsP50Ns)} p99 ${d(s.ttsP99Ns)} max ${d(s.ttsMaxNs)}   duration p50 ${d(s.p50Ns)} p99 ${d(s.p99Ns)} max ${d(s.maxNs)}`];
  if (sp.lost) lines.push(`warning: ${sp.lost} safepoints lost`);
  return lines.join('\n');
}

export const javaGcCommand: Command = {
  name: 'java-gc',
  summary: cliSummary('java-gc'),
  usage: 'ebpf-studio java-gc --pid PID | --all [--min-us N] [--duration S] [--json]',
  async run(argv, io) {
    const { values } = parse(argv, { ...commonOptions, pid: { type: 'string', short: 'p' }, all: { type: 'boolean' }, 'min-us': { type: 'string' } });
    if (values.help) {
      io.out(this.usage);
      return 0;
    }
    const pid = pidFlag(values.pid);
    const all = Boolean(values.all);
    if (pid === undefined && !all) throw usageError(`give --pid PID (one JVM) or --all (every JVM, including ones that start later). Usage: ${this.usage}`);
    if (pid !== undefined && all) throw usageError('--pid and --all exclude each other: give one');
    const minUs = numberFlag(values['min-us'], '--min-us', 0, 3_600_000_000, { integer: true }) ?? 0;
    let headerShown = false;
    return runTracer(
      {
        tracer: javaGcTracer,
        options: { pid: pid ?? 0, all, minUs },
        privilege: 'uprobe',
        json: Boolean(values.json),
        verbose: Boolean(values.verbose),
        durationS: durationFlag(values.duration),
        formatUpdate: (u) => {
          const lines = formatGcLines(u);
          if (lines.length && !headerShown) {
            headerShown = true;
            lines.unshift(HEADER);
          }
          return lines.join('\n');
        },
        formatResult: formatGcResult,
        failure: (r) => r.problem,
        banner: (targets) => `Tracing Java GC in ${targets.length ? `pid ${targets.join(', ')}` : 'every JVM (including ones that start later)'}${minUs ? `, pauses ≥ ${minUs} µs` : ''}... Ctrl-C to end.`,
      },
      io,
    );
  },
};
