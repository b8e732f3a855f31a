// Commands: ebpfStudio.doctor (shows what this machine allows and what to fix),
// ebpfStudio.restartHelper.
//
// The report is a read-only document of its own scheme shown as a Markdown preview: an untitled
// buffer would show raw table syntax and ask to be saved when closed.
import * as vscode from 'vscode';
import * as proto from '../../protocol/protocol';
import { helper } from '../helperClient/helperClient';
import { showError } from '../ui/errors';

const SCHEME = 'ebpf-studio-doctor';

function installLine(c: proto.Capabilities): string {
  const i = c.install;
  if (!i) return 'unknown';
  if (!i.version) return `none in ${i.dir} — needed only when the editor does not run as root: \`sudo ebpf-studio install-helper\``;
  return i.missing.length ? `${i.dir} (${i.version}) lacks ${i.missing.join(', ')}: \`sudo ebpf-studio install-helper\` again` : `${i.dir} (${i.version}), complete`;
}

export function formatCapabilities(c: proto.Capabilities): string {
  const lines = [
    '# eBPF Studio: this machine',
    '',
    `- **kernel**: ${c.kernelRelease} (${c.arch})`,
    `- **BTF**: ${c.btf ? 'yes' : '**no**'}`,
    `- **helper runs as root**: ${c.root ? 'yes' : 'no'} (${c.capabilities.join(', ') || 'no capabilities'})`,
    `- **libbpf**: ${c.libbpf}`,
    `- **root-owned install**: ${installLine(c)}`,
    '',
    '## Attach kinds',
    '',
    ...Object.entries(c.attach).map(([k, v]) => `- **${k}**: ${v.ok ? 'works' : `not here — ${v.why ?? v.error}`}`),
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

class DoctorReport implements vscode.TextDocumentContentProvider {
  private text = '';
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  readonly uri = vscode.Uri.from({ scheme: SCHEME, path: '/eBPF Studio - this machine.md' });
  provideTextDocumentContent(): string {
    return this.text;
  }
  set(text: string): void {
    this.text = text;
    this.changed.fire(this.uri);
  }
}

async function showReport(report: DoctorReport, caps: proto.Capabilities): Promise<void> {
  report.set(formatCapabilities(caps));
  try {
    await vscode.commands.executeCommand('markdown.showPreview', report.uri);
  } catch {
    // no Markdown extension: the read-only source still never asks to be saved
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(report.uri), { preview: true });
  }
}

export function activate(context: vscode.ExtensionContext): void {
  const report = new DoctorReport();
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, report),
    vscode.commands.registerCommand('ebpfStudio.doctor', async () => {
      try {
        const caps = await vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title: 'eBPF Studio: probing the kernel…' },
          () => helper().request(proto.capabilities, undefined as never),
        );
        await showReport(report, caps);
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
