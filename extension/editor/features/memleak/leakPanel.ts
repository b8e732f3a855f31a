// The leak view's panel (webview/memleak), as both leak features use it: the native leak sessions
// (./memleak.ts, one panel per session) and Java heap leaks (./javaHeapLeaks.ts). Opens the panel
// once, reveals it afterwards, sends the session's snapshot whenever the view is ready for it,
// focuses a site (what a CodeLens asks for), also when the focus arrives before the view has
// loaded, and hands the view's requests (open a frame, export, stop) to the feature.
import * as vscode from 'vscode';
import { createViewPanel, type TypedPanel } from '../../ui/webviewPanel';
import type { FromView, ToView } from '../../../../webview/memleak/protocol';

/** How many live figures a stack's or a site's sparkline keeps. */
export const HISTORY = 60;

/** Appends `v` to `key`'s history, keeping the last HISTORY values. */
export function pushHistory<T>(map: Map<string, T[]>, key: string, v: T): void {
  const list = map.get(key) ?? [];
  list.push(v);
  if (list.length > HISTORY) list.shift();
  map.set(key, list);
}

export interface LeakPanelOptions {
  /** the panel's tab title when it is created */
  title(): string;
  /** the session key the panel serializer restores it by */
  sessionKey(): string | undefined;
  /** the snapshot message for the view as the session is now (undefined: no session yet) */
  snapshot(): ToView | undefined;
  /** what the view asks for (open a frame, export, stop) */
  onMessage(m: FromView): Promise<void>;
}

export class LeakPanel {
  private view: TypedPanel<ToView, FromView> | undefined;
  private ready = false;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly options: LeakPanelOptions,
  ) {}

  /** Opens (or reveals) the panel, focused on `focusSite` when given. */
  open(focusSite?: string): void {
    if (this.view) {
      this.view.panel.reveal();
      if (focusSite && this.ready) this.view.post({ type: 'focus', site: focusSite });
      this.postSnapshot();
      return;
    }
    this.ready = false;
    const view = createViewPanel<ToView, FromView>(this.context, 'memleak', this.options.title(), undefined, this.options.sessionKey());
    this.view = view;
    view.panel.onDidDispose(() => {
      this.view = undefined;
      this.ready = false;
    });
    let pendingFocus = focusSite;
    view.onReady(() => {
      this.ready = true;
      if (pendingFocus) view.post({ type: 'focus', site: pendingFocus });
      pendingFocus = undefined;
      this.postSnapshot();
    });
    view.onMessage((m) => this.options.onMessage(m));
  }

  /** Sends the current snapshot, when the panel is open and its view has loaded. */
  postSnapshot(): void {
    if (!this.view || !this.ready) return;
    const m = this.options.snapshot();
    if (m) this.view.post(m);
  }

  /** Sends another message (e.g. that the session was cleared), when the panel is open. */
  post(m: ToView): void {
    this.view?.post(m);
  }

  set title(t: string) {
    if (this.view) this.view.panel.title = t;
  }
}
