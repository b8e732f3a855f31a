// `ebpf-studio runqlat [--pid P] [--per-process | --per-thread | --per-pidns] [--ms]
// [--interval S] [--duration S] [--json]`: run-queue latency histograms, printed like
// libbpf-tools runqlat (one per interval when --interval is given, the total at the end).
import { cliSummary } from '../../protocol/catalog';
import type { Command } from '../command';
import { commonOptions, durationFlag, numberFlag, parse, pidFlag } from '../args';
import { runTracer } from '../runTracer';
import { runqlatTracer } from '../../tracers/runqlat/tracer';
import { usageError } from '../../protocol/errors';
import { renderText } from '../../model/log2hist';
import type { RunqlatHistogram, RunqlatPer, RunqlatUnit } from '../../protocol/runqlat';
import { statsOf } from '../../model/log2hist';
import { CATALOG } from '../../protocol/catalog';

const RUNQLAT_KEY_LABEL = CATALOG.runqlat.histogram.keyLabels;

const USAGE = `ebpf-studio runqlat [--pid P] [--per-process | --per-thread | --per-pidns] [--ms] [--interval S] [--duration S] [--json]
  --pid P          only threads of process P
  --per-process    one histogram per process (tgid)
  --per-thread     one histogram per thread (tid)
  --per-pidns      one histogram per PID namespace
  --ms             histogram in milliseconds (default microseconds)
  --interval S     print a histogram every S seconds (default: only at the end; reads every 1 s)
  --duration S     stop after S seconds (default: Ctrl-C)
  --json           print the result document as JSON`;

function fmt(v: number): string {
  return v >= 100 ? v.toFixed(0) : v.toFixed(1);
}

/** The histograms in runqlat's text layout, with a one-line summary under each. */
export function formatHistograms(hists: RunqlatHistogram[], per: RunqlatPer, unit: RunqlatUnit): string {
  const label = unit === 'ms' ? 'msecs' : 'usecs';
  const blocks = hists.map((h) => {
    const s = statsOf(h.buckets);
    const head = per === 'none' ? '' : `\n${RUNQLAT_KEY_LABEL[per]} = ${h.key} ${h.comm}\n`;
    const summary = `count ${s.count}, p50 ~${fmt(s.p50)} ${unit}, p90 ~${fmt(s.p90)} ${unit}, p99 ~${fmt(s.p99)} ${unit}, max <= ${s.max} ${unit}`;
    return `${head}${renderText(h.buckets, label)}\n${summary}`;
  });
  return blocks.join('\n');
}

function perFlag(values: Record<string, unknown>): RunqlatPer {
  const chosen = (['process', 'thread', 'pidns'] as const).filter((p) => values[`per-${p}`]);
  if (chosen.length > 1) throw usageError(`choose one of --per-process, --per-thread and --per-pidns, not ${chosen.map((c) => `--per-${c}`).join(' and ')}`);
  return chosen[0] ?? 'none';
}

export const runqlatCommand: Command = {
  name: 'runqlat',
  summary: cliSummary('runqlat'),
  usage: USAGE,
  async run(argv, io) {
    const { values } = parse(argv, {
      ...commonOptions,
      pid: { type: 'string' },
      'per-process': { type: 'boolean' },
      'per-thread': { type: 'boolean' },
      'per-pidns': { type: 'boolean' },
      ms: { type: 'boolean' },
      interval: { type: 'string' },
    });
    if (values.help) {
      io.out(USAGE);
      return 0;
    }
    const per = perFlag(values);
    const pid = pidFlag(values.pid) ?? 0;
    const unit: RunqlatUnit = values.ms ? 'ms' : 'us';
    const interval = numberFlag(values.interval, '--interval', 0.1, 3600);
    const printIntervals = interval !== undefined && !values.json;
    return runTracer(
      {
        tracer: runqlatTracer,
        options: { pid, per, unit, intervalS: interval ?? 1 },
        privilege: 'bpf',
        json: Boolean(values.json),
        verbose: Boolean(values.verbose),
        durationS: durationFlag(values.duration),
        formatUpdate: (u) => {
          if (!printIntervals) return '';
          const time = new Date().toTimeString().slice(0, 8);
          const hists = per === 'none' ? [{ key: -1, comm: 'all', count: 0, buckets: u.interval.buckets }] : u.keys;
          return `\n${time}\n${formatHistograms(hists, per, unit)}`;
        },
        formatResult: (r) => {
          const lines = [printIntervals ? '\nTotal:' : '', formatHistograms(r.histograms, per, unit)];
          if (r.dropped) lines.push(`${r.dropped} waits lost: a kernel map was full`);
          return lines.filter(Boolean).join('\n');
        },
        banner: (targets) => `Tracing run queue latency${targets.length ? ` of pid ${targets.join(', ')}` : ''}... Hit Ctrl-C to end.`,
      },
      io,
    );
  },
};
