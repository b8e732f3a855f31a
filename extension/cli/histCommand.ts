// The CLI command of a log2-histogram tracer, from its kit spec's command line (tracers/histTracer.ts):
// --pid, one --per-X flag per key, --ms, --interval, --duration, --json and the tracer's own
// boolean flags; histograms printed like
// libbpf-tools (one per interval when --interval is given, the total at the end), each with a
// one-line summary, in the tracer's nouns (the catalog's).
import type { Command } from './command';
import { commonOptions, durationFlag, numberFlag, parse, pidFlag, type OptionSpec, type Values } from './args';
import { runTracer } from './runTracer';
import type { HistName, KitTracer } from '../tracers/histTracer';
import type { Tracer } from '../tracers/tracer';
import { usageError } from '../protocol/errors';
import { renderText, statsOf } from '../model/log2hist';
import type { HistOptions, HistResult, HistUnit, HistUpdate, KeyHistogram } from '../protocol/histogram';
import { CATALOG, cliSummary, histogramOf, keyText, type HistogramTracer } from '../protocol/catalog';
import type { OptionsOf } from '../protocol/protocol';


function fmt(v: number): string {
  return v >= 100 ? v.toFixed(0) : v.toFixed(1);
}

/** The histograms in libbpf-tools' text layout, with a one-line summary under each. */
export function formatHistograms(hists: KeyHistogram[], per: string, unit: HistUnit, tracer: HistogramTracer): string {
  const label = unit === 'ms' ? 'msecs' : 'usecs';
  const keyLabel = histogramOf(tracer).keyLabels[per] ?? per;
  const blocks = hists.map((h) => {
    const s = statsOf(h.buckets);
    const key = keyText(tracer, per, h.key);
    // A key whose name is its text (an address) is said once.
    const head = per === 'none' ? '' : `\n${keyLabel} = ${key}${h.comm && h.comm !== key ? ` ${h.comm}` : ''}\n`;
    const summary = `count ${s.count}, p50 ~${fmt(s.p50)} ${unit}, p90 ~${fmt(s.p90)} ${unit}, p99 ~${fmt(s.p99)} ${unit}, max <= ${s.max} ${unit}`;
    return `${head}${renderText(h.buckets, label)}\n${summary}`;
  });
  return blocks.join('\n');
}

const flagLine = (flag: string, help: string) => `  ${flag.padEnd(17)}${help}`;

function usage<N extends HistName>(name: N, cli: KitTracer<N>['spec']['cli'], containers: boolean): string {
  const pers = Object.keys(cli.per).map((p) => `--per-${p}`);
  const flags = Object.keys(cli.flags ?? {});
  const own = cli.usage ?? flags.map((f) => `[--${f}]`).join(' ');
  const head = `ebpf-studio ${CATALOG[name].cli.command} [--pid P${containers ? ' | --container NAME|ID' : ''}] [${pers.join(' | ')}] [--ms] ${own ? `${own} ` : ''}[--interval S] [--duration S] [--json]`;
  return [
    head,
    flagLine('--pid P', cli.pid),
    ...(containers ? [flagLine('--container C', "only the tasks of container C (docker, podman, containerd, CRI-O), by its name or id prefix: its cgroup and those below it")] : []),
    ...Object.entries(cli.per).map(([p, help]) => flagLine(`--per-${p}`, help)),
    flagLine('--ms', 'histogram in milliseconds (default microseconds)'),
    ...Object.entries<string>(cli.flags ?? {}).map(([f, help]) => flagLine(`--${f}`, help)),
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

/** The options of one run from the command line, checked as the helper checks them (before privilege). */
function optionsOf<N extends HistName>(tracer: KitTracer<N>, values: Values): OptionsOf<N> {
  const cli = tracer.spec.cli;
  const per = perFlag(values, Object.keys(cli.per));
  const intervalS = numberFlag(values.interval, '--interval', 0.1, 3600) ?? 1;
  const own = Object.fromEntries(Object.keys(cli.flags ?? {}).map((f) => [f, Boolean(values[f])]));
  const container = typeof values.container === 'string' ? { container: values.container } : {};
  const options = { pid: pidFlag(values.pid) ?? 0, per, unit: values.ms ? 'ms' : 'us', intervalS, ...own, ...container } as HistOptions as OptionsOf<N>;
  try {
    tracer.validate(options);
  } catch (e) {
    throw usageError((e as Error).message);
  }
  return options;
}

export function histCommand<N extends HistName>(tracer: KitTracer<N>): Command {
  const name = tracer.name;
  const cli = tracer.spec.cli;
  const text = usage(name, cli, Boolean(tracer.spec.containerFilter));
  const flagOptions: OptionSpec = Object.fromEntries([...Object.keys(cli.per).map((p) => `per-${p}`), ...Object.keys(cli.flags ?? {})].map((f) => [f, { type: 'boolean' as const }]));
  return {
    name: CATALOG[name].cli.command,
    summary: cliSummary(name),
    usage: text,
    async run(argv, io) {
      const { values } = parse(argv, { ...commonOptions, pid: { type: 'string' }, ms: { type: 'boolean' }, interval: { type: 'string' }, ...flagOptions, ...(tracer.spec.containerFilter ? { container: { type: 'string' as const } } : {}) });
      if (values.help) {
        io.out(text);
        return 0;
      }
      const options = optionsOf(tracer, values);
      const { per, unit } = options as HistOptions;
      return runTracer(
        {
          tracer: tracer as Tracer<N>,
          options,
          privilege: 'bpf',
          json: Boolean(values.json),
          verbose: Boolean(values.verbose),
          durationS: durationFlag(values.duration),
          ...(output(name, per, unit, values.interval !== undefined && !values.json) as object),
          banner: (targets) => cli.banner(targets, options),
        } as Parameters<typeof runTracer<N>>[0],
        io,
      );
    },
  };
}
