// Extension-host integration tests, run inside a desktop VS Code by test/editor/electron.test.ts
// (@vscode/test-electron). Bundled by that test with esbuild; `vscode` is the real API here.
// VS Code calls run(); a rejection fails the run.
import assert from 'node:assert/strict';
import * as vscode from 'vscode';

const checks: [string, () => Promise<void>][] = [
  [
    'the extension is installed and activates',
    async () => {
      const ext = vscode.extensions.getExtension('ebpf-studio.ebpf-studio');
      assert.ok(ext, 'extension ebpf-studio.ebpf-studio not found');
      await ext.activate();
      assert.equal(ext.isActive, true);
    },
  ],
  [
    'its contributed commands are registered',
    async () => {
      const all = new Set(await vscode.commands.getCommands(true));
      const ext = vscode.extensions.getExtension('ebpf-studio.ebpf-studio')!;
      const contributed: { command: string }[] = ext.packageJSON.contributes.commands;
      const missing = contributed.map((c) => c.command).filter((c) => !all.has(c));
      assert.deepEqual(missing, [], `contributed but not registered: ${missing.join(', ')}`);
    },
  ],
  [
    'Doctor answers through the helper',
    async () => {
      // ebpfStudio.doctor resolves to the helper's capabilities (undefined when it failed).
      const caps = (await vscode.commands.executeCommand('ebpfStudio.doctor')) as { kernelRelease?: string } | undefined;
      assert.ok(caps?.kernelRelease, 'the doctor command returned no capabilities; see the "eBPF Studio" output channel');
    },
  ],
];

export async function run(): Promise<void> {
  const failures: string[] = [];
  for (const [name, check] of checks) {
    try {
      await check();
      console.log(`ok - ${name}`);
    } catch (e) {
      console.log(`not ok - ${name}: ${e instanceof Error ? e.message : String(e)}`);
      failures.push(name);
    }
  }
  if (failures.length) throw new Error(`${failures.length} integration check(s) failed: ${failures.join('; ')}`);
}
