// The container scope of the log2-histogram commands (with the `vscode` mock and a fake helper):
// every kit tracer the catalog says can keep to one container offers "A container…" after "One
// process…", lists the running containers the helper names (name, image, runtime, short id,
// processes), and starts the session on the picked one by its full id; with none running it says
// so and starts nothing. The catalog and the tracers' specs agree on which tracers those are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fakeContext, installVscodeMock, recorded } from '../mocks/vscode';
import type { ContainerListing } from '../../extension/protocol/protocol';

const vscode = installVscodeMock();
const feature = require('../../extension/editor/features/histograms') as typeof import('../../extension/editor/features/histograms');
const { setHelper } = require('../../extension/editor/helperClient/helperClient') as typeof import('../../extension/editor/helperClient/helperClient');
const { CATALOG, HISTOGRAM_TRACERS, histogramOf } = require('../../extension/protocol/catalog') as typeof import('../../extension/protocol/catalog');

feature.activate(fakeContext('/tmp') as never);
const win = vscode.window as unknown as Record<string, unknown>;
type Row = { label: string; description?: string; detail?: string; oneContainer?: boolean; unit?: string; listing?: ContainerListing };

const shop: ContainerListing = { container: { runtime: 'podman', id: 'ab12'.repeat(16), name: 'shop', image: 'localhost/shop:2' }, label: 'podman: shop, image localhost/shop:2', processes: 3 };
const api: ContainerListing = { container: { runtime: 'docker', id: 'cd34'.repeat(16), image: 'debian:bookworm' }, label: 'docker cd34cd34cd34, image debian:bookworm', processes: 1 };

/** A helper that lists `running` and records what is asked (a session start is refused: no kernel here). */
function fakeHelper(running: ContainerListing[], calls: { method: string; params: unknown }[]): never {
  return {
    request: async (type: { method: string }, params?: unknown) => {
      calls.push({ method: type.method, params });
      if (type.method === 'listContainers') return running;
      throw new Error(`no ${type.method} in unit tests`);
    },
  } as never;
}

function answer(title: string, pick: { scope: RegExp; container?: (rows: Row[]) => Row | undefined }, seen: Record<string, Row[]>) {
  win.showQuickPick = async (items: Row[], o: { title: string }) => {
    seen[o.title.replace(/^.*: /, '')] = items;
    if (o.title === `${title}: scope`) return items.find((i) => pick.scope.test(i.label));
    if (o.title === `${title}: container`) return pick.container?.(items);
    if (o.title === `${title}: unit`) return items.find((i) => i.unit === 'us');
    throw new Error(`unexpected picker ${o.title}`);
  };
}

const plain = (rows: Row[]) => rows.map((r) => r.label.replace(/^\$\([a-z-]+\) /, ''));

test('the catalog says which kit tracers keep to a container, as their specs do; each offers "A container…" after "One process…"', () => {
  const { kitTracers } = require('../../extension/tracers') as typeof import('../../extension/tracers');
  const withContainers = HISTOGRAM_TRACERS.filter((t) => histogramOf(t).containers);
  assert.deepEqual([...withContainers].sort(), ['biolatency', 'cpudist', 'runqlat']);
  for (const t of HISTOGRAM_TRACERS) {
    const spec = (kitTracers as Record<string, { spec: { containerFilter?: boolean } }>)[t].spec;
    assert.equal(Boolean(spec.containerFilter), Boolean(histogramOf(t).containers), `${t}: the catalog's containers and the spec's containerFilter agree`);
    const labels = plain(feature.scopeItems(t));
    const at = labels.indexOf('A container…');
    if (histogramOf(t).containers) assert.equal(at, labels.indexOf('One process…') + 1, `${t}: ${labels.join(', ')}`);
    else assert.equal(at, -1, `${t} cannot keep to a container`);
  }
  assert.deepEqual(plain(feature.scopeItems('runqlat')), ['Whole system', 'One process…', 'A container…', 'Per process', 'Per thread', 'Per PID namespace']);
});

test('a container row: its name (or short id), image, runtime, short id and processes', () => {
  assert.deepEqual(
    [shop, api].map((l) => {
      const i = feature.containerItem(l);
      return [i.label, i.description, i.detail];
    }),
    [
      ['$(package) shop', 'localhost/shop:2', 'podman · ab12ab12ab12 · 3 processes'],
      ['$(package) cd34cd34cd34', 'debian:bookworm', 'docker · cd34cd34cd34 · 1 process'],
    ],
  );
});

for (const tracer of ['runqlat', 'cpudist', 'biolatency'] as const) {
  const title = `Show ${histogramOf(tracer).editor.title}`;
  test(`${title}: "A container…" lists the running containers and starts the session on the picked one by its id`, async () => {
    const calls: { method: string; params: unknown }[] = [];
    setHelper(fakeHelper([shop, api], calls));
    const seen: Record<string, Row[]> = {};
    answer(title, { scope: /A container/, container: (rows) => rows.find((r) => r.listing?.container.name === 'shop') }, seen);
    await vscode.commands.executeCommand(CATALOG[tracer].commands[0]);
    assert.deepEqual(plain(seen.container), ['shop', 'cd34cd34cd34']);
    assert.deepEqual(calls.map((c) => c.method), ['listContainers', 'session/start']);
    assert.deepEqual(calls[1].params, { tracer, options: { pid: 0, per: 'none', unit: 'us', intervalS: 1, container: shop.container.id } });
  });
}

test('"A container…" with none running: a message says so, and nothing starts', async () => {
  const calls: { method: string; params: unknown }[] = [];
  setHelper(fakeHelper([], calls));
  const seen: Record<string, Row[]> = {};
  answer('Show Run Queue Latency', { scope: /A container/ }, seen);
  const before = recorded.infos.length;
  assert.equal(await vscode.commands.executeCommand('ebpfStudio.showRunQueueLatency'), undefined);
  assert.match(recorded.infos.slice(before).join('\n'), /Show Run Queue Latency: no container is running/);
  assert.deepEqual(calls.map((c) => c.method), ['listContainers']);
  assert.equal(seen.unit, undefined, 'no unit asked');
});

test('the container picker dismissed: nothing starts', async () => {
  const calls: { method: string; params: unknown }[] = [];
  setHelper(fakeHelper([shop], calls));
  answer(`Show ${histogramOf('cpudist').editor.title}`, { scope: /A container/, container: () => undefined }, {});
  assert.equal(await vscode.commands.executeCommand('ebpfStudio.showCpuDistribution'), undefined);
  assert.deepEqual(calls.map((c) => c.method), ['listContainers']);
});
