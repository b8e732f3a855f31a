// The eBPF activity-bar container's Sessions tree: running sessions (inline Stop), finished
// sessions of this window (reopenable until deleted), and session files saved in the workspace
// (`**/*.ebpf-session.json`). Commands: ebpfStudio.sessions.open, ebpfStudio.sessions.export
// (save as a session file), ebpfStudio.sessions.compare ("Compare With…", profiles only),
// ebpfStudio.sessions.delete, ebpfStudio.sessions.stop, ebpfStudio.sessions.refresh,
// ebpfStudio.saveSession (a finished session by key, for other features and tests). Context
// keys: none; tree items carry contextValue "<live|finished|saved>Session.<tracer>" for menus.
import path from 'node:path';
import * as vscode from 'vscode';
import { liveSessions, onDidChangeLiveSessions } from './liveSessions';
import { finishedSessions, forgetSession, loadSession, loadStoredText, onDidChangeFinished, type FinishedEntry } from './sessionStore';
import { showSession } from './sessionViews';
import { readSessionUri } from './readSessionUri';
import { peekTracer, readSession, sessionFileName, sessionJson, writeSession, SESSION_SUFFIX, type AnySessionFile, type SessionFile } from '../../model/sessionFile';
import { errorText, showError } from '../ui/errors';
import { compareProfiles, type CompareInput } from '../features/profile/profileDiff';
import { catalogEntry } from '../../protocol/catalog';

export const SAVED_GLOB = `**/*${SESSION_SUFFIX}`;

type Node =
  | { kind: 'group'; group: 'live' | 'finished' | 'saved' }
  | { kind: 'live'; id: string; label: string; tracer: string; stop(): Promise<unknown> }
  | { kind: 'finished'; entry: FinishedEntry }
  | { kind: 'saved'; uri: vscode.Uri; tracer?: string; title?: string }
  /** shown under "Saved in the workspace" while it is empty: how to save a session */
  | { kind: 'hint' };

/** Codicon per tracer, from the catalog. */
const iconOf = (tracer: string | undefined, fallback: string): string => (tracer !== undefined && catalogEntry(tracer)?.icon) || fallback;
const GROUP_LABEL = { live: 'Running', finished: 'Finished in this window', saved: 'Saved in the workspace' };

const when = (iso?: string) => (iso ? new Date(iso).toLocaleTimeString() : '');

/** What each tracer's sessions are called, from the catalog. */
const tracerTitle = (tracer: string): string => catalogEntry(tracer)?.title ?? tracer;

/** Labels are cut to the view's width: the tooltip has the whole label and what the item is. */
function tooltip(label: string, lines: string[]): vscode.MarkdownString {
  const md = new vscode.MarkdownString('', true);
  md.appendText(label);
  for (const l of lines) md.appendMarkdown('  \n').appendText(l);
  return md;
}

export const SAVE_HINT = 'Nothing saved yet: save a finished session with $(save) (or right-click › Export Session File…) as *.ebpf-session.json in the workspace to keep it, share it or commit it.';

class SessionsTree implements vscode.TreeDataProvider<Node> {
  private readonly emitter = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private saved: Node[] | undefined;

  refresh(savedToo = false): void {
    if (savedToo) this.saved = undefined;
    this.emitter.fire(undefined);
  }

