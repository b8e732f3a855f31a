// Commands: ebpfStudio.doctor (shows what this machine allows and what to fix),
// ebpfStudio.restartHelper.
import * as vscode from 'vscode';
import * as proto from '../../protocol/protocol';
import { helper } from '../helperClient/helperClient';
import { showError } from '../ui/errors';

export function formatCapabilities(c: proto.Capabilities): string {
  const lines = [
    '# eBPF Studio: this machine',
    '',
    `| | |`,
    `|---|---|`,
    `| kernel | ${c.kernelRelease} (${c.arch}) |`,
    `| BTF | ${c.btf ? 'yes' : '**no**'} |`,
    `| helper runs as root | ${c.root ? 'yes' : 'no'} (${c.capabilities.join(', ') || 'no capabilities'}) |`,
    `| libbpf | ${c.libbpf} |`,
    '',
    '## Attach kinds',
    '',
    ...Object.entries(c.attach).map(([k, v]) => `- **${k}**: ${v.ok ? 'works' : `no — ${v.error}`}`),
    '',
    '## JDKs',
    '',
    ...(c.jdks.length ? c.jdks.map((j) => `- ${j.home}: ${j.usdt ? `${j.probeCount} USDT probes` : '**no USDT probes**'}`) : ['- none found']),
    '',
    '## Advice',
    '',
    ...(c.advice.length ? c.advice.map((a) => `- ${a}`) : ['- Nothing to fix.']),
  ];
  return lines.join('\n');
}

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.commands.registerCommand('ebpfStudio.doctor', async () => {
      try {
        const caps = await vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title: 'eBPF Studio: probing the kernel…' },
          () => helper().request(proto.capabilities, undefined as never),
        );
        const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content: formatCapabilities(caps) });
        await vscode.window.showTextDocument(doc, { preview: true });
        return caps;
      } catch (e) {
        showError(e);
        return undefined;
      }
    }),
    vscode.commands.registerCommand('ebpfStudio.restartHelper', async () => {
      try {
        await helper().restart();
        void vscode.window.showInformationMessage('eBPF Studio: helper restarted.');
      } catch (e) {
        showError(e);
      }
    }),
  );
}
