// What every view's main.ts starts from: the connection to VS Code, element builders, styles the
// page's CSP admits, and redrawing once per frame. Each view had its own copy of these; one
// module keeps the session-key and nonce rules (see extension/editor/ui/webviewPanel.ts) the same in all.

declare function acquireVsCodeApi(): { postMessage(m: unknown): void; setState(s: unknown): void };

export interface Host<FromView> {
  postMessage(m: FromView): void;
  setState(s: unknown): void;
}

/**
 * The view's line to the extension (acquireVsCodeApi may be called once per page). The session
 * key the extension put in <body data-session-key> goes into the webview state, where the panel
 * serializer finds it after a window reload to bring the session's data back.
 * `outsideEvent`: for a view that also runs outside VS Code (the flame graph in benchmarks), its
 * messages then go out as window events of that name.
 */
export function connectHost<FromView>(outsideEvent?: string): Host<FromView> {
  const api =
    outsideEvent !== undefined && typeof acquireVsCodeApi !== 'function'
      ? { postMessage: (m: unknown) => window.dispatchEvent(new CustomEvent(outsideEvent, { detail: m })), setState: () => {} }
      : acquireVsCodeApi();
  if (document.body.dataset.sessionKey) api.setState({ sessionKey: document.body.dataset.sessionKey });
  return api;
}

/** An element with attributes and text: el('button', { id: 'stop', class: 'secondary' }, 'Stop'). */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text = ''): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text) e.textContent = text;
  return e;
}

/** An element with DOM properties and children: elProps('button', { textContent: 'Stop', disabled: true }, child…). */
export function elProps<K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<HTMLElementTagNameMap[K]> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children);
  return e;
}

// Read while this bundle's script runs: later, document.currentScript is null.
const NONCE = (document.currentScript as HTMLScriptElement | null)?.nonce;

/** Adds a <style> to the page. The CSP admits styles by nonce only: it carries the one this script was loaded with. */
export function addStyle(css: string): HTMLStyleElement {
  const style = document.createElement('style');
  if (NONCE) style.nonce = NONCE;
  style.textContent = css;
  document.head.appendChild(style);
  return style;
}

/**
 * A schedule() for `render`: however often it is called before the next animation frame, the
 * view renders once, then. Live updates can come faster than frames.
 */
export function oncePerFrame(render: () => void): () => void {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      render();
    });
  };
}
