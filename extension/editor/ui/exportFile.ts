// "Export…" for every view: a save dialog in the workspace (or home) folder with a timestamped
// default name, then the write. Failures come back as text for the view to show.
import * as vscode from 'vscode';
import { errorText } from './errors';

export interface ExportOutcome {
  file?: string;
  error?: string;
}

export interface ExportRequest {
  title: string;
  /** file name without extension, e.g. "java-gc"; a timestamp is appended */
  baseName: string;
  /** e.g. "json", "folded", "speedscope.json" */
  extension: string;
  filters: Record<string, string[]>;
  /** produced only once the user has chosen a file (text is written as UTF-8) */
  content(): string | Uint8Array;
}

/** undefined when the user cancels the dialog. */
export async function saveExport(req: ExportRequest): Promise<ExportOutcome | undefined> {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri ?? vscode.Uri.file(process.env.HOME ?? '/tmp');
  const uri = await vscode.window.showSaveDialog({
    title: req.title,
    defaultUri: vscode.Uri.joinPath(folder, `${req.baseName}-${stamp}.${req.extension}`),
    filters: req.filters,
  });
  if (!uri) return undefined;
  try {
    const content = req.content();
    await vscode.workspace.fs.writeFile(uri, typeof content === 'string' ? Buffer.from(content, 'utf8') : content);
    return { file: uri.fsPath };
  } catch (e) {
    return { error: errorText(e) };
  }
}
