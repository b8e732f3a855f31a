// Which files are BPF authoring files: the language server and the early activation events
// (workspaceContains:**/*.bpf.c, **/*.bt, onLanguage:bpftrace in package.json) agree on this.
// .bpf.c/.bpf.h stay language "c" so clangd or cpptools keep serving them; we recognise them by name.

/** The globs package.json's workspaceContains events and the client's document selector use. */
export const BPF_C_GLOBS = ['**/*.bpf.c', '**/*.bpf.h'];

export function isBpfAuthoringFile(fileName: string, languageId: string): boolean {
  if (languageId === 'bpftrace' || /\.bt$/.test(fileName)) return true;
  return /\.bpf\.[ch]$/.test(fileName);
}

interface DocLike {
  fileName: string;
  languageId: string;
  uri: { scheme: string };
}
interface WorkspaceLike {
  textDocuments: readonly DocLike[];
  onDidOpenTextDocument(listener: (d: DocLike) => unknown): { dispose(): void };
}

/**
 * Calls `start` once: now if a BPF/bpftrace document is already open, else when the first one
 * opens. Returns the listener to dispose (undefined when it started at once).
 */
export function startWhenBpfFileOpens(ws: WorkspaceLike, start: () => void): { dispose(): void } | undefined {
  const wanted = (d: DocLike) => d.uri.scheme !== 'output' && isBpfAuthoringFile(d.fileName, d.languageId);
  if (ws.textDocuments.some(wanted)) {
    start();
    return undefined;
  }
  const waiting = ws.onDidOpenTextDocument((d) => {
    if (!wanted(d)) return;
    waiting.dispose();
    start();
  });
  return waiting;
}
