// Commands: one per log2-histogram tracer in the catalog (ebpfStudio.showRunQueueLatency,
// ebpfStudio.showBlockIoLatency, ...): choose a scope (the catalog's: whole system, one process,
// per key) and a unit, then watch the latency live in the kit's panel (histogram, heat map, key
// table). Context keys: none of their own (sessions.ts sets ebpfStudio.sessionRunning).
import * as vscode from 'vscode';
import type { HistOptions, HistUnit } from '../../protocol/histogram';
import { CATALOG, HISTOGRAM_TRACERS, histogramOf, type HistogramTracer } from '../../protocol/catalog';
import type { OptionsOf } from '../../protocol/protocol';
import { pickProcess } from '../ui/processPicker';
import { openLiveView } from '../sessions/liveHistogram';
import { showError } from '../ui/errors';

async function pickOptions(tracer: HistogramTracer): Promise<HistOptions | undefined> {
  const { title, scopes } = histogramOf(tracer).editor;
  const command = `Show ${title}`;
  const scope = await vscode.window.showQuickPick(
    scopes.map((s) => ({ ...s })),
    { title: `${command}: scope` },
  );
  if (!scope) return undefined;
  let pid = 0;
  if (scope.oneProcess) {
    const picked = await pickProcess({ command, title: `${command}: process` });
    if (!picked || !('process' in picked)) return undefined;
    pid = picked.process.pid;
  }
  const unit = await vscode.window.showQuickPick(
    [
      { label: 'Microseconds (µs)', unit: 'us' as HistUnit },
      { label: 'Milliseconds (ms)', unit: 'ms' as HistUnit },
    ],
    { title: `${command}: unit` },
  );
  if (!unit) return undefined;
  return { pid, per: scope.per, unit: unit.unit, intervalS: 1 };
}

/** Runs a tracer's command: tests and other commands may pass the options directly. */
async function run(context: vscode.ExtensionContext, tracer: HistogramTracer, given?: Partial<HistOptions>): Promise<string | undefined> {
  try {
    const options = given ? { ...given, pid: given.pid ?? 0, per: given.per ?? 'none', unit: given.unit ?? 'us', intervalS: given.intervalS ?? 1 } : await pickOptions(tracer);
    if (!options) return undefined;
    const s = await openLiveView(context, tracer, options as OptionsOf<typeof tracer> & HistOptions);
    return s.id;
  } catch (e) {
    showError(e);
    return undefined;
  }
}

export function activate(context: vscode.ExtensionContext): void {
  for (const tracer of HISTOGRAM_TRACERS) {
    const command = CATALOG[tracer].commands[0];
    context.subscriptions.push(vscode.commands.registerCommand(command, (given?: Partial<HistOptions>) => run(context, tracer, given)));
  }
}
