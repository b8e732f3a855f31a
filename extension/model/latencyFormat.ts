// The latency tracer's figures as text: the CodeLens line ("p50 0.8 ms · p99 41 ms · 1.2 k
// calls/s") and the CLI's report (summary, histogram, slow calls with their stacks). Pure.
import type { CallerLatency, LatencyResult, LatencyStats, SlowCall } from '../protocol/latency';
import type { Frame } from '../protocol/frames';
import { formatDuration, renderText } from './log2hist';

/** "1.2 k", "850", "3.4 M" */
export function formatRate(n: number): string {
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} k`;
  return n >= 10 ? n.toFixed(0) : n.toFixed(1);
}

/** The lens: "p50 0.8 ms · p99 41 ms · 1.2 k calls/s"; "no calls yet" before the first. */
export function lensText(s: LatencyStats): string {
  if (!s.count) return 'no calls yet';
  return `p50 ${formatDuration(s.p50Ns, 'ns')} · p99 ${formatDuration(s.p99Ns, 'ns')} · ${formatRate(s.callsPerS)} calls/s`;
}

export function frameText(f: Frame): string {
  const where = f.file ? ` (${f.file}${f.line ? `:${f.line}` : ''})` : '';
  const name = f.function ?? `${f.module}+${f.offset ?? f.address}`;
  return `${name}${where}`;
}

function slowText(c: SlowCall): string {
  return [`  ${formatDuration(c.durationNs, 'ns')}  tid ${c.tid}`, ...c.stack.map((f) => `      ${frameText(f)}`)].join('\n');
}

/** The summary line of the figures. */
export function statsLine(s: LatencyStats): string {
  const parts = [`count ${s.count}`, `p50 ${formatDuration(s.p50Ns, 'ns')}`, `p90 ${formatDuration(s.p90Ns, 'ns')}`, `p99 ${formatDuration(s.p99Ns, 'ns')}`, `max ${formatDuration(s.maxNs, 'ns')}`, `${formatRate(s.callsPerS)} calls/s`];
  return parts.join(', ');
}

/** What was not timed, when anything was. */
export function droppedLine(s: LatencyStats): string {
  const parts = [
    s.abandoned ? `${s.abandoned} left by longjmp or an exception` : '',
    s.exited ? `${s.exited} whose thread exited mid-call` : '',
    s.tooDeep ? `${s.tooDeep} recursing deeper than 16` : '',
    s.slowLost ? `${s.slowLost} slow calls not sent (ring buffer full)` : '',
  ].filter(Boolean);
  return parts.length ? `not timed: ${parts.join(', ')}` : '';
}

/** "by caller" as a table: calls, their share, mean, max and total per calling function. */
export function callersText(callers: CallerLatency[], shown = 20): string {
  const all = callers.reduce((n, c) => n + c.count, 0);
  const ns = (v: number) => formatDuration(v, 'ns').padStart(10);
  const rows = callers.slice(0, shown).map((c) => {
    const where = c.file ? `  ${c.file}${c.line ? `:${c.line}` : ''}` : c.module ? `  ${c.module}` : '';
    const sites = c.sites > 1 ? ` (${c.sites} call sites)` : '';
    return `${String(c.count).padStart(9)} ${(all ? (100 * c.count) / all : 0).toFixed(1).padStart(5)}% ${ns(c.count ? c.totalNs / c.count : 0)} ${ns(c.maxNs)} ${ns(c.totalNs)}  ${c.caller}${sites}${where}`;
  });
  const more = callers.length > shown ? [`  … ${callers.length - shown} more callers`] : [];
  return [`by caller (${callers.length}):`, '    calls  share       mean        max      total  caller', ...rows, ...more].join('\n');
}

export function latencyReport(r: LatencyResult, slowShown = 10): string {
  const h = r.histograms[0];
  const lines = [
    r.probe.returns === 'jfr-method-trace' || r.probe.returns === 'java-agent' ? `${r.probe.function} in ${r.probe.module}` : `${r.probe.function} in ${r.probe.module} (${r.probe.address}, returns at ${r.probe.returns})`,
    h ? renderText(h.buckets, r.unit === 'ms' ? 'msecs' : 'usecs') : '',
    statsLine(r.stats),
    droppedLine(r.stats),
    r.callers ? callersText(r.callers) : '',
    r.stats.callersFull ? `${r.stats.callersFull} calls from more call sites than the kernel keeps (1024) are in the totals only` : '',
  ];
  if (r.slow.length) lines.push(`slowest calls (${Math.min(slowShown, r.slow.length)} of ${r.slow.length} kept):`, ...r.slow.slice(0, slowShown).map(slowText));
  return lines.filter(Boolean).join('\n');
}
