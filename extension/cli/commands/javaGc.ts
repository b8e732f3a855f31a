// `ebpf-studio java-gc --pid PID | --all [--min-us N] [--duration S] [--json]`: one line per
// GC pause (time, pid, cpu, young/full, pause), then a log2 histogram and a summary.
import type { Command } from '../command';
import { commonOptions, durationFlag, numberFlag, parse, pidFlag } from '../args';
import { runTracer } from '../runTracer';
import { javaGcTracer } from '../../tracers/javaGc';
import { usageError } from '../../shared/errors';
import type { JavaGcResult, JavaGcUpdate } from '../../shared/javaGc';
import { formatDuration, renderText } from '../../shared/log2hist';
import { formatReclaim, formatSize, poolReclaim } from '../../shared/javaGcStats';

const HEADER = `${'TIME'.padEnd(12)} ${'PID'.padEnd(8)} ${'CPU'.padEnd(4)} ${'KIND'.padEnd(6)} PAUSE`;

function clock(ms: number): string {
  const d = new Date(ms);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

export function formatGcLines(u: JavaGcUpdate, nowMs = Date.now()): string[] {
  return u.events.map((e) => {
    const wall = nowMs - (u.nowNs - e.timestampNs) / 1e6;
    return `${clock(wall).padEnd(12)} ${String(e.pid).padEnd(8)} ${String(e.cpu).padEnd(4)} ${(e.full ? 'full' : 'young').padEnd(6)} ${formatDuration(e.durationNs, 'ns')}`;
  });
}

export function formatGcResult(r: JavaGcResult): string {
  const s = r.summary;
  const out: string[] = [''];
  if (s.count === 0) out.push('No GC pauses seen.');
  else {
    out.push(renderText(r.histogram.buckets, 'usecs'), '');
    out.push(`GCs: ${s.count} (${s.count - s.fullCount} young, ${s.fullCount} full) in pid${r.pids.length === 1 ? '' : 's'} ${r.pids.join(', ')}`);
    out.push(`pause total ${formatDuration(s.totalPauseNs, 'ns')}   p50 ${formatDuration(s.p50Ns, 'ns')}   p90 ${formatDuration(s.p90Ns, 'ns')}   p99 ${formatDuration(s.p99Ns, 'ns')}   max ${formatDuration(s.maxNs, 'ns')}`);
    const pools = poolReclaim(r.events).filter((p) => p.lastBefore > 0 || p.lastAfter > 0);
    if (pools.length) {
      out.push('', `${'POOL'.padEnd(34)} ${'LAST GC: BEFORE → AFTER'.padEnd(26)} TOTAL RECLAIMED`);
      for (const p of pools) out.push(`${p.name.padEnd(34)} ${`${formatSize(p.lastBefore)} → ${formatSize(p.lastAfter)}`.padEnd(26)} ${formatReclaim(p.totalReclaimed)}`);
    }
  }
  if (r.lost > 0) out.push(`warning: ${r.lost} GC events lost (kernel buffer full)`);
  return out.join('\n');
}

export const javaGcCommand: Command = {
  name: 'java-gc',
  summary: 'trace Java GC pauses (hotspot USDT): young/full, pause time, pool usage',
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
        banner: (targets) => `Tracing Java GC in ${targets.length ? `pid ${targets.join(', ')}` : 'every JVM (including ones that start later)'}${minUs ? `, pauses ≥ ${minUs} µs` : ''}... Ctrl-C to end.`,
      },
      io,
    );
  },
};