  getTreeItem(n: Node): vscode.TreeItem {
    switch (n.kind) {
      case 'group': {
        const t = new vscode.TreeItem(GROUP_LABEL[n.group], vscode.TreeItemCollapsibleState.Expanded);
        t.id = `group:${n.group}`;
        return t;
      }
      case 'live': {
        const t = new vscode.TreeItem(n.label);
        t.id = `live:${n.id}`;
        t.description = 'running';
        t.tooltip = tooltip(n.label, [`${tracerTitle(n.tracer)}, running. Stop it with ■ (inline) or from its panel.`]);
        t.iconPath = new vscode.ThemeIcon('pulse');
        t.contextValue = `liveSession.${n.tracer}`;
        return t;
      }
      case 'finished': {
        const t = new vscode.TreeItem(n.entry.title);
        t.id = `finished:${n.entry.key}`;
        t.description = `${when(n.entry.startedAt)}${n.entry.stored ? '' : ' · not kept across reloads (too large)'}`;
        const span = `${new Date(n.entry.startedAt).toLocaleString()}${n.entry.endedAt ? ` – ${new Date(n.entry.endedAt).toLocaleTimeString()}` : ''}`;
        t.tooltip = tooltip(n.entry.title, [`${tracerTitle(n.entry.tracer)}, ${span}`, `Click to open; $(save) saves it in the workspace.`]);
        t.iconPath = new vscode.ThemeIcon(iconOf(n.entry.tracer, 'circle-outline'));
        t.contextValue = `finishedSession.${n.entry.tracer}`;
        t.command = { command: 'ebpfStudio.sessions.open', title: 'Open', arguments: [n] };
        return t;
      }
      case 'saved': {
        const rel = vscode.workspace.asRelativePath(n.uri);
        const t = new vscode.TreeItem(n.title ?? path.basename(n.uri.fsPath));
        t.id = `saved:${n.uri.toString()}`;
        t.description = rel;
        t.tooltip = tooltip(n.title ?? path.basename(n.uri.fsPath), [`${n.tracer ? `${tracerTitle(n.tracer)}, ` : ''}${rel}`, 'Click to open.']);
        t.resourceUri = n.uri;
        t.iconPath = new vscode.ThemeIcon(iconOf(n.tracer, 'file'));
        t.contextValue = `savedSession.${n.tracer ?? 'unknown'}`;
        t.command = { command: 'ebpfStudio.sessions.open', title: 'Open', arguments: [n] };
        return t;
      }
      case 'hint': {
        const t = new vscode.TreeItem('No saved sessions: save a finished one (right-click › Export Session File…)');
        t.id = 'hint:saved';
        t.tooltip = new vscode.MarkdownString(SAVE_HINT, true);
        t.iconPath = new vscode.ThemeIcon('info');
        t.contextValue = 'hint';
        return t;
      }
    }
  }

  async getChildren(n?: Node): Promise<Node[]> {
    if (!n) return [{ kind: 'group', group: 'live' }, { kind: 'group', group: 'finished' }, { kind: 'group', group: 'saved' }];
    if (n.kind !== 'group') return [];
    if (n.group === 'live') return liveSessions().map((l) => ({ kind: 'live', ...l }));
    if (n.group === 'finished') return finishedSessions().map((entry) => ({ kind: 'finished', entry }));
    this.saved ??= await findSaved();
    return this.saved.length ? this.saved : [{ kind: 'hint' }];
  }
}

async function findSaved(): Promise<Node[]> {
  const uris = await vscode.workspace.findFiles(SAVED_GLOB, '**/node_modules/**', 500);
  const out: Node[] = [];
  for (const uri of uris.sort((a, b) => a.fsPath.localeCompare(b.fsPath))) {
    try {
      const doc = { json: sessionJson(await readSessionUri(uri), path.basename(uri.fsPath)) };
      if (peekTracer(doc) === 'jvm') {
        out.push({ kind: 'saved', uri, tracer: 'jvm', title: `JVM timeline: ${path.basename(uri.fsPath)}` });
        continue;
      }
      const f = readSession(doc, path.basename(uri.fsPath));
      out.push({ kind: 'saved', uri, tracer: f.tracer, title: f.title });
    } catch {
      out.push({ kind: 'saved', uri });
    }
  }
  return out;
}

/** A finished JVM timeline's stored text (its own format, not a session document); throws when it left storage. */
function storedJvmText(entry: FinishedEntry): string {
  const text = loadStoredText(entry.key);
  if (text === undefined) throw new Error(`the data of "${entry.title}" is no longer stored (storage is bounded; the oldest sessions go first). Delete the entry; export sessions you want to keep.`);
  return text;
}

