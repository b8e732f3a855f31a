// Where functions are defined in a C, C++, Rust, Go or Java source text, by their first line: for
// the "Measure latency" lenses, without a language server. A line-based reading: a definition's
// signature ends its line with "{" or with ")" and has "{" first on the next line; declarations
// (";"), control statements and macros are not definitions. A Java method is named as the JVM
// names it, package.Class.method (a nested class Outer$Inner, by indentation). Pure.

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

const JAVA_KEYWORDS = new Set([...KEYWORDS, 'synchronized', 'new', 'throw', 'super', 'this', 'try', 'finally', 'assert']);
const JAVA_PACKAGE = /^\s*package\s+([\w.]+)\s*;/;
const JAVA_CLASS = /^(\s*)(?:(?:public|protected|private|static|final|abstract|sealed|non-sealed|strictfp)\s+)*(?:class|interface|enum|record|@interface)\s+([A-Za-z_$][\w$]*)/;
// modifiers, type parameters, a return type, then the name and its parameters (a constructor has no return type: left out)
const JAVA_METHOD = /^(\s*)(?:(?:public|protected|private|static|final|synchronized|native|abstract|default|strictfp)\s+)*(?:<[^>]*>\s+)?[\w$.]+(?:<[^()]*>)?(?:\[\])*\s+([A-Za-z_$][\w$]*)\s*\([^;]*\)\s*(?:throws\s+[\w$.,\s]+)?\{?\s*$/;

/** Java methods with a body, named package.Class.method by the classes around them (by indentation). */
function javaMethods(lines: string[]): FunctionLine[] {
  const pkg = lines.map((l) => JAVA_PACKAGE.exec(l)?.[1]).find(Boolean);
  const classes: { indent: number; name: string }[] = [];
  const out: FunctionLine[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (/^\s*(\/\/|\/\*|\*|@)/.test(l)) continue;
    const c = JAVA_CLASS.exec(l);
    if (c) {
      while (classes.length && classes[classes.length - 1].indent >= c[1].length) classes.pop();
      classes.push({ indent: c[1].length, name: c[2] });
      continue;
    }
    const m = JAVA_METHOD.exec(l);
    if (!m || JAVA_KEYWORDS.has(m[2]) || !(l.trimEnd().endsWith('{') || (lines[i + 1] ?? '').trim().startsWith('{'))) continue;
    const outer = classes.filter((k) => k.indent < m[1].length);
    if (!outer.length) continue;
    out.push({ line: i + 1, name: `${pkg ? `${pkg}.` : ''}${outer.map((k) => k.name).join('$')}.${m[2]}` });
  }
  return out;
}

export function functionLines(text: string, languageId: string): FunctionLine[] {
  const lines = text.split('\n');
  if (languageId === 'java') return javaMethods(lines);
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
