// The CLI command of a log2-histogram tracer, from a spec: --pid, one --per-X flag per key, --ms,
// --interval, --duration, --json and the tracer's own flags; histograms printed like
// libbpf-tools (one per interval when --interval is given, the total at the end), each with a
// one-line summary, in the tracer's nouns (the catalog's).
import type { Command } from './command';
import { commonOptions, durationFlag, numberFlag, parse, pidFlag, type OptionSpec, type Values } from './args';
import { runTracer } from './runTracer';
import type { Tracer } from '../tracers/tracer';
import { usageError } from '../protocol/errors';
import { renderText, statsOf } from '../model/log2hist';
import type { HistOptions, HistResult, HistUnit, HistUpdate, KeyHistogram } from '../protocol/histogram';
import { CATALOG, cliSummary, histogramOf, keyText, type HistogramTracer } from '../protocol/catalog';
import type { OptionsOf, TracerName } from '../protocol/protocol';

type HistName = HistogramTracer & TracerName;

export interface HistCommandSpec<N extends HistName> {
  tracer: Tracer<N>;
  /** help of --pid: "only threads of process P" */
  pid: string;
  /** --per-X flags: X is the per mode; the text is its help */
  per: Readonly<Record<string, string>>;
  /** the tracer's own flags: their parse spec, usage ("[--queued]") and help lines, and options */
  own?: { spec: OptionSpec; usage: string; help: string[]; options(values: Values): Partial<OptionsOf<N>> };
  banner(targets: number[], options: OptionsOf<N>): string;
}

function fmt(v: number): string {
  return v >= 100 ? v.toFixed(0) : v.toFixed(1);
}

/** The histograms in libbpf-tools' text layout, with a one-line summary under each. */
export function formatHistograms(hists: KeyHistogram[], per: string, unit: HistUnit, tracer: HistogramTracer): string {
  const label = unit === 'ms' ? 'msecs' : 'usecs';
  const keyLabel = histogramOf(tracer).keyLabels[per] ?? per;
  const blocks = hists.map((h) => {
    const s = statsOf(h.buckets);
    const head = per === 'none' ? '' : `\n${keyLabel} = ${keyText(tracer, per, h.key)} ${h.comm}\n`;
    const summary = `count ${s.count}, p50 ~${fmt(s.p50)} ${unit}, p90 ~${fmt(s.p90)} ${unit}, p99 ~${fmt(s.p99)} ${unit}, max <= ${s.max} ${unit}`;
    return `${head}${renderText(h.buckets, label)}\n${summary}`;
  });
  return blocks.join('\n');
}

const flagLine = (flag: string, help: string) => `  ${flag.padEnd(17)}${help}`;

function usage<N extends HistName>(spec: HistCommandSpec<N>): string {
  const pers = Object.keys(spec.per).map((p) => `--per-${p}`);
  const head = `ebpf-studio ${CATALOG[spec.tracer.name].cli.command} [--pid P] [${pers.join(' | ')}] [--ms] ${spec.own ? `${spec.own.usage} ` : ''}[--interval S] [--duration S] [--json]`;
  return [
    head,
    flagLine('--pid P', spec.pid),
    ...Object.entries(spec.per).map(([p, help]) => flagLine(`--per-${p}`, help)),
    flagLine('--ms', 'histogram in milliseconds (default microseconds)'),
    ...(spec.own?.help ?? []),
    flagLine('--interval S', 'print a histogram every S seconds (default: only at the end; reads every 1 s)'),
    flagLine('--duration S', 'stop after S seconds (default: Ctrl-C)'),
    flagLine('--json', 'print the result document as JSON'),
  ].join('\n');
}

function perFlag(values: Values, pers: string[]): string {
  const chosen = pers.filter((p) => values[`per-${p}`]);
  const flags = pers.map((p) => `--per-${p}`);
  const list = flags.length > 1 ? `${flags.slice(0, -1).join(', ')} and ${flags[flags.length - 1]}` : flags[0];
  if (chosen.length > 1) throw usageError(`choose one of ${list}, not ${chosen.map((c) => `--per-${c}`).join(' and ')}`);
  return chosen[0] ?? 'none';
}

/** Text output of one session: a histogram per interval (with --interval) and the total. */
function output(name: HistogramTracer, per: string, unit: HistUnit, printIntervals: boolean) {
  return {
    formatUpdate: (u: HistUpdate) => {
      if (!printIntervals) return '';
      const time = new Date().toTimeString().slice(0, 8);
      const hists = per === 'none' ? [{ key: -1, comm: 'all', count: 0, buckets: u.interval.buckets }] : u.keys;
      return `\n${time}\n${formatHistograms(hists, per, unit, name)}`;
    },
    formatResult: (r: HistResult) => {
      const lines = [printIntervals ? '\nTotal:' : '', formatHistograms(r.histograms, per, unit, name)];
      if (r.dropped) lines.push(`${r.dropped} ${histogramOf(name).events} lost: a kernel map was full`);
      return lines.filter(Boolean).join('\n');
    },
  };
}

export function histCommand<N extends HistName>(spec: HistCommandSpec<N>): Command {
  const name = spec.tracer.name;
  const text = usage(spec);
  const perOptions = Object.fromEntries(Object.keys(spec.per).map((p) => [`per-${p}`, { type: 'boolean' as const }]));
  return {
    name: CATALOG[name].cli.command,
    summary: cliSummary(name),
    usage: text,
    async run(argv, io) {
      const { values } = parse(argv, { ...commonOptions, pid: { type: 'string' }, ...perOptions, ms: { type: 'boolean' }, interval: { type: 'string' }, ...spec.own?.spec });
      if (values.help) {
        io.out(text);
        return 0;
      }
      const per = perFlag(values, Object.keys(spec.per));
      const unit: HistUnit = values.ms ? 'ms' : 'us';
      const interval = numberFlag(values.interval, '--interval', 0.1, 3600);
      const options = { pid: pidFlag(values.pid) ?? 0, per, unit, intervalS: interval ?? 1, ...spec.own?.options(values) } as HistOptions as OptionsOf<N>;
      return runTracer(
        {
          tracer: spec.tracer,
          options,
          privilege: 'bpf',
          json: Boolean(values.json),
          verbose: Boolean(values.verbose),
          durationS: durationFlag(values.duration),
          ...(output(name, per, unit, interval !== undefined && !values.json) as object),
          banner: (targets) => spec.banner(targets, options),
        } as Parameters<typeof runTracer<N>>[0],
        io,
      );
    },
  };
}
