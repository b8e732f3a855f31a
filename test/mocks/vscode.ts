// A small stand-in for the `vscode` module so extension-host code runs under node:test.
// Only what our features touch; UI calls are recorded so tests can assert on them.
import Module from 'node:module';
import { EventEmitter as NodeEmitter } from 'node:events';

type Listener<T> = (e: T) => unknown;

export class EventEmitter<T> {
  private readonly e = new NodeEmitter();
  event = (l: Listener<T>) => {
    this.e.on('x', l);
    return { dispose: () => this.e.off('x', l) };
  };
  fire(v: T): void {
    this.e.emit('x', v);
  }
  dispose(): void {
    this.e.removeAllListeners();
  }
}

export const recorded = {
  errors: [] as string[],
  infos: [] as string[],
  output: [] as string[],
  commands: new Map<string, (...a: unknown[]) => unknown>(),
  context: new Map<string, unknown>(),
  config: new Map<string, unknown>(),
  workspaceConfig: new Map<string, unknown>(),
  /** panel serializers by view type (what brings a panel back after a reload) */
  serializers: new Map<string, { deserializeWebviewPanel(panel: unknown, state: unknown): Promise<void> }>(),
  /** tree data providers by view id (window.createTreeView) */
  trees: new Map<string, { getChildren(n?: unknown): Promise<unknown[]> | unknown[]; getTreeItem(n: unknown): unknown }>(),
  /** webview panels the extension created (window.createWebviewPanel), newest last */
  panels: [] as FakePanel[],
};

export type FakePanel = ReturnType<typeof fakeWebviewPanel>['panel'] & { viewType?: string };

/**
 * A webview panel as VS Code makes one (or hands one to a serializer): `posted` has what the
 * extension posted to it; `say` delivers a message from the view ("ready", a click); `close` disposes it.
 */
export function fakeWebviewPanel(title: string, viewType?: string) {
  const posted: { type: string; [k: string]: unknown }[] = [];
  const onMessage: ((m: unknown) => unknown)[] = [];
  const onDispose: (() => void)[] = [];
  const panel = {
    viewType,
    title,
    webview: {
      options: {} as unknown,
      html: '',
      cspSource: 'vscode-resource:',
      asWebviewUri: (u: unknown) => u,
      postMessage: async (m: { type: string }) => void posted.push(m),
      onDidReceiveMessage: (h: (m: unknown) => unknown) => (onMessage.push(h), new Disposable(() => onMessage.splice(onMessage.indexOf(h), 1))),
    },
    onDidDispose: (h: () => void) => (onDispose.push(h), new Disposable(() => onDispose.splice(onDispose.indexOf(h), 1))),
    reveal: () => undefined,
    dispose: () => onDispose.splice(0).forEach((h) => h()),
    posted,
    say: async (m: unknown) => Promise.all(onMessage.map((h) => h(m))),
  };
  return { panel, posted, say: panel.say };
}

export class Disposable {
  constructor(private readonly fn: () => void) {}
  dispose(): void {
    this.fn();
  }
}

export class Uri {
  private constructor(readonly fsPath: string, readonly scheme = 'file') {}
  static file(p: string): Uri {
    return new Uri(p);
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri([base.fsPath, ...parts].join('/'));
  }
  get path(): string {
    return this.fsPath;
  }
  toString(): string {
    return `file://${this.fsPath}`;
  }
}