async function documentOf(n: Node): Promise<{ file: AnySessionFile; key?: string } | undefined> {
  if (n.kind === 'finished' && n.entry.tracer === 'jvm') {
    // The JVM timeline opens in its own view, from its own document.
    storedJvmText(n.entry);
    await vscode.commands.executeCommand('ebpfStudio.openJvmTimeline', { key: n.entry.key });
    return undefined;
  }
  if (n.kind === 'finished') {
    const file = loadSession(n.entry.key);
    if (!file) throw new Error(`the data of "${n.entry.title}" is no longer stored (storage is bounded; the oldest sessions go first). Delete the entry; export sessions you want to keep.`);
    return { file, key: n.entry.key };
  }
  if (n.kind === 'saved' && n.tracer === 'jvm') {
    await vscode.commands.executeCommand('ebpfStudio.openJvmTimeline', { file: n.uri.fsPath });
    return undefined;
  }
  if (n.kind === 'saved') {
    return { file: readSession(await readSessionUri(n.uri), path.basename(n.uri.fsPath)) };
  }
  return undefined;
}

/** Profiles the user can compare against: finished profile sessions and saved profile files. */
async function pickOtherProfile(tree: SessionsTree, not: Node): Promise<CompareInput | undefined> {
  const groups = await Promise.all([tree.getChildren({ kind: 'group', group: 'finished' }), tree.getChildren({ kind: 'group', group: 'saved' })]);
  const same = (c: Node) => (c.kind === 'finished' && not.kind === 'finished' && c.entry.key === not.entry.key) || (c.kind === 'saved' && not.kind === 'saved' && c.uri.toString() === not.uri.toString());
  const candidates = groups.flat().filter((c) => !same(c) && ((c.kind === 'finished' && c.entry.tracer === 'profile') || (c.kind === 'saved' && c.tracer === 'profile')));
  const items: (vscode.QuickPickItem & { node?: Node })[] = candidates.map((c) => ({
    label: c.kind === 'finished' ? c.entry.title : (c as { title?: string }).title ?? '',
    description: c.kind === 'finished' ? `finished ${when(c.entry.startedAt)}` : vscode.workspace.asRelativePath((c as { uri: vscode.Uri }).uri),
    node: c,
  }));
  items.push({ label: '$(file) Choose a profile file…' });
  const pick = await vscode.window.showQuickPick(items, { title: 'Compare with which profile? (the chosen one is the base)' });
  if (!pick) return undefined;
  if (pick.node) {
    const d = await documentOf(pick.node);
    return d?.file.tracer === 'profile' ? sessionSide(d.file) : undefined;
  }
  const uri = (await vscode.window.showOpenDialog({ title: 'Base profile', canSelectMany: false }))?.[0];
  if (!uri) return undefined;
  const { profileFromFile } = await import('./sessionEditors');
  const profile = await profileFromFile(uri);
  return { profile, label: profile.name || path.basename(uri.fsPath) };
}

/** A profile session as one side of a diff: its title, and when it started to tell two of one program apart. */
function sessionSide(file: SessionFile<'profile'>): CompareInput {
  const { profile } = file.data;
  return { profile, label: file.title || profile.name || 'profile', startedAt: file.startedAt };
}

