// The BPF language server (bundled to dist/server.js): helper completion/hover with libbpf's
// docs, SEC() names checked against libbpf's section table and their attach targets against this
// kernel, map types/flags, kernel struct members after "->"/"." and inside BPF_CORE_READ(...)
// (hover: offset, size, CO-RE), and bpftrace probes/builtins. It only serves BPF-specific
// answers so it can run next to clangd or cpptools without duplicating their C features.
import {
  CompletionItemKind,
  createConnection,
  DiagnosticSeverity,
  InsertTextFormat,
  MarkupKind,
  ProposedFeatures,
  TextDocuments,
  TextDocumentSyncKind,
  type CompletionItem,
} from 'vscode-languageserver/node';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { complete, diagnose, hover, type Completion, type Item, type ItemKind } from './analysis';
import { bpftraceComplete, bpftraceHover } from './bpftrace';
import { DEFAULT_HELPER_DEFS, MachineKnowledge } from './knowledge';

const connection = createConnection(ProposedFeatures.all);
const documents = new TextDocuments(TextDocument);
let knowledge: MachineKnowledge | undefined;

const KINDS: Record<ItemKind, CompletionItemKind> = {
  function: CompletionItemKind.Function,
  field: CompletionItemKind.Field,
  enum: CompletionItemKind.EnumMember,
  constant: CompletionItemKind.Constant,
  module: CompletionItemKind.Module,
  keyword: CompletionItemKind.Keyword,
  variable: CompletionItemKind.Variable,
};

const isBpftrace = (doc: TextDocument) => doc.languageId === 'bpftrace' || doc.uri.endsWith('.bt');

connection.onInitialize((params) => {
  const init = (params.initializationOptions ?? {}) as { helperDefsPath?: string; vmlinuxHeader?: string; cacheDir?: string };
  knowledge = new MachineKnowledge({
    helperDefsPath: init.helperDefsPath || DEFAULT_HELPER_DEFS,
    vmlinuxHeader: init.vmlinuxHeader,
    cacheDir: init.cacheDir,
    log: (m) => connection.console.log(m),
  });
  return {
    capabilities: {
      textDocumentSync: TextDocumentSyncKind.Incremental,
      completionProvider: { triggerCharacters: ['"', '/', ',', ' ', '(', '.', ':', '>'] },
      hoverProvider: true,
    },
    serverInfo: { name: 'ebpf-studio-bpf' },
  };
});

function toItems(doc: TextDocument, c: Completion, cursor: number): CompletionItem[] {
  const range = { start: doc.positionAt(c.replaceStart), end: doc.positionAt(cursor) };
  return c.items.map((i: Item, n) => ({
    label: i.label,
    kind: KINDS[i.kind],
    detail: i.detail,
    documentation: i.documentation ? { kind: MarkupKind.Markdown, value: i.documentation } : undefined,
    textEdit: { range, newText: i.insertText ?? i.label },
    insertTextFormat: i.snippet ? InsertTextFormat.Snippet : InsertTextFormat.PlainText,
    sortText: String(n).padStart(5, '0'),
  }));
}

connection.onCompletion((p) => {
  const doc = documents.get(p.textDocument.uri);
  if (!doc || !knowledge) return [];
  const offset = doc.offsetAt(p.position);
  const text = doc.getText();
  const c = isBpftrace(doc) ? bpftraceComplete(text, offset) : complete(text, offset, knowledge);
  if (!c) return [];
  // A capped list (kernel functions) is marked incomplete so the client asks again as the user types.
  return c.incomplete ? { isIncomplete: true, items: toItems(doc, c, offset) } : toItems(doc, c, offset);
});

connection.onHover((p) => {
  const doc = documents.get(p.textDocument.uri);
  if (!doc || !knowledge) return null;
  const offset = doc.offsetAt(p.position);
  const h = isBpftrace(doc) ? bpftraceHover(doc.getText(), offset) : hover(doc.getText(), offset, knowledge);
  if (!h) return null;
  return { contents: { kind: MarkupKind.Markdown, value: h.markdown }, range: { start: doc.positionAt(h.start), end: doc.positionAt(h.end) } };
});

const SEVERITY = { error: DiagnosticSeverity.Error, warning: DiagnosticSeverity.Warning, information: DiagnosticSeverity.Information };

documents.onDidChangeContent(({ document }) => {
  if (isBpftrace(document)) return;
  const diagnostics = diagnose(document.getText(), knowledge).map((d) => ({
    range: { start: document.positionAt(d.start), end: document.positionAt(d.end) },
    severity: SEVERITY[d.severity],
    message: d.message,
    code: d.code,
    source: 'ebpf',
  }));
  void connection.sendDiagnostics({ uri: document.uri, diagnostics });
});
documents.onDidClose(({ document }) => void connection.sendDiagnostics({ uri: document.uri, diagnostics: [] }));

documents.listen(connection);
connection.listen();