export class Position {
  constructor(readonly line: number, readonly character: number) {}
}
export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: number | Position, b: number | Position, c?: number, d?: number) {
    this.start = typeof a === 'number' ? new Position(a, b as number) : a;
    this.end = typeof a === 'number' ? new Position(c!, d!) : (b as Position);
  }
}
export class CodeLens {
  constructor(readonly range: Range, public command?: { title: string; command: string; arguments?: unknown[] }) {}
}
export class MarkdownString {
  constructor(
    public value = '',
    readonly supportThemeIcons = false,
  ) {}
  appendText(t: string): this {
    this.value += t;
    return this;
  }
  appendMarkdown(t: string): this {
    this.value += t;
    return this;
  }
}
export const TreeItemCollapsibleState = { None: 0, Collapsed: 1, Expanded: 2 };
export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: unknown;
  iconPath?: unknown;
  contextValue?: string;
  resourceUri?: unknown;
  command?: { command: string; title: string; arguments?: unknown[] };
  constructor(
    readonly label: string,
    readonly collapsibleState = 0,
  ) {}
}
export class ThemeColor {
  constructor(readonly id: string) {}
}
export class ThemeIcon {
  constructor(readonly id: string) {}
}
export class Diagnostic {
  source?: string;
  code?: unknown;
  constructor(readonly range: Range, readonly message: string, readonly severity = 0) {}
}
export const DiagnosticSeverity = { Error: 0, Warning: 1, Information: 2, Hint: 3 };
export const StatusBarAlignment = { Left: 1, Right: 2 };
export const ViewColumn = { Active: -1, Beside: -2, One: 1 };
export const ProgressLocation = { SourceControl: 1, Window: 10, Notification: 15 };
export const QuickPickItemKind = { Separator: -1, Default: 0 };
export const OverviewRulerLane = { Left: 1, Center: 2, Right: 4, Full: 7 };

function outputChannel(name: string) {
  return {
    name,
    appendLine: (l: string) => recorded.output.push(l),
    append: (l: string) => recorded.output.push(l),
    show: () => undefined,
    clear: () => undefined,
    dispose: () => undefined,
  };
}

export const window = {
  createOutputChannel: outputChannel,
  registerCustomEditorProvider: () => new Disposable(() => undefined),
  createTreeView: (id: string, o: { treeDataProvider: { getChildren(n?: unknown): Promise<unknown[]> | unknown[]; getTreeItem(n: unknown): unknown } }) => {
    recorded.trees.set(id, o.treeDataProvider);
    return new Disposable(() => recorded.trees.delete(id));
  },
  createWebviewPanel: (viewType: string, title: string) => {
    const { panel } = fakeWebviewPanel(title, viewType);
    recorded.panels.push(panel);
    return panel;
  },
  registerWebviewPanelSerializer: (viewType: string, s: { deserializeWebviewPanel(panel: unknown, state: unknown): Promise<void> }) => {
    recorded.serializers.set(viewType, s);
    return new Disposable(() => recorded.serializers.delete(viewType));
  },
  showErrorMessage: async (m: string) => {
    recorded.errors.push(m);
    return undefined;
  },
  showInformationMessage: async (m: string) => {
    recorded.infos.push(m);
    return undefined;
  },
  showWarningMessage: async (m: string) => {
    recorded.infos.push(m);
    return undefined;
  },
  createStatusBarItem: () => ({ text: '', tooltip: '', command: '', show() {}, hide() {}, dispose() {} }),
  withProgress: async <T>(_o: unknown, task: (p: { report(v: unknown): void }) => Promise<T>) => task({ report: () => undefined }),
  showQuickPick: async () => undefined,
  /**
   * A QuickPick whose show() asks window.showQuickPick(items, { title, quickPick }) — so one test hook
   * answers both kinds of picker. The hook returns an item (accepted), undefined (hidden), or
   * 'accept' to accept with no item selected (after setting quickPick.value, as a user typing would).
   * A picker that stays open after an accept (re-rendered items) is shown again.
   */
  createQuickPick: () => {
    const accept = new EventEmitter<void>();
    const hide = new EventEmitter<void>();
    const change = new EventEmitter<string>();
    let hidden = false;
    let value = '';
    const qp = {
      title: '',
      placeholder: '',
      matchOnDescription: false,
      matchOnDetail: false,
      items: [] as unknown[],
      selectedItems: [] as unknown[],
      activeItems: [] as unknown[],
      get value() {
        return value;
      },
      set value(v: string) {
        value = v;
        change.fire(v);
      },
      onDidAccept: accept.event,
      onDidHide: hide.event,
      onDidChangeValue: change.event,
      show(): void {
        void Promise.resolve((window.showQuickPick as (i: unknown[], o: unknown) => unknown)(qp.items, { title: qp.title, quickPick: qp })).then((pick) => {
          if (hidden) return;
          if (pick === undefined) return qp.hide();
          qp.selectedItems = pick === 'accept' ? [] : [pick];
          accept.fire();
          if (!hidden) qp.show();
        });
      },
      hide(): void {
        if (hidden) return;
        hidden = true;
        hide.fire();
      },
      dispose(): void {},
    };
    return qp;
  },
  showInputBox: async () => undefined,
  createTextEditorDecorationType: () => ({ dispose() {} }),
  visibleTextEditors: [] as unknown[],
  onDidChangeVisibleTextEditors: new EventEmitter<unknown>().event,
  activeTextEditor: undefined as unknown,
};

