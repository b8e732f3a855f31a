// The tracer catalog (extension/protocol/catalog.ts) against what VS Code reads from package.json
// and what the build bundles: a tracer's command missing from the palette, a session view without
// its onWebviewPanel activation (no restore after a reload) or without its bundle (a blank panel)
// fails here rather than silently in the editor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { CATALOG, CATALOG_NAMES, HISTOGRAM_TRACERS, keyText, type TracerEntry } from '../../extension/protocol/catalog';
import { SESSION_VIEW_NAMES } from '../../extension/model/sessionFile';
import { commands } from '../../extension/cli/commands/index';
import { tracers } from '../../extension/tracers/index';

const root = path.join(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  activationEvents: string[];
  contributes: { commands: { command: string; title: string }[] };
};
const entries = CATALOG_NAMES.map((name) => [name, CATALOG[name] as TracerEntry] as const);

/** The catalog's checks against a package.json; returns what is missing, one line each. */
export function missingFromPackage(p: typeof pkg): string[] {
  const contributed = new Set(p.contributes.commands.map((c) => c.command));
  const activation = new Set(p.activationEvents);
  const missing: string[] = [];
  for (const [name, e] of entries) {
    for (const c of e.commands) if (!contributed.has(c)) missing.push(`${name}: command ${c} is not in contributes.commands`);
    if (e.sessionView && !activation.has(`onWebviewPanel:ebpfStudio.${e.sessionView}`)) missing.push(`${name}: activationEvents lacks onWebviewPanel:ebpfStudio.${e.sessionView}`);
  }
  return missing;
}

test('package.json contributes every catalog command and restores every session view', () => {
  assert.deepEqual(missingFromPackage(pkg), []);
});

test('the check fails when a package.json entry is missing', () => {
  const noCommand = structuredClone(pkg);
  noCommand.contributes.commands = noCommand.contributes.commands.filter((c) => c.command !== 'ebpfStudio.showRunQueueLatency');
  assert.deepEqual(missingFromPackage(noCommand), ['runqlat: command ebpfStudio.showRunQueueLatency is not in contributes.commands']);
  const noRestore = structuredClone(pkg);
  // every histogram tracer shows in the kit's one view: without its activation none comes back
  noRestore.activationEvents = noRestore.activationEvents.filter((a) => a !== 'onWebviewPanel:ebpfStudio.latencyKit');
  assert.deepEqual(missingFromPackage(noRestore), HISTOGRAM_TRACERS.map((n) => `${n}: activationEvents lacks onWebviewPanel:ebpfStudio.latencyKit`));
});

test('every session view has a webview bundle and is restored after a reload', () => {
  for (const view of SESSION_VIEW_NAMES) assert.ok(fs.existsSync(path.join(root, 'webview', view, 'main.ts')), `webview/${view}/main.ts (the bundle of view type ebpfStudio.${view})`);
  const views = new Set(entries.flatMap(([, e]) => (e.sessionView ? [e.sessionView] : [])));
  assert.deepEqual([...SESSION_VIEW_NAMES].sort(), [...views].sort());
});

test('every catalog CLI command exists and every tracer the helper runs is in the catalog', () => {
  const names = new Set(commands.map((c) => c.name));
  for (const [name, e] of entries) {
    if (!e.cli) continue;
    assert.ok(names.has(e.cli.command), `${name}: CLI command ${e.cli.command}`);
    assert.equal(commands.find((c) => c.name === e.cli!.command)!.summary, e.cli.summary, `${name}: the help line is the catalog's`);
  }
  for (const [name, e] of entries) if (e.programs || e.histogram) assert.ok(name in tracers, `${name} runs in the helper`);
});

test('histogram keys: a disk shows as major:minor, a pid as itself; biolatency validates its own option', () => {
  assert.equal(keyText('biolatency', 'disk', (254 << 20) | 16), '254:16');
  assert.equal(keyText('biolatency', 'process', 4242), '4242');
  assert.equal(keyText('runqlat', 'cgroup', 3000000000), '3000000000');
  assert.equal(keyText('tcplat', 'address', 0x0100007f), '127.0.0.1', 'an address key in network byte order');
  assert.equal(keyText('tcplat', 'process', 4242), '4242');
  assert.deepEqual(tracers.biolatency.validate({}), { pid: 0, per: 'none', unit: 'us', intervalS: 1, queued: false });
  assert.equal(tracers.biolatency.validate({ per: 'disk', queued: true }).queued, true);
  assert.throws(() => tracers.biolatency.validate({ per: 'thread' }), /per/);
});

test('every kit tracer of the catalog is registered once, under its name, with a CLI command from its spec', async () => {
  const kit = (await import('../../extension/tracers/kit')) as Record<string, { name: string }>;
  const histogramNames = entries.filter(([, e]) => e.histogram).map(([n]) => n);
  assert.deepEqual(Object.keys(kit).sort(), [...histogramNames].sort(), 'extension/tracers/kit.ts exports one tracer per catalog entry with a histogram');
  for (const [name, t] of Object.entries(kit)) {
    assert.equal(t.name, name, `kit.ts exports ${t.name}'s tracer as ${name}`);
    assert.equal(tracers[name as keyof typeof tracers], t, `${name} runs in the helper`);
  }
});