export function activate(context: vscode.ExtensionContext): void {
  const tree = new SessionsTree();
  const watcher = vscode.workspace.createFileSystemWatcher(SAVED_GLOB);
  const command = (id: string, fn: (n: Node) => Promise<void>) =>
    vscode.commands.registerCommand(id, async (n?: Node) => {
      if (!n) return;
      try {
        await fn(n);
      } catch (e) {
        showError(e);
      }
    });
  context.subscriptions.push(
    vscode.window.createTreeView('ebpfStudio.sessions', { treeDataProvider: tree, showCollapseAll: false }),
    watcher,
    watcher.onDidCreate(() => tree.refresh(true)),
    watcher.onDidDelete(() => tree.refresh(true)),
    watcher.onDidChange(() => tree.refresh(true)),
    onDidChangeLiveSessions(() => tree.refresh()),
    onDidChangeFinished(() => tree.refresh()),
    vscode.commands.registerCommand('ebpfStudio.sessions.refresh', () => tree.refresh(true)),
    command('ebpfStudio.sessions.open', async (n) => {
      const d = await documentOf(n);
      if (d) showSession(context, d.file, d.key);
    }),
    command('ebpfStudio.sessions.stop', async (n) => {
      if (n.kind === 'live') await n.stop();
    }),
    command('ebpfStudio.sessions.export', async (n) => {
      if (n.kind === 'saved' && n.tracer === 'jvm') {
        const to = await vscode.window.showSaveDialog({ title: 'Save the JVM timeline session as', defaultUri: n.uri, filters: { 'eBPF Studio session': ['json'] } });
        if (to) await vscode.workspace.fs.copy(n.uri, to, { overwrite: true });
        return;
      }
      if (n.kind === 'finished' && n.entry.tracer === 'jvm') {
        const text = storedJvmText(n.entry);
        const folder = vscode.workspace.workspaceFolders?.[0]?.uri ?? vscode.Uri.file(process.env.HOME ?? '/tmp');
        const uri = await vscode.window.showSaveDialog({ title: `Save ${n.entry.title} as a session file`, defaultUri: vscode.Uri.joinPath(folder, sessionFileName({ tracer: 'jvm', startedAt: n.entry.startedAt })), filters: { 'eBPF Studio session': ['json'] } });
        if (!uri) return;
        await vscode.workspace.fs.writeFile(uri, Buffer.from(text, 'utf8'));
        tree.refresh(true);
        return;
      }
      const d = await documentOf(n);
      if (!d) return;
      const folder = vscode.workspace.workspaceFolders?.[0]?.uri ?? vscode.Uri.file(process.env.HOME ?? '/tmp');
      const uri = await vscode.window.showSaveDialog({ title: `Save ${d.file.title} as a session file`, defaultUri: vscode.Uri.joinPath(folder, sessionFileName(d.file)), filters: { 'eBPF Studio session': ['json'] } });
      if (!uri) return;
      await vscode.workspace.fs.writeFile(uri, Buffer.from(writeSession(d.file), 'utf8'));
      tree.refresh(true);
      void vscode.window.showInformationMessage(`eBPF Studio: saved ${path.basename(uri.fsPath)}${uri.fsPath.endsWith(SESSION_SUFFIX) ? '' : ` (name it *${SESSION_SUFFIX} so the Sessions view and the editor recognise it)`}.`);
    }),
    command('ebpfStudio.sessions.compare', async (n) => {
      const d = await documentOf(n);
      if (d?.file.tracer !== 'profile') throw new Error('Compare With… works on CPU profiles');
      const base = await pickOtherProfile(tree, n);
      if (base) await compareProfiles(base, sessionSide(d.file));
    }),
    command('ebpfStudio.sessions.delete', async (n) => {
      if (n.kind === 'finished') await forgetSession(n.entry.key);
      else if (n.kind === 'saved') {
        const ok = await vscode.window.showWarningMessage(`Delete ${vscode.workspace.asRelativePath(n.uri)}?`, { modal: true }, 'Delete');
        if (ok !== 'Delete') return;
        await vscode.workspace.fs.delete(n.uri, { useTrash: true }).then(undefined, () => vscode.workspace.fs.delete(n.uri));
        tree.refresh(true);
      }
    }),
    vscode.commands.registerCommand('ebpfStudio.saveSession', async (key: string, target: vscode.Uri) => {
      const file = loadSession(key);
      // A JVM timeline is kept as its own document: written as it is.
      const text = file ? writeSession(file) : finishedSessions().some((e) => e.key === key && e.tracer === 'jvm') ? loadStoredText(key) : undefined;
      if (text === undefined) throw new Error(`no finished session ${key}`);
      try {
        await vscode.workspace.fs.writeFile(target, Buffer.from(text, 'utf8'));
      } catch (e) {
        throw new Error(`cannot write ${target.fsPath}: ${errorText(e)}`);
      }
      tree.refresh(true);
    }),
  );
}
