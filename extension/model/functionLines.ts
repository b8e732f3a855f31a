// Where functions are defined in a C, C++, Rust or Go source text, by their first line: for the
// "Measure latency" lenses, without a language server. A line-based reading: a definition's
// signature ends its line with "{" or with ")" and has "{" first on the next line; declarations
// (";"), control statements and macros are not definitions. Pure.

export interface FunctionLine {
  /** 1-based */
  line: number;
  name: string;
}

const KEYWORDS = new Set(['if', 'for', 'while', 'switch', 'return', 'sizeof', 'catch', 'do', 'else', 'case', 'defined']);
const C_DEF = /^(?:[A-Za-z_][\w:<>,*&\s~]*?[\s*&])?([A-Za-z_~][\w]*(?:::[A-Za-z_~][\w]*)*)\s*\([^;]*\)\s*(?:const\s*)?(?:noexcept\s*)?(?:override\s*)?(?:->\s*[\w:<>]+\s*)?\{?\s*$/;
const RUST_DEF = /^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+|async\s+|unsafe\s+|extern\s+"[^"]*"\s+)*fn\s+([A-Za-z_]\w*)/;
const GO_DEF = /^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)\s*[[(]/;

function cDefinition(lines: string[], i: number): string | undefined {
  const l = lines[i];
  // a definition starts at column 0 (or an indented class member), never with a preprocessor line
  if (!l.trim() || l.trimStart().startsWith('#') || /^\s*(\/\/|\/\*|\*)/.test(l) || /^\s{8,}/.test(l)) return undefined;
  const m = C_DEF.exec(l.trim().replace(/__attribute__\s*\(\(.*?\)\)\s*/g, '').replace(/^\[\[[^\]]*\]\]\s*/, ''));
  if (!m || KEYWORDS.has(m[1].split('::').pop()!)) return undefined;
  const opens = l.trimEnd().endsWith('{') || (lines[i + 1] ?? '').trim().startsWith('{');
  return opens ? m[1] : undefined;
}

export function functionLines(text: string, languageId: string): FunctionLine[] {
  const lines = text.split('\n');
  const out: FunctionLine[] = [];
  for (let i = 0; i < lines.length; i++) {
    let name: string | undefined;
    if (languageId === 'rust') name = RUST_DEF.exec(lines[i])?.[1];
    else if (languageId === 'go') name = GO_DEF.exec(lines[i])?.[1];
    else if (languageId === 'c' || languageId === 'cpp') name = cDefinition(lines, i);
    if (name) out.push({ line: i + 1, name });
  }
  return out;
}