export const workspace = {
  getConfiguration: (section?: string) => ({
    get: <T>(key: string, dflt?: T) =>
      recorded.workspaceConfig.has(`${section}.${key}`)
        ? (recorded.workspaceConfig.get(`${section}.${key}`) as T)
        : recorded.config.has(`${section}.${key}`)
          ? (recorded.config.get(`${section}.${key}`) as T)
          : dflt,
    // recorded.config plays the user's (global) settings, recorded.workspaceConfig a workspace's .vscode/settings.json
    inspect: <T>(key: string) => ({
      key: `${section}.${key}`,
      globalValue: recorded.config.get(`${section}.${key}`) as T | undefined,
      workspaceValue: recorded.workspaceConfig.get(`${section}.${key}`) as T | undefined,
      defaultValue: undefined as T | undefined,
    }),
  }),
  isTrusted: true,
  workspaceFolders: undefined as unknown,
  onDidChangeConfiguration: new EventEmitter<unknown>().event,
  openTextDocument: async (o: unknown) => o,
  createFileSystemWatcher: () => ({ onDidCreate: () => new Disposable(() => undefined), onDidDelete: () => new Disposable(() => undefined), onDidChange: () => new Disposable(() => undefined), dispose: () => undefined }),
  findFiles: async () => [] as unknown[],
};

export const commands = {
  registerCommand: (id: string, fn: (...a: unknown[]) => unknown) => {
    recorded.commands.set(id, fn);
    return new Disposable(() => recorded.commands.delete(id));
  },
  executeCommand: async (id: string, ...args: unknown[]) => {
    if (id === 'setContext') {
      recorded.context.set(args[0] as string, args[1]);
      return undefined;
    }
    return recorded.commands.get(id)?.(...args);
  },
};

export const languages = {
  registerCodeLensProvider: () => new Disposable(() => undefined),
  createDiagnosticCollection: () => ({ set() {}, clear() {}, delete() {}, dispose() {} }),
};

const api = {
  EventEmitter, Disposable, Uri, Position, Range, CodeLens, MarkdownString, ThemeColor, ThemeIcon, Diagnostic, TreeItem, TreeItemCollapsibleState,
  DiagnosticSeverity, StatusBarAlignment, ViewColumn, ProgressLocation, QuickPickItemKind, OverviewRulerLane,
  window, workspace, commands, languages,
};

/** Makes `require('vscode')` return this mock (call before importing extension code). */
export function installVscodeMock(): typeof api {
  const mod = Module as unknown as { _load: (req: string, ...rest: unknown[]) => unknown };
  const orig = mod._load;
  mod._load = function (req: string, ...rest: unknown[]) {
    if (req === 'vscode') return api;
    return orig.call(this, req, ...rest);
  };
  return api;
}

export function fakeContext(extensionPath: string) {
  return { extensionPath, extensionUri: Uri.file(extensionPath), subscriptions: [] as { dispose(): void }[], globalStorageUri: Uri.file('/tmp/ebpf-studio-test-storage') };
}
