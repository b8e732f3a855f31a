// Commands: one per log2-histogram tracer in the catalog (ebpfStudio.showRunQueueLatency,
// ebpfStudio.showBlockIoLatency, ...): choose a scope (the catalog's: whole system, one process,
// a container where the tracer can keep to one, per key) and a unit, then watch the latency live
// in the kit's panel (histogram, heat map, key table). Context keys: none of their own
// (sessions.ts sets ebpfStudio.sessionRunning).
import * as vscode from 'vscode';
import type { HistOptions, HistUnit } from '../../protocol/histogram';
import { CATALOG, HISTOGRAM_TRACERS, histogramOf, type HistogramScope, type HistogramTracer } from '../../protocol/catalog';
import * as proto from '../../protocol/protocol';
import { pickProcess } from '../ui/processPicker';
import { helper } from '../helperClient/helperClient';
import { openLiveView } from '../sessions/liveHistogram';
import { showError } from '../ui/errors';

type Scope = HistogramScope & { oneContainer?: boolean };

/** The scope a tracer that can keep to one container offers (the catalog's `containers`). */
const CONTAINER_SCOPE: Scope = {
  label: '$(package) A container…',
  detail: 'Only the tasks of a running container you pick (docker, podman, containerd, CRI-O): its cgroup and those below it',
  per: 'none',
  oneContainer: true,
};

/** The scope picker's choices: the catalog's, with the container scope after "One process…" where the tracer has it. */
export function scopeItems(tracer: HistogramTracer): Scope[] {
  const nouns = histogramOf(tracer);
  const items: Scope[] = nouns.editor.scopes.map((s) => ({ ...s }));
  if (nouns.containers) items.splice(items.findIndex((s) => s.oneProcess) + 1, 0, { ...CONTAINER_SCOPE });
  return items;
}

/** A running container's row: its name (or short id), image, runtime, id and processes. */
export function containerItem(l: proto.ContainerListing): vscode.QuickPickItem & { listing: proto.ContainerListing } {
  const c = l.container;
  const pod = c.pod ? ` · pod ${c.namespace ? `${c.namespace}/` : ''}${c.pod}` : '';
  return {
    label: `$(package) ${c.name ?? c.id.slice(0, 12)}`,
    description: c.image ?? '',
    detail: `${c.runtime} · ${c.id.slice(0, 12)}${pod} · ${l.processes} process${l.processes === 1 ? '' : 'es'}`,
    listing: l,
  };
}

/** The container to keep to (its full id, so a name two runtimes share is never ambiguous), or undefined. */
async function pickContainer(command: string): Promise<{ id: string; name: string } | undefined> {
  const running = await helper().request(proto.listContainers, undefined as never);
  if (!running.length) {
    void vscode.window.showInformationMessage(`${command}: no container is running (docker, podman, containerd and CRI-O containers with a cgroup v2 directory are listed)`);
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(running.map(containerItem), { title: `${command}: container`, matchOnDescription: true, matchOnDetail: true });
  return picked && { id: picked.listing.container.id, name: picked.listing.container.name ?? picked.listing.container.id.slice(0, 12) };
}

async function pickOptions(tracer: HistogramTracer): Promise<{ options: HistOptions; where?: string } | undefined> {
  const { title } = histogramOf(tracer).editor;
  const command = `Show ${title}`;
  const scope = await vscode.window.showQuickPick(scopeItems(tracer), { title: `${command}: scope` });
  if (!scope) return undefined;
  let pid = 0;
  let container: { id: string; name: string } | undefined;
  if (scope.oneProcess) {
    const picked = await pickProcess({ command, title: `${command}: process` });
    if (!picked || !('process' in picked)) return undefined;
    pid = picked.process.pid;
  }
  if (scope.oneContainer && !(container = await pickContainer(command))) return undefined;
  const unit = await vscode.window.showQuickPick(
    [
      { label: 'Microseconds (µs)', unit: 'us' as HistUnit },
      { label: 'Milliseconds (ms)', unit: 'ms' as HistUnit },
    ],
    { title: `${command}: unit` },
  );
  if (!unit) return undefined;
  const options: HistOptions = { pid, per: scope.per, unit: unit.unit, intervalS: 1, ...(container ? { container: container.id } : {}) };
  return { options, where: container && `container ${container.name}` };
}

/** Runs a tracer's command: tests and other commands may pass the options directly. */
async function run(context: vscode.ExtensionContext, tracer: HistogramTracer, given?: Partial<HistOptions>): Promise<string | undefined> {
  try {
    const picked = given ? { options: { ...given, pid: given.pid ?? 0, per: given.per ?? 'none', unit: given.unit ?? 'us', intervalS: given.intervalS ?? 1 } } : await pickOptions(tracer);
    if (!picked) return undefined;
    const s = await openLiveView(context, tracer, picked.options as proto.OptionsOf<typeof tracer> & HistOptions, picked.where);
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
